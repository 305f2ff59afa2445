"""helpers.workbook.editions: the editions in a module that imports nothing heavy, so the commands that need no book load no Sphinx."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import repo_root
from helpers.workbook import editions

#: What only the book needs: Sphinx (and MyST, its theme), docutils, and jieba (the Chinese search).
HEAVY = ("sphinx", "docutils", "jieba", "myst_nb", "myst_parser")

#: Run in a fresh interpreter: the command, then the list of heavy modules it loaded.
_PROBE = """
import json, socket, sys
from helpers.workbook.__main__ import main
with socket.socket() as taken:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    argv = [word.replace("PORT", str(taken.getsockname()[1])) for word in sys.argv[1:]]
    status = main(argv)
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(json.loads(sys.stdin.read())))
print(json.dumps({"status": status, "heavy": heavy}))
"""


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        (["list"], 0),
        (["grade"], 2),  # no course built: refused in one line
        (["lab", "--port", "PORT"], 2),  # a port that is taken: refused before JupyterLab starts
        (["lab", "--port", "PORT", "--lang", "zh_CN"], 2),
    ],
)
def test_commands_that_need_no_book_import_no_sphinx(argv: list[str], status: int, tmp_path: Path) -> None:
    env = {"WORKBOOK_BUILD_DIR": str(tmp_path / "build"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], input=json.dumps(HEAVY), cwd=repo_root(), env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"status": status, "heavy": []}, done.stderr[-2000:]


def test_the_probe_would_see_sphinx(tmp_path: Path) -> None:
    """The check can fail: the Sphinx extension does import Sphinx."""
    code = "import sys, helpers.workbook.sphinx_ext; print('sphinx' in sys.modules and 'docutils' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=repo_root(), capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "True"


def test_the_editions() -> None:
    assert [language for language, _, _ in editions.LANGUAGES] == ["en", "zh_CN"]
    assert (editions.SOURCE_LANGUAGE, editions.TRANSLATED_LANGUAGE) == ("en", "zh_CN")
    assert editions.EDITIONS_LINE == "English: en/index.html, 中文: zh_CN/index.html"
    assert (editions.TRANSLATIONS_DIR / editions.TRANSLATED_LANGUAGE / "LC_MESSAGES").is_dir()
