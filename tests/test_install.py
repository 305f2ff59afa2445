"""A non-editable install (``pip install .``) carries every subpackage and data file: the command and a chapter's
imports work from the installed copy, outside the repository; its metadata names the licence and carries both licence files."""

from __future__ import annotations

import ast
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from helpers.paths import repo_root

pytestmark = pytest.mark.process


def test_pip_install_dot_gives_the_command_and_the_chapters_imports(tmp_path: Path) -> None:
    fresh = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(fresh)
    python = fresh / "bin" / "python"
    site_packages = Path(subprocess.check_output([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    # The pinned dependencies come from this environment's site-packages, as a plain path entry: its .pth files
    # (the editable install of this repository among them) are not processed, so only the installed copy is found.
    (site_packages / "pinned_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # Built as the Makefile's install builds it, in pip's isolated build environment with the setuptools that
    # pyproject.toml's [build-system] asks for (>=77, for its licence fields), not the older one ensurepip puts here.
    install = subprocess.run(
        [python, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", "-q", str(repo_root())],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    help_run = subprocess.run([python, "-m", "helpers.train", "--help"], capture_output=True, text=True, timeout=120, cwd=outside)
    assert help_run.returncode == 0 and "--steps-per-call" in help_run.stdout, help_run.stderr[-3000:]
    code = (
        "import helpers, pathlib\n"
        "from helpers import data, exercises, plots, train as training\n"
        "from helpers.workbook import book, executor\n"
        "from helpers.workbook.drift import compare\n"
        "installed = pathlib.Path(helpers.__file__).parent\n"
        f"assert installed.is_relative_to({str(site_packages)!r}), installed\n"
        "book_files = ('conf.py', 'index.md', '_templates/language-switch.html', '_static/workbook.css')\n"
        "assert all((installed / 'workbook' / 'book_sphinx' / name).is_file() for name in book_files)\n"
        "assert (installed / 'workbook' / 'lab_config' / 'labconfig' / 'default_setting_overrides.json').is_file()\n"
        "from importlib.metadata import distribution\n"
        "dist = distribution('tf-training-workbook-helpers')\n"
        f"assert pathlib.Path(dist.locate_file('')) == pathlib.Path({str(site_packages)!r}), dist.locate_file('')\n"
        "assert dist.metadata['License-Expression'] == 'Apache-2.0', dist.metadata['License-Expression']\n"
        "assert sorted(dist.metadata.get_all('License-File')) == ['LICENSE', 'LICENSE-docs'], dist.metadata.get_all('License-File')\n"
        "shipped = [file for file in dist.files if file.parent.name == 'licenses']\n"
        "assert sorted(file.name for file in shipped) == ['LICENSE', 'LICENSE-docs'] and all(file.locate().is_file() for file in shipped), shipped\n"
        "print(sorted(p.name for p in (installed / 'train').glob('*.py')))\n"
    )
    imports = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, cwd=outside)
    assert imports.returncode == 0, imports.stderr[-3000:]
    assert {"__main__.py", "cli.py", "run.py", "step.py"} <= set(ast.literal_eval(imports.stdout))
    assert sys.executable != str(python)
