"""helpers.resume_lab, chapter 05's exact-resume experiment: a half-way checkpoint resumed bit for bit, in this process and in a new one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import resume_lab

STEPS = 6


def _half_way(runs: Path, name: str, dropout: float, save_seed_state: bool) -> list[np.ndarray]:
    """Write ``runs/name/ckpt`` after STEPS // 2 steps; return the weights of the uninterrupted run."""
    batches = resume_lab.make_batches(0, STEPS)
    straight_model, straight_optimizer = resume_lab.start(0, dropout)
    resume_lab.train(straight_model, straight_optimizer, batches)
    half_model, half_optimizer = resume_lab.start(0, dropout)
    resume_lab.train(half_model, half_optimizer, batches[: STEPS // 2])
    resume_lab.make_checkpoint(half_model, half_optimizer, save_seed_state).write(str(runs / name / "ckpt"))
    return [weight.numpy() for weight in straight_model.weights]


def _final(runs: Path, name: str) -> list[np.ndarray]:
    with np.load(runs / name / "final.npz") as saved:
        return [saved[key] for key in saved.files]


def _identical(first: list[np.ndarray], second: list[np.ndarray]) -> bool:
    return len(first) == len(second) and all(a.tobytes() == b.tobytes() for a, b in zip(first, second, strict=True))


def test_make_batches_is_the_same_sequence_every_time_and_runs_past_an_epoch() -> None:
    first, second = resume_lab.make_batches(0, 30), resume_lab.make_batches(0, 30)
    assert len(first) == 30  # the digits' training split has fewer than 30 batches of 64: repeat() carries on
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(first, second, strict=True))


def test_the_checkpoint_holds_the_seed_state_only_when_asked() -> None:
    model, optimizer = resume_lab.start(0, 0.3)
    assert "seed_states" not in resume_lab.make_checkpoint(model, optimizer, False)._trackable_children()
    assert "seed_states" in resume_lab.make_checkpoint(model, optimizer, True)._trackable_children()


def test_resume_in_this_process_is_bit_identical_with_the_seed_state_and_not_without(tmp_path: Path) -> None:
    for name, save_seed_state in (("with", True), ("without", False)):
        straight = _half_way(tmp_path, name, 0.3, save_seed_state)
        report = resume_lab.resume(str(tmp_path / name), dropout=0.3, save_seed_state=save_seed_state, stop=STEPS, seed=0)
        assert report == f"new process: restored step {STEPS // 2}, trained to step {STEPS}"
        assert _identical(_final(tmp_path, name), straight) == save_seed_state


@pytest.mark.process
def test_the_command_resumes_in_a_new_process_bit_for_bit(tmp_path: Path) -> None:
    straight = _half_way(tmp_path, "plain", 0.0, False)
    command = [sys.executable, "-m", "helpers.resume_lab", "--runs", str(tmp_path), "--stop", str(STEPS), "--variant", "plain:0.0:0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == f"plain: new process: restored step {STEPS // 2}, trained to step {STEPS}\n"
    assert _identical(_final(tmp_path, "plain"), straight)


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("plain_mlp", "is not NAME:DROPOUT:SAVE_SEED_STATE"),
        ("plain_mlp:0.0", "is not NAME:DROPOUT:SAVE_SEED_STATE"),
        (":0.0:0", "is not NAME:DROPOUT:SAVE_SEED_STATE"),
        ("dropout:high:0", "DROPOUT 'high' is not a number"),
        ("dropout:1.5:0", "DROPOUT 1.5 is not in [0, 1)"),
        ("dropout:0.3:yes", "SAVE_SEED_STATE 'yes' is not 0 or 1"),
    ],
)
def test_a_malformed_variant_is_refused_in_one_line_before_anything_runs(
    value: str, named: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as stopped:
        resume_lab.main(["--runs", str(tmp_path), "--stop", "2", "--variant", value])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert stopped.value.code == 2 and error.startswith("python -m helpers.resume_lab: error: argument --variant: ") and named in error, error
    assert not list(tmp_path.iterdir())  # nothing was restored or written


def test_a_variant_is_read_as_its_name_rate_and_seed_state() -> None:
    assert resume_lab.parse_variant("dropout_with_seed_state:0.3:1") == ("dropout_with_seed_state", 0.3, True)
    assert resume_lab.parse_variant("plain_mlp:0:0") == ("plain_mlp", 0.0, False)
