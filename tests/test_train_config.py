"""helpers.train.config: every field checked, the trajectory a resume must share, the default warmup."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from helpers import train as training


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"steps": 0}, "steps"),
        ({"clip_norm": -1.0}, "clip_norm"),
        ({"checkpoint_every": 0}, "checkpoint_every"),
        ({"warmup_steps": 10, "steps": 10}, "warmup_steps"),
        ({"dropout": 1.0}, "dropout"),
        ({"learning_rate": float("nan")}, "learning_rate"),
        ({"batch_size": True}, "batch_size"),
        ({"seed": -1}, "seed"),
        ({"strategy": "tpu"}, "strategy"),
        ({"strategy": "mirrored", "batch_size": 63}, "batch_size"),
    ],
)
def test_config_rejects_bad_values_naming_the_field(tmp_path: Path, change: dict, field: str) -> None:
    with pytest.raises(training.ConfigError, match=f"^{field} must be") as refused:
        training.TrainConfig(run_dir=tmp_path, **change)
    assert refused.value.field == field


def test_config_is_frozen_and_knows_its_trajectory(tmp_path: Path) -> None:
    config = training.TrainConfig(run_dir=str(tmp_path), dropout=0.1)
    assert config.run_dir == tmp_path
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.steps = 5  # type: ignore[misc]
    assert set(config.trajectory()) == set(training.TrainConfig.TRAJECTORY_FIELDS) and "log_every" not in config.trajectory()
    assert "steps_per_call" not in training.TrainConfig.TRAJECTORY_FIELDS  # its size changes the speed, not the run


def test_the_default_warmup_fits_any_number_of_steps(tmp_path: Path) -> None:
    for steps, warmup in [(1, 0), (9, 0), (20, 2), (150, 15), (240, 20), (10_000, 20)]:
        assert training.TrainConfig(run_dir=tmp_path, steps=steps).warmup_steps == warmup


def test_every_option_but_the_run_folder_is_a_field_with_a_flag() -> None:
    names = [entry.name for entry in training.config_options()]
    assert "run_dir" not in names and names[0] == "steps" and len(names) == len(dataclasses.fields(training.TrainConfig)) - 1
    assert training.option_name("checkpoint_every") == "--checkpoint-every"
    assert training.default_text(next(entry for entry in training.config_options() if entry.name == "warmup_steps")).startswith("10% of --steps")
