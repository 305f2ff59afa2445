"""Read TensorBoard event files back with TensorBoard's own reader.

TF2's ``tf.summary.scalar`` stores scalars as tensors, so ``EventAccumulator.Scalars`` does
not see them; they are read here with ``.Tensors`` and ``tf.make_ndarray``. The default size
guidance keeps only a sample of points per tag; this module asks for all of them.

:func:`read_scalars` returns numeric scalar tags as arrays; :func:`read_summaries` returns every
tensor summary (scalars, histograms, images, text) with the name of the plugin that wrote it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


@dataclass(frozen=True)
class Series:
    """One scalar tag: steps and values in the order they were written."""

    steps: np.ndarray
    values: np.ndarray
    wall_times: np.ndarray


def _accumulator(logdir: str | os.PathLike[str]) -> EventAccumulator:
    """A loaded ``EventAccumulator`` for one run folder that keeps every tensor point."""
    from tensorboard.backend.event_processing.event_accumulator import SCALARS, TENSORS, EventAccumulator

    logdir = Path(logdir)
    if not logdir.is_dir() or not any(logdir.glob("events.out.tfevents.*")):
        raise FileNotFoundError(f"no event file in {logdir.name!r}; was anything written and the writer flushed?")
    accumulator = EventAccumulator(str(logdir), size_guidance={TENSORS: 0, SCALARS: 0})
    accumulator.Reload()
    return accumulator


def read_scalars(logdir: str | os.PathLike[str]) -> dict[str, Series]:
    """All scalar summaries in one run folder, ``{tag: Series}``, every point kept.

    ``logdir`` is the folder a ``tf.summary.create_file_writer`` wrote to (its event files
    directly inside). TF1's ``tf.compat.v1.summary.scalar`` and the v1 hooks (``StepCounterHook``'s
    ``global_step/sec``) store plain ``simple_value`` scalars instead of tensors; they are read too.
    A folder with no event file raises ``FileNotFoundError``.
    """
    from tensorboard.backend.event_processing.event_accumulator import SCALARS, TENSORS
    from tensorboard.util import tensor_util

    accumulator = _accumulator(logdir)
    series: dict[str, Series] = {}
    for tag in accumulator.Tags()[TENSORS]:
        events = accumulator.Tensors(tag)
        values = [tensor_util.make_ndarray(event.tensor_proto) for event in events]
        if any(np.ndim(value) != 0 or not np.issubdtype(np.asarray(value).dtype, np.number) for value in values):
            continue  # not a numeric scalar (histogram, image, text)
        series[tag] = Series(
            steps=np.array([event.step for event in events], dtype=np.int64),
            values=np.array(values, dtype=np.float64),
            wall_times=np.array([event.wall_time for event in events], dtype=np.float64),
        )
    for tag in accumulator.Tags()[SCALARS]:  # TF1 summaries: simple_value scalars
        points = accumulator.Scalars(tag)
        series[tag] = Series(
            steps=np.array([point.step for point in points], dtype=np.int64),
            values=np.array([point.value for point in points], dtype=np.float64),
            wall_times=np.array([point.wall_time for point in points], dtype=np.float64),
        )
    return series


@dataclass(frozen=True)
class TensorSeries:
    """One summary tag of any kind: its plugin, steps, and the stored tensor at each step."""

    plugin: str
    steps: np.ndarray
    values: list[np.ndarray]


def read_summaries(logdir: str | os.PathLike[str]) -> dict[str, TensorSeries]:
    """Every tensor summary in one run folder, ``{tag: TensorSeries}``, every point kept.

    ``plugin`` says what wrote the tag: ``"scalars"``, ``"histograms"``, ``"images"``, ``"text"``.
    Histograms are ``(buckets, 3)`` arrays of ``[left, right, count]``; images are string tensors
    ``[width, height, png, png, ...]``; text is a string tensor. A folder with no event file raises
    ``FileNotFoundError``.
    """
    from tensorboard.backend.event_processing.event_accumulator import TENSORS
    from tensorboard.util import tensor_util

    accumulator = _accumulator(logdir)
    summaries: dict[str, TensorSeries] = {}
    for tag in accumulator.Tags()[TENSORS]:
        events = accumulator.Tensors(tag)
        metadata = accumulator.SummaryMetadata(tag)
        summaries[tag] = TensorSeries(
            plugin=metadata.plugin_data.plugin_name,
            steps=np.array([event.step for event in events], dtype=np.int64),
            values=[tensor_util.make_ndarray(event.tensor_proto) for event in events],
        )
    return summaries
