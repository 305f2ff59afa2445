"""notebooks/glossary.md: every row filled, each term once, every API name true to the pinned versions, every link a heading;
its 中文 notation, and the terms the translation check reads from it (``helpers.workbook.glossary.terms``).

The Chinese words marked with a seed number are quoted from the seed texts, which are not in this
repository; they were checked against the texts when the page was written, and are not re-checked here.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from helpers.paths import NOTEBOOKS_DIR
from helpers.workbook import executor
from helpers.workbook.glossary import API_NAME, COLUMNS, COMPAT_V1, GONE, Term, api_names, chinese_items, resolve, rows, terms
from tests import anchors

API_ITEM = re.compile(API_NAME.pattern + r"$")
SEEDS = {"000", "001", "003"}


def v1_path(name: str) -> str:
    """``tf.train.create_global_step`` -> ``tf.compat.v1.train.create_global_step``."""
    assert name.startswith("tf."), f"{name}: only a tf.* name can be 'tf.compat.v1 only'"
    return "tf.compat.v1." + name.removeprefix("tf.")


ROWS = rows()


def _row_id(row: tuple[int, list[str]]) -> str:
    number, cells = row
    return f"line {number}: {cells[0]}"


@functools.cache
def _anchors(notebook: Path) -> frozenset[str]:
    return frozenset(anchors.heading_anchors(notebook))


def test_the_table_has_rows_from_every_chapter() -> None:
    chapters = {target[:2] for _, cells in ROWS for target in anchors.rendered_link_targets(cells[3])}
    assert len(ROWS) >= 30, f"only {len(ROWS)} rows"
    every = {path.stem[:2] for path in executor.notebooks()}
    assert chapters >= every, f"no row links to chapters {sorted(every - chapters)}"


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_every_row_has_all_columns_filled(row: tuple[int, list[str]]) -> None:
    _, cells = row
    where = _row_id(row)
    assert len(cells) == len(COLUMNS), f"{where}: {len(cells)} cells, expected {len(COLUMNS)} ({' | '.join(COLUMNS)})"
    for column, cell in zip(COLUMNS, cells, strict=True):
        assert cell and cell not in {"-", "—", "?"}, f"{where}: the {column} column is empty"


def test_each_term_appears_once() -> None:
    seen: dict[str, str] = {}
    for row in ROWS:
        term = row[1][0].lower()
        assert term not in seen, f"{_row_id(row)}: the term {row[1][0]!r} is already in {seen[term]}"
        seen[term] = _row_id(row)


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_every_chinese_word_says_where_it_comes_from(row: tuple[int, list[str]]) -> None:
    """Each item is "word (seed numbers)" for a word the seed texts use, or "word †" for the usual term, joined by " / "."""
    where = _row_id(row)
    for item in chinese_items(row[1][1], f"{where}: "):
        unknown = set(item.seeds) - SEEDS
        assert not unknown, f"{where}: {item.word!r} names seed texts that do not exist: {sorted(unknown)}"


#: Every word the glossary quotes from a seed text, with the seeds that use it: checked against the texts when the
#: page was written (操作 and 损失 later, as parts of the seeds' 训练操作 and 损失函数). A change here is a change of
#: quotation, which the texts themselves must confirm.
SEED_WORDS = {
    ("全局步数", ("000",)), ("全局步骤计数器", ("001",)), ("训练操作", ("000",)), ("操作", ("000",)), ("训练步骤", ("001",)),
    ("优化器", ("000", "001")), ("损失函数", ("000", "001", "003")), ("损失", ("000", "001", "003")), ("梯度", ("000", "001", "003")),
    ("反向传播", ("001",)), ("梯度截断", ("000",)), ("学习率", ("001",)), ("指数衰减", ("001",)), ("检查点", ("001",)),
    ("定期保存", ("001",)), ("加载", ("001",)), ("摘要写入器", ("001",)), ("摘要", ("001",)), ("日志文件", ("001",)),
    ("TensorBoard", ("001",)), ("梯度验证", ("003",)), ("梯度验证工具", ("003",)), ("调试", ("000",)), ("错误排查", ("000",)),
    ("批量", ("001",)),
}


def test_the_seed_quotations_are_kept() -> None:
    quoted = {(item.word, item.seeds) for _, cells in ROWS for item in chinese_items(cells[1]) if item.seeds}
    assert quoted == SEED_WORDS, f"lost: {sorted(SEED_WORDS - quoted)}; new: {sorted(quoted - SEED_WORDS)}"


def test_terms_reads_every_row() -> None:
    """One Term per row; every English form and Chinese word found once across the glossary's main words."""
    found = terms()
    assert len(found) == len(ROWS)
    english = [form.lower() for term in found for form in term.english]
    assert len(english) == len(set(english)), sorted({form for form in english if english.count(form) > 1})
    assert all(term.english and term.chinese for term in found)


def test_terms_real_rows() -> None:
    """A few real rows: alternatives, dropped code, a quoted-only seed word, a gloss, synonyms."""
    by_term = {term.english[0]: term for term in terms()}
    assert by_term["global step"] == Term(english=("global step",), chinese=("全局步数",), quoted=("全局步骤计数器",))
    assert by_term["gradient clipping"] == Term(english=("gradient clipping",), chinese=("梯度裁剪",), quoted=("梯度截断",))
    assert by_term["train step"] == Term(english=("train step", "training step"), chinese=("训练步",), quoted=("训练步骤",))
    assert by_term["finite differences"].english == ("finite differences", "numerical gradient")
    assert by_term["initial epoch"].english == ("initial epoch",)  # (`fit(initial_epoch=...)`) is code, not a form
    assert by_term["model checkpoint"].english == ("model checkpoint",)
    assert by_term["chief"].chinese == ("主工作节点",)  # the gloss （chief） is written beside it, not searched for
    assert by_term["NaN"].chinese == ("NaN",)
    assert by_term["epoch"].chinese == ("轮次", "迭代周期") and by_term["worker"].chinese == ("工作节点", "工作器")
    assert by_term["restore"] == Term(english=("restore",), chinese=("恢复",), quoted=("加载",))
    assert by_term["loading"].chinese == ("加载",) and by_term["op"].chinese == ("操作",)


def test_no_prose_word_is_also_quoted_only() -> None:
    """A word a row quotes only is no other row's word for prose, except where the seed used it for that other term."""
    prose = {word: term.english[0] for term in terms() for word in term.chinese}
    clashes = {word: prose[word] for term in terms() for word in term.quoted if word in prose}
    assert clashes == {"加载": "loading"}  # seed 001 says 加载 for restoring a checkpoint; 加载 is the word for loading


def test_a_term_inside_a_longer_one_is_inside_its_chinese_too() -> None:
    """Where one English form holds another ("op" in "train op"), one Chinese word of the longer holds one of the shorter
    (操作 in 训练操作), so a check that finds the shorter form too asks nothing the translation lacks.

    The one exception: an "object graph" is an 对象图, not a 计算图, so a check takes the longest form first.
    """
    found = terms()
    unlike = set()
    for shorter in found:
        for longer in found:
            for inner in shorter.english:
                word = re.compile(r"(?<![\w-])" + re.escape(inner) + r"(?![\w-])", re.IGNORECASE)
                for outer in longer.english:
                    if outer != inner and word.search(outer) and not any(a in b for a in shorter.chinese for b in longer.chinese):
                        unlike.add((inner, outer))
    assert unlike == {("graph", "object graph")}


GOOD = """# A glossary

| term | 中文 | API | taught in |
|---|---|---|---|
| gradient clipping | 梯度裁剪 † / 「梯度截断」 (000) | `tf.clip_by_global_norm` | [03](03_gradient_clipping.ipynb#Setup) |
"""


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("梯度裁剪 †; 梯度截断 (000)", "line 6: '梯度裁剪 †; 梯度截断 (000)' is not a word followed by its seed numbers"),
        ("梯度裁剪 / 梯度截断 (000)", "line 6: '梯度裁剪' is not a word followed by its seed numbers"),
        ("「梯度截断」 (000) / 梯度裁剪 †", "line 6: the main (first) word '梯度截断' is quoted only"),
        ("梯度裁剪 † / 「梯度截断」 †", "line 6: '「梯度截断」 †': a quoted-only word must name the seed text it quotes"),
        ("梯度裁剪 † / 「梯度截断 (000)", "line 6: '「梯度截断 (000)': the corner brackets 「」 of a quoted-only word are not closed"),
    ],
)
def test_terms_rejects_a_bad_notation_naming_the_line(tmp_path: Path, cell: str, message: str) -> None:
    path = tmp_path / "glossary.md"
    path.write_text(GOOD + GOOD.splitlines()[-1].replace("梯度裁剪 † / 「梯度截断」 (000)", cell) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"glossary.md, {message}")):
        terms(path)


def test_terms_rejects_code_outside_parentheses_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "glossary.md"
    path.write_text(GOOD.replace("| gradient clipping |", "| `clip_by_norm` clipping |"), encoding="utf-8")
    with pytest.raises(ValueError, match="glossary.md, line 5: the term '`clip_by_norm` clipping' has code or parentheses outside"):
        terms(path)


def test_terms_of_a_small_glossary(tmp_path: Path) -> None:
    path = tmp_path / "glossary.md"
    path.write_text(GOOD, encoding="utf-8")
    assert terms(path) == [Term(english=("gradient clipping",), chinese=("梯度裁剪",), quoted=("梯度截断",))]


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_every_api_name_is_true_to_the_pinned_versions(row: tuple[int, list[str]]) -> None:
    where = _row_id(row)
    cell = row[1][2]
    items = cell.split("; ")
    for item in items:
        assert API_ITEM.fullmatch(item), (
            f"{where}: {item!r} is not a `name`, optionally followed by (gone), (tf.compat.v1 only) or (the workbook's own)"
        )
    names = api_names(cell)
    assert names, f"{where}: no API name"
    for name, mark in names:
        if mark is None:
            assert resolve(name), f"{where}: {name} does not resolve in the pinned TensorFlow/Keras; mark it (gone) or fix it"
        elif mark == GONE:
            assert not resolve(name), f"{where}: {name} is marked (gone) but resolves"
            if name.startswith("tf."):
                assert not resolve(v1_path(name)), (
                    f"{where}: {name} is marked (gone) but {v1_path(name)} resolves: mark it (tf.compat.v1 only)"
                )
        elif mark == COMPAT_V1:
            assert not resolve(name), f"{where}: {name} is marked (tf.compat.v1 only) but resolves in TF 2"
            assert resolve(v1_path(name)), f"{where}: {name} is marked (tf.compat.v1 only) but {v1_path(name)} does not resolve"
        else:
            assert name.startswith("helpers.") and resolve(name), (
                f"{where}: {name} is marked (the workbook's own) but is not a helpers function"
            )


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_every_link_lands_on_a_heading(row: tuple[int, list[str]]) -> None:
    where = _row_id(row)
    targets = anchors.rendered_link_targets(row[1][3])
    assert targets, f"{where}: no link to a chapter section"
    for target in targets:
        name, _, anchor = target.partition("#")
        notebook = NOTEBOOKS_DIR / name
        assert name.endswith(".ipynb") and anchor, f"{where}: {target} is not a link to a notebook section (NN_name.ipynb#anchor)"
        assert notebook.is_file(), f"{where}: {name} is not a notebook of the workbook"
        assert anchor in _anchors(notebook), f"{where}: #{anchor} is not a heading of {name}"


def test_current_api_status_in_the_pinned_versions() -> None:
    """What make drift compares between the pinned and the newest versions: no current name is missing here."""
    from helpers.workbook.glossary import current_api_status

    status = current_api_status()
    assert status and "missing" not in status.values()
    assert status["tf.function"] == status["keras.optimizers.Optimizer.iterations"] == "ok" and "tf.train.create_global_step" not in status  # marked v1-only
    assert status["tf.compat.v1.test.compute_gradient"] == "deprecated"  # TF 2.21 marks the v1 checker (chapter 07 shows its notice)


def test_resolve() -> None:
    """The resolver itself: attributes, class attributes, private modules, and names that are not there."""
    assert resolve("tf.train.Checkpoint") and resolve("keras.optimizers.Optimizer.iterations")
    assert resolve("tensorflow.python.ops.gradient_checker.compute_gradient") and resolve("helpers.workbook.anchors.jupyter_anchor")
    assert not resolve("tf.train.no_such_name") and not resolve("tf.no_such_module.Checkpoint")
    assert not resolve("tensorflow.python.no_such_module.x") and not resolve("no_such_package.x")
