"""The benchmarks' framework: sides measured alternately, ratios per repetition, and the page they make.

A comparison runs two or more *sides* (zero-argument callables that each return one measured value:
seconds or milliseconds for a fixed amount of work, or a rate) in the same process, one after the
other, for several repetitions. The order rotates every repetition (``A B C``, then ``B C A``, then
``C A B``), so no side always runs first, right after a warm-up or a garbage collection. On a shared,
noisy machine the absolute values drift with the load; the ratio of two sides measured moments apart
drifts much less. So the ratio is taken *per repetition* (the side's sample over the baseline's sample
of the same repetition, or the inverse for a speed-up), and its median, min and max are reported.

:func:`compare` measures one comparison into a :class:`Comparison`; :func:`markdown_table`,
:func:`markdown_page` and :func:`draw` render a list of them; :func:`machine` describes the machine
for the page. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import platform
import shutil
import statistics
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from helpers.environment import installed_version

#: How a ratio is formed from the two samples of one repetition: ``baseline/side`` is a speed-up when
#: the values are times (above 1: the side is faster), ``side/baseline`` is "times the baseline".
RatioKind = Literal["baseline/side", "side/baseline"]
SPEEDUP: RatioKind = "baseline/side"
TIMES: RatioKind = "side/baseline"

Side = Callable[[], float]


def rotation(names: Sequence[str], repetition: int) -> list[str]:
    """The order of the sides in repetition ``repetition`` (0-based): ``names`` rotated left by that many."""
    if not names:
        return []
    shift = repetition % len(names)
    return [*names[shift:], *names[:shift]]


def _checked(name: str, value: object) -> float:
    """A side's measured value as a float; a value that is not a positive finite number raises ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"side {name!r} returned {value!r}, not a number")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"side {name!r} returned {number!r}; a measured value must be positive and finite")
    return number


def alternate(sides: Mapping[str, Side], repeats: int, *, warmup: bool = True) -> tuple[dict[str, list[float]], list[list[str]]]:
    """Call each side once per repetition, in rotating order; return the samples per side and the orders used.

    With ``warmup`` each side is first called once, in the listed order, and that value is discarded
    (first calls pay for tracing, caches and lazy imports).
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}")
    if not sides:
        raise ValueError("a comparison needs at least one side")
    names = list(sides)
    if warmup:
        for name in names:
            _checked(name, sides[name]())
    samples: dict[str, list[float]] = {name: [] for name in names}
    orders: list[list[str]] = []
    for repetition in range(repeats):
        order = rotation(names, repetition)
        orders.append(order)
        for name in order:
            samples[name].append(_checked(name, sides[name]()))
    return samples, orders


@dataclass(frozen=True)
class Stats:
    """Median, min and max of some samples."""

    median: float
    min: float
    max: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stats:
        if not samples:
            raise ValueError("no samples")
        return cls(float(statistics.median(samples)), float(min(samples)), float(max(samples)))

    def to_json(self) -> dict[str, float]:
        return {"median": self.median, "min": self.min, "max": self.max}


@dataclass
class Comparison:
    """One comparison's measurements: every sample of every side, in the order they were taken.

    ``samples[side][r]`` is the side's value in repetition ``r``; ``order[r]`` the order the sides ran
    in that repetition. ``unit`` is the unit of every value (``"ms"``, ``"s"``, ``"MB/s"``). The ratio of
    a side is formed per repetition against ``baseline`` as ``ratio_kind`` says, and ``ratio_label``
    names it on the page (``"speed-up"``, ``"× floor"``). ``details`` holds extra JSON values (sizes,
    counts), ``notes`` lines shown under the table.
    """

    section: str
    name: str
    unit: str
    baseline: str
    ratio_kind: RatioKind
    ratio_label: str
    samples: dict[str, list[float]]
    order: list[list[str]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.baseline not in self.samples:
            raise ValueError(f"baseline {self.baseline!r} is not one of the sides {list(self.samples)}")
        if self.ratio_kind not in (SPEEDUP, TIMES):
            raise ValueError(f"ratio_kind must be {SPEEDUP!r} or {TIMES!r}, got {self.ratio_kind!r}")
        counts = {len(values) for values in self.samples.values()}
        if len(counts) != 1 or 0 in counts:
            raise ValueError(f"every side needs the same, non-zero number of samples, got {({k: len(v) for k, v in self.samples.items()})}")

    @property
    def sides(self) -> list[str]:
        return list(self.samples)

    @property
    def repeats(self) -> int:
        return len(self.samples[self.baseline])

    def stats(self, side: str) -> Stats:
        return Stats.of(self.samples[side])

    def ratios(self, side: str) -> list[float]:
        """The side's ratio to the baseline in each repetition."""
        pairs = zip(self.samples[side], self.samples[self.baseline], strict=True)
        if self.ratio_kind == SPEEDUP:
            return [base / value for value, base in pairs]
        return [value / base for value, base in pairs]

    def ratio_stats(self, side: str) -> Stats:
        return Stats.of(self.ratios(side))

    def ratio_formula(self) -> str:
        """How the ratio is formed, in words: ``eager ÷ side`` or ``side ÷ floor``."""
        return f"{self.baseline} ÷ side" if self.ratio_kind == SPEEDUP else f"side ÷ {self.baseline}"

    @classmethod
    def from_json(cls, values: Mapping[str, Any]) -> Comparison:
        """The comparison :meth:`to_json` wrote (the samples are the data; the statistics are recomputed from them)."""
        return cls(
            section=values["section"],
            name=values["name"],
            unit=values["unit"],
            baseline=values["baseline"],
            ratio_kind=values["ratio"]["kind"],
            ratio_label=values["ratio"]["label"],
            samples={side: list(entry["samples"]) for side, entry in values["sides"].items()},
            order=[list(order) for order in values["order"]],
            details=dict(values["details"]),
            notes=list(values["notes"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "name": self.name,
            "unit": self.unit,
            "baseline": self.baseline,
            "ratio": {"kind": self.ratio_kind, "label": self.ratio_label},
            "repeats": self.repeats,
            "order": self.order,
            "sides": {
                side: {"samples": self.samples[side], **self.stats(side).to_json(), "ratio": {"samples": self.ratios(side), **self.ratio_stats(side).to_json()}}
                for side in self.sides
            },
            "details": self.details,
            "notes": self.notes,
        }


def compare(
    section: str,
    name: str,
    sides: Mapping[str, Side],
    *,
    baseline: str,
    unit: str,
    repeats: int,
    ratio_kind: RatioKind = SPEEDUP,
    ratio_label: str = "speed-up",
    warmup: bool = True,
    details: dict[str, Any] | None = None,
    notes: Sequence[str] = (),
) -> Comparison:
    """Measure ``sides`` alternately (:func:`alternate`) and return the :class:`Comparison`."""
    if baseline not in sides:
        raise ValueError(f"baseline {baseline!r} is not one of the sides {list(sides)}")
    samples, order = alternate(sides, repeats, warmup=warmup)
    return Comparison(section, name, unit, baseline, ratio_kind, ratio_label, samples, order, dict(details or {}), list(notes))


def seconds(function: Callable[[], object]) -> float:
    """Wall seconds of one call of ``function`` (``time.perf_counter``)."""
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def progress(message: str) -> None:
    """A progress line on stdout, flushed at once (a section can run for minutes)."""
    print(message, flush=True)


# -- rendering ----------------------------------------------------------------------------------
def format_value(value: float, unit: str = "") -> str:
    """``value`` with three significant digits (no exponent for everyday sizes), then the unit."""
    magnitude = abs(value)
    if magnitude >= 100:
        text = f"{value:.0f}"
    elif magnitude >= 10:
        text = f"{value:.1f}"
    elif magnitude >= 1:
        text = f"{value:.2f}"
    elif magnitude >= 0.001:
        text = f"{value:.3f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".rstrip()


def format_ratio(stats: Stats) -> str:
    """``8.21× [7.90–8.60]``: the median ratio, then min–max."""
    return f"{format_value(stats.median)}× [{format_value(stats.min)}–{format_value(stats.max)}]"


def markdown_table(results: Sequence[Comparison]) -> str:
    """One Markdown table: a row per side of every comparison (median value, runs, ratio median [min–max])."""
    lines = ["| comparison | side | median | n | ratio median [min–max] |", "|---|---|---:|---:|---|"]
    for result in results:
        for index, side in enumerate(result.sides):
            title = f"{result.section}: {result.name}" if index == 0 else ""
            if side == result.baseline:
                ratio = f"baseline ({result.ratio_label} = {result.ratio_formula()})"
            else:
                ratio = f"{result.ratio_label} {format_ratio(result.ratio_stats(side))}"
            lines.append(f"| {title} | {side} | {format_value(result.stats(side).median, result.unit)} | {result.repeats} | {ratio} |")
    return "\n".join(lines)


def markdown_page(results: Sequence[Comparison], machine_info: Mapping[str, Any], *, command: str = "", figure: str = "") -> str:
    """``results.md``: the machine, the command, the table and each comparison's notes."""
    lines = ["# Benchmarks", "", f"Machine: {describe_machine(machine_info)}."]
    if command:
        lines.append(f"Command: `{command}`.")
    lines += [
        "",
        "Each comparison runs its sides alternately in one process (the order rotates every repetition); a ratio is",
        "formed within each repetition, and its median, min and max over the repetitions are shown.",
        "",
        markdown_table(results),
    ]
    noted = [result for result in results if result.notes]
    if noted:
        lines += ["", "## Notes", ""]
        for result in noted:
            lines.append(f"- **{result.section}: {result.name}**")
            lines += [f"  - {note}" for note in result.notes]
    if figure:
        lines += ["", f"![medians with min–max per side]({figure})"]
    return "\n".join(lines) + "\n"


def draw(results: Sequence[Comparison], path: Path, *, columns: int = 3) -> Path:
    """Save a PNG with one subplot per comparison: each side's median as a bar, min–max as a whisker, and its ratio.

    Uses matplotlib's Agg canvas through :class:`matplotlib.figure.Figure`, so pyplot's global state
    (and the backend of a notebook or test process) is left alone.
    """
    from matplotlib.figure import Figure

    if not results:
        raise ValueError("nothing to draw")
    columns = max(1, min(columns, len(results)))
    rows = -(-len(results) // columns)
    figure = Figure(figsize=(5.2 * columns, 0.9 + 0.45 * max(len(result.sides) for result in results) * rows + 1.1 * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False)
    for axis in axes.flat[len(results):]:
        axis.set_axis_off()
    for axis, result in zip(axes.flat, results, strict=False):
        stats = [result.stats(side) for side in result.sides]
        medians = [item.median for item in stats]
        whiskers = [[item.median - item.min for item in stats], [item.max - item.median for item in stats]]
        colours = ["0.6" if side == result.baseline else "tab:blue" for side in result.sides]
        positions = list(range(len(result.sides)))
        axis.barh(positions, medians, xerr=whiskers, color=colours, capsize=3)
        axis.set_yticks(positions, [textwrap.shorten(side, 28, placeholder="…") for side in result.sides], fontsize=8)
        axis.invert_yaxis()
        axis.set_xlabel(result.unit, fontsize=8)
        axis.tick_params(axis="x", labelsize=8)
        axis.set_title("\n".join(textwrap.wrap(f"{result.section}: {result.name}", 48)), fontsize=9)
        for position, side, item in zip(positions, result.sides, stats, strict=True):
            label = "baseline" if side == result.baseline else f"{format_ratio(result.ratio_stats(side))}"
            axis.annotate(label, (item.max, position), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7)
        axis.margins(x=0.45)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path


# -- the machine ----------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine() or "unknown"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "Hardware") and value.strip():
            return value.strip()
    return platform.processor() or platform.machine() or "unknown"


def _ram_bytes() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def _version(*distributions: str) -> str:
    return installed_version(*distributions) or "not installed"


def machine() -> dict[str, Any]:
    """What the page says about the machine: CPU model, cores, RAM, load, Python, TensorFlow and Keras versions, date (UTC)."""
    ram = _ram_bytes()
    try:
        load: list[float] | None = [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "ram_gib": round(ram / 2**30, 1) if ram else None,
        "load_average": load,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "tensorflow": _version("tensorflow", "tensorflow-cpu", "tf-nightly"),
        "keras": _version("keras"),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def describe_machine(info: Mapping[str, Any]) -> str:
    """One line for the page: ``AMD EPYC, 2 cores, 23.5 GiB RAM, load 1.2 1.0 0.9; Python 3.11.2, ...``."""
    load = " ".join(f"{value:.2f}" for value in info.get("load_average") or []) or "unknown"
    return (
        f"{info.get('cpu')}, {info.get('cores')} cores, {info.get('ram_gib')} GiB RAM, load average at start {load}; "
        f"Python {info.get('python')}, TensorFlow {info.get('tensorflow')}, Keras {info.get('keras')}; {info.get('date')}"
    )


# -- what a section is given ---------------------------------------------------------------------
@dataclass(frozen=True)
class Options:
    """What ``python -m benchmarks.run`` passes to every section.

    ``repeats`` is ``None`` unless the user gave ``--repeats``: each section then uses its own default
    (:meth:`repeats_for`). ``quick`` asks for tiny sizes (the smoke test). ``notebooks`` holds the
    ``--notebooks`` selectors. ``out`` is the output folder; a section's temporary files go under
    :meth:`scratch`.
    """

    out: Path
    quick: bool = False
    repeats: int | None = None
    notebooks: tuple[str, ...] = ()

    def repeats_for(self, default: int, *, quick: int = 2) -> int:
        """``--repeats`` if given, else ``quick`` with ``--quick``, else the section's ``default``."""
        if self.repeats is not None:
            return self.repeats
        return quick if self.quick else default

    @contextlib.contextmanager
    def scratch(self, name: str) -> Iterator[Path]:
        """An empty folder ``<out>/scratch/<name>`` for the block, removed afterwards (with ``scratch/`` if left empty)."""
        parent = self.out / "scratch"
        folder = parent / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            with contextlib.suppress(OSError):
                parent.rmdir()

