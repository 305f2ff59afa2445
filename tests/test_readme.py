"""The README as a landing page (issue 33, item 9): short, with its Chinese paragraph first, the test command CI runs, live links.

The details live elsewhere, each once: ``CONTRIBUTING.md`` (maintainers), ``notebooks/teaching.md`` (teachers, and the book's
teachers' page), ``--help`` and the docstrings. Words are counted as a reader sees them: the Markdown without fenced
code and link targets, each Chinese character counted as a word, so the limit holds however the Chinese paragraph is counted.
"""

from __future__ import annotations

import re

from helpers.paths import repo_root

README = repo_root() / "README.md"
#: Issue 33's limit for the README, in words a reader sees.
MAX_WORDS = 1000
_CJK = r"[\u4e00-\u9fff]"


def _visible_text(markdown: str) -> str:
    """What a reader sees of the Markdown: no fenced code, no link targets (a link reads as its label)."""
    prose = re.sub(r"^```.*?^```[ \t]*$", " ", markdown, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"\]\([^)]*\)", "] ", prose)


def _words(text: str) -> int:
    latin = re.sub(rf"{_CJK}|[\u3000-\u303f\uff00-\uffef]", " ", text)
    return len([word for word in latin.split() if re.search(r"\w", word)]) + len(re.findall(_CJK, text))


def test_the_readme_is_a_landing_page_of_at_most_1000_words() -> None:
    text = README.read_text(encoding="utf-8")
    assert _words(_visible_text(text)) <= MAX_WORDS
    assert _words("a `b` c, 中文") == 5  # the count itself: three words, then two characters


def test_a_chinese_paragraph_comes_before_the_first_section() -> None:
    head = README.read_text(encoding="utf-8").split("\n## ", 1)[0]
    assert len(re.findall(_CJK, head)) >= 50 and "seed_map.md" in head and "zh_CN" in head


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    readme = README.read_text(encoding="utf-8")
    section = readme.split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    [command] = [line.split("#")[0].strip() for line in section.splitlines() if line.startswith("make ")]
    ci = (repo_root() / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert commands == [command] == ["make test"]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped but ``-`` and ``_``, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_relative_link_of_the_readme_resolves() -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text(encoding="utf-8"))
    relative = [link for link in links if "://" not in link]
    assert {"notebooks/teaching.md", "CONTRIBUTING.md", "notebooks/seed_map.md", "notebooks/glossary.md"} <= {link.split("#")[0] for link in relative}
    for link in relative:
        path, _, anchor = link.partition("#")
        target = repo_root() / path
        assert target.is_file(), link
        if anchor:
            headings = re.findall(r"^#{1,6} (.+)$", target.read_text(encoding="utf-8"), flags=re.MULTILINE)
            assert anchor in {_slug(heading) for heading in headings}, link
