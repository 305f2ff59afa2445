"""helpers.train.results: the fingerprint that proves an exact resume."""

from __future__ import annotations

import numpy as np

from helpers import train as training


class Value:
    """Anything with ``numpy()``, as a variable has."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def numpy(self) -> np.ndarray:
        return self.array


def test_fingerprint_depends_on_every_byte_and_on_the_shape() -> None:
    base = [Value(np.zeros(3, np.float32)), Value(np.ones(2, np.int64))]
    changed = [Value(np.array([0, 0, 1e-30], np.float32)), Value(np.ones(2, np.int64))]
    reshaped = [Value(np.zeros((3, 1), np.float32)), Value(np.ones(2, np.int64))]
    assert training.fingerprint(base) == training.fingerprint(list(base))
    assert len({training.fingerprint(base), training.fingerprint(changed), training.fingerprint(reshaped)}) == 3
    assert len(training.fingerprint(base)) == 64
