"""Moodle: the names of its submission folders, and its grading worksheet filled with totals.

- Submissions: ``Jane Doe_1234_assignsubmission_file_/hw1.ipynb`` (or a file
  of that name) is participant 1234, ``Jane Doe``; the student's id here is
  ``jane_doe-1234`` (names in any script).
- The offline grading worksheet (``Identifier`` "Participant N", ``Full
  name``, ``Email address``, ``Status``, ``Grade``, ``Maximum Grade``, ...,
  ``Feedback comments``), matched by participant number; by full name or
  e-mail only when asked (``--match-names``), each such match named; plus a
  zip of the feedback pages in the layout Moodle's "Upload multiple feedback
  files in a zip" expects.
"""

from __future__ import annotations

import logging
import re
import zipfile
from pathlib import Path

from autograder.pipeline.course import turns
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.errors import UserError
from autograder.pipeline.lms import exported
from autograder.pipeline.lms.grades import (
    Filled,
    Identity,
    Total,
    by_lms_id,
    final_or_refuse,
    lms_maximum,
    of_class,
    points,
    read_csv,
    scaled,
    slug,
    totals,
    write_csv,
)
from autograder.pipeline.results import ClassFolder
from autograder.pipeline.settings import class_folder

_log = logging.getLogger(__name__)

FOLDER_NAME = re.compile(
    r"^(?P<student>.+?)_(?P<lms>\d+)_assignsubmission_(?:file|onlinetext)_"
)  #: a participant's folder (or file) name, as Moodle's "Download all submissions" writes it


def identity(name: str) -> Identity | None:
    """Who handed in the folder or file ``name`` (one path part), if Moodle named it."""
    match = FOLDER_NAME.match(name)
    if match is None:
        return None
    key = match.group("lms")
    return Identity(f"{slug(match['student'])}-{key}", 0, key, match["student"])


NEEDED = ("Identifier", "Full name", "Grade")
PARTICIPANT = re.compile(r"(\d+)\s*$")
#: the worksheet's columns that say when each participant handed in
HANDED_IN = ("Identifier", "Last modified (submission)")
NO_SUBMISSION = ("", "-")  #: what the worksheet shows for a participant who handed nothing in


def hand_in_times(header: list[str], rows: list[list[str]]) -> list[tuple[str, str]]:
    """``[(participant number, "Last modified (submission)" as written)]`` of the worksheet,
    for every participant who handed something in."""
    at = {name: header.index(name) for name in HANDED_IN}
    found = []
    for row in rows:
        if len(row) <= max(at.values()):
            continue
        number = PARTICIPANT.search(row[at["Identifier"]].strip())
        when = row[at["Last modified (submission)"]].strip()
        if number and when not in NO_SUBMISSION:
            found.append((number.group(1), when))
    return found


def fill(
    header: list[str],
    rows: list[list[str]],
    grades: dict[str, Total],
    match_names: bool = False,
    pages: Path | None = None,
) -> tuple[list[list[str]], Filled, dict[str, tuple[str, str]]]:
    """The worksheet with each matched student's grade; also ``{student_id: (name, number)}``.

    Matched by participant number; with ``match_names`` also by full name or
    e-mail, each such match named in the notes. pages: the feedback pages'
    folder; a row says its page is attached only when it will be (the page
    exists and the row has a participant number to file it under).
    """
    missing = [h for h in NEEDED if h not in header]
    if missing:
        raise UserError(f"not a Moodle grading worksheet: no column {', '.join(missing)}")
    at = {name: header.index(name) for name in header}
    by_lms, notes = by_lms_id(grades)
    rows = [row + [""] * (len(header) - len(row)) for row in rows]
    numbers = [PARTICIPANT.search(row[at["Identifier"]].strip()) for row in rows]
    keyed = [by_lms.get(n.group(1)) if n else None for n in numbers]
    by_name: dict[str, Total] = {}
    if match_names:  # only students no row names by its key
        taken = {t.student_id for t in keyed if t is not None}
        for candidate in grades.values():
            for name in candidate.names() if candidate.student_id not in taken else ():
                by_name[name] = candidate
    filled: list[str] = []
    without: list[str] = []
    used: set[str] = set()
    who: dict[str, tuple[str, str]] = {}
    out: list[list[str]] = []
    maxima: set[tuple[float, float]] = set()
    for row, number, found in zip(rows, numbers, keyed):
        identifier = row[at["Identifier"]].strip()
        name = row[at["Full name"]].strip()
        total: Total | None = found
        if total is None and by_name:
            total = by_name.get(slug(name))
            if total is None and "Email address" in at:
                total = by_name.get(slug(row[at["Email address"]].split("@")[0]))
            if total is not None:
                notes.append(f"{identifier} ({name}) matched {total.student_id} by name or e-mail")
        if total is None:
            without.append(name or identifier)
        else:
            maximum = None
            if "Maximum Grade" in at:
                maximum = lms_maximum(row[at["Maximum Grade"]], f"{identifier}'s Maximum Grade")
            row[at["Grade"]] = points(scaled(total, maximum))
            if maximum is None and "Maximum Grade" in at:
                row[at["Maximum Grade"]] = points(total.max_score)
            elif maximum is not None and maximum != total.max_score:
                maxima.add((total.max_score, maximum))
            attached = (
                pages is not None
                and number is not None
                and (pages / f"{total.student_id}.html").is_file()
            )
            if attached and "Feedback comments" in at and not row[at["Feedback comments"]].strip():
                row[at["Feedback comments"]] = "Your feedback page is attached."
            filled.append(total.student_id)
            used.add(total.student_id)
            who[total.student_id] = (name, number.group(1) if number else "")
        out.append(row)
    rescaled = sorted(maxima)[0] if len(maxima) == 1 else None
    if len(maxima) > 1:
        scales = ", ".join(f"{theirs:g}" for _, theirs in sorted(maxima))
        notes.append(f"totals scaled to each row's Maximum Grade: {scales}")
    return out, Filled(filled, without, sorted(set(grades) - used), rescaled, notes), who


def feedback_zip(pages: Path, who: dict[str, tuple[str, str]], into: Path) -> tuple[int, list[str]]:
    """Zip each student's feedback page as Moodle's feedback upload wants it.

    One folder per participant, named as in Moodle's submission download
    (``Jane Doe_1234_assignsubmission_file_/feedback.html``). Returns the
    number of pages zipped and the students whose page is missing.
    """
    zipped, missing = 0, []
    into.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(into, "w", zipfile.ZIP_DEFLATED) as archive:
        for student_id, (name, number) in sorted(who.items()):
            page = pages / f"{student_id}.html"
            if not number or not page.is_file():
                missing.append(student_id)
                continue
            archive.write(page, f"{name}_{number}_assignsubmission_file_/feedback.html")
            zipped += 1
    return zipped, missing


def write(
    worksheet: Path,
    out: Path,
    feedback: Path,
    grades: dict[str, Total],
    match_names: bool = False,
) -> tuple[Filled, Path, int, list[str]]:
    """Fill ``worksheet`` into ``out`` and zip the ``feedback`` pages beside it.

    Returns what was filled, the zip's path, the pages zipped and the students
    whose page (or participant number) is missing.
    """
    header, rows = read_csv(worksheet, "Moodle worksheet")
    filled_rows, filled, who = fill(header, rows, grades, match_names, feedback)
    write_csv(out, header, filled_rows)
    pages = out.with_name(f"{out.stem}-feedback.zip")
    zipped, missing = feedback_zip(feedback, who, pages)
    return filled, pages, zipped, missing


def export(
    *,
    worksheet: Path | str,
    out: Path | str | None = None,
    grades: Path | str | None = None,
    feedback: Path | str | None = None,
    match_names: bool = False,
    final: bool = False,
    assignment: str | None = None,
    course: Path | str | None = None,
) -> int:
    """Fill Moodle's grading ``worksheet`` into ``out``, feedback pages zipped beside it.

    grades: the grade run's ``--out``, whose students are the class
    (:func:`~autograder.pipeline.lms.grades.of_class`) and whose pages are
    zipped unless ``feedback`` names another folder; out: default
    ``moodle.csv`` beside them. final: refuse (exit 2,
    nothing written) while any grade is not final.
    """
    chosen = find_assignment(course, assignment)
    grades = class_folder(chosen, grades)
    with turns.turn(chosen.root, "export moodle"):  # the course's totals hold still
        out = Path(out) if out is not None else Path(grades) / "moodle.csv"
        feedback = Path(feedback) if feedback is not None else ClassFolder(Path(grades)).feedback
        totals_of, left_out = of_class(totals(chosen), Path(grades))
        waiting = final_or_refuse(totals_of, final)
        filled, pages, zipped, missing = write(
            Path(worksheet), out, feedback, totals_of, match_names
        )
        filled.notes += left_out + waiting
        exported.record(chosen, "moodle", out, {s: totals_of[s].score for s in filled.filled})
        _log.info(filled.summary(out))
        if not Path(feedback).is_dir():
            _log.warning(
                f"no feedback pages in {feedback}: pass --grades DIR, where DIR is "
                "the grade run's --out (no row says a page is attached)"
            )
        _log.info(f"wrote {pages}: {zipped} feedback page(s) for Moodle's feedback upload")
        if missing:
            _log.warning(f"no feedback page (or no participant number) for: {', '.join(missing)}")
        return 0
