"""helpers.workbook.translations, .catalogs, .translated_copies: the zh_CN catalogs are complete, consistent with the English, and cannot go stale silently."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import write_po

from helpers.paths import NOTEBOOKS_DIR
from helpers.workbook import catalogs, executor, glossary, translated_copies, translations
from helpers.workbook.editions import TRANSLATIONS_DIR

CATALOGS = catalogs.catalogs()


def test_there_is_one_catalog_per_page_of_the_book() -> None:
    pages = {path.stem for path in executor.notebooks()} | {"index", "seed_map", "glossary", "teaching"}
    assert {path.stem for path in CATALOGS} == pages


@pytest.mark.parametrize("catalog", CATALOGS, ids=[path.stem for path in CATALOGS])
def test_every_message_is_translated_and_keeps_its_code_numbers_links_and_glossary_terms(catalog: Path) -> None:
    """Untranslated, fuzzy, a code span / number / URL / link target lost or changed, a term under another word: each is named."""
    problems = translations.problems([catalog])
    assert not problems, f"{len(problems)} message(s) to fix (make translations lists them):\n" + "\n".join(map(str, problems[:20]))


def _alt_texts(path: Path) -> list[str]:
    """The alt text of each figure of a notebook (MyST-NB reads it from the cell's ``mystnb.image.alt``)."""
    cells = nbformat.read(path, as_version=4).cells
    return [alt for cell in cells if (alt := cell.metadata.get("mystnb", {}).get("image", {}).get("alt"))]


@pytest.mark.parametrize("path", executor.notebooks(), ids=[path.stem for path in executor.notebooks()])
def test_every_figures_alt_text_is_a_translated_message_of_its_page(path: Path) -> None:
    """The Chinese edition describes its figures in Chinese: the gettext builder extracts each alt text (book_sphinx/conf.py)."""
    messages = {message.id: message.string for message in catalogs.read(TRANSLATIONS_DIR / "zh_CN" / "LC_MESSAGES" / f"{path.stem}.po") if message.id}
    for alt in _alt_texts(path):
        assert messages.get(alt), f"{path.name}: the alt text {alt[:60]!r} has no translation (make translations)"


@pytest.mark.parametrize(
    ("msgid", "msgstr", "expected"),
    [
        ("Call `fit` twice.", "调用 `fit` 两次。", []),
        ("Call `fit` twice.", "调用 fit 两次。", ["code span `fit` changed or missing"]),
        ("Call `fit` twice.", "调用 `fit()` 两次。", ["code span `fit` changed or missing", "code span `fit()` not in the English"]),
        ("It ran 60 steps in 1.5 s.", "它运行了 60 步，用时 1.5 秒。", []),
        ("It ran 60 steps in 1.5 s.", "它运行了六十步，用时 1.5 秒。", ["number 60 changed or missing"]),
        ("See [chapter 05](05_checkpoints.ipynb#Exact-resume).", "见[第 05 章](05_checkpoints.ipynb#Exact-resume)。", []),
        (
            "See [chapter 05](05_checkpoints.ipynb#Exact-resume).",
            "见[第 05 章](05_checkpoints.ipynb#精确恢复)。",
            ["link target 05_checkpoints.ipynb#Exact-resume changed or missing"],
        ),
        ("Read <https://arxiv.org/abs/1706.03762>.", "阅读 <https://arxiv.org/abs/1706.03762>。", []),
        ("Read <https://arxiv.org/abs/1706.03762>.", "阅读该论文。", ["URL https://arxiv.org/abs/1706.03762 changed or missing"]),
    ],
)
def test_a_translation_keeps_code_spans_numbers_urls_and_link_targets(msgid: str, msgstr: str, expected: list[str]) -> None:
    assert translations.message_problems(msgid, msgstr) == expected


def test_a_glossary_term_under_another_word_is_named_with_the_glossarys_word() -> None:
    clipping = next(term for term in glossary.terms() if "gradient clipping" in term.english)
    main = clipping.chinese[0]
    assert translations.term_problems("Gradient clipping caps the update.", f"{main}限制更新的大小。") == []
    [problem] = translations.term_problems("Gradient clipping caps the update.", "梯度截断限制更新的大小。")
    assert "'gradient clipping'" in problem and main in problem
    assert translations.term_problems("`clip_gradient_norms` is gone.", "`clip_gradient_norms` 已不存在。") == []  # code is not prose


def test_the_check_names_an_untranslated_and_a_fuzzy_message(tmp_path: Path) -> None:
    catalog = Catalog(locale="zh_CN")
    catalog.add("Checkpoints", "检查点")
    catalog.add("A new paragraph.", "")
    catalog.add("An edited paragraph.", "一段旧译文。", flags=["fuzzy"])
    path = tmp_path / "05_checkpoints.po"
    with path.open("wb") as handle:
        write_po(handle, catalog)
    found = [(problem.msgid, problem.reason.split(":")[0]) for problem in translations.problems([path], check_terms=False)]
    assert found == [("A new paragraph.", "untranslated"), ("An edited paragraph.", "fuzzy")]


def test_an_english_edit_marks_its_translation_fuzzy_and_the_check_names_it(tmp_path: Path, python: str) -> None:
    """What ``make translations`` does after an English edit: the changed message keeps its old translation, marked fuzzy."""
    old, new = "Save a checkpoint every 20 steps.", "Save a checkpoint every 25 steps."
    locales = tmp_path / "locales"
    (locales / "zh_CN" / "LC_MESSAGES").mkdir(parents=True)
    translated = Catalog(locale="zh_CN")
    translated.add(old, "每 20 步保存一个检查点。")
    translated.add("Checkpoints", "检查点")
    with (locales / "zh_CN" / "LC_MESSAGES" / "05_checkpoints.po").open("wb") as handle:
        write_po(handle, translated)
    template = Catalog()
    template.add(new)
    template.add("Checkpoints")
    (tmp_path / "pot").mkdir()
    with (tmp_path / "pot" / "05_checkpoints.pot").open("wb") as handle:
        write_po(handle, template)
    command = [python, "-m", "sphinx_intl", "update", "-p", str(tmp_path / "pot"), "-l", "zh_CN", "-d", str(locales), "-w", "0"]
    subprocess.run(command, check=True, capture_output=True)
    found = translations.problems(catalogs.catalogs(locales=locales), check_terms=False)
    assert [(problem.msgid, problem.reason.split(":")[0]) for problem in found] == [(new, "fuzzy"), (new, "number 25 changed or missing")]
    assert "05_checkpoints.po" in str(found[0]) and "every 25 steps" in str(found[0])


@pytest.mark.process  # sphinx-build -b gettext and sphinx-intl update
def test_the_catalogs_hold_exactly_the_messages_of_todays_english(tmp_path: Path) -> None:
    """An English edit not yet merged into the .po files (make translations) fails here, naming the new or changed message."""
    locales = tmp_path / "locales"
    shutil.copytree(TRANSLATIONS_DIR, locales)
    catalogs.update(locales)
    before = {path.name: catalogs.read(path) for path in CATALOGS}
    for path in catalogs.catalogs(locales=locales):
        catalog = catalogs.read(path)
        assert path.name in before, f"{path.name}: a page with no catalog yet (make translations)"
        stale = sorted({str(message.id) for message in catalog if message.id} ^ {str(message.id) for message in before[path.name] if message.id})
        assert not stale, f"{path.name}: messages differ from today's English (make translations, then translate): {stale[:5]}"
    assert len(catalogs.catalogs(locales=locales)) == len(CATALOGS)


@pytest.mark.parametrize(
    ("source", "messages", "expected"),
    [
        ("## The rule\n\nText that\nwraps.", {"The rule": "规则", "Text that wraps.": "换行的文字。"}, "## 规则\n\n换行的文字。"),
        ("- one item\n  continued;\n- two", {"one item continued;": "第一项；", "two": "第二项"}, "- 第一项；\n- 第二项"),
        ("| a | b |\n|---|---|\n| x | y |", {"b": "乙", "y": "丁"}, "| a | 乙 |\n|---|---|\n| x | 丁 |"),
        ("Text\n\n```python\n# Text\nText = 1\n```", {"Text": "文字"}, "文字\n\n```python\n# Text\nText = 1\n```"),
        ("Why it fails: Why", {"Why": "为什么"}, "Why it fails: Why"),  # a short message never inside a longer line
        (
            "<details><summary>Solution</summary>\n\nbody\n</details>",
            {"<details><summary>Solution</summary>\n": "<details><summary>答案</summary>\n", "</details>": "</details>", "body": "正文"},
            "<details><summary>答案</summary>\n\n正文\n</details>",
        ),
    ],
)
def test_translate_markdown_replaces_whole_messages_outside_code(source: str, messages: dict[str, str], expected: str) -> None:
    assert translated_copies.translate_markdown(source, messages)[0] == expected


@pytest.mark.parametrize("path", executor.notebooks(), ids=[path.stem for path in executor.notebooks()])
def test_a_translated_copy_has_every_message_translated_and_the_code_and_outputs_as_stored(path: Path) -> None:
    """``make lab ARGS="--lang zh_CN"`` opens these copies: every translated message found in the notebook, code and outputs untouched."""
    translated, unused = translated_copies.translate_notebook(path)
    stored = nbformat.read(path, as_version=4)
    assert not unused, f"messages of {path.stem}.po found in no markdown cell or alt text: {sorted(unused)[:3]}"
    code = [(cell.source, cell.outputs, cell.metadata.get("tags")) for cell in stored.cells if cell.cell_type == "code"]
    assert [(cell.source, cell.outputs, cell.metadata.get("tags")) for cell in translated.cells if cell.cell_type == "code"] == code
    messages = translated_copies.translated_messages(path.stem)
    for alt in _alt_texts(path):  # a figure's description is translated too
        assert any(cell.metadata.get("mystnb", {}).get("image", {}).get("alt") == messages[alt] for cell in translated.cells), alt[:60]
    assert [cell.id for cell in translated.cells] == [cell.id for cell in stored.cells]
    if translated_copies.translated_messages(path.stem):
        assert translated.cells[0].source != stored.cells[0].source  # the title is translated


def test_translated_copies_are_built_into_their_own_folder(tmp_path: Path) -> None:
    written = translated_copies.build_translated_copies(tmp_path / "zh_CN")
    assert [path.name for path in written] == [path.name for path in executor.notebooks()]
    assert (tmp_path / "zh_CN" / "glossary.md").is_file() and (tmp_path / "zh_CN" / "seed_map.md").is_file()
    assert all(path.parent == tmp_path / "zh_CN" for path in written) and NOTEBOOKS_DIR not in [path.parent for path in written]


def test_an_images_alt_text_is_translated_with_its_paragraph() -> None:
    """Sphinx extracts an image's alt text as a message beside the image's paragraph: the copy uses both (chapter 06's screenshots)."""
    messages = {"![A chart of the loss.](images/x.png)": "![损失的图。](images/x.png)", "A chart of the loss.": "损失的图。"}
    text, used = translated_copies.translate_markdown("![A chart of the loss.](images/x.png)\n", messages)
    assert text == "![损失的图。](images/x.png)\n" and used == set(messages)
