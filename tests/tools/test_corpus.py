"""Do the hidden tests keep their promise on the answer corpus (tests/corpus/*.toml)?

Every correct style gets full marks; every mistake loses points in the tests of
the answer that made it (and perhaps of answers that call it), nowhere else, and
its messages name what went wrong. Graded by ``python -m autograder grade``
(the hostile class's run), whose scores equal stock nbgrader's cell by cell on
every entry (tests/pipeline/test_grader.py compares them with the golden file);
the README's table, made by stock nbgrader (``make golden``), must match it too.
"""

import pytest

from autograder.tools import corpus

from .. import lab as course

pytestmark = pytest.mark.slow

ENTRIES = corpus.load_corpus(course.ROOT / course.CORPUS)
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
def test_mistake_loses_points_where_made(graded_corpus, answer_ids, solution_nb, name):
    """Does this mistake lose points in its own answer's tests, and only where it can reach?"""
    entry = ENTRIES[name]
    lost = corpus.lost_by_answer(graded_corpus[name], answer_ids)
    missed = [answer for answer in entry.loses if answer not in lost]
    assert not missed, f"{entry.what}: no points lost in {missed}"
    spilled = set(lost) - corpus.affected(entry.loses, corpus.calls(solution_nb))
    assert not spilled, f"{entry.what}: points lost in unrelated answers {sorted(spilled)}"


@pytest.mark.parametrize("name", MISTAKES)
def test_mistake_is_named(graded_corpus, name):
    """Does every failing test explain itself, and does one name this mistake?"""
    entry, result = ENTRIES[name], graded_corpus[name]
    bare = [test for test, message in result.messages.items() if message.endswith("Error: ")]
    assert not bare, f"{entry.what}: bare failures in {bare}"
    assert any(entry.says in message for message in result.messages.values()), (
        f"{entry.what}: no message says {entry.says!r}: {result.messages}"
    )


def test_glue_mistakes_name_the_axis(graded_corpus):
    """Is gluing on the wrong axis caught by name, with the shape the student produced?"""
    for name in ("mistakes/concat_axis0", "mistakes/concat_vstack"):
        message = graded_corpus[name].messages["test_concat_heads"]
        assert "axis" in message and "(24, 2)" in message


def test_readme_table_is_current(graded_corpus, entries, answer_ids):
    """Does the README show exactly the table this corpus produces?"""
    expected = corpus.table(entries, graded_corpus, answer_ids)
    readme = (course.ROOT / "README.md").read_text()
    assert corpus.table_in(readme) == expected, (
        "README's table of caught mistakes is stale: run `make golden`"
    )
