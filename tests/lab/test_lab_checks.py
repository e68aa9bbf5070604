"""Do the test cells' messages depend only on the answer, never on how numpy rounded?

``lab_checks.py`` as the source folder holds it, called directly.
"""

import importlib.util

import numpy as np
import pytest

from . import lab


@pytest.fixture(scope="module")
def lab_checks():
    path = (lab.ROOT / lab.SOURCE).with_name("lab_checks.py")
    spec = importlib.util.spec_from_file_location("lab_checks_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _worst(lab_checks, got, expected):
    """The index ``check_close`` names as the worst: ``"(1, 0)"``."""
    with pytest.raises(AssertionError) as failed:
        lab_checks.check_close(got, expected, "f")
    return str(failed.value).split("the worst is at index ")[1].split(", got")[0]


@pytest.mark.parametrize("nudge", [-1, 0, 1])
def test_two_equal_errors_name_the_first_whatever_their_last_bits(lab_checks, nudge):
    """A row of two shares, one too big and one too small by the same: always the first?"""
    expected = np.array([[1.0, 0.0], [0.09936, 0.90064]])
    got = np.array([[1.0, 0.0], [0.85010, 0.14990]])
    # the second error made larger or smaller in its last bits, as a vector loop may
    for _ in range(4):
        got[1, 1] = np.nextafter(got[1, 1], got[1, 1] + nudge)
    assert _worst(lab_checks, got, expected) == "(1, 0)"


def test_a_larger_error_is_still_the_worst(lab_checks):
    """Not every near-tie: an error a thousandth larger is named where it is?"""
    expected = np.array([0.2, 0.3, 0.5])
    got = np.array([0.3, 0.3, 0.6001])  # errors 0.1, 0 and 0.1001
    assert _worst(lab_checks, got, expected) == "(2,)"
    got = np.array([0.3, np.nan, 0.3])
    assert _worst(lab_checks, got, expected) == "(1,)"
