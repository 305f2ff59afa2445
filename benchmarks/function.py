"""Section "eager vs tf.function": the step time of one training step, and what a (re)trace costs.

The step is chapter 02's: the workbook's MLP (:func:`helpers.models.make_model`) on the bundled digits,
Adam, batch 64, ``tf.GradientTape`` then ``apply_gradients``. The same Python function runs eagerly and
inside ``tf.function`` (each side with its own model and optimizer, built from the same seed). The
batches are taken from :func:`helpers.data.make_datasets` once and reused, so the data pipeline is not
part of the step time.

The retrace comparison times single calls against a call that reuses a trace: the first call of a new
``tf.function`` (it traces), and a call whose Python scalar argument has a value not seen before (a
Python value is part of the trace's key, so each new value traces again).

The last two comparisons are chapter 07's: ``tf.debugging.enable_check_numerics`` on the chapter's small
computation (a 64x64 matmul, an add, a ReLU), eagerly and in a ``tf.function`` traced while the checks
are on, each against the same calls without the checks. The checked sides switch the checks on for
their own samples only (untimed), as the chapter does around its measurement.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from benchmarks.measure import TIMES, Comparison, Options, compare, progress, seconds

if TYPE_CHECKING:  # pragma: no cover
    import tensorflow as tf

SECTION = "function"
BATCH_SIZE = 64
#: Training steps per sample of the step-time comparison; calls per sample of the reused trace.
STEPS, QUICK_STEPS = 50, 3
DEFAULT_REPEATS = 7
HIDDEN_UNITS, QUICK_HIDDEN_UNITS = 128, 16
#: Full batches kept in memory and cycled through.
BATCHES = 8
#: Chapter 07's computation: relu(x @ x + 1) on a square float32 matrix; calls per sample.
CHECKED_SIZE = 64
CHECKED_CALLS, QUICK_CHECKED_CALLS = 200, 3

Step = Callable[..., Any]


def _batches(count: int) -> list[tuple[tf.Tensor, tf.Tensor]]:
    """The first ``count`` full batches of the seeded training pipeline (a partial last batch would trace again)."""
    from helpers.data import make_datasets

    train, _ = make_datasets(batch_size=BATCH_SIZE, seed=0)
    full = [(images, labels) for images, labels in train if int(images.shape[0]) == BATCH_SIZE]
    return full[:count]


def make_step(hidden_units: int) -> Step:
    """A new model and Adam optimizer, and the train step on them: ``step(images, labels, scale=1.0) -> loss``.

    ``scale`` multiplies the loss; as a Python float it is a trace key when the step runs in ``tf.function``.
    """
    import keras
    import tensorflow as tf

    from helpers.models import make_model

    model = make_model(hidden_units)
    optimizer = keras.optimizers.Adam()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step(images: tf.Tensor, labels: tf.Tensor, scale: float = 1.0) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True)) * scale
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    return step


def _per_step_ms(step: Step, batches: list[tuple[tf.Tensor, tf.Tensor]], steps: int) -> Callable[[], float]:
    """A side: run ``steps`` training steps over the cached batches; the value is milliseconds per step."""

    def side() -> float:
        def work() -> None:
            loss: Any = None
            for index in range(steps):
                loss = step(*batches[index % len(batches)])
            float(loss)  # the last result is ready

        return seconds(work) * 1000 / steps

    return side


def run(options: Options) -> list[Comparison]:
    """Measure eager vs ``tf.function`` step time and the cost of a trace and of a retrace."""
    from helpers.environment import quiet_tensorflow_logs

    quiet_tensorflow_logs()
    import tensorflow as tf

    from helpers.seeding import set_seed

    set_seed(0)
    steps = QUICK_STEPS if options.quick else STEPS
    hidden = QUICK_HIDDEN_UNITS if options.quick else HIDDEN_UNITS
    repeats = options.repeats_for(DEFAULT_REPEATS)
    batches = _batches(BATCHES)
    sizes = {"batch_size": BATCH_SIZE, "hidden_units": hidden, "steps_per_sample": steps, "cached_batches": len(batches)}

    progress(f"[{SECTION}] one training step, eager vs tf.function: {repeats} repetitions of {steps} steps each")
    step_time = compare(
        SECTION,
        f"one training step (MLP {hidden} hidden, Adam, batch {BATCH_SIZE})",
        {
            "eager": _per_step_ms(make_step(hidden), batches, steps),
            "tf.function": _per_step_ms(tf.function(make_step(hidden)), batches, steps),
        },
        baseline="eager",
        unit="ms",
        repeats=repeats,
        details=sizes,
        notes=[
            f"ms per step over {steps} steps; both sides run the same Python step function (its own model and optimizer each) "
            f"on {len(batches)} batches fetched once, so the data pipeline is not timed."
        ],
    )

    progress(f"[{SECTION}] the cost of a trace and of a retrace: {repeats} repetitions")
    images, labels = batches[0]
    shared = make_step(hidden)
    reused = tf.function(shared)
    scaled = tf.function(shared)
    traces = {"new tf.function": 0, "new Python scalar": 0}
    scale_values = iter(1.0 + index / 1024 for index in range(1, 1_000_000))

    def reused_call() -> float:
        return seconds(lambda: [reused(images, labels, 1.0) for _ in range(steps)]) * 1000 / steps

    def first_call() -> float:
        fresh = tf.function(shared)
        value = seconds(lambda: fresh(images, labels, 1.0)) * 1000
        traces["new tf.function"] += fresh.experimental_get_tracing_count()
        return value

    def new_scalar_call() -> float:
        before = scaled.experimental_get_tracing_count()
        value = seconds(lambda: scaled(images, labels, next(scale_values))) * 1000
        traces["new Python scalar"] += scaled.experimental_get_tracing_count() - before
        return value

    reused(images, labels, 1.0)  # the first calls (traces) of the two long-lived functions, instead of the framework's warm-up
    scaled(images, labels, next(scale_values))
    retrace = compare(
        SECTION,
        "a call that traces vs a call that reuses its trace",
        {"reused trace": reused_call, "new tf.function (first call)": first_call, "new Python scalar (retrace)": new_scalar_call},
        baseline="reused trace",
        unit="ms",
        repeats=repeats,
        ratio_kind=TIMES,
        ratio_label="× reused",
        warmup=False,
        details={**sizes, "calls_per_reused_sample": steps},
    )
    if traces != {"new tf.function": repeats, "new Python scalar": repeats}:
        raise RuntimeError(f"expected every timed call of the tracing sides to trace once ({repeats} each), counted {traces}")
    retrace.details["traces"] = traces
    retrace.notes.append(
        f"ms per call; the reused trace is the mean of {steps} calls, each tracing side is one call (trace + run), checked with "
        "`experimental_get_tracing_count()`."
    )
    return [step_time, retrace, *_check_numerics_cost(options, repeats)]


def _per_call_us(function: Callable[[], Any], calls: int, *, checked: bool) -> Callable[[], float]:
    """A side: ``calls`` calls of ``function``, with ``enable_check_numerics`` on if ``checked``; the value is µs per call."""
    import tensorflow as tf

    def side() -> float:
        if checked:
            tf.debugging.enable_check_numerics()
        try:
            return seconds(lambda: [function() for _ in range(calls)]) * 1e6 / calls
        finally:
            if checked:
                tf.debugging.disable_check_numerics()

    return side


def _op_types(function: Any) -> list[str]:
    """The op types of the graph of a traced ``tf.function`` that takes no arguments."""
    return [op.type for op in function.get_concrete_function().graph.get_operations()]


def _check_numerics_cost(options: Options, repeats: int) -> list[Comparison]:
    """Chapter 07's claim: the cost of ``enable_check_numerics``, eagerly and in a ``tf.function`` traced with it."""
    import tensorflow as tf

    calls = QUICK_CHECKED_CALLS if options.quick else CHECKED_CALLS
    matrix = tf.random.stateless_normal((CHECKED_SIZE, CHECKED_SIZE), seed=[0, 0])

    def small_computation() -> tf.Tensor:
        return tf.nn.relu(tf.matmul(matrix, matrix) + 1.0)

    plain_graph = tf.function(small_computation)
    plain_graph()  # traced without the checks
    checked_graph = tf.function(small_computation)
    tf.debugging.enable_check_numerics()
    try:
        checked_graph()  # traced with the checks: they are part of its graph from now on
    finally:
        tf.debugging.disable_check_numerics()
    plain_ops, checked_ops = _op_types(plain_graph), _op_types(checked_graph)
    if "CheckNumericsV2" in plain_ops or "CheckNumericsV2" not in checked_ops:
        raise RuntimeError(f"expected CheckNumericsV2 ops only in the graph traced with the checks: {plain_ops} vs {checked_ops}")
    details = {"matrix": [CHECKED_SIZE, CHECKED_SIZE], "calls_per_sample": calls}
    note = (
        f"µs per call, the mean of {calls} calls of relu(x @ x + 1) on a {CHECKED_SIZE}x{CHECKED_SIZE} float32 matrix (chapter 07); "
        "the checked side turns `tf.debugging.enable_check_numerics()` on before its calls and off after them (untimed)."
    )

    progress(f"[{SECTION}] enable_check_numerics, eager: {repeats} repetitions of {calls} calls")
    eager = compare(
        SECTION,
        "enable_check_numerics on an eager computation (chapter 07)",
        {"eager": _per_call_us(small_computation, calls, checked=False), "eager, checks on": _per_call_us(small_computation, calls, checked=True)},
        baseline="eager",
        unit="µs",
        repeats=repeats,
        ratio_kind=TIMES,
        ratio_label="× unchecked",
        details=dict(details),
        notes=[note],
    )
    progress(f"[{SECTION}] enable_check_numerics, tf.function: {repeats} repetitions of {calls} calls")
    graph = compare(
        SECTION,
        "enable_check_numerics on a tf.function traced with it (chapter 07)",
        {
            "tf.function": _per_call_us(plain_graph, calls, checked=False),
            "tf.function traced with checks on": _per_call_us(checked_graph, calls, checked=True),
        },
        baseline="tf.function",
        unit="µs",
        repeats=repeats,
        ratio_kind=TIMES,
        ratio_label="× unchecked",
        details={**details, "graph_ops": {"plain": len(plain_ops), "traced with checks": len(checked_ops)}},
        notes=[note, f"the graphs hold {len(plain_ops)} ops without the checks and {len(checked_ops)} with them (a `CheckNumericsV2` per float output)."],
    )
    return [eager, graph]
