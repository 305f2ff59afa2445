"""helpers.train.cluster: TF_CONFIG read for --strategy multiworker, and written for local workers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import train as training


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
