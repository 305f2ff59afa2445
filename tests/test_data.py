"""helpers.data: checksum, loading, splitting, tf.data pipelines, the MNIST loader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import data


def test_bundled_digits_load_and_match_the_data_card() -> None:
    digits = data.load_digits()
    assert digits.images.shape == (1797, 8, 8) and digits.images.dtype == np.uint8
    assert digits.labels.shape == (1797,) and digits.labels.dtype == np.uint8
    assert int(digits.images.max()) == data.DIGITS_MAX_VALUE and int(digits.images.min()) == 0
    counts = digits.class_counts()
    assert sorted(counts) == list(range(10)) and sum(counts.values()) == 1797
    card = (data.DIGITS_PATH.parent / "README.md").read_text()
    assert data.DIGITS_SHA256 in card
    assert ", ".join(f"{k}: {v}" for k, v in counts.items()) in card


def test_regenerating_gives_the_same_bytes(tmp_path: Path) -> None:
    import importlib.util

    import sklearn  # noqa: F401  (pinned in requirements.txt: a broken install fails here, it is not skipped)

    spec = importlib.util.spec_from_file_location("make_digits", data.DIGITS_PATH.parent / "make_digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--output", str(tmp_path / "digits.npz")]) == 0
    assert data.sha256_of(tmp_path / "digits.npz") == data.DIGITS_SHA256


def test_missing_file_says_how_to_regenerate(tmp_path: Path) -> None:
    with pytest.raises(data.DataError, match="missing; regenerate it with `python data/make_digits.py`"):
        data.load_digits(tmp_path / "digits.npz")


def test_corrupted_file_is_refused(tmp_path: Path) -> None:
    corrupted = tmp_path / "digits.npz"
    payload = bytearray(data.DIGITS_PATH.read_bytes())
    payload[-100] ^= 0xFF
    corrupted.write_bytes(bytes(payload))
    with pytest.raises(data.DataError, match="corrupted or changed .*make_digits.py"):
        data.load_digits(corrupted)


def test_wrong_layout_is_refused_even_without_checksum(tmp_path: Path) -> None:
    path = tmp_path / "digits.npz"
    data.write_npz_deterministic(path, images=np.zeros((3, 8, 8), np.float32), labels=np.zeros(3, np.uint8))
    with pytest.raises(data.DataError, match="expected \\(n, 8, 8\\) uint8"):
        data.load_digits(path, expected_sha256=None)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(data.DataError, match="not a digits archive"):
        data.load_digits(tmp_path / "junk.npz", expected_sha256=None)


def test_write_npz_deterministic_is_byte_stable(tmp_path: Path) -> None:
    arrays = {"b": np.arange(5), "a": np.eye(2)}
    first = data.write_npz_deterministic(tmp_path / "1.npz", **arrays)
    second = data.write_npz_deterministic(tmp_path / "2.npz", **dict(reversed(list(arrays.items()))))
    assert first == second == data.sha256_of(tmp_path / "1.npz")
    with np.load(tmp_path / "1.npz") as loaded:
        np.testing.assert_array_equal(loaded["b"], np.arange(5))


def test_split_is_stratified_scaled_and_seeded() -> None:
    split = data.split_digits(validation_fraction=0.2, seed=0)
    sizes = (len(split.y_train), len(split.y_val))
    assert sizes == (1438, 359), sizes  # 20 % of each class, rounded (data/README.md)
    assert split.x_train.dtype == np.float32 and 0.0 <= split.x_train.min() and split.x_train.max() == 1.0
    train_counts, val_counts = np.bincount(split.y_train), np.bincount(split.y_val)
    assert np.all(np.abs(val_counts / (train_counts + val_counts) - 0.2) < 0.01)
    again, other = data.split_digits(seed=0), data.split_digits(seed=1)
    np.testing.assert_array_equal(split.y_val, again.y_val)
    assert not np.array_equal(split.y_val, other.y_val)
    # No example is in both parts: the union of rows is the whole data set.
    rows = {row.tobytes() for row in np.concatenate([split.x_train, split.x_val]).reshape(1797, -1)}
    everything = {row.tobytes() for row in (data.load_digits().images / 16).astype(np.float32).reshape(1797, -1)}
    assert rows == everything


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"batch_size": True}, "batch_size"),
        ({"seed": -1}, "seed"),
        ({"seed": "0"}, "seed"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"validation_fraction": 0}, "validation_fraction"),
        ({"shuffle_buffer": 0}, "shuffle_buffer"),
    ],
)
def test_make_datasets_names_the_bad_argument(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} must"):
        data.make_datasets(**kwargs)


def test_make_datasets_is_deterministic_and_reshuffles_each_epoch() -> None:
    train, validation = data.make_datasets(batch_size=100, seed=3)
    labels = lambda dataset: np.concatenate([y.numpy() for _, y in dataset])  # noqa: E731
    epoch_one, epoch_two = labels(train), labels(train)
    assert epoch_one.shape == (1438,) and sorted(epoch_one) == sorted(epoch_two)
    assert not np.array_equal(epoch_one, epoch_two)  # reshuffled
    train_again, _ = data.make_datasets(batch_size=100, seed=3)
    np.testing.assert_array_equal(labels(train_again), epoch_one)  # same seed, same order
    np.testing.assert_array_equal(labels(validation), labels(validation))  # never shuffled
    images, _ = next(iter(train))
    assert tuple(images.shape) == (100, 8, 8) and images.dtype.name == "float32"


def _write_fake_mnist(path: Path, n_train: int = 12, n_test: int = 5, **overrides: np.ndarray) -> None:
    rng = np.random.default_rng(0)
    arrays = {
        "x_train": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "y_train": rng.integers(0, 10, n_train, dtype=np.uint8),
        "x_test": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "y_test": rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    arrays.update(overrides)
    np.savez(path, **arrays)


def test_load_mnist_reads_a_given_keras_format_file(tmp_path: Path) -> None:
    path = tmp_path / "mnist.npz"
    _write_fake_mnist(path)
    (x_train, y_train), (x_test, y_test) = data.load_mnist(path)
    assert x_train.shape == (12, 28, 28) and x_train.dtype == np.uint8
    assert y_train.shape == (12,) and x_test.shape == (5, 28, 28) and y_test.dtype == np.uint8


def test_load_mnist_uses_the_keras_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    (tmp_path / "datasets").mkdir()
    _write_fake_mnist(tmp_path / "datasets" / "mnist.npz", n_train=7)
    (x_train, _), _ = data.load_mnist()
    assert x_train.shape == (7, 28, 28)


def test_load_mnist_falls_back_to_digits_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    (x_train, y_train), (x_test, y_test) = data.load_mnist()
    message = capsys.readouterr().out
    assert message.count("\n") == 1 and "bundled 8x8 digits" in message
    assert x_train.dtype == np.uint8 and x_train.max() == 255 and x_train.shape[1:] == (8, 8)
    assert len(x_train) + len(x_test) == 1797 and set(np.unique(y_test)) == set(range(10))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"x_train": np.zeros((12, 28, 28), np.float32)}, "x_train must be"),
        ({"y_test": np.zeros(4, np.uint8)}, "y_test must be"),
    ],
)
def test_load_mnist_rejects_malformed_files(tmp_path: Path, overrides: dict, message: str) -> None:
    path = tmp_path / "mnist.npz"
    _write_fake_mnist(path, **overrides)
    with pytest.raises(data.DataError, match=message):
        data.load_mnist(path)


def test_load_mnist_reports_missing_keys_and_files(tmp_path: Path) -> None:
    path = tmp_path / "partial.npz"
    np.savez(path, x_train=np.zeros((1, 28, 28), np.uint8))
    with pytest.raises(data.DataError, match="lacks y_train, x_test, y_test"):
        data.load_mnist(path)
    with pytest.raises(data.DataError, match="no MNIST file"):
        data.load_mnist(tmp_path / "absent.npz")
