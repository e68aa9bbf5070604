"""The parts of serve's ngshare exchange that need no ngshare: a hand-in's files and times.

What a student sends through ngshare is theirs to choose: its paths, how many
files, how large. Written for grading, they keep to the bounds a hand-in folder
keeps to (:mod:`autograder.serve.inbound`), and what was left out is said.
"""

from datetime import datetime

import pytest

from autograder.pipeline.submissions.submission import MAX_FILE
from autograder.serve import inbound, ngshare


def test_a_hand_ins_files_stay_inside_its_folder(tmp_path):
    """No path leaves the folder or goes too deep; each one left out is named once."""
    files = [
        ("toy.ipynb", b"{}"),
        ("data/scores.csv", b"1,2"),
        ("../../etc/cron.d/x", b"no"),
        ("/etc/passwd", b"no"),
        ("a/" * (inbound.MAX_DEPTH + 1) + "deep.txt", b"no"),
        ("./", b"no"),
    ]
    notes = ngshare._write_files(files, tmp_path)
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["data/scores.csv", "toy.ipynb"]
    (note,) = notes
    assert "../../etc/cron.d/x" in note and "/etc/passwd" in note and "deep.txt" in note


def test_too_many_or_too_large_files_are_left_out(tmp_path):
    files = [(f"f{i}.txt", b"x") for i in range(inbound.MAX_FILES + 3)]
    files.append(("big.ipynb", b"x" * (MAX_FILE + 1)))
    notes = ngshare._write_files(files, tmp_path)
    assert len(list(tmp_path.iterdir())) == inbound.MAX_FILES
    assert not (tmp_path / "big.ipynb").exists()
    assert "big.ipynb" in notes[0] and "and 0 more" not in notes[0]


def test_ngshares_time_is_read_as_utc_and_nothing_else_is_a_time():
    assert ngshare._time("2026-12-06 21:51:50.353634") == datetime(2026, 12, 6, 21, 51, 50, 353634)
    assert ngshare._time("2026-12-06 21:51:50.353634 UTC") == datetime(
        2026, 12, 6, 21, 51, 50, 353634
    )
    for junk in ("", "yesterday", "2026-13-40 25:00:00.0", "1" * 10_000):
        assert ngshare._time(junk) is None


def test_a_hand_ins_key_gives_back_its_time_whatever_the_student_id():
    box = ngshare.NgshareInbox(ngshare.Ngshare("http://127.0.0.1:9", "t"), "c", "a-1", [])
    key = box.key("ada+b@x.org", "2026-12-06 21:51:50.353634")
    assert key.rsplit("+", 1)[-1] == "2026-12-06 21:51:50.353634"
    assert key.rsplit("+", 2) == ["ada+b@x.org", "a-1", "2026-12-06 21:51:50.353634"]


def test_an_unreachable_ngshare_is_said_once_and_lists_nothing(caplog):
    """The service goes on (ngshare restarting): no hand-in, one warning, not one a second."""
    box = ngshare.NgshareInbox(ngshare.Ngshare("http://127.0.0.1:9", "t", 2.0), "c", "a-1", [])
    assert list(box.new()) == []
    box.listed = 0.0
    assert list(box.new()) == []
    said = [r for r in caplog.records if "cannot be reached" in r.getMessage()]
    assert len(said) == 1


def test_a_hand_in_keeps_to_its_bound_in_all(tmp_path, monkeypatch):
    """Files each small enough, but more bytes in all than a hand-in holds: the rest is left
    out, as from a folder."""
    monkeypatch.setattr(inbound, "MAX_BYTES", 25)
    notes = ngshare._write_files([(f"f{i}.txt", b"x" * 10) for i in range(4)], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f0.txt", "f1.txt"]
    assert "f2.txt" in notes[0] and "f3.txt" in notes[0]


def test_an_answer_larger_than_any_hand_in_is_not_read_whole(monkeypatch):
    """ngshare keeps whatever a student sends: the service reads no more of it than a
    hand-in may hold, and says so."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Huge(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"success": true, "files": "' + b"A" * 5000 + b'"}')

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Huge)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    monkeypatch.setattr(ngshare, "MAX_ANSWER", 1000)
    client = ngshare.Ngshare(f"http://127.0.0.1:{server.server_port}", "t")
    try:
        with pytest.raises(ngshare.NgshareError, match="an answer over 1,000 bytes"):
            client.files("c", "a-1", "ada", "2026-12-06 21:51:50.353634")
    finally:
        server.shutdown()
        server.server_close()
