"""The service's journal: every hand-in it has seen, and what became of it.

One SQLite file in the course's own folder (``.autograder/serve-<assignment>.sqlite``,
mode 0600): a row per hand-in, keyed by its inbound folder's name, so seeing
the same hand-in again never makes a second row. A row is written in one
transaction when the hand-in is first seen (``waiting``) and again when it is
done with: ``graded`` (an attempt, with its number and score), ``kept`` (beyond
the attempts allowed: not graded before the due date), ``superseded`` (a newer
hand-in of the same student was graded instead) or ``refused`` (not the
student's own). Only a ``graded`` row is an attempt. The service records
into the gradebook first and marks the row after; killed in between, it grades
that hand-in again on its next start, records the same grade again over
itself, and counts the attempt once.

``shown`` says which page the student holds in the exchange: ``early`` (the
before-the-due-date page) or ``full``; a page is released again, in full,
once the student's due date has passed.

``secret`` is the hand-in's ``submission_secret.txt`` as first read, which
names its pages in the exchange, with ``secret_at``, when the kernel says that
file last changed (nanoseconds). A secret belongs to the student whose hand-in
held it first: another student's hand-in with the same secret (read from the
owner's home folder) is never given a page under it (:meth:`Journal.secret_of`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

WAITING, GRADED, KEPT, SUPERSEDED, REFUSED = "waiting", "graded", "kept", "superseded", "refused"

_SCHEMA = """
create table if not exists hand_ins (
    key text primary key,
    student text not null,
    handed_in text not null,
    seen text not null,
    state text not null,
    attempt integer,
    score real,
    max_score real,
    status text,
    counts integer not null default 0,
    shown text not null default '',
    note text not null default '',
    released text
);
create index if not exists by_student on hand_ins (student, handed_in);
"""
#: columns added since the first journals: (name, declaration)
_ADDED = (("secret", "text"), ("secret_at", "integer"))


@dataclass(frozen=True)
class Entry:
    """One hand-in as the journal holds it (times in naive UTC, as nbgrader keeps them).

    attempt: its number among the student's graded hand-ins (None if not
    graded); counts: the gradebook holds this one; shown: ``early``, ``full``
    or "" (no page released yet); released: when its first page was released.
    """

    key: str
    student: str
    handed_in: datetime
    seen: datetime
    state: str
    attempt: int | None
    score: float | None
    max_score: float | None
    status: str | None
    counts: bool
    shown: str
    note: str
    released: datetime | None


def _now() -> str:
    return datetime.now(UTC).replace(tzinfo=None).isoformat()


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


class Journal:
    """The journal of one assignment's hand-ins (see the module's docstring)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not path.exists()
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        if fresh:
            path.chmod(0o600)
        self.db.execute("pragma journal_mode=wal")
        self.db.execute("pragma synchronous=full")  # a kill at any moment keeps what was said
        self.db.executescript(_SCHEMA)
        columns = {row[1] for row in self.db.execute("pragma table_info(hand_ins)")}
        for name, declaration in _ADDED:
            if name not in columns:
                self.db.execute(f"alter table hand_ins add column {name} {declaration}")
        self.db.execute("create index if not exists by_secret on hand_ins (secret)")

    def close(self) -> None:
        """Close the file."""
        self.db.close()

    def _rows(self, where: str = "", *args: object) -> Iterator[Entry]:
        query = f"select * from hand_ins {where} order by handed_in, key"
        for row in self.db.execute(query, args):
            yield Entry(
                row[0],
                row[1],
                _time(row[2]),
                _time(row[3]),
                row[4],
                row[5],
                row[6],
                row[7],
                row[8],
                bool(row[9]),
                row[10],
                row[11],
                _time(row[12]) if row[12] else None,
            )

    def known(self) -> set[str]:
        """Every hand-in key the journal holds."""
        return {row[0] for row in self.db.execute("select key from hand_ins")}

    def add(self, key: str, student: str, handed_in: datetime) -> None:
        """Note a hand-in first seen (``waiting``); nothing if it is known already."""
        self.db.execute(
            "insert or ignore into hand_ins (key, student, handed_in, seen, state) "
            "values (?, ?, ?, ?, ?)",
            (
                key,
                student,
                handed_in.isoformat(),
                _now(),
                WAITING,
            ),
        )

    def entries(self, student: str | None = None) -> list[Entry]:
        """Every hand-in, or one student's, oldest first."""
        if student is None:
            return list(self._rows())
        return list(self._rows("where student = ?", student))

    def waiting(self) -> list[Entry]:
        """Hand-ins seen but not done with (those in flight when a service was killed too)."""
        return list(self._rows("where state = ?", WAITING))

    def entry(self, key: str) -> Entry | None:
        """The hand-in ``key``, if known."""
        found = list(self._rows("where key = ?", key))
        return found[0] if found else None

    def finish(
        self,
        key: str,
        state: str,
        *,
        attempt: int | None = None,
        score: float | None = None,
        max_score: float | None = None,
        status: str | None = None,
        note: str = "",
        shown: str = "",
        counts: bool = False,
    ) -> None:
        """Say what became of a hand-in, in one transaction; counts: the gradebook now holds
        this hand-in (and no other of the student's)."""
        with self.db:
            self.db.execute("begin immediate")
            if counts:
                student = self.db.execute(
                    "select student from hand_ins where key = ?", (key,)
                ).fetchone()[0]
                self.db.execute("update hand_ins set counts = 0 where student = ?", (student,))
            self.db.execute(
                "update hand_ins set state = ?, attempt = ?, score = ?, max_score = ?, "
                "status = ?, note = ?, shown = ?, counts = ? where key = ?",
                (state, attempt, score, max_score, status, note, shown, int(counts), key),
            )

    def shown(self, key: str, page: str) -> None:
        """Record which page (``early`` or ``full``) the hand-in's student now holds."""
        self.db.execute("update hand_ins set shown = ? where key = ?", (page, key))

    def released(self, key: str) -> None:
        """Note when the hand-in's first page reached the exchange."""
        self.db.execute(
            "update hand_ins set released = coalesce(released, ?) where key = ?",
            (_now(), key),
        )

    def again(self, key: str) -> None:
        """Make a kept hand-in ``waiting`` again: it is to be graded now."""
        self.db.execute(
            "update hand_ins set state = ?, shown = '' where key = ? and state = ?",
            (WAITING, key, KEPT),
        )

    def dated(self, key: str, handed_in: datetime) -> None:
        """Set the hand-in's time: when its content was complete, as the kernel says."""
        self.db.execute(
            "update hand_ins set handed_in = ? where key = ?", (handed_in.isoformat(), key)
        )

    def remember_secret(self, key: str, secret: str, changed: int) -> None:
        """Keep the hand-in's secret as first read (its file changed at ``changed`` ns);
        a secret kept already stays."""
        self.db.execute(
            "update hand_ins set secret = ?, secret_at = ? where key = ? and secret is null",
            (secret, changed, key),
        )

    def secret_of(self, key: str) -> str | None:
        """The secret the hand-in ``key``'s pages go under (:meth:`remember_secret`), or None:
        none kept, or another student's hand-in held it first (by when its file changed)."""
        row = self.db.execute(
            "select secret, student from hand_ins where key = ?", (key,)
        ).fetchone()
        if row is None or row[0] is None:
            return None
        first = self.db.execute(
            "select student from hand_ins where secret = ? order by secret_at, seen, key limit 1",
            (row[0],),
        ).fetchone()
        return str(row[0]) if first is not None and first[0] == row[1] else None

    def attempts(self) -> dict[str, int]:
        """``{student: graded hand-ins}`` for every student with one."""
        query = "select student, count(*) from hand_ins where state = ? group by student"
        return dict(self.db.execute(query, (GRADED,)).fetchall())
