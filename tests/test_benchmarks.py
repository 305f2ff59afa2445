"""benchmarks/: the framework's alternation and ratio math on fake sides, and a smoke run of the script with tiny sizes."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from benchmarks import measure, notebooks, run
from benchmarks.measure import SPEEDUP, TIMES, Comparison, Stats


def _counter(log: list[str], name: str, values: list[float]) -> measure.Side:
    """A fake side: records its name in ``log`` and returns the next of ``values``."""
    remaining = iter(values)

    def side() -> float:
        log.append(name)
        return next(remaining)

    return side


def test_rotation_gives_every_side_the_first_place() -> None:
    names = ["a", "b", "c"]
    assert [measure.rotation(names, repetition) for repetition in range(4)] == [
        ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"],
    ]
    assert measure.rotation([], 3) == []


def test_alternate_warms_up_then_alternates() -> None:
    log: list[str] = []
    sides = {"a": _counter(log, "a", [99, 1, 2, 3]), "b": _counter(log, "b", [99, 10, 20, 30])}
    samples, order = measure.alternate(sides, 3)
    assert log == ["a", "b", "a", "b", "b", "a", "a", "b"]  # warm-up in listed order, then AB, BA, AB
    assert order == [["a", "b"], ["b", "a"], ["a", "b"]]
    assert samples == {"a": [1.0, 2.0, 3.0], "b": [10.0, 20.0, 30.0]}  # the warm-up values are dropped

    log.clear()
    samples, _ = measure.alternate({"a": _counter(log, "a", [5, 6]), "b": _counter(log, "b", [7, 8])}, 2, warmup=False)
    assert log == ["a", "b", "b", "a"] and samples == {"a": [5.0, 6.0], "b": [7.0, 8.0]}


def test_ratios_are_formed_per_repetition() -> None:
    samples = {"base": [10.0, 20.0, 30.0], "fast": [5.0, 5.0, 10.0]}
    speedup = Comparison("s", "c", "ms", "base", SPEEDUP, "speed-up", samples)
    assert speedup.ratios("fast") == [2.0, 4.0, 3.0]
    assert speedup.ratio_stats("fast") == Stats(3.0, 2.0, 4.0)
    # not the ratio of the medians (20 / 5 = 4): each repetition's pair is compared
    assert speedup.stats("base").median / speedup.stats("fast").median == 4.0
    assert speedup.ratio_stats("base") == Stats(1.0, 1.0, 1.0)

    times = Comparison("s", "c", "ms", "base", TIMES, "× base", samples)
    assert times.ratios("fast") == [0.5, 0.25, pytest.approx(1 / 3)]
    assert times.ratio_stats("fast").median == pytest.approx(1 / 3)
    assert (times.ratio_stats("fast").min, times.ratio_stats("fast").max) == (0.25, 0.5)
    assert Stats.of([4.0, 1.0, 3.0, 2.0]) == Stats(2.5, 1.0, 4.0)  # even count: the mean of the middle two


def test_compare_and_to_json() -> None:
    log: list[str] = []
    result = measure.compare(
        "sec", "fake", {"slow": _counter(log, "slow", [8, 8, 6]), "quick": _counter(log, "quick", [1, 2, 3])},
        baseline="slow", unit="s", repeats=2, warmup=False, details={"size": 3}, notes=["a note"],
    )
    document = json.loads(json.dumps(result.to_json(), allow_nan=False))
    assert document["repeats"] == 2 and document["order"] == [["slow", "quick"], ["quick", "slow"]]
    assert document["sides"]["quick"]["samples"] == [1.0, 2.0]
    assert document["sides"]["quick"]["ratio"]["samples"] == [8.0, 4.0]
    assert document["sides"]["quick"]["ratio"]["median"] == 6.0
    assert document["ratio"] == {"kind": SPEEDUP, "label": "speed-up"} and document["details"] == {"size": 3}


@pytest.mark.parametrize("value", [0, -1.0, math.nan, math.inf, "1", None, True])
def test_a_side_must_return_a_positive_finite_number(value: object) -> None:
    with pytest.raises(ValueError, match="side 'x'"):
        measure.alternate({"x": lambda: value}, 1, warmup=False)  # type: ignore[dict-item, return-value]


def test_bad_comparisons_are_refused() -> None:
    with pytest.raises(ValueError, match="repeats must be a positive int"):
        measure.alternate({"x": lambda: 1.0}, 0)
    with pytest.raises(ValueError, match="baseline 'y' is not one of the sides"):
        measure.compare("s", "c", {"x": lambda: 1.0}, baseline="y", unit="s", repeats=1)
    with pytest.raises(ValueError, match="same, non-zero number of samples"):
        Comparison("s", "c", "s", "x", TIMES, "×", {"x": [1.0, 2.0], "y": [1.0]})


def test_markdown_table_has_a_row_per_side() -> None:
    first = Comparison("s", "one", "ms", "a", SPEEDUP, "speed-up", {"a": [10.0, 12.0], "b": [1.0, 2.0]})
    second = Comparison("t", "two", "s", "f", TIMES, "× floor", {"f": [2.0], "n": [7.0], "m": [3.0]})
    lines = measure.markdown_table([first, second]).splitlines()
    assert len(lines) == 2 + 5
    assert lines[2] == "| s: one | a | 11.0 ms | 2 | baseline (speed-up = a ÷ side) |"
    assert lines[3] == "|  | b | 1.50 ms | 2 | speed-up 8.00× [6.00–10.0] |"
    assert lines[5] == "|  | n | 7.00 s | 1 | × floor 3.50× [3.50–3.50] |"
    assert [measure.format_value(value, "s") for value in (1234.5, 0.0123, 0.00004)] == ["1234 s", "0.012 s", "4e-05 s"]


def test_machine_description() -> None:
    info = measure.machine()
    assert info["cores"] and info["cores"] >= 1
    assert info["python"].count(".") == 2 and info["tensorflow"][0].isdigit() and info["keras"][0].isdigit()
    assert "cores" in measure.describe_machine(info)


def test_cli_refuses_bad_arguments(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--notebooks", "77", "--out", str(tmp_path)])
    assert exit_info.value.code == 2 and "no notebook matches '77'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run.main(["--repeats", "0", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        run.main(["--only", "nothing"])
    assert not any(tmp_path.iterdir())


@pytest.mark.process  # the notebooks section starts Jupyter kernels
def test_quick_run_writes_json_markdown_and_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_dir_before = os.environ.get("WORKBOOK_BUILD_DIR")
    sections = list(run.SECTIONS)
    assert sections == ["loop", "instrumentation", "function", "checkpoint", "notebooks"]  # the order
    assert run.main(["--quick", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert os.environ.get("WORKBOOK_BUILD_DIR") == build_dir_before  # the notebooks section restored it

    document = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert document["quick"] is True and document["sections"] == sections
    results = document["results"]
    assert {result["section"] for result in results} == set(sections)
    rows = 0
    for result in results:
        assert result["repeats"] == 2 and len(result["order"]) == 2
        assert result["baseline"] in result["sides"]
        for side, values in result["sides"].items():
            rows += 1
            assert len(values["samples"]) == 2, (result["name"], side)
            assert all(value > 0 and math.isfinite(value) for value in values["samples"])
            assert all(value > 0 and math.isfinite(value) for value in values["ratio"]["samples"])
            assert values["ratio"]["min"] <= values["ratio"]["median"] <= values["ratio"]["max"]
    names = {result["name"] for result in results}
    assert "00_tiny" in names and any("async" in name for name in names) and any("one training step" in name for name in names)
    assert any("model.fit" in name for name in names) and sum("overhead by" in name for name in names) == 2
    assert sum("enable_check_numerics" in name for name in names) == 2 and sum("chapter 05" in name for name in names) == 2
    tiny = next(result for result in results if result["name"] == "00_tiny")
    assert tiny["details"]["dominant_cells"][0]["first_line"] == "total = sum(range(100_000))"

    table = measure.markdown_table([])  # header only
    page = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert table in page and table in printed
    body = [line for line in page.splitlines() if line.startswith("| ") and line not in table.splitlines()]
    assert len(body) == rows  # a row per side of every comparison
    assert "Machine: " in page and "![" in page
    assert (tmp_path / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "executed" / "00_tiny.ipynb").is_file()
    assert not (tmp_path / "scratch").exists()  # checkpoints and the notebooks' build folder are removed


@pytest.mark.process
def test_a_failing_notebook_is_marked_and_the_run_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(notebooks, "QUICK_NOTEBOOK_SOURCE", "raise ValueError('boom')")
    assert run.main(["--quick", "--only", "notebooks", "--repeats", "1", "--out", str(tmp_path)]) == 1
    assert "FAILED notebooks: 00_tiny (FAILED): cell [1] `raise ValueError('boom')`: ValueError: boom" in capsys.readouterr().err
    (result,) = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["results"]
    assert result["name"] == "00_tiny (FAILED)" and len(result["details"]["failed"]) == 1
    assert "| notebooks: 00_tiny (FAILED) |" in (tmp_path / "results.md").read_text(encoding="utf-8")


def test_the_published_page_shows_the_published_run() -> None:
    """benchmarks/README.md quotes the table of benchmarks/results.json exactly: the numbers have one home, the run."""
    folder = Path(run.__file__).parent
    document = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    results = [measure.Comparison.from_json(result) for result in document["results"]]
    assert [result.to_json() for result in results] == document["results"]  # a full round trip, statistics included
    page = (folder / "README.md").read_text(encoding="utf-8")
    assert measure.markdown_table(results) in page, "benchmarks/README.md's table is not the one benchmarks/results.json gives"
    assert document["sections"] == list(run.SECTIONS) and not document["quick"]
    assert (folder / "results.png").is_file()


def test_the_profile_table_keeps_the_largest_differences_first() -> None:
    from benchmarks import profile

    bare, capstone = {"Process": 100.0, "MatMul": 20.0, "Add": 0.5}, {"Process": 130.0, "MatMul": 21.0, "Cast": 5.0}
    lines = profile.table(bare, capstone, top=3).splitlines()
    assert lines[2:] == ["| Process | 100.0 | 130.0 |", "| Cast | 0.0 | 5.0 |", "| MatMul | 20.0 | 21.0 |"]  # Add (0.5) is cut by top=3
    assert len(profile.table(bare, capstone, top=1).splitlines()) == 3


def test_the_profile_script_traces_both_loops_and_prints_the_executor_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only what does not depend on the measured times: the table's order is tested above, on fixed numbers."""
    from benchmarks import profile

    assert profile.main(["--steps", "5", "--out", str(tmp_path), "--top", "1000"]) == 0  # every event: which ones differ most varies run to run
    printed = capsys.readouterr().out
    assert "5 steps each" in printed and "| event | bare µs/step | capstone µs/step |" in printed
    rows = [line.strip("| ").split(" | ") for line in printed.splitlines() if line.startswith("| ") and "event" not in line]
    assert any(row[0] == "Process" for row in rows), printed  # the executor's own time is always traced
    assert sorted(path.relative_to(tmp_path).parts[0] for path in tmp_path.rglob("*.xplane.pb")) == ["bare", "capstone"]  # one trace per loop
    with pytest.raises(SystemExit) as exit_info:
        profile.main(["--steps", "0"])
    assert exit_info.value.code == 2


def test_the_tolerance_script_compares_mirrored_and_single_device_runs(python: str) -> None:
    """In a process of its own: it makes two logical CPU devices, which must happen before TensorFlow initialises."""
    import subprocess

    from helpers.paths import repo_root

    command = [python, "-m", "benchmarks.tolerance", "--seeds", "1", "--steps", "2"]
    completed = subprocess.run(command, cwd=repo_root(), capture_output=True, text=True, timeout=600, check=True)
    lines = completed.stdout.splitlines()
    assert [line.split()[0] for line in lines[:2]] == ["SGD", "Adam"], completed.stdout
    assert all("over 1 seeds: largest difference" in line and "below 1e-05 at 1 of 1" in line for line in lines[:2]), completed.stdout
    refused = subprocess.run([*command[:3], "--seeds", "0"], cwd=repo_root(), capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--seeds and --steps must be at least 1" in refused.stderr


@pytest.mark.process
def test_the_papermill_saves_script_times_both_sides(capsys: pytest.CaptureFixture[str]) -> None:
    """``--quick``: a one-cell notebook run by papermill with and without a save at every cell, alternately."""
    from benchmarks import papermill_saves

    assert papermill_saves.main(["--quick", "--repeats", "1"]) == 0
    table = capsys.readouterr().out
    assert "| papermill saves: 00_tiny | a save at every cell |" in table and "| one save at the end |" in table, table
    with pytest.raises(SystemExit) as refused:
        papermill_saves.main(["--quick", "--repeats", "0"])
    assert refused.value.code == 2
