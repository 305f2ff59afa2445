"""helpers.models.make_model: the workbook's one MLP (chapters 01-10, the capstone, the benchmarks)."""

from __future__ import annotations

import numpy as np

import helpers
from helpers.models import CLASSES, IMAGE_SHAPE, make_model


def test_the_layers_and_their_fixed_names() -> None:
    model = make_model()
    assert model.name == "mlp"
    assert [layer.name for layer in model.layers] == ["flatten", "hidden", "logits"]
    assert [variable.path for variable in model.weights] == ["mlp/hidden/kernel", "mlp/hidden/bias", "mlp/logits/kernel", "mlp/logits/bias"]
    assert model.get_layer("hidden").units == 128 and model.get_layer("hidden").activation.__name__ == "relu"
    assert model.get_layer("logits").units == CLASSES and model.get_layer("logits").activation.__name__ == "linear"


def test_names_do_not_depend_on_how_many_models_were_built() -> None:
    first, second = make_model(), make_model()
    assert [v.path for v in first.weights] == [v.path for v in second.weights]


def test_width_and_dropout() -> None:
    model = make_model(hidden_units=16, dropout=0.25)
    assert [layer.name for layer in model.layers] == ["flatten", "hidden", "dropout", "logits"]
    assert model.get_layer("hidden").units == 16 and model.get_layer("dropout").rate == 0.25
    assert "dropout" not in [layer.name for layer in make_model(dropout=0.0).layers]


def test_logits_shape_and_same_weights_for_the_same_seed() -> None:
    helpers.set_seed(3)
    first = make_model()
    helpers.set_seed(3)
    second = make_model()
    images = np.zeros((2, *IMAGE_SHAPE), np.float32)
    assert first(images).shape == (2, CLASSES)
    assert all(np.array_equal(a, b) for a, b in zip(first.get_weights(), second.get_weights(), strict=True))
