"""helpers.train.calls: where a call of train_until ends, and that its size changes nothing but the speed."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from helpers import train as training


def crash_hook(step: int) -> training.StepHook:
    return training.StepHook(lambda _step: None, ends_call_at=step)


@pytest.mark.parametrize(
    ("step", "options", "hooks", "expected"),
    [
        (0, {}, [], 50),  # steps_per_call 50, and the first checkpoint and evaluation are at 50 too
        (0, {"steps_per_call": 30}, [], 30),
        (40, {"steps_per_call": 30}, [], 50),  # the checkpoint at 50 ends the call early
        (0, {"steps_per_call": 100, "checkpoint_every": 70, "eval_every": 60}, [], 60),
        (60, {"steps_per_call": 100, "checkpoint_every": 70, "eval_every": 60}, [], 70),
        (190, {"steps_per_call": 100}, [], 200),  # the last step
        (0, {}, [crash_hook(7)], 7),
        (7, {}, [crash_hook(7)], 50),  # past the hook's step it no longer counts
        (12, {}, [training.StepHook(lambda _step: None, one_update_per_call=True)], 13),
    ],
)
def test_a_call_ends_where_python_has_work(tmp_path: Path, step: int, options: dict, hooks: list, expected: int) -> None:
    config = training.TrainConfig(run_dir=tmp_path, steps=200, **options)
    assert training.call_end(step, config, hooks) == expected


def test_steps_per_call_changes_neither_the_trajectory_nor_the_logs(tmp_path: Path) -> None:
    """One update per call or seven: the same final state, the same checkpoints, the same scalars at the same steps.

    Chapter 08 (*Many updates per call*) shows 1 against 50 per call on its configuration.
    """
    from helpers.logs import read_scalars

    runs = {}
    for per_call in (1, 7):
        config = training.TrainConfig(
            run_dir=tmp_path / f"per_call_{per_call}", steps=24, warmup_steps=3, checkpoint_every=10, log_every=4, eval_every=12,
            dropout=0.2, keep_checkpoints=5, steps_per_call=per_call,
        )
        result = training.train(config, out=io.StringIO())
        folder = training.RunFolder(config.run_dir)
        logs = read_scalars(folder.train_logs)
        runs[per_call] = (
            result.fingerprint,
            sorted(path.name for path in folder.checkpoints.glob("*.index")),
            {tag: (list(series.steps), list(series.values)) for tag, series in logs.items()},
        )
    assert runs[1] == runs[7]
    assert runs[7][1] == ["ckpt-10.index", "ckpt-20.index", "ckpt-24.index"]
    assert runs[7][2]["loss"][0] == [4, 8, 12, 16, 20, 24]


def test_hooks_see_every_new_step_in_order(tmp_path: Path) -> None:
    seen: list[int] = []
    config = training.TrainConfig(run_dir=tmp_path / "hooked", steps=9, checkpoint_every=4, eval_every=100, steps_per_call=3)
    training.train(config, hooks=[training.StepHook(seen.append)], out=io.StringIO())
    assert seen == [3, 4, 7, 8, 9]  # the ends of the calls: every steps_per_call, cut at each checkpoint, and the last
