"""Saving a run's checkpoint at the current step: the chief into the run folder, any other worker into a scratch folder."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from helpers.checkpoints import RestoreInfo, TrainingCheckpoint
from helpers.train.cluster import scratch_prefix


class Saver:
    """Saves through :meth:`helpers.checkpoints.TrainingCheckpoint.save` (publish and prune included) and remembers the last save.

    Under ``MultiWorkerMirroredStrategy`` every worker must take part in a save; only the chief's
    copy is kept: another worker saves into a scratch folder that :meth:`close` deletes.
    """

    def __init__(self, checkpoint: TrainingCheckpoint, *, is_chief: bool, restored: RestoreInfo) -> None:
        self.is_chief = is_chief
        self._scratch = None if is_chief else Path(tempfile.mkdtemp(prefix=scratch_prefix("worker")))
        self._checkpoint = checkpoint if self._scratch is None else checkpoint.relocated(self._scratch)
        #: The step and path of the latest checkpoint of this run: the restored one until the first save.
        self.last_saved = restored.step if restored.restored else -1
        self._last_path = Path(restored.path) if restored.path else None

    @property
    def step(self) -> int:
        """The global step now."""
        return self._checkpoint.step

    def save(self) -> Path | None:
        """Save at the current step; the checkpoint's path on the chief, None on another worker."""
        self._last_path = self._checkpoint.save()
        self.last_saved = self.step
        return self._last_path if self.is_chief else None

    def save_current(self) -> Path | None:
        """Save unless this step is saved already; the chief's checkpoint path (None on another worker)."""
        if self.last_saved != self.step:
            return self.save()
        return self._last_path if self.is_chief else None

    def close(self) -> None:
        """Delete a worker's scratch copies (the chief keeps its checkpoints)."""
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
