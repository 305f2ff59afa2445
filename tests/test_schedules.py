"""helpers.schedules: evaluating learning-rate schedules over steps, and plotting them."""

from __future__ import annotations

import math
from collections.abc import Iterator

import matplotlib

matplotlib.use("Agg")

import keras
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from helpers import schedules

#: float32 arithmetic in the schedule against float64 in the hand formula.
FLOAT32 = {"rtol": 1e-5, "atol": 1e-7}


def halving_every_10(step: int) -> float:
    return 0.1 * 0.5 ** (step / 10)


@pytest.fixture(autouse=True)
def close_figures() -> Iterator[None]:
    yield
    plt.close("all")


# --- steps -------------------------------------------------------------------------------


def test_a_count_means_the_steps_from_zero() -> None:
    assert schedules.as_steps(4).tolist() == [0, 1, 2, 3]
    assert schedules.as_steps(np.int32(2)).dtype == np.int64


def test_sequences_ranges_and_whole_floats_are_accepted() -> None:
    assert schedules.as_steps([5, 0, 3]).tolist() == [5, 0, 3]
    assert schedules.as_steps(range(2, 8, 3)).tolist() == [2, 5]
    assert schedules.as_steps(np.array([0.0, 10.0])).tolist() == [0, 10]


@pytest.mark.parametrize(
    ("steps", "match"),
    [
        ([], r"steps is empty"),
        (np.array([], dtype=np.int64), r"steps is empty"),
        (0, r"steps must be a positive count"),
        (-3, r"steps must be a positive count"),
        ([0, 4, -1], r"steps must be >= 0.*-1"),
        ([[0, 1], [2, 3]], r"steps must be 1-D"),
        ([0.5, 1.0], r"steps must hold whole numbers"),
        ([0.0, float("nan")], r"steps must hold whole numbers"),
        (["0", "1"], r"steps must hold integers"),
        ([True, False], r"steps must hold integers"),
        (True, r"steps must be a count"),
    ],
)
def test_bad_steps_raise_value_error_naming_the_argument(steps: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        schedules.as_steps(steps)
    with pytest.raises(ValueError, match=match):
        schedules.evaluate_schedule(halving_every_10, steps)


# --- plain callables ---------------------------------------------------------------------


def test_a_python_callable_matches_its_formula() -> None:
    values = schedules.evaluate_schedule(halving_every_10, [0, 10, 20, 25])
    assert values.dtype == np.float64 and values.shape == (4,)
    np.testing.assert_allclose(values, [0.1, 0.05, 0.025, 0.1 * 0.5**2.5], rtol=1e-12)


def test_a_callable_gets_one_python_int_per_step_in_order() -> None:
    seen: list[object] = []

    def record(step: int) -> float:
        seen.append(step)
        return 0.1

    values = schedules.evaluate_schedule(record, np.array([3, 1, 2], dtype=np.int32))
    assert seen == [3, 1, 2] and all(type(step) is int for step in seen)
    assert values.tolist() == [0.1, 0.1, 0.1]


def test_a_schedule_that_is_not_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="schedule must be callable"):
        schedules.evaluate_schedule(0.1, 10)  # type: ignore[arg-type]


def test_a_rate_that_is_not_a_scalar_is_refused() -> None:
    with pytest.raises(ValueError, match=r"shape \(2,\) at step 0.*scalar"):
        schedules.evaluate_schedule(lambda step: [0.1, 0.2], 3)
    with pytest.raises(ValueError, match="real number"):
        schedules.evaluate_schedule(lambda step: "0.1", 3)


def test_a_rate_that_is_not_finite_is_refused_naming_the_step() -> None:
    with pytest.raises(ValueError, match=r"nan at step 7"):
        schedules.evaluate_schedule(lambda step: math.nan if step == 7 else 0.1, 10)
    with pytest.raises(ValueError, match=r"inf at step 0"):
        schedules.evaluate_schedule(lambda step: 1.0 / step if step else math.inf, 3)


def test_importing_the_module_does_not_import_tensorflow(python: str) -> None:
    import subprocess

    code = "import sys, helpers.schedules; print('tensorflow' in sys.modules, 'keras' in sys.modules)"
    result = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False False"


# --- Keras schedules ---------------------------------------------------------------------


@pytest.mark.parametrize("staircase", [False, True])
def test_keras_exponential_decay_matches_the_hand_formula(staircase: bool) -> None:
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=100, decay_rate=0.5, staircase=staircase)
    steps = np.arange(0, 1001, 9)
    exponent = np.floor(steps / 100) if staircase else steps / 100
    assert schedules.is_keras_schedule(schedule)
    np.testing.assert_allclose(schedules.evaluate_schedule(schedule, steps), 0.1 * 0.5**exponent, **FLOAT32)


def test_a_keras_schedule_that_branches_is_evaluated_step_by_step() -> None:
    warmup_steps, decay_steps, target = 10, 50, 0.2
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0, decay_steps=decay_steps, warmup_target=target, warmup_steps=warmup_steps
    )
    steps = np.arange(80)
    decay_fraction = np.clip(steps - warmup_steps, 0, decay_steps) / decay_steps
    expected = np.where(
        steps < warmup_steps,
        target * steps / warmup_steps,
        target * 0.5 * (1 + np.cos(np.pi * decay_fraction)),
    )
    np.testing.assert_allclose(schedules.evaluate_schedule(schedule, steps), expected, **FLOAT32)


def test_keras_values_agree_with_eager_calls_within_float32() -> None:
    schedule = keras.optimizers.schedules.InverseTimeDecay(0.3, decay_steps=7, decay_rate=0.9)
    steps = np.arange(0, 200, 3)
    eager = [float(schedule(int(step))) for step in steps]
    np.testing.assert_allclose(schedules.evaluate_schedule(schedule, steps), eager, **FLOAT32)


def test_a_custom_keras_schedule_receives_int64_steps_like_from_an_optimizer() -> None:
    seen_dtypes: list[str] = []

    class OneOverStepPlusOne(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            seen_dtypes.append(step.dtype.name)
            return 1.0 / (keras.ops.cast(step, "float32") + 1.0)

        def get_config(self) -> dict:
            return {}

    values = schedules.evaluate_schedule(OneOverStepPlusOne(), 5)
    np.testing.assert_allclose(values, 1 / np.arange(1, 6), **FLOAT32)
    assert seen_dtypes and set(seen_dtypes) == {"int64"}


def test_a_keras_schedule_returning_a_vector_is_refused() -> None:

    class TwoRates(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            return keras.ops.ones((2,)) * 0.1

        def get_config(self) -> dict:
            return {}

    with pytest.raises(ValueError, match="scalar"):
        schedules.evaluate_schedule(TwoRates(), 3)


# --- plotting ----------------------------------------------------------------------------


def test_plot_draws_one_labelled_line_per_schedule_with_its_values() -> None:
    named = {"halving": halving_every_10, "constant": lambda step: 0.05, "linear": lambda step: 0.1 - step / 1000}
    figure = schedules.plot_schedules(named, 30)
    assert isinstance(figure, Figure)
    (axis,) = figure.axes
    assert [line.get_label() for line in axis.lines] == list(named)
    for line, schedule in zip(axis.lines, named.values(), strict=True):
        assert line.get_xdata().tolist() == list(range(30))
        np.testing.assert_allclose(line.get_ydata(), schedules.evaluate_schedule(schedule, 30))
    assert axis.get_yscale() == "linear" and axis.get_ylabel() == "learning rate"


def test_plot_draws_on_the_given_axis() -> None:
    figure, (left, right) = plt.subplots(1, 2)
    returned = schedules.plot_schedules({"halving": halving_every_10}, [0, 5, 10], ax=right, title="right")
    assert returned is figure
    assert len(left.lines) == 0 and len(right.lines) == 1 and right.get_title() == "right"


def test_plot_log_y_uses_a_log_axis() -> None:
    figure = schedules.plot_schedules({"halving": halving_every_10}, 50, log_y=True)
    assert figure.axes[0].get_yscale() == "log"


def test_plot_log_y_refuses_a_rate_of_zero_naming_the_schedule() -> None:
    named = {"halving": halving_every_10, "warmup": lambda step: step / 10}
    with pytest.raises(ValueError, match=r"'warmup' is 0 at step 0"):
        schedules.plot_schedules(named, 20, log_y=True)


def test_plot_refuses_nothing_to_plot_and_bad_steps() -> None:
    with pytest.raises(ValueError, match="schedules is empty"):
        schedules.plot_schedules({}, 10)
    with pytest.raises(ValueError, match="steps must be >= 0"):
        schedules.plot_schedules({"halving": halving_every_10}, [-1, 0])
