"""helpers.train.cluster: TF_CONFIG read for --strategy multiworker, and written for local workers; a worker killed
under a cluster (one line and a status from the survivor, its temporary folders removed at the next start)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from helpers import train as training
from helpers.train.cluster import lost_worker, remove_dead_owners_scratch, scratch_prefix
from tests.train_runs import stand_in_train


@pytest.mark.parametrize(
    ("tf_config", "says"),
    [
        (None, "needs the TF_CONFIG environment variable"),
        ("{", "must be JSON with cluster.worker and task.index"),
        ('{"cluster": {"worker": []}, "task": {"type": "worker", "index": 0}}', "non-empty list"),
        ('{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 1}}', "index': 0..0"),
        ('{"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}, "task": {"type": "worker", "index": 0}}', "only hold 'worker'"),
    ],
)
def test_multiworker_needs_a_usable_tf_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tf_config: str | None, says: str
) -> None:
    with pytest.raises(training.ClusterConfigError, match=re.escape(says)):
        training.worker_role(tf_config)
    if tf_config is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    assert training.main(["--run-dir", str(tmp_path / "run"), "--strategy", "multiworker"]) == training.USAGE_EXIT_CODE
    error = capsys.readouterr().err
    assert says in error and error.count("\n") == 1, error
    assert not (tmp_path / "run").exists()


def test_local_tf_configs_describe_one_cluster_on_free_ports() -> None:
    configs = [json.loads(value) for value in training.local_tf_configs(3)]
    clusters = {json.dumps(config["cluster"]) for config in configs}
    assert len(clusters) == 1 and [config["task"] for config in configs] == [{"type": "worker", "index": i} for i in range(3)]
    addresses = configs[0]["cluster"]["worker"]
    assert len(set(addresses)) == 3 and all(address.startswith("127.0.0.1:") for address in addresses)
    roles = [training.worker_role(value) for value in training.local_tf_configs(2)]
    assert [(role.index, role.workers, role.is_chief) for role in roles] == [(0, 2, True), (1, 2, False)]
    with pytest.raises(ValueError, match="workers must be a positive int"):
        training.local_tf_configs(0)


def test_only_multiworker_reads_tf_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers.train.cluster import role_of

    monkeypatch.setenv("TF_CONFIG", "{")  # unusable: read only when the strategy needs it
    assert role_of(training.TrainConfig(run_dir=tmp_path)) is None
    monkeypatch.setenv("TF_CONFIG", training.local_tf_configs(2)[1])
    assert role_of(training.TrainConfig(run_dir=tmp_path, strategy="multiworker")) == training.WorkerRole(index=1, workers=2)


def _scratch_folders(tmp: Path) -> list[str]:
    """The command's temporary folders in ``tmp`` (TensorFlow's autograph writes files there too)."""
    return sorted(entry.name for entry in tmp.iterdir() if entry.name.startswith("helpers-train-"))


@pytest.mark.parametrize("killed", [1, 0])
@pytest.mark.process
def test_a_killed_worker_stops_the_other_with_one_line_and_the_next_start_removes_its_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, killed: int
) -> None:
    """Issue 21, item 4: the survivor used to end in TensorFlow's UnavailableError traceback (and one from
    TensorFlow's PeerTerminationWatcher thread when the chief was killed), and the killed worker's
    temporary folders stayed in the temporary directory for good."""
    tmp = tmp_path / "tmp"  # the workers' temporary directory, and this process's
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    folder = training.RunFolder(tmp_path / "run")
    workers = training.start_workers(["--run-dir", str(folder.path), "--steps", "40", "--checkpoint-every", "10", "--pause-per-step", "0.05"])
    finished = training.signal_at_step(workers, folder, 10, target=killed, timeout=90)
    survivor, pid = finished[1 - killed], workers[killed].pid
    lost = "worker 0 of 2 (the chief)" if killed == 0 else "worker 1 of 2"
    assert finished[killed].returncode == -signal.SIGKILL and survivor.returncode == training.PEER_LOST_EXIT_CODE == 8, survivor.stderr[-2000:]
    assert re.fullmatch(
        rf"error: {re.escape(lost)} stopped or was killed \(TensorFlow: \w+Error\), so worker {1 - killed} stopped too; "
        "start every worker again with the same command: it resumes from the last checkpoint\n",
        survivor.stderr,
    ), survivor.stderr[-2000:]
    left = ["preemption", "worker"] if killed == 1 else ["preemption"]  # the chief saves into the run folder
    assert [name.rsplit("-", 1)[0] for name in _scratch_folders(tmp)] == [f"helpers-train-{kind}-{pid}" for kind in left]

    live = Path(tempfile.mkdtemp(prefix=scratch_prefix("worker")))  # this process's: it runs
    stand_in_train(monkeypatch)
    assert training.main(["--run-dir", str(tmp_path / "next"), "--steps", "20"]) == 0  # the next start
    assert _scratch_folders(tmp) == [live.name]


def test_only_our_temporary_folders_whose_owner_no_longer_runs_are_removed(tmp_path: Path) -> None:
    ended = subprocess.Popen(["true"])
    ended.wait()
    dead = [tmp_path / f"helpers-train-{kind}-{ended.pid}-x1" for kind in ("worker", "preemption")]
    live = tmp_path / f"helpers-train-worker-{os.getpid()}-x2"
    others = [tmp_path / f"helpers-train-other-{ended.pid}-x3", tmp_path / "helpers-train-worker-x4", tmp_path / "notes"]
    for path in [*dead, live, *others]:
        path.mkdir()
        (path / "file").write_text("x")
    (tmp_path / f"helpers-train-worker-{ended.pid}-x5").write_text("a file, not our folder")
    (tmp_path / f"helpers-train-worker-{ended.pid}-x6").symlink_to(live)
    kept = sorted(path.name for path in tmp_path.iterdir() if path not in dead)
    assert sorted(remove_dead_owners_scratch(tmp_path)) == sorted(dead)
    assert sorted(path.name for path in tmp_path.iterdir()) == kept and (live / "file").exists()
    assert scratch_prefix("worker") == f"helpers-train-worker-{os.getpid()}-"


def test_the_lost_worker_is_named_when_the_error_or_the_cluster_says_which() -> None:
    two, three = training.WorkerRole(index=0, workers=2), training.WorkerRole(index=0, workers=3)
    assert lost_worker(two, "Connection reset by peer") == 1
    assert lost_worker(three, "unhealthy: /job:worker/replica:0/task:2") == 2
    assert lost_worker(three, "Connection reset by peer") is None
    error = training.PeerLostError(three, None, "TensorFlow: UnavailableError")
    assert str(error) == "another worker of the cluster stopped or was killed (TensorFlow: UnavailableError), so worker 0 stopped too"
