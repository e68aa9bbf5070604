"""Does a data course grade: answers that take and return pandas DataFrames?

A toy course whose one answer returns the top rows of a table. The test cell,
run in the grader, gets the student's DataFrame back as data (its labels,
index and columns) and compares it with pandas' own checks, so a right answer
scores and a wrong one loses exactly its points; an answer that returns what
cannot cross (a table of Python objects) is told so, in its own test.
"""

import pytest

from autograder.pipeline import results

from . import toy

pytest.importorskip("pandas")  # a test dependency of the suite: never skipped there
pytestmark = pytest.mark.slow

ID = "data-1"
SOLVED = (
    "def top(df, n):\n"
    '    return df.sort_values("score", ascending=False).iloc[:n].reset_index(drop=True)'
)
TEST = """import pandas as pd
df = pd.DataFrame({"name": ["ada", "bo", "cy", None], "score": [3, 9, 5, 1]})
got = top(df, 2)
want = pd.DataFrame({"name": ["bo", "cy"], "score": [9, 5]})
pd.testing.assert_frame_equal(got, want, check_dtype=False)
assert df["score"].tolist() == [3, 9, 5, 1], "top changed its argument"
"""
CELLS = [
    toy.cell(
        "def top(df, n):\n    ### BEGIN SOLUTION\n"
        + "\n".join("    " + line for line in SOLVED.splitlines()[1:])
        + "\n    ### END SOLUTION",
        "top",
        "answer",
    ),
    toy.cell(TEST, "test_top", "test", 2),
]
STUDENTS = {
    "right": SOLVED,
    "wrong": "def top(df, n):\n    return df.sort_values('score').iloc[:n].reset_index(drop=True)",
    "objects": "def top(df, n):\n    import pandas as pd\n    return pd.DataFrame({'x': [{1: 2}]})",
}


def test_a_data_course_grades_dataframes(tmp_path):
    course = toy.write_course(tmp_path / "course", ID, {"data.ipynb": CELLS})
    students = {
        student: [toy.cell(source, "top", "answer"), *CELLS[1:]]
        for student, source in STUDENTS.items()
    }
    done, out = toy.grade_class(course, ID, "data.ipynb", students, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    assert (rows["right"]["status"], rows["right"]["score"]) == ("ok", "2")
    assert (rows["wrong"]["status"], rows["wrong"]["score"]) == ("ok", "0")
    assert rows["objects"]["score"] == "0"
    page = (out / "feedback" / "objects.html").read_text()
    assert "top returned a column of object that is not strings" in page
