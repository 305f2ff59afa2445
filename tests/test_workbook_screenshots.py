"""helpers.workbook.screenshots without a browser: the views, their selection, the missing logs, the shrinking, the command line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from helpers.failures import UsageError
from helpers.workbook import chromium, screenshots
from helpers.workbook.commands import main


def test_every_view_has_a_unique_name_and_each_stored_image_is_small() -> None:
    names = [view.name for view in screenshots.VIEWS]
    assert len(set(names)) == len(names)
    assert {view.name for view in screenshots.select(["06"])} == {"06_scalars_loss", "06_scalars_learning_rate", "06_hparams_table", "06_graphs"}
    for path in screenshots.image_paths():
        assert path.is_file() and 10_000 < path.stat().st_size < screenshots.MAX_BYTES, path.name


def test_a_view_is_chosen_by_name_or_chapter_and_an_unknown_one_is_a_usage_error() -> None:
    views = [screenshots.View("06_a", "06_x", "logs", "scalars"), screenshots.View("07_b", "07_y", "dump", "debugger-v2")]
    assert screenshots.select([], views) == views
    assert screenshots.select(["07"], views) == [views[1]]
    assert screenshots.select(["06_a", "06"], views) == [views[0]]
    with pytest.raises(UsageError, match="no screenshot matches '08'; the views are: 06_a, 07_b"):
        screenshots.select(["08"], views)


def test_missing_logs_name_the_chapter_to_run_first(tmp_path: Path) -> None:
    view = screenshots.View("06_a", "06_tensorboard", "logs/custom", "scalars")
    with pytest.raises(screenshots.ScreenshotsFailed, match=r"run it first \(python -m helpers.workbook run --only 06\)"):
        screenshots.check_logs([view], tmp_path)
    (tmp_path / "06_tensorboard" / "logs" / "custom").mkdir(parents=True)
    screenshots.check_logs([view], tmp_path)


def test_shrink_crops_and_stores_a_palette_png() -> None:
    from PIL import Image

    picture = Image.new("RGB", (200, 100), "white")
    picture.paste((255, 120, 0), (0, 0, 200, 20))  # an orange bar, as TensorBoard's
    raw = io.BytesIO()
    picture.save(raw, format="PNG")
    small = screenshots.shrink(raw.getvalue(), (0, 0, 120, 60))
    with Image.open(io.BytesIO(small)) as stored:
        assert stored.size == (120, 60) and stored.mode == "P"
        assert stored.convert("RGB").getpixel((5, 5)) == (255, 120, 0)
    with pytest.raises(ValueError, match="does not fit"):
        screenshots.shrink(raw.getvalue(), (0, 0, 300, 60))


def test_the_flags_have_one_home_and_a_window_size_replaces_the_default(tmp_path: Path) -> None:
    flags = chromium.flags(tmp_path, window_size=(900, 600))
    assert "--headless=new" in flags and f"--user-data-dir={tmp_path}" in flags
    assert [flag for flag in flags if flag.startswith("--window-size=")] == ["--window-size=900,600"]


def test_the_command_fails_with_status_1_before_the_chapter_ran(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path))
    assert main(["screenshots", "06_graphs"]) == 1
    assert "no logs from a run of 06_tensorboard" in capsys.readouterr().err
