"""Checkpoints for a training loop: save by global step, restore the latest, fail loudly.

:class:`TrainingCheckpoint` owns one ``tf.train.Checkpoint`` holding the model, the optimizer
(whose ``iterations`` variable is the global step), the state of the model's Keras random-seed
generators, and any extra trackable objects (a ``tf.random.Generator``, a ``tf.data`` iterator,
a :class:`helpers.clipping.ClippingMonitor` ...).

Why the seed-generator states: in Keras 3, layers such as ``Dropout`` draw their randomness from
a ``keras.random.SeedGenerator`` whose state variable is in ``model.non_trainable_variables`` but
is not tracked by ``tf.train.Checkpoint(model=model)``. Without it a resumed run draws different
dropout masks from an uninterrupted one (chapter 05 shows the divergence).

Crash safety: a save writes the files ``ckpt-<step>.*`` first (TensorFlow writes them under a
temporary name and renames them when complete) and only then points the ``checkpoint`` state file
at them, with an atomic replace. A process killed during a save therefore leaves the previous
checkpoint as the latest; the leftovers of the torn save are removed by the next save. A save that
fails (a full disk) removes its own torn files and raises :class:`CheckpointSaveError`, an ``OSError``
with the cause's ``errno``; the checkpoint published before stays the latest. On restore,
a state file that is unreadable (garbage, empty, or naming no latest checkpoint), or a latest
checkpoint whose files are damaged, falls back to the newest checkpoint that reads completely, and
the returned message says so.

This module imports TensorFlow: import it after ``helpers.quiet_tensorflow_logs()``.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from helpers.errors import errno_of
from helpers.paths import CHECKPOINT_PREFIX, TORN_SAVE, checkpoint_name, checkpoint_prefixes, display_path, remove


class CheckpointError(RuntimeError):
    """A checkpoint could not be saved or restored."""


class CheckpointMismatchError(CheckpointError):
    """The checkpoint does not fit the objects it is restored into (shapes or structure differ)."""


class CheckpointSaveError(OSError):
    """A checkpoint could not be written; its torn files are removed and the latest checkpoint is the one before.

    An ``OSError`` whose ``errno`` is the cause's (``ENOSPC`` for a full disk), which TensorFlow's
    own errors give only in words; ``str()`` is the message alone.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)

    def __str__(self) -> str:
        return str(self.strerror)


@dataclass(frozen=True)
class RestoreInfo:
    """What :meth:`TrainingCheckpoint.restore` did."""

    step: int
    path: str | None
    message: str
    skipped: tuple[str, ...] = field(default_factory=tuple)

    @property
    def restored(self) -> bool:
        return self.path is not None


def seed_generator_states(model: keras.Model) -> list[tf.Variable]:
    """The state variables of every ``keras.random.SeedGenerator`` inside ``model``, in layer order."""
    states: list[tf.Variable] = []
    seen: set[int] = set()

    def visit(layer: object) -> None:
        if id(layer) in seen:
            return
        seen.add(id(layer))
        for value in vars(layer).values():
            if isinstance(value, keras.random.SeedGenerator):
                states.append(value.state)
        for child in getattr(layer, "layers", []) or []:
            visit(child)

    visit(model)
    return states


def _readable(prefix: Path) -> bool:
    """True when the checkpoint's index and every tensor in it can be read.

    ``variant`` tensors (the saved state of a ``tf.data`` iterator) cannot be converted to
    NumPy by the reader; they are skipped here and checked when the checkpoint is restored.
    """
    if not Path(f"{prefix}.index").is_file():
        return False
    try:
        reader = tf.train.load_checkpoint(str(prefix))
        for key, dtype in reader.get_variable_to_dtype_map().items():
            if dtype != tf.variant:
                reader.get_tensor(key)
    except (tf.errors.OpError, IndexError, ValueError, OSError):
        return False
    return True


def read_checkpoint_state(directory: str | Path) -> Any:
    """The ``checkpoint`` state file of ``directory`` as TensorFlow reads it (a ``CheckpointState``), or None when it is missing or unreadable.

    TensorFlow returns None for a file it cannot parse but raises ``ValueError`` ("Invalid
    checkpoint state") for one that names no latest checkpoint: an empty file (a crash while it was
    written), one listing only ``all_model_checkpoint_paths``, or ``model_checkpoint_path: ""``.
    All of them are damage the restore falls back from.
    """
    try:
        return tf.train.get_checkpoint_state(str(directory))
    except ValueError:
        return None


def _mismatch_summary(error: BaseException) -> str:
    """A one-line account of a failed restore, naming the checkpoint value that did not fit."""
    text = str(error).strip()
    unresolved = re.search(r"Unresolved object in checkpoint (\S+?):", text)
    if unresolved:
        return f"the checkpoint holds {unresolved.group(1)}, which nothing being restored takes"
    return (text.splitlines() or [""])[0][:300]


class TrainingCheckpoint:
    """Save and restore a training loop's whole state in ``directory``, named by global step.

    ``step`` is ``optimizer.iterations``; ``save()`` writes ``ckpt-<step>``; at most
    ``max_to_keep`` checkpoints are kept (``None`` keeps all). Extra keyword arguments are
    trackable objects saved alongside (for example ``rng=tf.random.Generator.from_seed(1)``).
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer,
        max_to_keep: int | None = 3,
        **extra: object,
    ) -> None:
        if max_to_keep is not None and (isinstance(max_to_keep, bool) or not isinstance(max_to_keep, int) or max_to_keep < 1):
            raise ValueError(f"max_to_keep must be None or a positive int, got {max_to_keep!r}")
        reserved = {"model", "optimizer", "seed_states"} & set(extra)
        if reserved:
            raise ValueError(f"extra objects may not be called {sorted(reserved)}")
        self.directory = Path(directory)
        self.model = model
        self.optimizer = optimizer
        self.max_to_keep = max_to_keep
        self.seed_states = seed_generator_states(model)
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, seed_states=self.seed_states, **extra)

    # -- saving ---------------------------------------------------------------------------
    @property
    def step(self) -> int:
        """The global step: ``optimizer.iterations``."""
        return int(self.optimizer.iterations.numpy())

    def relocated(self, directory: str | Path) -> TrainingCheckpoint:
        """The same objects and ``tf.train.Checkpoint``, saved into (and restored from) ``directory`` instead.

        A worker of a cluster that is not the chief must take part in every save; it saves a copy
        of its own into a scratch folder that nobody restores from.
        """
        moved = copy.copy(self)
        moved.directory = Path(directory)
        return moved

    def _ensure_built(self) -> None:
        if not self.optimizer.built:
            self.optimizer.build(self.model.trainable_variables)

    def save(self) -> Path:
        """Write ``ckpt-<step>``, then make it the latest; return its prefix path.

        A write that fails (a full disk, a folder gone) removes what it wrote and raises
        :class:`CheckpointSaveError` naming the checkpoint that stays the latest.
        """
        self._ensure_built()
        prefix = self.directory / checkpoint_name(self.step)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            written = Path(self.checkpoint.write(str(prefix)))
            self._publish(written)
        except (tf.errors.OpError, OSError) as error:
            self._remove_unpublished(prefix)
            raise self._save_error(prefix, error) from error
        self._prune()
        return written

    def _save_error(self, prefix: Path, error: BaseException) -> CheckpointSaveError:
        code = errno_of(error)
        published = self._published()
        latest = f"the latest checkpoint is still {published[-1].name}" if published else "no checkpoint was saved before"
        where = display_path(self.directory, keep_outside=True)
        return CheckpointSaveError(code, f"{prefix.name} could not be written in {where} ({os.strerror(code)}); {latest}")

    def _remove_unpublished(self, prefix: Path) -> None:
        """Remove the files of ``prefix`` (a save that failed) unless the state file lists it, and every torn save's leftovers."""
        keep = prefix in self._published()
        for entry in self._entries():
            base = entry.name.split(".")[0]
            if TORN_SAVE.match(entry.name) or (base == prefix.name and not keep):
                remove(entry)

    def _entries(self) -> list[Path]:
        return list(self.directory.iterdir()) if self.directory.is_dir() else []

    def _published(self) -> list[Path]:
        """The checkpoints the state file lists, oldest first; none when it is missing or unreadable."""
        state = read_checkpoint_state(self.directory)
        if state is None:
            return []
        return [self.directory / Path(path).name for path in state.all_model_checkpoint_paths]

    def _publish(self, prefix: Path) -> None:
        kept = [path for path in self._published() if path != prefix and Path(f"{path}.index").is_file()] + [prefix]
        if self.max_to_keep is not None:
            kept = kept[-self.max_to_keep :]
        # Relative names keep the folder movable; TensorFlow writes the state file atomically.
        tf.compat.v1.train.update_checkpoint_state(
            str(self.directory), prefix.name, all_model_checkpoint_paths=[path.name for path in kept]
        )

    def _prune(self) -> None:
        """Delete checkpoint files that the state file no longer lists (old or torn saves)."""
        kept = {path.name for path in self._published()}
        for entry in self._entries():
            name = entry.name.split(".")[0].removesuffix("_temp")
            if (CHECKPOINT_PREFIX.match(name) and name not in kept) or TORN_SAVE.match(entry.name):
                remove(entry)

    # -- restoring ------------------------------------------------------------------------
    def checkpoints(self) -> list[Path]:
        """Complete-looking checkpoints in the folder (an ``.index`` file exists), oldest first."""
        return checkpoint_prefixes(self.directory)

    def _candidates(self) -> tuple[list[Path], str]:
        published = self._published()
        note = ""
        state_file = self.directory / "checkpoint"
        if state_file.is_file() and not published:
            note = "the state file 'checkpoint' is unreadable; "
        ordered: list[Path] = []
        for prefix in published[::-1] + self.checkpoints()[::-1]:
            if prefix not in ordered:
                ordered.append(prefix)
        return ordered, note

    def restore(self, path: str | Path | None = None) -> RestoreInfo:
        """Restore ``path``, or the newest checkpoint that reads completely; check the structure.

        No checkpoint at all: nothing changes and ``RestoreInfo.restored`` is False (step 0 for a
        new run). Checkpoints that all fail to read raise :class:`CheckpointError` (starting
        afresh would let the next save delete them). A checkpoint that does not fit the model
        and optimizer raises :class:`CheckpointMismatchError`, naming what differs.
        """
        self._ensure_built()
        skipped: list[str] = []
        note = ""
        if path is not None:
            chosen = Path(path)
            if not _readable(chosen):
                raise CheckpointError(f"{display_path(chosen, keep_outside=True)} is missing or damaged")
        else:
            candidates, note = self._candidates()
            found: Path | None = None
            for candidate in candidates:
                if _readable(candidate):
                    found = candidate
                    break
                skipped.append(candidate.name)
            if found is None and skipped:
                # Starting afresh would let the next save prune these files: refuse instead.
                raise CheckpointError(
                    f"every checkpoint in {display_path(self.directory, keep_outside=True)} is damaged ({', '.join(skipped)}); "
                    "move them aside to start afresh, or restore one explicitly"
                )
            if found is None:
                where = display_path(self.directory, keep_outside=True)
                detail = f" ({note.removesuffix('; ')})" if note else ""
                return RestoreInfo(self.step, None, f"no checkpoint in {where}{detail}: starting at step {self.step}")
            chosen = found
        try:
            status = self.checkpoint.read(str(chosen))
            status.assert_consumed()
        except (ValueError, AssertionError) as error:
            raise CheckpointMismatchError(
                f"{display_path(chosen, keep_outside=True)} does not match the model/optimizer being restored: {_mismatch_summary(error)}"
            ) from error
        message = f"restored {chosen.name} from {display_path(chosen.parent, keep_outside=True)} at step {self.step}"
        if skipped or note:
            message += f" ({note}skipped damaged: {', '.join(skipped) or 'none'})"
        return RestoreInfo(self.step, str(chosen), message, tuple(skipped))


def describe(prefix: str | Path) -> dict[str, tuple[int, ...]]:
    """``{variable key: shape}`` of a checkpoint, without the object-graph entry."""
    return {name: tuple(shape) for name, shape in tf.train.list_variables(str(prefix)) if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def all_variables_equal(first: Iterable[tf.Variable], second: Iterable[tf.Variable]) -> bool:
    """True when both sequences hold variables with bit-identical values, pairwise."""
    first, second = list(first), list(second)
    return len(first) == len(second) and all(
        a.shape == b.shape and a.dtype == b.dtype and a.numpy().tobytes() == b.numpy().tobytes() for a, b in zip(first, second, strict=True)
    )


#: The suffix TensorFlow gives every saved variable's key: ``optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE``.
VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def key_tree(keys: Iterable[str]) -> dict[str, Any]:
    """The object paths of a checkpoint's keys as nested dicts, leaves ``None``; the object-graph entry left out.

    ``["optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE"]`` gives ``{"optimizer": {"_iterations": None}}``.
    """
    tree: dict[str, Any] = {}
    for key in keys:
        if key == "_CHECKPOINTABLE_OBJECT_GRAPH":
            continue
        *parents, leaf = key.removesuffix(VALUE_SUFFIX).split("/")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = None
    return tree


def draw_key_tree(variables: Iterable[tuple[str, Sequence[int]]], *, notes: dict[str, str] | None = None, title: str = "", ax: Any = None) -> Any:
    """Draw a checkpoint's keys (``tf.train.list_variables``) as the tree of object paths they spell; return the figure.

    The root is on the left, each saved value a leaf on the right labelled with its shape, and with
    ``notes[path]`` when given (``path`` is the key without :data:`VALUE_SUFFIX`).
    """
    notes = notes or {}
    import matplotlib.pyplot as plt  # only this function draws

    shapes = {key.removesuffix(VALUE_SUFFIX): list(shape) for key, shape in variables}
    tree = key_tree(shapes)
    if not tree:
        raise ValueError("the checkpoint holds no saved value: nothing to draw")
    leaves = sum(1 for key in shapes if key != "_CHECKPOINTABLE_OBJECT_GRAPH")
    if ax is None:
        figure, ax = plt.subplots(figsize=(9, 0.32 * leaves + 1))
    else:
        figure = ax.get_figure(root=True)
    next_row = [0]

    def place(name: str, children: dict[str, Any] | None, depth: int, path: str) -> float:
        if children is None:
            y: float = -next_row[0]
            next_row[0] += 1
            ax.text(depth, y, f"{name}  {shapes.get(path, '')}  {notes.get(path, '')}".rstrip(), va="center", fontsize=9, family="monospace")
            return y
        rows = [place(child, grandchildren, depth + 1, f"{path}/{child}".lstrip("/")) for child, grandchildren in children.items()]
        y = (rows[0] + rows[-1]) / 2
        for row in rows:
            ax.plot([depth + 0.05, depth + 0.5, depth + 0.5, depth + 0.95], [y, y, row, row], color="0.6", linewidth=1)
        ax.text(depth, y, name, va="center", ha="right", fontsize=10, fontweight="bold", bbox={"facecolor": "white", "edgecolor": "0.6"})
        return y

    place("(root)", tree, 0, "")
    depth = max(key.count("/") for key in tree_paths(tree)) + 1
    ax.set_xlim(-0.9, depth + (3.2 if notes else 1.6))
    ax.set_ylim(-next_row[0] + 0.5, 0.5)
    ax.axis("off")
    if title:
        ax.set_title(title)
    figure.tight_layout()
    return figure


def tree_paths(tree: dict[str, Any], prefix: str = "") -> list[str]:
    """Every leaf's path in a :func:`key_tree`: ``{"a": {"b": None}}`` gives ``["a/b"]``."""
    paths: list[str] = []
    for name, children in tree.items():
        path = f"{prefix}/{name}" if prefix else name
        paths += [path] if children is None else tree_paths(children, path)
    return paths
