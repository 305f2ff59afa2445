"""helpers.ports: the free-port rule every local server of the workbook uses."""

from __future__ import annotations

import socket

from helpers.ports import LOOPBACK, free_port


def test_a_free_port_is_bindable_on_loopback() -> None:
    port = free_port()
    assert 0 < port < 65536
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, port))
