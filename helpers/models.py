"""The workbook's model: one small MLP for the bundled 8x8 digits, defined once.

Chapters 02-10, the capstone command and the benchmarks import it. Chapter 01, where the seeds' model is
first built and corrected, writes it in plain sight and checks that it equals this one. The model and its
layers have fixed names (``mlp``, ``images``, ``flatten``, ``hidden``, ``dropout``, ``logits``), so variable paths and error messages
read ``mlp/hidden/kernel`` however many models a process has built. This module imports Keras: import it
after ``helpers.quiet_tensorflow_logs()``.
"""

from __future__ import annotations

import keras

#: The digits' image shape and number of classes (see :mod:`helpers.data`).
IMAGE_SHAPE, CLASSES = (8, 8), 10


def make_model(hidden_units: int = 128, dropout: float = 0.0) -> keras.Model:
    """Flatten, Dense(hidden_units, relu) ``hidden``, Dropout(dropout) ``dropout`` if it is not 0, Dense(10) ``logits``."""
    layers = [
        keras.Input(shape=IMAGE_SHAPE, name="images"),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(hidden_units, activation="relu", name="hidden"),
    ]
    if dropout:
        layers.append(keras.layers.Dropout(dropout, name="dropout"))
    return keras.Sequential([*layers, keras.layers.Dense(CLASSES, name="logits")], name="mlp")
