"""Is the gradebook in SQLite's write-ahead-log mode where that is safe, and only there?"""

import sqlite3
from pathlib import Path

from autograder.pipeline.course.gradebook import filesystem_of, sqlite_url, write_ahead

MOUNTS = """\
/dev/sda1 / ext4 rw,relatime 0 0
server:/export/home /home nfs4 rw,relatime 0 0
/dev/sdb1 /home/local ext4 rw 0 0
/dev/sdc1 /mnt/my\\040disk xfs rw 0 0
"""


def test_the_deepest_mount_holds_a_path():
    """Is a folder on the mount nearest to it, not on the first that contains it?"""
    assert filesystem_of(Path("/home/ta/course"), MOUNTS) == "nfs4"
    assert filesystem_of(Path("/home/local/course"), MOUNTS) == "ext4"
    assert filesystem_of(Path("/mnt/my disk/course"), MOUNTS) == "xfs"
    assert filesystem_of(Path("/srv/course"), MOUNTS) == "ext4"


def _journal(database: Path) -> str:
    with sqlite3.connect(database) as connection:
        return connection.execute("PRAGMA journal_mode").fetchone()[0]


def test_a_local_gradebook_writes_ahead(tmp_path):
    """On a local disk, does the gradebook switch to WAL and keep it for every connection?"""
    database = tmp_path / "gradebook.db"
    sqlite3.connect(database).close()
    assert _journal(database) == "delete"
    write_ahead(sqlite_url(database))
    assert _journal(database) == "wal"


def test_a_gradebook_on_a_network_filesystem_keeps_its_journal(tmp_path, monkeypatch):
    """On NFS, where SQLite's WAL cannot share its memory, is the file left as it was?"""
    from autograder.pipeline.course import gradebook

    database = tmp_path / "gradebook.db"
    sqlite3.connect(database).close()
    monkeypatch.setattr(gradebook, "filesystem_of", lambda path: "nfs4")
    write_ahead(sqlite_url(database))
    assert _journal(database) == "delete"
