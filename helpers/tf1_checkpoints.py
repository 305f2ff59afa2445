"""Port a TF1 name-based checkpoint (``tf.compat.v1.train.Saver``) into TF2 variables, by name.

Why: a TF1 checkpoint keys each value by its graph variable name (``hidden/kernel``), while
``tf.train.Checkpoint`` restores by object path, so restoring a TF1 file into a Keras 3 model
through the object-based API matches nothing and leaves the model's initial values in place
(chapter 11 shows it). :func:`assign_by_name` takes an explicit ``{checkpoint name: variable}``
map, checks every name and shape before assigning anything, and raises
:class:`NameBasedCheckpointError` naming the variable when one does not fit; so a port either
assigns every value or changes nothing. :func:`keras_names` builds the usual map for a Keras model
whose layers carry the TF1 scopes' names. Chapter 11 (``11_tf1_training_code``) teaches it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import tensorflow as tf


class NameBasedCheckpointError(ValueError):
    """A name of the map is missing from the checkpoint, or its shape or dtype differs from the variable's."""


def keras_names(model: Any) -> dict[str, Any]:
    """``{"<layer name>/<variable name>": variable}`` for every variable of ``model``'s layers.

    A TF1 ``variable_scope("hidden")`` with ``get_variable("kernel", ...)`` saved ``hidden/kernel``;
    a Keras 3 layer named ``hidden`` holds ``kernel``: the two names meet here.
    """
    return {f"{layer.name}/{variable.name}": variable for layer in model.layers for variable in layer.weights}


def assign_by_name(checkpoint_path: str | os.PathLike[str], variables: Mapping[str, Any]) -> list[str]:
    """Assign each ``variables[name]`` the checkpoint's value ``name``; return the checkpoint's names left unused.

    Every name, shape and dtype is checked first: a missing name or a mismatch raises
    :class:`NameBasedCheckpointError` naming the checkpoint name and the variable, and assigns nothing.
    """
    path = os.fspath(checkpoint_path)
    reader = tf.train.load_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    for name, variable in variables.items():
        target = getattr(variable, "path", variable.name)
        if name not in shapes:
            held = ", ".join(sorted(shapes))
            raise NameBasedCheckpointError(f"the checkpoint has no variable {name!r} for {target}; it holds: {held}")
        if tuple(shapes[name]) != tuple(variable.shape):
            raise NameBasedCheckpointError(
                f"{name!r} has shape {tuple(shapes[name])} in the checkpoint, but {target} has shape {tuple(variable.shape)}"
            )
        if dtypes[name] != tf.as_dtype(variable.dtype):
            raise NameBasedCheckpointError(f"{name!r} is {dtypes[name].name} in the checkpoint, but {target} is {tf.as_dtype(variable.dtype).name}")
    for name, variable in variables.items():
        variable.assign(reader.get_tensor(name))
    return sorted(set(shapes) - set(variables))
