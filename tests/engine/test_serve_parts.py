"""The service's parts, each alone: the attempts policy, the journal, reading the inbound, pages.

The whole service, started as an instructor starts it, is tested in test_serve.py.
"""

import os
import subprocess
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import nbformat
import pytest

from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.errors import UserError
from autograder.serve import inbound, pages
from autograder.serve.journal import GRADED, KEPT, WAITING, Journal
from autograder.serve.policy import Attempt, Policy

from . import toy

T0 = datetime(2026, 12, 1, 10, 0)  # naive UTC, as nbgrader keeps times


def _graded(journal: Journal, key: str, student: str, at: datetime, score: float = 1.0) -> None:
    journal.add(key, student, at)
    journal.finish(key, GRADED, attempt=1, score=score)


def test_attempts_are_counted_in_all_or_per_day(tmp_path):
    """Two allowed: a third is kept before the due date, graded after it; per day, the count
    starts again on the next day (in the exchange's timezone)."""
    journal = Journal(tmp_path / "j.sqlite")
    for n in range(2):
        _graded(journal, f"k{n}", "ada", T0 + timedelta(hours=n))
    history = journal.entries("ada")
    due = T0 + timedelta(days=3)
    in_all = Policy(attempts=2)
    assert not in_all.grade_now(history, T0 + timedelta(hours=3), due, T0 + timedelta(hours=3))
    assert in_all.grade_now(history, T0 + timedelta(hours=3), due, due + timedelta(minutes=1))
    assert in_all.grade_now(history, due + timedelta(hours=1), due, due + timedelta(hours=1))
    assert Policy().grade_now(history, T0 + timedelta(hours=3), due, T0)  # no limit
    daily = Policy(attempts=2, per="day")
    assert not daily.grade_now(history, T0 + timedelta(hours=5), due, T0)
    assert daily.grade_now(history, T0 + timedelta(days=1), due, T0)
    # 10:00 and 11:00 UTC are the 2nd in Tokyo; 16:00 UTC is already the 3rd there
    tokyo = Policy(attempts=2, per="day", zone=ZoneInfo("Asia/Tokyo"))
    assert tokyo.grade_now(history, T0 + timedelta(hours=6), due, T0)
    assert not daily.grade_now(history, T0 + timedelta(hours=6), due, T0)


def test_which_attempt_counts():
    """last: the last before the due date, else the last late one; best: the best on time."""
    due = T0 + timedelta(days=1)
    a = Attempt("a", T0, 5.0)
    b = Attempt("b", T0 + timedelta(hours=1), 3.0)
    late = Attempt("late", due + timedelta(hours=1), 7.0)
    assert Policy().counted([a, b, late], due) == b
    assert Policy(counts="best").counted([a, b, late], due) == a
    assert Policy(counts="best").counted([a, Attempt("c", b.handed_in, 5.0)], due).key == "c"
    assert Policy().counted([late], due) == late
    assert Policy().counted([], due) is None
    assert Policy().counted([a, b, late], None) == late  # no due date: all on time


def test_hidden_messages_wait_for_the_due_date():
    due = T0 + timedelta(days=1)
    assert Policy().hides_until(due, T0)
    assert not Policy().hides_until(due, due + timedelta(seconds=1))
    assert not Policy().hides_until(None, T0)  # no due date: nothing to wait for
    assert not Policy(before_due="all").hides_until(due, T0)


def test_the_journal_keeps_each_hand_in_once(tmp_path):
    """Seeing a hand-in again adds nothing; a counted attempt is the student's only one."""
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    journal.add("k1", "ada", T0)
    journal.add("k1", "ada", T0 + timedelta(hours=1))
    assert [e.handed_in for e in journal.entries()] == [T0]
    journal.add("k2", "ada", T0 + timedelta(hours=1))
    journal.finish("k1", GRADED, attempt=1, score=2.0, counts=True)
    journal.finish("k2", GRADED, attempt=2, score=3.0, counts=True)
    assert [(e.key, e.counts) for e in journal.entries("ada")] == [("k1", False), ("k2", True)]
    journal.finish("k1", KEPT)
    journal.again("k1")
    assert [e.key for e in journal.waiting()] == ["k1"]
    journal.close()
    again = Journal(path)  # what a restarted service reads
    assert again.attempts() == {"ada": 1} and again.entry("k2").score == 3.0
    assert again.entry("k1").state == WAITING


def _hand_in(root, name, files):
    folder = root / name
    folder.mkdir(parents=True)
    for path, data in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    return folder


def test_the_inbound_is_read_as_nbgrader_names_it(tmp_path):
    box = tmp_path / "exchange" / "toy" / "inbound"
    now = datetime.now(UTC).replace(tzinfo=None)
    stamp = f"{now:%Y-%m-%d %H:%M:%S.%f} UTC"  # an honest hand-in's: its folder made just now
    _hand_in(box, f"ada+toy-1+{stamp}+abc", {"submission_secret.txt": b"s"})
    _hand_in(box, f"a+b+toy-1+{stamp}+abc", {})  # an id with + in it: nbgrader's rsplit
    _hand_in(box, f"ben+other+{stamp}+abc", {})  # another assignment
    _hand_in(box, f"../x+toy-1+{stamp}+abc".replace("/", "_"), {})  # no plain id
    _hand_in(box, "cal+toy-1+not a time+abc", {})
    found = inbound.scan(tmp_path / "exchange", "toy", "toy-1")
    # in the order they were made (the kernel's times, which may share a tick): either order
    assert sorted((h.student_id, h.claimed) for h in found) == [("a+b", None), ("ada", None)]
    assert [h.handed_in for h in found] == sorted(h.handed_in for h in found)
    for hand_in in found:  # the kernel's time, not the name's: close to it for an honest one
        # (a file's times come from the kernel's coarse clock, a tick or so behind `now`)
        assert -0.1 <= (hand_in.handed_in - now).total_seconds() < 5
    ada = next(h for h in found if h.student_id == "ada")
    ada.folder.chmod(0o755)
    now = ada.folder.stat().st_mtime
    assert not inbound.whole(ada, now + 1)  # nbgrader has not opened it yet: still writing
    assert inbound.whole(ada, now + inbound.SETTLED + 1)  # a submit that died halfway
    ada.folder.chmod(0o777)
    assert inbound.whole(ada, now)
    assert not inbound.whole(next(h for h in found if h.student_id == "a+b"), now + 1e6)


def test_a_hand_in_is_staged_without_following_links(tmp_path):
    """A link (to the instructor's source, say) is never read; another notebook and a missing
    one are named for the student's page."""
    course = toy.write_course(tmp_path / "course", "toy-1", {"toy.ipynb": toy.DOUBLE})
    toy.write_notebook(toy.DOUBLE, course / "release" / "toy-1" / "toy.ipynb")
    from autograder.pipeline.course.assignment import find_assignment

    a = find_assignment(course)
    secret_source = course / "source" / "toy-1" / "toy.ipynb"
    box = tmp_path / "inbound"
    folder = _hand_in(box, "ada+toy-1+2026-12-01 10:00:00 UTC+x", {
        "timestamp.txt": b"2026-12-01 10:00:00 UTC", "submission_secret.txt": b"s",
        "Untitled.ipynb": b"{}", "data/notes.txt": b"mine",
    })  # fmt: skip
    (folder / "toy.ipynb").symlink_to(secret_source)
    (folder / "linked").symlink_to(course / "source", target_is_directory=True)
    hand_in = inbound.HandIn(folder.name, "ada", datetime(2026, 12, 1, 10), folder)
    sub = inbound.stage(hand_in, tmp_path / "staged", a)
    staged = tmp_path / "staged" / "ada" / "toy-1"
    assert sorted(p.name for p in staged.rglob("*")) == [
        "Untitled.ipynb", "data", "notes.txt", "submission_secret.txt", "timestamp.txt"
    ]  # fmt: skip
    assert not any(p.is_symlink() for p in staged.rglob("*"))
    said = " ".join(sub.notes)
    assert "links are not followed" in said and "toy.ipynb" in said
    # the kernel's time of its last change, not the 2026-12-01 its name and file claim
    made = datetime.fromtimestamp(folder.lstat().st_ctime, UTC).replace(tzinfo=None)
    assert sub.timestamp is not None and sub.timestamp >= made
    assert "toy.ipynb" not in sub.files or b"BEGIN SOLUTION" not in sub.files["toy.ipynb"]


def test_an_early_page_holds_back_what_hidden_tests_say_and_are(tmp_path):
    nb = nbformat.from_dict(toy.notebook(*toy.DOUBLE))
    failing = {"output_type": "error", "ename": "AssertionError", "evalue": "negatives: -6",
               "traceback": ["AssertionError: negatives: -6"]}  # fmt: skip
    nb.cells[2].outputs = [failing]
    nb.cells[1].outputs = [dict(failing, evalue="visible says this")]
    shown = pages.early(nb, {"test_double_negative"})
    assert shown.cells[2].outputs[0]["evalue"] == pages.HIDDEN_MESSAGE
    assert "-6" not in str(shown.cells[2].outputs)
    assert "double(-3)" not in shown.cells[2].source  # the hidden code too, whatever the course
    assert "negatives too" in shown.cells[2].source  # what the test checks stays
    assert shown.cells[1].outputs[0]["evalue"] == "visible says this"
    assert nb.cells[2].outputs == [failing]  # the notebook itself is left as it was


def test_a_page_is_released_where_fetch_feedback_looks(tmp_path):
    from nbgrader.utils import notebook_hash

    from autograder.pipeline.results.handed_back import release_to_exchange

    released = release_to_exchange(tmp_path, "toy", "secret", ["toy", "toy-Copy1"], "<html></html>")
    assert released == 2
    for stem in ("toy", "toy-Copy1"):
        page = (
            tmp_path
            / "toy"
            / "feedback"
            / f"{notebook_hash(secret='secret', notebook_id=stem)}.html"
        )
        assert page.read_text() == "<html></html>"
        assert oct(page.stat().st_mode & 0o777) == "0o644"
    html = pages.notice_page("a <title>", ["kept & not graded"])
    assert "a &lt;title&gt;" in html and "kept &amp; not graded" in html and 'lang="en"' in html


def test_a_hand_in_owned_by_another_user_is_refused(tmp_path):
    assert os.geteuid() == 0, "a second user must own a hand-in: run the suite as root"
    folder = tmp_path / "root+toy-1+2026-12-01 10:00:00 UTC+x"
    folder.mkdir()
    os.chown(folder, 65534, 65534)  # nobody
    refusal = inbound.owner_refusal(inbound.HandIn(folder.name, "root", T0, folder), set())
    assert refusal is not None and "handed in as root by" in refusal
    os.chown(folder, 0, 0)
    assert inbound.owner_refusal(inbound.HandIn(folder.name, "root", T0, folder), set()) is None
    # an id no user has: only one the course knows, and never from a student's own folder
    made_up = inbound.HandIn(folder.name, "no-such-user-x", T0, folder)
    assert "no student of the course" in inbound.owner_refusal(made_up, {"ada"})
    assert inbound.owner_refusal(made_up, {"no-such-user-x"}) is None
    refusal = inbound.owner_refusal(made_up, {"no-such-user-x", "root"})  # root's folder
    assert refusal is not None and "by root" in refusal


def test_a_backdated_hand_in_counts_from_when_it_was_made(tmp_path):
    """A name (and timestamp.txt) saying 2020, on a folder made now: now counts, and the
    staged timestamp.txt, which lateness goes by, says so too."""
    course = toy.write_course(tmp_path / "course", "toy-1", {"toy.ipynb": toy.DOUBLE})
    toy.write_notebook(toy.DOUBLE, course / "release" / "toy-1" / "toy.ipynb")
    from autograder.pipeline.course.assignment import find_assignment

    box = tmp_path / "exchange" / "toy" / "inbound"
    old = "2020-01-01 00:00:00.000000 UTC"
    _hand_in(box, f"ada+toy-1+{old}+x", {"timestamp.txt": old.encode(),
                                         "submission_secret.txt": b"s"})  # fmt: skip
    (hand_in,) = inbound.scan(tmp_path / "exchange", "toy", "toy-1")
    assert hand_in.claimed == datetime(2020, 1, 1)
    assert (datetime.now() - hand_in.handed_in.replace(tzinfo=None)).days < 2  # noqa: DTZ005
    sub = inbound.stage(hand_in, tmp_path / "staged", find_assignment(course))
    assert sub.timestamp == hand_in.handed_in
    assert any("that time counts" in note for note in sub.notes)


def test_a_hand_in_that_is_a_link_is_not_read(tmp_path):
    """A hand-in folder that is a link (to the instructor's source, say) stages nothing."""
    course = toy.write_course(tmp_path / "course", "toy-1", {"toy.ipynb": toy.DOUBLE})
    toy.write_notebook(toy.DOUBLE, course / "release" / "toy-1" / "toy.ipynb")
    from autograder.pipeline.course.assignment import find_assignment

    box = tmp_path / "inbound"
    box.mkdir()
    link = box / "ada+toy-1+2026-12-01 10:00:00 UTC+x"
    link.symlink_to(course / "source" / "toy-1", target_is_directory=True)
    hand_in = inbound.HandIn(link.name, "ada", T0, link)
    assert inbound.stage(hand_in, tmp_path / "staged", find_assignment(course)) is None
    assert not list((tmp_path / "staged").rglob("*.ipynb"))


def test_a_hand_in_is_copied_within_bounds(tmp_path, monkeypatch):
    """Files past the hand-in's byte budget, and names past its count, are left behind and
    named; nothing is copied beyond either."""
    course = toy.write_course(tmp_path / "course", "toy-1", {"toy.ipynb": toy.DOUBLE})
    toy.write_notebook(toy.DOUBLE, course / "release" / "toy-1" / "toy.ipynb")
    from autograder.pipeline.course.assignment import find_assignment

    monkeypatch.setattr(inbound, "MAX_BYTES", 3000)
    files = {f"data/part{n}.bin": b"x" * 1000 for n in range(5)}
    folder = _hand_in(tmp_path / "inbound", "ada+toy-1+2026-12-01 10:00:00 UTC+x", files)
    hand_in = inbound.HandIn(folder.name, "ada", T0, folder)
    sub = inbound.stage(hand_in, tmp_path / "staged", find_assignment(course))
    copied = list((tmp_path / "staged").rglob("*.bin"))
    assert len(copied) == 3 and sum(p.stat().st_size for p in copied) <= 3000
    assert sum("passed 3,000 bytes" in note for note in sub.notes) == 2
    monkeypatch.setattr(inbound, "MAX_ENTRIES", 4)
    sub = inbound.stage(hand_in, tmp_path / "staged", find_assignment(course))
    assert any("only the first" in note for note in sub.notes)


def _sleep_long() -> None:
    import time

    time.sleep(600)


def test_stopping_kills_every_worker_even_of_a_pool_still_starting():
    """Interrupted while a new pool's workers start (it is not the service's pool yet, or no
    longer), does stopping still kill every worker it forked, so the exit waits on none?"""
    import multiprocessing
    from types import SimpleNamespace

    from autograder.serve.service import Service

    context = multiprocessing.get_context("fork")
    orphan = context.Process(target=_sleep_long)
    orphan.start()
    service = SimpleNamespace(workers=None)
    try:
        Service.stop_pool(service)  # type: ignore[arg-type]
        orphan.join(timeout=10)
        assert orphan.exitcode is not None and orphan.exitcode < 0  # killed, not timed out
        assert service.workers is None
    finally:
        if orphan.is_alive():
            orphan.kill()


def test_no_name_in_the_inbound_is_an_error(tmp_path):
    """Is every folder name a hand-in or nothing: never an error, a warning raised, or a crash,
    whatever its time part, encoding or length?"""
    import warnings

    box = tmp_path / "exchange" / "toy" / "inbound"
    names = [
        "ada+toy-1+2026-12-06 10:00:00..+x",  # dateutil warns (DeprecatedTzKeyWarning)
        "ada+toy-1+" + "9" * 5000 + "+x",
        "ada+toy-1+2026-13-45 99:99:99 UTC+x",
        os.fsdecode(b"ada+toy-1+\xff\xfe+x"),
        os.fsdecode(b"\xff+toy-1+2026-12-06 10:00:00 UTC+x"),
        "ada+toy-1+2026-12-06 10:00:00 UTC+fine",
    ]
    for name in names:
        try:
            (box / name).mkdir(parents=True)
        except OSError:  # a name too long for the filesystem: named_time must still cope
            assert inbound.named_time(name) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as a service whose warnings are errors would run
        found = inbound.scan(tmp_path / "exchange", "toy", "toy-1")
    # dateutil reads "10:00:00.." as 10:00 (with a warning): a claim like any other
    assert sorted(h.key for h in found) == sorted([names[0], names[-1]])


def test_the_inbound_is_listed_again_only_when_it_changed(tmp_path, monkeypatch):
    """Does a folder of junk names cost one look a name, once: each parsed once, and the
    folder not listed again while it is unchanged?"""
    box = tmp_path / "exchange" / "toy" / "inbound"
    box.mkdir(parents=True)
    for n in range(300):
        (box / f"junk{n}+toy-1+2026-12-06 10:00:00 UTC+x").mkdir()
    parsed, listed = [], []
    real_parse, real_listdir = inbound.parse_name, os.listdir
    monkeypatch.setattr(inbound, "parse_name", lambda *a: parsed.append(a) or real_parse(*a))
    monkeypatch.setattr(inbound.os, "listdir", lambda p: listed.append(p) or real_listdir(p))
    watcher = inbound.Watcher(tmp_path / "exchange", "toy", "toy-1")
    assert len(watcher.new()) == 300 and len(parsed) == 300 and len(listed) == 1
    old = box.stat().st_mtime - 60  # as if it last changed a minute ago
    os.utime(box, (old, old))
    watcher.stamp = None
    watcher.new()  # listed again once (its time changed), no name parsed again
    assert len(listed) == 2 and len(parsed) == 300
    assert watcher.new() == [] and len(listed) == 2  # unchanged: not even listed
    (box / "ada+toy-1+2026-12-06 10:00:00 UTC+new").mkdir()
    assert [h.student_id for h in watcher.new() if h.student_id == "ada"] == ["ada"]
    assert len(parsed) == 301


def test_a_hand_in_is_timed_and_read_within_its_depth(tmp_path):
    """Is a hand-in 1,200 folders deep read without a crash, only so deep, and its time the
    latest change below it that was read (a file written after the folder was made)?"""
    course = toy.write_course(tmp_path / "course", "toy-1", {"toy.ipynb": toy.DOUBLE})
    toy.write_notebook(toy.DOUBLE, course / "release" / "toy-1" / "toy.ipynb")
    from autograder.pipeline.course.assignment import find_assignment

    folder = _hand_in(tmp_path / "inbound", "ada+toy-1+2026-12-01 10:00:00 UTC+x", {})
    here = folder
    for _ in range(1200):
        here = here / "d"
        here.mkdir()
    (folder / os.fsdecode(b"\xff\xfe.ipynb")).write_text("{}")
    (folder / "d" / "late.txt").write_text("written last")
    late = datetime.fromtimestamp((folder / "d" / "late.txt").lstat().st_ctime, UTC)
    hand_in = inbound.HandIn(folder.name, "ada", T0, folder)
    assert inbound.completed(hand_in).handed_in == late.replace(tzinfo=None)
    sub = inbound.stage(hand_in, tmp_path / "staged", find_assignment(course))
    said = " ".join(sub.notes)
    assert f"more than {inbound.MAX_DEPTH} deep" in said and "not UTF-8" in said
    assert sub.timestamp == late.replace(tzinfo=None)
    assert inbound.page_stems(hand_in, find_assignment(course)) == ["toy"]
    subprocess.run(["rm", "-rf", str(folder)], check=True)  # too deep for shutil.rmtree


def test_one_page_per_notebook_whatever_a_hand_in_holds(tmp_path):
    course = toy.write_course(tmp_path / "course", "toy-1", {"toy.ipynb": toy.DOUBLE})
    from autograder.pipeline.course.assignment import find_assignment

    a = find_assignment(course)
    many = _hand_in(tmp_path / "in", "a", {f"n{i}.ipynb": b"{}" for i in range(300)})
    assert inbound.page_stems(inbound.HandIn("a", "ada", T0, many), a) == ["toy"]
    copy = _hand_in(tmp_path / "in", "b", {"toy-Copy1.ipynb": b"{}"})  # graded as toy.ipynb
    assert inbound.page_stems(inbound.HandIn("b", "ada", T0, copy), a) == ["toy-Copy1"]


def test_a_secret_belongs_to_the_student_who_held_it_first(tmp_path):
    """A secret read from another's home and handed in: no page under it for the thief, the
    owner's pages still; a secret changed after it was first read changes nothing."""
    journal = Journal(tmp_path / "j.sqlite")
    journal.add("ada-1", "ada", T0)
    journal.add("zed-1", "zed", T0 + timedelta(minutes=1))
    journal.remember_secret("zed-1", "s3cret", 2_000)  # seen first, but its file is newer
    journal.remember_secret("ada-1", "s3cret", 1_000)
    assert journal.secret_of("ada-1") == "s3cret"
    assert journal.secret_of("zed-1") is None
    journal.remember_secret("ada-1", "other", 3_000)  # kept as first read
    assert journal.secret_of("ada-1") == "s3cret"
    journal.add("ben-1", "ben", T0)
    assert journal.secret_of("ben-1") is None  # none read: no page
    journal.dated("ben-1", T0 + timedelta(hours=2))
    assert journal.entry("ben-1").handed_in == T0 + timedelta(hours=2)
    journal.close()
    again = Journal(tmp_path / "j.sqlite")  # an older journal gains the columns once
    assert again.secret_of("ada-1") == "s3cret"


def test_the_courses_policy_is_read_from_c_serve(tmp_path):
    config = 'c.Serve.attempts = 3\nc.Serve.attempts_per = "day"\nc.Serve.counts = "best"\n'
    policy = Policy.for_course(find_assignment(toy.write_course(tmp_path, config=config)))
    assert (policy.attempts, policy.per, policy.counts, policy.before_due) == (
        3,
        "day",
        "best",
        "visible",
    )


def test_a_policy_under_its_old_name_is_still_read_with_a_warning(tmp_path, caplog):
    """c.Autograder.attempts, the setting's name before c.Serve: kept, and the course told."""
    config = 'c.Autograder.attempts = 2\nc.Autograder.before_due = "all"\n'
    policy = Policy.for_course(find_assignment(toy.write_course(tmp_path, config=config)))
    assert (policy.attempts, policy.before_due) == (2, "all")
    assert "c.Autograder.attempts is c.Serve.attempts now" in caplog.text


def test_a_policy_of_the_wrong_kind_is_one_line(tmp_path):
    chosen = find_assignment(toy.write_course(tmp_path, config='c.Serve.counts = "first"\n'))
    with pytest.raises(UserError, match="c.Serve") as error:
        Policy.for_course(chosen)
    assert "\n" not in str(error.value)
