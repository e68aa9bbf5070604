"""Does the diagnosis family name exactly the variant an answer equals, and nothing else?

``lab_diagnoses.py`` as the source folder holds it, called directly on a small
reference (a weighted sum ``scale * (a @ b)``), one test per kind of variant.
Each variant's sentence for this lab, graded by the real grader and the
self-check, is in the corpus (tests/lab/tools/test_corpus.py and test_check.py).
"""

import importlib.util

import numpy as np
import pytest

from . import lab


@pytest.fixture(scope="module")
def diagnoses():
    path = (lab.ROOT / lab.SOURCE).with_name("lab_diagnoses.py")
    spec = importlib.util.spec_from_file_location("lab_diagnoses_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference(a, b, scale=1.0, axis=-1):
    """A small computation with a setting: row sums of ``scale * a * b`` along ``axis``."""
    return (scale * a * b).sum(axis=axis)


A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0], [0.5, -1.0, 2.0]])
B = np.array([[2.0, 0.0, 1.0], [1.0, 3.0, -2.0], [6.0, 1.0, 1.0]])


def _family(diagnoses, a=A, b=B):
    return diagnoses.Variants(lambda a, b: reference(a, b) + a[0, 0], (a, b), ("a", "b"))


def test_swapped_arguments_are_named(diagnoses):
    family = _family(diagnoses).swapped()
    got = reference(B, A) + B[0, 0]
    assert family.cause(got) == "it uses b where a goes and a where b goes"


def test_a_transposed_square_matrix_is_named(diagnoses):
    family = _family(diagnoses).transposed()
    assert family.cause(reference(A, B.T) + A[0, 0]) == "it uses b transposed (b.T)"
    assert family.cause(reference(A.T, B) + A.T[0, 0]) == "it uses a transposed (a.T)"


def test_a_changed_setting_is_named(diagnoses):
    family = diagnoses.Variants(reference, (A, B), ("a", "b"))
    family.changed({"summed down the columns": {"axis": 0}, "twice too large": {"scale": 2.0}})
    assert family.cause(reference(A, B, axis=0)) == "summed down the columns"
    assert family.cause(2 * reference(A, B)) == "twice too large"


def test_the_previous_answer_returned_again_is_named(diagnoses):
    previous = reference(B, B)
    family = diagnoses.Variants(reference, (A, B), ("a", "b")).carried_over(previous)
    assert "previous call" in family.cause(previous)
    assert diagnoses.Variants(reference, (A, B), ("a", "b")).carried_over(None).outputs == {}


def test_right_unknown_and_ambiguous_answers_name_nothing(diagnoses):
    family = diagnoses.Variants(reference, (A, B), ("a", "b"))
    family.changed({"no effect": {"scale": 1.0}, "doubled": {"scale": 2.0}})
    assert "no effect" not in family.outputs  # a variant that is right names nothing
    assert family.cause(reference(A, B)) == ""
    assert family.cause(reference(A, B) + 1) == ""  # no variant: "wrong values" stays
    assert family.cause("not numbers") == ""
    family.add("doubled, said again", 2 * reference(A, B))  # the first sentence keeps it
    assert family.cause(2 * reference(A, B)) == "doubled"


def test_a_variant_the_shapes_refuse_names_nothing(diagnoses):
    family = diagnoses.Variants(lambda a, b: a @ b, (np.ones((2, 3)), np.ones((3, 2))), "ab")
    family.swapped().transposed()  # neither swap nor transpose fits these shapes
    assert family.outputs == {}
