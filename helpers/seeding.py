"""One call to make a run repeatable: Python, NumPy and TensorFlow seeds plus op determinism."""

from __future__ import annotations

import os

import numpy as np


def set_seed(seed: int, *, deterministic: bool = True) -> None:
    """Seed Python's ``random``, NumPy's global generator, TensorFlow and Keras.

    With ``deterministic`` (the default) TensorFlow's op determinism is switched on too,
    so that the same seed gives bit-identical results run after run on the same machine.
    Determinism stays on for the rest of the process: TensorFlow offers no way back.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= int(seed) < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    seed = int(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)  # inherited by subprocesses this run starts

    import keras
    import tensorflow as tf

    # Seeds Python's random, NumPy's global generator, tf.random and Keras's own seed generator.
    keras.utils.set_random_seed(seed)
    if deterministic:
        tf.config.experimental.enable_op_determinism()
