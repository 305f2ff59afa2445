"""Regenerate data/digits.npz from scikit-learn's bundled copy of the UCI digits.

    python data/make_digits.py          # write data/digits.npz, print its sha256 and class counts
    python data/make_digits.py --check  # rebuild in memory and compare with the file on disk

No network is used: scikit-learn ships these 1,797 images inside its package. The written
bytes depend only on the data (fixed zip timestamps), so the sha256 is stable.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.data import DIGITS_PATH, sha256_of, write_npz_deterministic


def build_arrays() -> dict[str, np.ndarray]:
    """images (1797, 8, 8) uint8 in 0..16 and labels (1797,) uint8, in scikit-learn's order."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = bunch.images.astype(np.uint8)
    if not np.array_equal(images, bunch.images):
        raise SystemExit("scikit-learn's digits are no longer whole numbers 0..16; refusing to round them")
    return {"images": images, "labels": bunch.target.astype(np.uint8)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare a fresh build with the file on disk; write nothing")
    parser.add_argument("--output", type=Path, default=DIGITS_PATH, help="where to write (default: data/digits.npz)")
    args = parser.parse_args(argv)
    arrays = build_arrays()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = write_npz_deterministic(Path(tmp) / "digits.npz", **arrays)
        on_disk = sha256_of(args.output) if args.output.is_file() else "missing"
        print(f"fresh {fresh}\nfile  {on_disk}")
        return 0 if fresh == on_disk else 1
    digest = write_npz_deterministic(args.output, **arrays)
    counts = np.bincount(arrays["labels"], minlength=10)
    print(f"wrote {args.output.name}: images {arrays['images'].shape} {arrays['images'].dtype}, labels {arrays['labels'].shape}")
    print("class counts:", ", ".join(f"{digit}: {count}" for digit, count in enumerate(counts)))
    print("sha256", digest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
