"""Where a step's time goes: the bare loop and the capstone loop under TensorFlow's profiler, side by side.

    python -m benchmarks.profile [--steps 500] [--out build/benchmarks/profile]

Each loop (the instrumentation section's :class:`benchmarks.loop.BareLoop` and
:class:`benchmarks.loop.CapstoneLoop`, no scalars or checkpoints, 50 steps per call) is warmed up,
then traced for ``--steps`` steps with ``tf.profiler.experimental.start`` / ``stop``. The trace (an
``.xplane.pb`` file, what TensorBoard's profile plugin shows) is read with the protobuf classes
TensorFlow ships, and the events of the executor's threads are summed by name, in microseconds per
step: ``Process`` is the executor running a batch of ops, and the named kernels (``_MklMatMul`` and so
on), the ops expensive enough to be traced on their own, are nested inside it (so the rows overlap and
are not to be added up). The printed table lists the events whose time differs most between the loops.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

#: The threads whose events are summed: TensorFlow's executor (``tf_Compute/<id>``). The tf.data and Python threads are left out.
EXECUTOR_THREAD_PREFIX = "tf_Compute"


def executor_microseconds(xplane_file: Path) -> dict[str, float]:
    """Total microseconds per event name on the executor's threads of one ``.xplane.pb`` trace."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(xplane_file.read_bytes())
    totals: collections.Counter[str] = collections.Counter()
    for plane in space.planes:
        names = {key: value.name for key, value in plane.event_metadata.items()}
        for line in plane.lines:
            if not line.name.startswith(EXECUTOR_THREAD_PREFIX):
                continue
            for event in line.events:
                name = names.get(event.metadata_id, "?").split(":")[-1]
                totals[name] += event.duration_ps / 1e6
    return dict(totals)


def trace(run: Callable[[int], None], steps: int, folder: Path) -> tuple[float, dict[str, float]]:
    """Wall microseconds per step and the executor's events per step, for ``steps`` steps of ``run`` under the profiler."""
    import tensorflow as tf

    shutil.rmtree(folder, ignore_errors=True)
    tf.profiler.experimental.start(str(folder))
    start = time.perf_counter()
    try:
        run(steps)
    finally:
        wall = time.perf_counter() - start
        tf.profiler.experimental.stop()
    files = sorted(folder.rglob("*.xplane.pb"))
    if len(files) != 1:
        raise RuntimeError(f"expected one .xplane.pb trace under {folder}, found {len(files)}")
    return wall / steps * 1e6, {name: value / steps for name, value in executor_microseconds(files[0]).items()}


def table(bare: dict[str, float], capstone: dict[str, float], top: int) -> str:
    """A markdown table of the ``top`` events whose µs/step differ most between the two loops, largest difference first."""
    names = sorted(set(bare) | set(capstone), key=lambda n: (-abs(capstone.get(n, 0.0) - bare.get(n, 0.0)), n))
    rows = [f"| {name} | {bare.get(name, 0.0):.1f} | {capstone.get(name, 0.0):.1f} |" for name in names[:top]]
    return "\n".join(["| event | bare µs/step | capstone µs/step |", "|---|---:|---:|", *rows])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=500, help="traced steps per loop (default 500)")
    parser.add_argument("--out", type=Path, help="folder for the traces (default: build/benchmarks/profile)")
    parser.add_argument("--top", type=int, default=8, help="rows of the table (default 8)")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.top < 1:
        parser.error("--steps and --top must be at least 1")

    from benchmarks.loop import NEVER, BareLoop, CapstoneLoop, _config, _default_steps_per_call
    from helpers.environment import quiet_tensorflow_logs
    from helpers.paths import build_root, display_path

    quiet_tensorflow_logs()
    out = (args.out if args.out is not None else build_root() / "benchmarks" / "profile").resolve()
    per_call = _default_steps_per_call()
    bare = BareLoop(per_call)
    capstone = CapstoneLoop(_config(out / "capstone_run", 10 * args.steps + 200, log_every=NEVER))
    try:
        for loop in (bare, capstone):
            loop.run(2 * per_call)  # trace the tf.functions before the profiled steps
        walls, events = {}, {}
        for name, loop in (("bare", bare), ("capstone", capstone)):
            walls[name], events[name] = trace(loop.run, args.steps, out / name)
    finally:
        capstone.close()
    print(f"{args.steps} steps each, {per_call} per call; wall: bare {walls['bare']:.1f} µs/step, capstone {walls['capstone']:.1f} µs/step")
    print("\n" + table(events["bare"], events["capstone"], args.top))
    print(f"\ntraces in {display_path(out, keep_outside=True)} (TensorBoard's profile plugin reads them)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
