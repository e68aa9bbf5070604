"""The LMS exports as nbgrader export plugins, where nbgrader users look for them.

From a course folder::

    nbgrader export --exporter=autograder.tools.nbgrader_export.CanvasExportPlugin \\
        --CanvasExportPlugin.template=GRADEBOOK.csv --to=grades/canvas.csv
    nbgrader export --exporter=autograder.tools.nbgrader_export.MoodleExportPlugin \\
        --MoodleExportPlugin.worksheet=WORKSHEET.csv --to=grades/moodle.csv

The same code as ``python -m autograder export canvas|moodle``
(:mod:`~autograder.pipeline.lms.canvas`, :mod:`~autograder.pipeline.lms.moodle`),
on the gradebook nbgrader opened. ``--assignment=[ID]`` picks the assignment
when the gradebook holds several.
"""

from __future__ import annotations

import sys
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.plugins import ExportPlugin
from traitlets import Bool, Unicode

from autograder.pipeline.errors import UserError
from autograder.pipeline.lms import canvas, moodle
from autograder.pipeline.lms.grades import totals_in


def _one_line(plugin: ExportPlugin, error: UserError) -> None:
    """End nbgrader's export as our command ends on a user's mistake: one line, status 2."""
    plugin.log.error(str(error))
    sys.exit(2)


def _assignment_id(plugin: ExportPlugin, gradebook: Gradebook) -> str:
    chosen = [str(a) for a in plugin.assignment] or [a.name for a in gradebook.assignments]
    if len(chosen) != 1:
        raise UserError(
            f"the gradebook holds {', '.join(chosen) or 'no assignment'}: pick one with "
            "--assignment=[ID]"
        )
    return chosen[0]


class CanvasExportPlugin(ExportPlugin):
    """Fill a Canvas gradebook export with one assignment's totals."""

    template = Unicode("", help="the gradebook CSV exported from Canvas").tag(config=True)
    column = Unicode("", help="the assignment's column (default: the one naming it)").tag(
        config=True
    )

    def export(self, gradebook: Gradebook) -> None:
        out = Path(self.to or "canvas.csv")
        try:
            if not self.template:
                raise UserError("give the Canvas export: --CanvasExportPlugin.template=FILE")
            assignment_id = _assignment_id(self, gradebook)
            grades = totals_in(gradebook, assignment_id)
            filled = canvas.write(
                Path(self.template), self.column or None, out, assignment_id, grades,
                flag="--CanvasExportPlugin.column",
            )  # fmt: skip
        except UserError as error:
            return _one_line(self, error)
        self.log.info(filled.summary(out))


class MoodleExportPlugin(ExportPlugin):
    """Fill Moodle's offline grading worksheet; zip the feedback pages beside it."""

    worksheet = Unicode("", help="the grading worksheet exported from Moodle").tag(config=True)
    feedback = Unicode("grades/feedback", help="the feedback pages").tag(config=True)
    match_names = Bool(False, help="also match by full name or e-mail").tag(config=True)

    def export(self, gradebook: Gradebook) -> None:
        out = Path(self.to or "moodle.csv")
        try:
            if not self.worksheet:
                raise UserError("give the worksheet: --MoodleExportPlugin.worksheet=FILE")
            grades = totals_in(gradebook, _assignment_id(self, gradebook))
            filled, pages, zipped, _ = moodle.write(
                Path(self.worksheet), out, Path(self.feedback), grades, self.match_names
            )
        except UserError as error:
            return _one_line(self, error)
        self.log.info(filled.summary(out))
        self.log.info("wrote %s: %d feedback page(s)", pages, zipped)
