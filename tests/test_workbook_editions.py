"""helpers.workbook.editions: the editions in a module that imports nothing heavy, so the commands that need no book load no Sphinx."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.paths import repo_root
from helpers.workbook import editions

#: What only the book needs: Sphinx (and MyST, its theme), docutils, and jieba (the Chinese search).
HEAVY = ("sphinx", "docutils", "jieba", "myst_nb", "myst_parser")

#: Run in one fresh interpreter: each command (a taken port for ``lab``), then what ``make lab ARGS="--lang zh_CN"`` does
#: before JupyterLab starts (the translated copies), then the Sphinx extension, which must show in the probe.
_PROBE = """
import json, socket, sys
from helpers.workbook import lab
from helpers.workbook.__main__ import main
heavy = set(json.loads(sys.argv[1]))
loaded = lambda: sorted({name.split(".")[0] for name in sys.modules} & heavy)
with socket.socket() as taken:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = str(taken.getsockname()[1])
    statuses = [main(["list"]), main(["grade"]), main(["lab", "--port", port]), main(["lab", "--port", port, "--lang", "zh_CN"])]
copies = len(list((lab.prepare_translated("zh_CN") / "notebooks").glob("*.ipynb")))
before = loaded()
import helpers.workbook.sphinx_ext
print(json.dumps({"statuses": statuses, "copies": copies, "heavy": before, "heavy_after_sphinx_ext": loaded()}))
"""


def test_commands_that_need_no_book_import_no_sphinx(tmp_path: Path, python: str) -> None:
    """``list``, ``grade`` (no course: refused), ``lab`` (a taken port: refused) and the translated copies load none of :data:`HEAVY`."""
    env = {"WORKBOOK_BUILD_DIR": str(tmp_path / "build"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([python, "-c", _PROBE, json.dumps(HEAVY)], cwd=repo_root(), env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["statuses"] == [0, 2, 2, 2] and result["copies"] >= 12, done.stderr[-2000:]
    assert result["heavy"] == [], "a command that needs no book imported the book's libraries"
    assert {"sphinx", "docutils"} <= set(result["heavy_after_sphinx_ext"])  # the probe sees them when they are there


def test_the_editions() -> None:
    assert [language for language, _, _ in editions.LANGUAGES] == ["en", "zh_CN"]
    assert (editions.SOURCE_LANGUAGE, editions.TRANSLATED_LANGUAGE) == ("en", "zh_CN")
    assert editions.EDITIONS_LINE == "English: en/index.html, 中文: zh_CN/index.html"
    assert (editions.TRANSLATIONS_DIR / editions.TRANSLATED_LANGUAGE / "LC_MESSAGES").is_dir()
