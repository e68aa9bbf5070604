"""Is a figure copied only when it is exactly one the trusted run drew, and byte for byte?

In this process, as a student's process would see it (:mod:`autograder.sandbox.figures`):
the trusted run is played by drawing here first and handing the entries over.
That a student's process cannot change another's entries is seen in the
sandbox class (tests/engine/test_sandbox.py).
"""

import io

import matplotlib
import numpy as np
import pytest
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from autograder.sandbox import figures


@pytest.fixture
def copying(monkeypatch):
    """figures installed in this process, undone afterwards; counts the real draws."""
    draws = []
    real = FigureCanvasBase.print_figure

    def counted(self, *args, **kwargs):
        draws.append(self.figure)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(FigureCanvasBase, "print_figure", counted)
    monkeypatch.setattr(figures, "_known", {})
    monkeypatch.setattr(figures, "_drawn", [])
    monkeypatch.setattr(figures, "_reused", 0)
    monkeypatch.setattr(figures, "_recording", False)
    figures.install()
    return draws


def heatmap(table=((1.0, 0.0), (0.5, 0.5)), title="panel 1"):
    """A small figure like the lab's: an image, a title, ticks and one number."""
    fig = Figure(figsize=(1, 1), dpi=24)  # small: the tests need a figure, not a picture
    ax = fig.add_subplot()
    ax.imshow(np.array(table), cmap="Blues", vmin=0, vmax=1)
    ax.set_title(title)
    ax.text(0, 0, f"{table[0][0]:.2f}", ha="center", va="center")
    return fig


def png(fig, **kwargs):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", **kwargs)
    return buffer.getvalue()


def learned(*figs):
    """Draw ``figs`` as the trusted run does, then keep what was drawn, as a student's process."""
    figures.record()
    pictures = [png(fig) for fig in figs]
    figures.remember(figures.drawn()["drawn"])
    figures._drawn.clear()
    figures._recording = False
    return pictures


def test_the_same_figure_is_copied_byte_for_byte(copying):
    (drawn,) = learned(heatmap())
    again = png(heatmap())
    assert again == drawn
    assert len(copying) == 1 and figures.drawn()["reused"] == 1


@pytest.mark.parametrize(
    "changed",
    [
        lambda: heatmap(table=((1.0, 0.0), (0.25, 0.75))),  # the student's numbers
        lambda: heatmap(title="panel 2"),
        lambda: heatmap(table=((1.0, 0.0), (0.5, 0.5 + 1e-12))),  # one bit of one number
    ],
)
def test_a_figure_that_differs_in_anything_is_drawn(copying, changed):
    (drawn,) = learned(heatmap())
    fig = changed()
    expected = png(fig)  # what it draws, with no entries consulted or kept
    assert len(copying) == 2 and figures.drawn()["reused"] == 0
    if fig.axes[0].get_title() == "panel 2":
        assert expected != drawn


def test_settings_and_arguments_are_part_of_the_key(copying):
    (drawn,) = learned(heatmap())
    fig = heatmap()
    with matplotlib.rc_context({"text.hinting": "none"}):  # read as it draws, not before
        assert png(fig) != drawn
    png(heatmap(), dpi=50)
    assert len(copying) == 3 and figures.drawn()["reused"] == 0


def test_what_cannot_be_keyed_is_drawn(copying, tmp_path):
    figures.record()
    fig = heatmap()
    fig.axes[0].xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))  # no pickle
    assert png(fig).startswith(b"\x89PNG") and figures.drawn()["drawn"] == []
    path = tmp_path / "figure.png"
    heatmap().savefig(path)  # a file, not an in-memory PNG: always drawn, never kept
    assert path.read_bytes().startswith(b"\x89PNG") and figures.drawn()["drawn"] == []


def test_entries_say_nothing_without_the_figure(copying):
    """A student's process holds the entries: is no picture readable from them?"""
    (drawn,) = learned(heatmap())
    ((index, sealed),) = figures._known.items()
    assert len(sealed) == len(drawn) and sealed != drawn
    assert b"IHDR" not in sealed and b"IDAT" not in sealed
    assert figures._seal(sealed, bytes(32)) != drawn  # not with a key other than the figure's


def test_a_students_process_keeps_nothing_it_draws(copying):
    png(heatmap())
    assert figures.drawn()["drawn"] == []


def test_the_number_kept_is_bounded(copying, monkeypatch):
    monkeypatch.setattr(figures, "MAX_FIGURES", 2)
    learned(*(heatmap(title=f"panel {n}") for n in range(4)))
    assert len(figures._known) == 2
