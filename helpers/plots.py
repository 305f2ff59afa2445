"""Figures the notebooks reuse: a grid of digits and labelled curves.

Each function draws on a new (or given) matplotlib figure and returns it; in a notebook,
assign the result (``figure = show_digits(...)``) so the figure is displayed once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure


def show_digits(
    images: np.ndarray,
    labels: Sequence[int] | np.ndarray,
    *,
    columns: int = 10,
    title: str | None = None,
    predictions: Sequence[int] | np.ndarray | None = None,
) -> Figure:
    """Draw images ``(n, h, w)`` in a grid, each titled with its label.

    With ``predictions``, titles read ``label/prediction`` and mistakes are drawn in red.
    """
    images = np.asarray(images)
    if images.ndim != 3:
        raise ValueError(f"images must be (n, height, width), got shape {images.shape}")
    if len(labels) != len(images):
        raise ValueError(f"labels has {len(labels)} entries for {len(images)} images")
    if predictions is not None and len(predictions) != len(images):
        raise ValueError(f"predictions has {len(predictions)} entries for {len(images)} images")
    if columns <= 0:
        raise ValueError(f"columns must be positive, got {columns}")
    rows = max(1, -(-len(images) // columns))
    figure, axes = plt.subplots(rows, columns, figsize=(columns * 0.9, rows * 1.05), squeeze=False)
    for index, axis in enumerate(axes.flat):
        axis.set_axis_off()
        if index >= len(images):
            continue
        axis.imshow(images[index], cmap="gray_r", interpolation="nearest")
        text, color = str(int(labels[index])), "black"
        if predictions is not None:
            text = f"{int(labels[index])}/{int(predictions[index])}"
            color = "black" if int(labels[index]) == int(predictions[index]) else "red"
        axis.set_title(text, fontsize=9, color=color)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return figure


def plot_curves(
    curves: Mapping[str, Sequence[float] | np.ndarray],
    *,
    steps: Sequence[float] | np.ndarray | Mapping[str, Sequence[float] | np.ndarray] | None = None,
    xlabel: str = "step",
    ylabel: str = "",
    title: str | None = None,
    log_y: bool = False,
    ax: Axes | None = None,
) -> Figure:
    """Plot named curves against steps on one axis and return the figure.

    ``steps`` is shared by all curves, or a mapping with one x-array per curve name; it
    defaults to ``0..len(curve)-1``.
    """
    if not curves:
        raise ValueError("curves is empty: nothing to plot")
    if ax is None:
        figure, ax = plt.subplots(figsize=(7, 4))
    else:
        root = ax.get_figure(root=True)  # ax.figure is the SubFigure when ax is in one; the caller saves or closes the Figure
        if root is None:
            raise ValueError("ax belongs to no figure")
        figure = root
    for name, values in curves.items():
        values = np.asarray(values, dtype=float)
        if isinstance(steps, Mapping):
            x = np.asarray(steps[name], dtype=float)
        elif steps is not None:
            x = np.asarray(steps, dtype=float)
        else:
            x = np.arange(len(values), dtype=float)
        if x.shape != values.shape:
            raise ValueError(f"curve {name!r} has {values.shape[0]} values for {x.shape[0]} steps")
        ax.plot(x, values, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if log_y:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    figure.tight_layout()
    return figure
