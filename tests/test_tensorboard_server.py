"""helpers.tensorboard_server: a real TensorBoard server on loopback, started and always stopped."""

from __future__ import annotations

import os
import signal
import socket
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from helpers import tensorboard_server
from helpers.logs import read_summaries
from helpers.tensorboard_server import TensorBoardError


def _write_run(logdir: Path, points: int = 15) -> list[float]:
    values = [float(step) ** 0.5 for step in range(points)]
    writer = tf.summary.create_file_writer(str(logdir))
    with writer.as_default():
        for step, value in enumerate(values):
            tf.summary.scalar("loss", value, step=step)
        tf.summary.histogram("weights", tf.range(10.0), step=3)
        tf.summary.image("pictures", tf.zeros([2, 4, 5, 1]), step=4)
        tf.summary.text("note", "hello", step=5)
    writer.close()
    return values


def _processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains ``text`` (Linux /proc; empty elsewhere)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next((line for line in (entry / "status").read_text().splitlines() if line.startswith("State:")), "")
        except OSError:
            continue
        if text in command and "zombie" not in state:
            found.append(int(entry.name))
    return found


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        return probe.connect_ex((tensorboard_server.HOST, port)) == 0


@pytest.mark.process
def test_server_serves_a_tag_and_is_gone_after_the_block(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    values = _write_run(logdir / "run_a")
    with tensorboard_server.serve(logdir, timeout=90) as base_url:
        assert urllib.parse.urlsplit(base_url).hostname == "127.0.0.1"
        port = urllib.parse.urlsplit(base_url).port
        assert _processes_mentioning(str(logdir)), "the server process should be running inside the block"
        assert tensorboard_server.wait_for_runs(base_url, ["run_a"]) == ["run_a"]
        with pytest.raises(TensorBoardError, match=r"runs \['run_b'\] not listed"):
            tensorboard_server.wait_for_runs(base_url, ["run_a", "run_b"], timeout=0.5)
        points = tensorboard_server.fetch_scalars(base_url, "run_a", "loss", min_points=len(values))
        with pytest.raises(TensorBoardError, match="15 points after 0.5 s, expected at least 16"):
            tensorboard_server.fetch_scalars(base_url, "run_a", "loss", min_points=len(values) + 1, wait=0.5)
        with pytest.raises(TensorBoardError, match="404"):
            tensorboard_server.fetch_scalars(base_url, "run_a", "no_such_tag", wait=0)
    assert [step for _, step, _ in points] == list(range(len(values)))
    np.testing.assert_allclose([value for _, _, value in points], values, rtol=1e-6)
    assert _processes_mentioning(str(logdir)) == []
    assert not _port_open(port)
    with pytest.raises(TensorBoardError, match="no TensorBoard answering"):
        tensorboard_server.fetch_scalars(base_url, "run_a", "loss", wait=0)


@pytest.mark.process
def test_server_is_stopped_when_the_block_raises(tmp_path: Path) -> None:
    logdir = tmp_path / "logs_error"
    _write_run(logdir)
    with pytest.raises(KeyError, match="inside the block"):
        with tensorboard_server.serve(logdir, timeout=90):
            assert _processes_mentioning(str(logdir))
            raise KeyError("inside the block")
    assert _processes_mentioning(str(logdir)) == []


def test_missing_logdir_is_a_clear_error_and_starts_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    with pytest.raises(FileNotFoundError, match="'absent' does not exist"):
        with tensorboard_server.serve(missing):
            pass  # pragma: no cover
    assert _processes_mentioning(str(missing)) == []


@pytest.mark.process
def test_a_server_that_dies_reports_its_stderr(tmp_path: Path) -> None:
    with pytest.raises(TensorBoardError, match=r"exited with code [1-9]\d*.*(?s:.*)no_such_flag"):
        with tensorboard_server.serve(tmp_path, extra_args=["--no_such_flag"], timeout=90):
            pass  # pragma: no cover
    assert _processes_mentioning(str(tmp_path)) == []


@pytest.mark.process
def test_a_server_that_does_not_answer_in_time_is_stopped(tmp_path: Path) -> None:
    with pytest.raises(TensorBoardError, match="did not answer .* within 0.01 s"):
        with tensorboard_server.serve(tmp_path, timeout=0.01):
            pass  # pragma: no cover
    assert _processes_mentioning(str(tmp_path)) == []


def test_only_loopback_is_contacted() -> None:
    with pytest.raises(ValueError, match="only 127.0.0.1"):
        tensorboard_server.fetch_scalars("http://example.com:6006", "run", "loss", wait=0)
    with pytest.raises(ValueError, match="only 127.0.0.1"):
        tensorboard_server.fetch_json("http://localhost:6006", "/data/runs")


def test_read_summaries_reads_every_kind_and_every_point(tmp_path: Path) -> None:
    values = _write_run(tmp_path)
    summaries = read_summaries(tmp_path)
    assert {tag: series.plugin for tag, series in summaries.items()} == {
        "loss": "scalars", "weights": "histograms", "pictures": "images", "note": "text"
    }
    assert summaries["loss"].steps.tolist() == list(range(len(values)))  # more than the default sample of 10
    np.testing.assert_allclose([float(value) for value in summaries["loss"].values], values, rtol=1e-6)
    histogram = summaries["weights"].values[0]
    assert histogram.shape[1] == 3 and histogram[:, 2].sum() == 10
    pictures = summaries["pictures"].values[0]
    assert (int(pictures[0]), int(pictures[1])) == (5, 4) and len(pictures) == 4  # width, height, 2 PNGs
    assert summaries["note"].values[0].item() == b"hello"
    assert summaries["note"].steps.tolist() == [5]


def test_read_summaries_without_event_files_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no event file"):
        read_summaries(tmp_path)


def test_missing_executable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tensorboard_server.sys, "executable", str(tmp_path / "python"))
    with pytest.raises(TensorBoardError, match="no tensorboard executable"):
        tensorboard_server.tensorboard_executable()


@pytest.mark.process
def test_serve_process_gives_the_pid_which_stops_it(tmp_path: Path) -> None:
    logdir = tmp_path / "logs_pid"
    values = _write_run(logdir / "run_a")
    with tensorboard_server.serve_process(logdir, timeout=90) as server:
        assert server.pid in _processes_mentioning(str(logdir))
        scalars = ("/data/plugin/scalars/scalars", {"run": "run_a", "tag": "loss"})
        points = tensorboard_server.poll_json(server.base_url, *scalars, ready=lambda rows: isinstance(rows, list) and len(rows) == len(values))
        with pytest.raises(TensorBoardError, match=r"no ready answer after 0.5 s; the last one: \[\["):
            tensorboard_server.poll_json(server.base_url, *scalars, ready=lambda rows: False, wait=0.5)
        port = urllib.parse.urlsplit(server.base_url).port
        os.kill(server.pid, signal.SIGTERM)
    assert isinstance(points, list) and [step for _, step, _ in points] == list(range(len(values)))
    assert _processes_mentioning(str(logdir)) == []
    assert port is not None and not _port_open(port)
    with pytest.raises(ProcessLookupError):
        os.kill(server.pid, 0)
    with pytest.raises(TensorBoardError, match="no TensorBoard answering"):
        tensorboard_server.poll_json(server.base_url, "/data/runs", ready=bool, wait=5)
