"""One call to make a run repeatable: Python, NumPy and TensorFlow seeds plus op determinism."""

from __future__ import annotations

import os

import numpy as np

#: Seeds are ints in ``[0, SEED_LIMIT)``: the range NumPy's global generator accepts.
SEED_LIMIT = 2**32


def check_seed(seed: object) -> int:
    """``seed`` as a Python int; ``ValueError`` unless it is an int in ``[0, 2**32)``.

    The one seed rule of the workbook: :func:`set_seed`, :mod:`helpers.data` and
    :class:`helpers.train.TrainConfig` all call it.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < SEED_LIMIT:
        raise ValueError(f"seed must be an int in [0, 2**32), got {seed!r}")
    return int(seed)


def set_seed(seed: int, *, deterministic: bool = True) -> None:
    """Seed Python's ``random``, NumPy's global generator, TensorFlow and Keras.

    With ``deterministic`` (the default) TensorFlow's op determinism is switched on too,
    so that the same seed gives bit-identical results run after run on the same machine.
    Determinism stays on for the rest of the process: TensorFlow offers no way back.
    """
    seed = check_seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)  # inherited by subprocesses this run starts

    import keras
    import tensorflow as tf

    # Seeds Python's random, NumPy's global generator, tf.random and Keras's own seed generator.
    keras.utils.set_random_seed(seed)
    if deterministic:
        tf.config.experimental.enable_op_determinism()
