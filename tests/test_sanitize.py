"""Does our faster metadata check refuse exactly what nbgrader's own refuses?"""

import copy

import pytest
from nbgrader.nbgraderformat import ValidationError
from nbgrader.preprocessors import CheckCellMetadata

from autograder import notebook, sanitize


def _breakages():
    def drop_grade_id(meta):
        del meta["grade_id"]

    def empty_grade_id(meta):
        meta["grade_id"] = ""

    def drop_points(meta):
        del meta["points"]

    def points_as_text(meta):
        meta["points"] = "lots"

    def old_schema(meta):
        meta["schema_version"] = 1

    return [drop_grade_id, empty_grade_id, drop_points, points_as_text, old_schema]


@pytest.mark.parametrize("breakage", _breakages(), ids=lambda f: f.__name__)
def test_broken_cell_is_refused_after_valid_ones_passed(release_nb, breakage):
    sanitize.CheckCellMetadataOnce().preprocess(copy.deepcopy(release_nb), {})  # remembers all
    broken = copy.deepcopy(release_nb)
    test_cell = next(c for c in broken.cells if notebook.is_test(c))
    breakage(notebook.nbgrader_meta(test_cell))
    with pytest.raises(Exception) as stock:
        CheckCellMetadata().preprocess(copy.deepcopy(broken), {})
    with pytest.raises(Exception) as ours:
        sanitize.CheckCellMetadataOnce().preprocess(broken, {})
    assert type(ours.value) is type(stock.value)


def test_duplicate_grade_ids_are_refused_though_each_cell_passed(release_nb):
    nb = copy.deepcopy(release_nb)
    test_cell = next(c for c in nb.cells if notebook.is_test(c))
    nb.cells.append(copy.deepcopy(test_cell))
    with pytest.raises(ValidationError, match="Duplicate grade id"):
        sanitize.CheckCellMetadataOnce().preprocess(nb, {})
