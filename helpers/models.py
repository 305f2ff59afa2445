"""The workbook's model: one small MLP for the bundled 8x8 digits, defined once.

Chapters 08-10, the capstone command and the benchmarks import it; a chapter that teaches how a
model is built writes its own in plain sight and says so. This module imports Keras: import it
after ``helpers.quiet_tensorflow_logs()``.
"""

from __future__ import annotations

import keras

#: The digits' image shape and number of classes (see :mod:`helpers.data`).
IMAGE_SHAPE, CLASSES = (8, 8), 10


def make_model(hidden_units: int = 128, dropout: float = 0.0) -> keras.Model:
    """Flatten, Dense(hidden_units, relu), Dropout(dropout) if it is not 0, Dense(10) logits."""
    layers = [keras.Input(shape=IMAGE_SHAPE), keras.layers.Flatten(), keras.layers.Dense(hidden_units, activation="relu")]
    if dropout:
        layers.append(keras.layers.Dropout(dropout))
    return keras.Sequential([*layers, keras.layers.Dense(CLASSES)])
