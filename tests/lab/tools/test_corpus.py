"""Do the hidden tests keep their promise on the answer corpus (corpus/<assignment>/*.toml)?

Every correct style gets full marks; every mistake loses points in the tests of
the answer that made it and nowhere else (an answer that calls it is checked
with the reference in its place); its messages name its cause and
no other, and a value mistake is caught by the visible tests before submission.
Graded by ``python -m autograder grade``
(the hostile class's run), whose scores equal stock nbgrader's cell by cell on
every entry (tests/lab/pipeline/test_grader.py compares them with the golden file);
the table in docs/corpus.md, made by stock nbgrader (``make golden``), must match it too.
"""

import pytest

from autograder.pipeline.course import notebook
from autograder.tools import corpus

from .. import lab

pytestmark = pytest.mark.slow

ENTRIES = corpus.load_corpus(lab.ROOT / lab.CORPUS)
CORRECT = [name for name, entry in ENTRIES.items() if not entry.loses]
MISTAKES = [name for name, entry in ENTRIES.items() if entry.loses]


def test_corpus_is_big_enough():
    """Does the corpus hold at least 12 correct styles and 30 distinct mistakes?"""
    assert len(CORRECT) >= 12
    assert len(MISTAKES) >= 30
    assert len({ENTRIES[m].what for m in MISTAKES}) == len(MISTAKES)


def test_every_answer_has_a_mistake(answer_ids):
    """Is every autograded answer cell the site of at least one mistake?"""
    blamed = {answer for name in MISTAKES for answer in ENTRIES[name].loses}
    assert set(answer_ids) - {"why_not_average"} <= blamed


@pytest.mark.parametrize("name", CORRECT)
def test_correct_style_gets_full_marks(graded_corpus, name):
    """Does this correct answer, written in its own style, earn every autograded point?"""
    result = graded_corpus[name]
    assert result.messages == {}
    assert result.score == sum(result.max_points.values())


@pytest.mark.parametrize("name", MISTAKES)
def test_mistake_is_charged_once(graded_corpus, answer_ids, name):
    """Does this mistake lose points in the answers it breaks, and nowhere else?

    A test of one answer serves the answers it calls by reference versions
    (``served`` in lab_checks), so a mistake can change only its own answer's points.
    """
    entry, result = ENTRIES[name], graded_corpus[name]
    lost = corpus.lost_by_answer(result, answer_ids)
    missed = [answer for answer in entry.loses if answer not in lost]
    assert not missed, f"{entry.what}: no points lost in {missed}"
    charged = {answer: lost[answer] for answer in set(lost) - set(entry.loses)}
    assert not charged, f"{entry.what}: charged again in {charged}: {result.messages}"


@pytest.mark.parametrize("name", MISTAKES)
def test_mistake_is_named_by_its_cause(graded_corpus, name):
    """Does every failing test explain itself, one name this mistake's cause, and none another?"""
    entry, result = ENTRIES[name], graded_corpus[name]
    bare = [test for test, message in result.messages.items() if message.endswith("Error: ")]
    assert not bare, f"{entry.what}: bare failures in {bare}"
    assert any(entry.says in message for message in result.messages.values()), (
        f"{entry.what}: no message says {entry.says!r}: {result.messages}"
    )
    wrong = {
        test: phrase
        for test, message in result.messages.items()
        for phrase in entry.never
        if phrase in message
    }
    assert not wrong, f"{entry.what}: a message names another cause: {wrong}"


@pytest.mark.parametrize("name", [m for m in MISTAKES if ENTRIES[m].caught_visibly])
def test_value_mistake_is_caught_before_submission(graded_corpus, source_nb, answer_ids, name):
    """Does a visible test of the broken answer fail, so the self-check says "not ready"?"""
    visible = {
        notebook.grade_id(cell)
        for cell in source_nb.cells
        if notebook.is_test(cell) and "BEGIN HIDDEN TESTS" not in cell.source
    }
    entry, result = ENTRIES[name], graded_corpus[name]
    failed = {test for test in visible if result.points.get(test, 0) < result.max_points[test]}
    caught = {notebook.answer_of(test, answer_ids) for test in failed}
    assert set(entry.loses) <= caught, f"{entry.what}: no visible test of {entry.loses} fails"


def test_glue_mistakes_name_the_axis(graded_corpus):
    """Is gluing on the wrong axis caught by name, with the shape the student produced?"""
    for name in ("mistakes/concat_axis0", "mistakes/concat_vstack"):
        message = graded_corpus[name].messages["test_concat_heads"]
        assert "axis" in message and "(24, 2)" in message


GENERATED = "your answer behaves as the right computation would"  #: a generated edit's words
NAMED_BEGIN, NAMED_END = "<!-- corpus-named:begin -->", "<!-- corpus-named:end -->"


def causes_named(graded_corpus) -> str:
    """How many mistakes' pages name their cause, and how: the sentence docs/corpus.md states."""
    named = generated = crashes = 0
    for name in MISTAKES:
        says = ENTRIES[name].says
        naming = [m for m in graded_corpus[name].messages.values() if says and says in m]
        if not naming:
            continue
        named += 1
        if any(GENERATED in m for m in naming):
            generated += 1
        elif any("\nWhy: " in m for m in naming):
            crashes += 1
    return (
        f"{len(MISTAKES)} mistakes, the page names the cause of {named}: {generated} by a "
        f"generated edit, {crashes} by a crash's explanation, the rest by a listed variant "
        "or the test's own words"
    )


def test_the_docs_count_the_causes_named_truly(graded_corpus):
    """Does docs/corpus.md say how many pages name their cause, and how, as graded now?"""
    text = (lab.ROOT / "docs" / "corpus.md").read_text()
    stated = text.split(NAMED_BEGIN, 1)[1].split(NAMED_END, 1)[0]
    assert stated == causes_named(graded_corpus)


def test_readme_table_is_current(graded_corpus, entries, answer_ids):
    """Does docs/corpus.md show exactly the table this corpus produces?"""
    expected = corpus.table(entries, graded_corpus, answer_ids)
    readme = (lab.ROOT / "docs" / "corpus.md").read_text()
    assert corpus.table_in(readme) == expected, (
        "the table of caught mistakes in docs/corpus.md is stale: run `make golden`"
    )
