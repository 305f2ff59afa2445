"""The project's licences: Apache 2.0 for the code, CC BY 4.0 for the prose and figures, the data's own card.

Both legal texts are reproduced verbatim; their hashes are those of the copies this project took them from:
Debian's ``/usr/share/common-licenses/Apache-2.0`` (the same bytes as apache.org's ``LICENSE-2.0.txt``), and
the plain-text legal code of CC BY 4.0 (``creativecommons.org/licenses/by/4.0/legalcode.txt``).
"""

from __future__ import annotations

import hashlib
import re
import tomllib

from helpers.paths import repo_root

APACHE_2_0_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
CC_BY_4_0_SHA256 = "fd3a263fe19ed8faa9068b43abaebafc02c77897b0c6fc09abc04bb592e5f16e"
APACHE_SECTIONS = [
    "Definitions",
    "Grant of Copyright License",
    "Grant of Patent License",
    "Redistribution",
    "Submission of Contributions",
    "Trademarks",
    "Disclaimer of Warranty",
    "Limitation of Liability",
    "Accepting Warranty or Additional Liability",
]


def _project_name() -> str:
    return tomllib.loads((repo_root() / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_license_is_the_apache_2_0_text_under_the_projects_copyright_line() -> None:
    copyright_line, blank, text = (repo_root() / "LICENSE").read_text(encoding="utf-8").split("\n", 2)
    assert re.fullmatch(rf"Copyright 20\d\d The {re.escape(_project_name())} authors", copyright_line) and blank == "", copyright_line
    lines = [line.strip() for line in text.splitlines()]
    assert lines[1:3] == ["Apache License", "Version 2.0, January 2004"]
    headings = [match.group(1) for line in lines if (match := re.match(r"\d\. (.+?)\.", line))]
    assert headings == APACHE_SECTIONS
    assert "END OF TERMS AND CONDITIONS" in lines and "APPENDIX: How to apply the Apache License to your work." in lines
    assert _sha256(text) == APACHE_2_0_SHA256, "LICENSE's text is not the Apache License 2.0 verbatim"


def test_license_docs_names_cc_by_4_0_what_it_covers_and_holds_its_legal_code() -> None:
    notice, legal_code = (repo_root() / "LICENSE-docs").read_text(encoding="utf-8").split("-" * 71 + "\n\n", 1)
    assert notice.startswith("Copyright 20") and _project_name() in notice
    assert "Creative Commons\nAttribution 4.0 International License (CC BY 4.0)" in notice
    assert "https://creativecommons.org/licenses/by/4.0/legalcode" in notice
    assert "Apache License 2.0 (see LICENSE)" in notice and "data/README.md" in notice
    assert legal_code.startswith("Attribution 4.0 International\n") and "Section 8 -- Interpretation." in legal_code
    assert _sha256(legal_code) == CC_BY_4_0_SHA256, "LICENSE-docs's legal code is not CC BY 4.0's verbatim"


def test_pyproject_declares_apache_2_0_and_ships_both_licence_files() -> None:
    pyproject = tomllib.loads((repo_root() / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["license"] == "Apache-2.0"
    assert pyproject["project"]["license-files"] == ["LICENSE", "LICENSE-docs"]
    assert "setuptools>=77" in pyproject["build-system"]["requires"]  # the first to read PEP 639's two fields


def _section(markdown: str, heading: str) -> str:
    return markdown.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_license_section_names_both_licences_and_the_data_card_as_the_card_says() -> None:
    section = " ".join(_section((repo_root() / "README.md").read_text(encoding="utf-8"), "License").split())
    assert "Apache License 2.0 (`LICENSE`)" in section and 'license = "Apache-2.0"' in section
    assert "CC BY 4.0 (`LICENSE-docs`" in section
    card = (repo_root() / "data" / "README.md").read_text(encoding="utf-8")
    [licence_row] = [line for line in card.splitlines() if line.startswith("| licence |")]
    assert "CC BY 4.0" in licence_row and "UCI" in licence_row
    assert "`data/README.md`" in section and "CC BY 4.0, from the UCI Machine Learning Repository" in section
