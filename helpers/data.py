"""The bundled handwritten digits, checked, split and served as ``tf.data`` pipelines.

``data/digits.npz`` holds scikit-learn's copy of the UCI "Optical Recognition of Handwritten
Digits" test set: 1,797 images of 8x8 pixels with values 0..16 (see ``data/README.md``).
It is read offline and verified against :data:`DIGITS_SHA256` on every load.

The seed texts train on MNIST through ``keras.datasets.mnist.load_data()``, which downloads.
:func:`load_mnist` reads a local Keras-format ``mnist.npz`` when there is one and otherwise
falls back to the bundled digits, in the same array layout.

TensorFlow is imported only by the functions that build ``tf.data`` pipelines.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from helpers.paths import display_path, repo_root
from helpers.seeding import check_seed

if TYPE_CHECKING:  # pragma: no cover
    import tensorflow as tf

DIGITS_PATH = repo_root() / "data" / "digits.npz"
#: sha256 of data/digits.npz as written by data/make_digits.py (also in data/README.md).
DIGITS_SHA256 = "0c2aff3ad3efa4c983d74435f40847c3f2dea3c33f362c61616f7b067d84c8fe"
NUM_CLASSES = 10
#: Pixel values in the bundled digits run from 0 to this (UCI counts of set pixels in 4x4 blocks).
DIGITS_MAX_VALUE = 16
REGENERATE_HINT = "regenerate it with `python data/make_digits.py` (needs scikit-learn, no network)"
MNIST_KEYS = ("x_train", "y_train", "x_test", "y_test")


class DataError(RuntimeError):
    """A data file is missing, corrupted, or not in the expected format."""


@dataclass(frozen=True)
class Digits:
    """Images ``(n, 8, 8)`` uint8 in 0..16 and labels ``(n,)`` uint8 in 0..9."""

    images: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def class_counts(self) -> dict[int, int]:
        """How many examples of each digit, in label order."""
        values, counts = np.unique(self.labels, return_counts=True)
        return {int(value): int(count) for value, count in zip(values, counts, strict=True)}


@dataclass(frozen=True)
class Split:
    """A train/validation split with images scaled to float32 in [0, 1] and int32 labels."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


def sha256_of(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def write_npz_deterministic(path: str | os.PathLike[str], **arrays: np.ndarray) -> str:
    """Write an uncompressed ``.npz`` whose bytes depend only on the arrays; return its sha256.

    ``numpy.savez`` stamps the current time into the zip entries, so its checksum changes on
    every write; here each entry gets a fixed timestamp and the entries are sorted by name.
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name in sorted(arrays):
            payload = io.BytesIO()
            np.lib.format.write_array(payload, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, payload.getvalue())
    Path(path).write_bytes(buffer.getvalue())
    return hashlib.sha256(buffer.getvalue()).hexdigest()


def load_digits(path: str | os.PathLike[str] | None = None, *, expected_sha256: str | None = DIGITS_SHA256) -> Digits:
    """Load and verify the bundled digits.

    A missing file or a checksum mismatch raises :class:`DataError` that says how to
    regenerate the file. Pass ``expected_sha256=None`` to skip the checksum (tests do, on
    files they make).
    """
    path = Path(DIGITS_PATH if path is None else path)
    if not path.is_file():
        raise DataError(f"{display_path(path)} is missing; {REGENERATE_HINT}")
    if expected_sha256 is not None:
        actual = sha256_of(path)
        if actual != expected_sha256:
            raise DataError(
                f"{display_path(path)} is corrupted or changed (sha256 {actual[:12]}..., "
                f"expected {expected_sha256[:12]}...); {REGENERATE_HINT}"
            )
    try:
        with np.load(path, allow_pickle=False) as archive:
            images, labels = archive["images"], archive["labels"]
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as exc:
        raise DataError(f"{display_path(path)} is not a digits archive ({exc}); {REGENERATE_HINT}") from exc
    if images.ndim != 3 or images.shape[0] != labels.shape[0] or images.dtype != np.uint8 or labels.dtype != np.uint8:
        raise DataError(
            f"{display_path(path)} has images {images.shape} {images.dtype} and labels "
            f"{labels.shape} {labels.dtype}; expected (n, 8, 8) uint8 and (n,) uint8"
        )
    return Digits(images=images, labels=labels)


def _check_fraction(validation_fraction: float) -> None:
    if isinstance(validation_fraction, bool) or not isinstance(validation_fraction, (int, float)) or not 0 < validation_fraction < 1:
        raise ValueError(f"validation_fraction must be a number strictly between 0 and 1, got {validation_fraction!r}")


def _check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def split_digits(digits: Digits | None = None, *, validation_fraction: float = 0.2, seed: int = 0) -> Split:
    """Shuffle with ``seed`` and split; each class is split in the same proportion (stratified).

    Images are scaled to float32 in [0, 1]; labels become int32.
    """
    _check_fraction(validation_fraction)
    check_seed(seed)
    digits = load_digits() if digits is None else digits
    rng = np.random.default_rng(seed)
    train_index: list[np.ndarray] = []
    val_index: list[np.ndarray] = []
    for label in np.unique(digits.labels):
        members = rng.permutation(np.flatnonzero(digits.labels == label))
        n_val = max(1, int(round(validation_fraction * members.size)))
        if n_val >= members.size:
            raise ValueError(f"validation_fraction={validation_fraction} leaves no training example of class {int(label)}")
        val_index.append(members[:n_val])
        train_index.append(members[n_val:])
    train = rng.permutation(np.concatenate(train_index))
    val = rng.permutation(np.concatenate(val_index))
    scaled = digits.images.astype(np.float32) / DIGITS_MAX_VALUE
    labels = digits.labels.astype(np.int32)
    return Split(x_train=scaled[train], y_train=labels[train], x_val=scaled[val], y_val=labels[val])


def make_datasets(
    *,
    batch_size: int = 64,
    seed: int = 0,
    validation_fraction: float = 0.2,
    shuffle_buffer: int | None = None,
    digits: Digits | None = None,
) -> tuple[tf.data.Dataset, tf.data.Dataset]:
    """Deterministic ``(train, validation)`` pipelines of ``(images, labels)`` batches.

    The training set is reshuffled every epoch from ``seed``: every new iterator over the
    returned dataset is the next epoch, in a new order. Two pipelines made with the same seed
    give the same sequence of epochs (so two runs that must see the same batches each make
    their own pipeline; iterating one dataset again continues its sequence). ``shuffle_buffer``
    defaults to the whole training set (a full shuffle). The validation set is never shuffled.
    Bad arguments raise ``ValueError`` naming the argument.
    """
    _check_positive_int("batch_size", batch_size)
    check_seed(seed)
    _check_fraction(validation_fraction)
    if shuffle_buffer is not None:
        _check_positive_int("shuffle_buffer", shuffle_buffer)
    split = split_digits(digits, validation_fraction=validation_fraction, seed=seed)

    import tensorflow as tf

    buffer = len(split.y_train) if shuffle_buffer is None else int(shuffle_buffer)
    train = (
        tf.data.Dataset.from_tensor_slices((split.x_train, split.y_train))
        .shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
        .batch(int(batch_size))
    )
    validation = tf.data.Dataset.from_tensor_slices((split.x_val, split.y_val)).batch(int(batch_size))
    return train, validation


def keras_mnist_cache_path() -> Path:
    """Where ``keras.datasets.mnist.load_data()`` keeps ``mnist.npz`` (``$KERAS_HOME`` or ``~/.keras``)."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return Path(home) / "datasets" / "mnist.npz"


def read_mnist_npz(path: str | os.PathLike[str]) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Read a Keras-format ``mnist.npz``: ``((x_train, y_train), (x_test, y_test))``.

    The file must hold ``x_train``, ``y_train``, ``x_test``, ``y_test``; images
    ``(n, height, width)`` uint8, labels ``(n,)`` uint8 as Keras ships them. Anything else
    raises :class:`DataError` saying what is wrong.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"no MNIST file at {display_path(path)}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [key for key in MNIST_KEYS if key not in archive.files]
            if missing:
                raise DataError(f"{display_path(path)} lacks {', '.join(missing)}; a Keras mnist.npz holds {', '.join(MNIST_KEYS)}")
            arrays = {key: archive[key] for key in MNIST_KEYS}
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise DataError(f"{display_path(path)} is not a readable .npz file ({exc})") from exc
    for part in ("train", "test"):
        images, labels = arrays[f"x_{part}"], arrays[f"y_{part}"]
        if images.ndim != 3 or images.dtype != np.uint8:
            raise DataError(f"x_{part} must be (n, height, width) uint8, got {images.shape} {images.dtype}")
        if labels.ndim != 1 or labels.dtype != np.uint8 or labels.shape[0] != images.shape[0]:
            raise DataError(f"y_{part} must be ({images.shape[0]},) uint8, got {labels.shape} {labels.dtype}")
    return (arrays["x_train"], arrays["y_train"]), (arrays["x_test"], arrays["y_test"])


def load_mnist(
    path: str | os.PathLike[str] | None = None, *, verbose: bool = True
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """MNIST without a download: ``((x_train, y_train), (x_test, y_test))`` as Keras returns it.

    - ``path`` given: that file is read (an error if it is missing or malformed).
    - else, if Keras's cache holds ``mnist.npz`` (see :func:`keras_mnist_cache_path`), it is read.
    - else the bundled 8x8 digits stand in, rescaled to 0..255 uint8 and split 80/20, with a
      one-line message. Code written for MNIST (``x / 255.0``, ten classes) runs unchanged.
    """
    if path is not None:
        return read_mnist_npz(path)
    cached = keras_mnist_cache_path()
    if cached.is_file():
        return read_mnist_npz(cached)
    digits = load_digits()
    split = split_digits(digits, validation_fraction=0.2, seed=0)
    to_bytes = lambda images: np.round(images * 255).astype(np.uint8)  # noqa: E731
    if verbose:
        print(f"No local mnist.npz; using the bundled 8x8 digits ({len(digits)} images) in MNIST's layout.")
    return (
        (to_bytes(split.x_train), split.y_train.astype(np.uint8)),
        (to_bytes(split.x_val), split.y_val.astype(np.uint8)),
    )
