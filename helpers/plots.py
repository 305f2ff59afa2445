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
from matplotlib.patches import FancyBboxPatch


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


#: The four places, in the order of the chapter's table: who clips, and where.
STEP_CLIPPING_PLACES: dict[int, str] = {
    1: "you, in the replica function",
    2: "the optimizer, apply_gradients in the replica (fit)",
    3: "you, after strategy.reduce (this chapter's step)",
    4: "the optimizer, apply_gradients after the sum",
}
_BEFORE_SUM, _AFTER_SUM = "#c0392b", "#1f6fb2"


def _box(ax: Axes, x: float, y: float, width: float, height: float, text: str, color: str = "#f2f2f2") -> None:
    ax.add_patch(FancyBboxPatch((x, y), width, height, boxstyle="round,pad=0.05", facecolor=color, edgecolor="#444444"))
    ax.text(x + width / 2, y + height / 2, text, ha="center", va="center", fontsize=9)


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float]) -> None:
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "->", "color": "#444444"})


def _marker(ax: Axes, x: float, y: float, place: int) -> None:
    color = _BEFORE_SUM if place <= 2 else _AFTER_SUM
    ax.text(x, y, str(place), ha="center", va="center", fontsize=10, color="white", fontweight="bold",
            bbox={"boxstyle": "circle,pad=0.25", "facecolor": color, "edgecolor": color})


def draw_synchronous_step(
    *, replica_norms: Sequence[float], sum_norm: float, clip_norm: float, update_norms: Mapping[int, float]
) -> Figure:
    """Draw one step of two replicas with the places 1-4 where clipping can happen, labelled with measured norms.

    ``replica_norms``: the global norm of each replica's gradient; ``sum_norm``: that of their sum;
    ``update_norms``: for each place 1-4, the norm of the update applied when clipping happens there.
    """
    if len(replica_norms) != 2:
        raise ValueError(f"the diagram draws two replicas, not {len(replica_norms)}")
    if set(update_norms) != set(STEP_CLIPPING_PLACES):
        raise ValueError(f"update_norms needs the places {sorted(STEP_CLIPPING_PLACES)}, got {sorted(update_norms)}")
    figure, ax = plt.subplots(figsize=(12, 6.2))
    ax.set_xlim(0, 12.4)
    ax.set_ylim(-3.3, 6)
    ax.axis("off")
    lanes = {0: 4.2, 1: 1.2}
    for replica, y in lanes.items():
        ax.text(0.05, y + 1.05, f"replica {replica} · CPU:{replica}", fontsize=9, fontweight="bold")
        _box(ax, 0.1, y, 1.9, 0.8, "32 of the\n64 examples")
        _arrow(ax, (2.05, y + 0.4), (2.55, y + 0.4))
        _box(ax, 2.6, y, 2.2, 0.8, f"loss ÷ 64, gradient\nnorm {replica_norms[replica]:.3f}")
        _arrow(ax, (4.85, y + 0.4), (6.15, 2.95 if replica == 0 else 2.45))
        _marker(ax, 5.2, y + 0.85, 1)
        _marker(ax, 5.65, y + 0.85, 2)
    _box(ax, 6.2, 1.9, 1.9, 1.6, f"sum across\nreplicas\n(all-reduce)\nnorm {sum_norm:.3f}", color="#e8eef7")
    _arrow(ax, (8.15, 2.7), (9.15, 2.7))
    _marker(ax, 8.45, 3.15, 3)
    _marker(ax, 8.9, 3.15, 4)
    _box(ax, 9.2, 1.9, 2.9, 1.6, "apply_gradients:\none update,\nthe same on both\ncopies of the weights")
    ax.text(5.42, 5.6, "before the sum", color=_BEFORE_SUM, ha="center", fontsize=10, fontweight="bold")
    ax.text(8.67, 4.0, "after the sum", color=_AFTER_SUM, ha="center", fontsize=10, fontweight="bold")
    rows = [
        f"{place}  {who:52s}  update norm {update_norms[place]:.3f}"
        + ("  (more than the clip norm)" if update_norms[place] > clip_norm * (1 + 1e-4) else "  (the clip norm)")
        for place, who in STEP_CLIPPING_PLACES.items()
    ]
    ax.text(0.1, -0.2, f"Where clipping happens, and the update it gives (clip norm {clip_norm:g}):", fontsize=10, fontweight="bold")
    for number, row in enumerate(rows):
        color = _BEFORE_SUM if number < 2 else _AFTER_SUM
        ax.text(0.1, -0.85 - 0.6 * number, row, fontsize=9.5, family="monospace", color=color)
    ax.set_title("One synchronous step on two replicas, and the four places to clip", fontsize=12)
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
