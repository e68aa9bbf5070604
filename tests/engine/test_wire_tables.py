"""Do a data course's answers, pandas DataFrames and Series, cross as data and come back whole?

They cross as their labels, index and columns, each column a numpy array of a
plain dtype (strings with a mask of what is missing): never pickled, bounded
as every value is, and what cannot be said so is refused.
"""

import json

import numpy as np
import pytest

from autograder.sandbox import wire

pandas = pytest.importorskip("pandas")  # a test dependency of the suite: never skipped there


def _round_trip(value):
    return wire.decode(json.loads(json.dumps(wire.encode(value))))


@pytest.mark.parametrize(
    "frame",
    [
        pandas.DataFrame({"x": [1, 2, 3], "y": [0.5, np.nan, 2.0]}),
        pandas.DataFrame({"name": ["ada", None, "bo"], "n": [1, 2, 3]}, index=["a", "b", "c"]),
        pandas.DataFrame({"when": pandas.to_datetime(["2026-03-01", "2026-03-02"])}),
        pandas.DataFrame([[1, 2], [3, 4]], columns=["a", "a"]),  # a name twice
        pandas.DataFrame({"x": []}),
        pandas.DataFrame({"cat": pandas.Categorical(["a", "b", "a"])}).astype(str),
        pandas.DataFrame({"flag": [True, False]}, index=pandas.RangeIndex(10, 14, 2, name="row")),
    ],
)
def test_a_dataframe_comes_back_equal(frame):
    back = _round_trip(frame)
    assert isinstance(back, pandas.DataFrame)
    pandas.testing.assert_frame_equal(back, frame, check_dtype=False, check_index_type=False)


def test_a_series_comes_back_with_its_name_and_index():
    series = pandas.Series([1.5, 2.5], index=["p", "q"], name="score")
    pandas.testing.assert_series_equal(_round_trip(series), series, check_index_type=False)


@pytest.mark.parametrize(
    "value",
    [
        pandas.DataFrame({"x": [{"a": 1}, {"b": 2}]}),  # Python objects in a column
        pandas.DataFrame({"x": [1, 2]}, index=pandas.MultiIndex.from_tuples([(1, 2), (3, 4)])),
        pandas.DataFrame({("a", "b"): [1]}),  # a MultiIndex of columns
        pandas.Series([object()]),
    ],
)
def test_what_is_not_plain_data_does_not_cross(value):
    with pytest.raises(wire.Unencodable):
        wire.encode(value)


def test_a_forged_table_is_refused():
    """Columns that do not match the index, or strings that are not strings: a WireError."""
    good = wire.encode(pandas.DataFrame({"x": [1, 2]}))
    short = json.loads(json.dumps(good))
    short["v"]["columns"][0]["data"] = wire.encode(np.array([1]))
    with pytest.raises(wire.WireError):
        wire.decode(short)
    text = json.loads(json.dumps(good))
    text["v"]["columns"][0]["text"] = True
    with pytest.raises(wire.WireError):
        wire.decode(text)
    assert "pickle" not in json.dumps(good)
