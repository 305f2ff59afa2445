"""Free TCP ports on this machine: the one home of the rule every local server of the workbook uses."""

from __future__ import annotations

import socket

#: Every server the workbook starts (TensorBoard, JupyterLab, the worker cluster) listens on loopback only.
LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it when binding port 0).

    Free a moment ago, not reserved: the caller binds it soon after, as TensorBoard and TensorFlow's
    cluster servers do.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
