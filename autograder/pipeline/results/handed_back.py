"""Pages handed back to students outside a run's output folder, and what a removal forgets.

Graded on submit (:mod:`autograder.serve`), a hand-in's page goes where
``nbgrader fetch_feedback`` looks for it (:func:`release_to_exchange`):
``<exchange>/<course>/feedback/<hash>.html``, the hash made by nbgrader's own
``notebook_hash`` from the hand-in's ``submission_secret.txt`` and each
notebook's name, as ``nbgrader release_feedback`` names them. Each hand-in has
its own secret, so each gets its own page, and none can be found by another
student. A page that waits for the due date is kept by the service until then
(:class:`KeptPages`). :func:`forget` takes a removed student's results out of
a run's folder.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from nbgrader.utils import notebook_hash

from autograder.pipeline.files import write_atomic

PAGE_MODE = 0o644  #: as nbgrader's release_feedback leaves a page: students read it
#: as nbgrader's exchange makes it: a page is reached by its name, which only its secret
#: gives; the folder is never listed by a student
FOLDER_MODE = 0o711


def release_to_exchange(
    exchange: Path, course_id: str, secret: str, stems: list[str], page: str
) -> int:
    """Put ``page`` in the exchange for every notebook name of one hand-in (``stems``, named
    by the hand-in's ``secret``); the pages written."""
    folder = Path(exchange) / course_id / "feedback"
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
    info = folder.stat()
    if stat.S_IMODE(info.st_mode) != FOLDER_MODE and info.st_uid == os.geteuid():
        os.chmod(folder, FOLDER_MODE)  # one an earlier version made 0755 too
    data = page.encode()
    for stem in stems:
        name = notebook_hash(secret=secret, notebook_id=stem)
        write_atomic(folder / f"{name}.html", data, PAGE_MODE)
    return len(stems)


@dataclass(frozen=True)
class KeptPages:
    """Each graded hand-in's full page, kept in the service's own folder: shown once the
    due date has passed where an early page was shown before (``<hash of its key>.html``)."""

    folder: Path

    def path(self, key: str) -> Path:
        """Where the page of the hand-in ``key`` is kept."""
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.html"

    def keep(self, key: str, html: str) -> None:
        """Keep the full page of the hand-in ``key``."""
        self.folder.mkdir(exist_ok=True)
        write_atomic(self.path(key), html)

    def read(self, key: str) -> str | None:
        """The kept page of the hand-in ``key``; None if none was kept."""
        path = self.path(key)
        return path.read_text() if path.is_file() else None


def forget(paths: list[Path], csv_file: Path, student: str, dry_run: bool) -> list[str]:
    """Remove ``paths`` (a student's state, page, ledger) and the student's row of
    ``csv_file``; what was (or, for a dry run, would be) removed."""
    done = []
    for path in paths:
        if path.is_file():
            done.append(str(path))
            if not dry_run:
                path.unlink()
    if csv_file.is_file():
        text = csv_file.read_text()
        rows = list(csv.reader(io.StringIO(text)))
        kept = [row for row in rows if not row or row[0] != student]
        if len(kept) < len(rows):
            done.append(f"{student}'s row of {csv_file}")
            if not dry_run:
                out = io.StringIO()
                csv.writer(out, lineterminator="\n").writerows(kept)
                write_atomic(csv_file, out.getvalue())
    return done
