"""Is a call the grader answers for a student's code bounded over the whole call?"""

import resource
import time

import numpy as np
import pytest

from autograder.sandbox import served


def test_an_honest_call_is_answered():
    """Does a small call return what the function returns, limits set back after?"""
    before = resource.getrlimit(resource.RLIMIT_AS)
    got = served.call(np.outer, (np.ones(3), np.ones(2)), {}, time.monotonic() + 30, "outer")
    assert got.shape == (3, 2) and resource.getrlimit(resource.RLIMIT_AS) == before


def test_a_call_that_needs_too_much_memory_is_refused_and_named():
    """Arguments of 0.5 MB asking for a 720 MB answer: refused before it is held, said why?"""
    before = resource.getrlimit(resource.RLIMIT_AS)
    args = (np.ones(1500), np.ones(60000))
    with pytest.raises(served.Refused) as refused:
        served.call(np.outer, args, {}, time.monotonic() + 30, "lookup")
    said = str(refused.value)
    assert "lookup(a (1500,) float64 array, a (60000,) float64 array)" in said
    assert f"{served.SERVED_MEMORY // 2**20} MiB" in said
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    assert np.ones(10**7).sum() == 10**7  # the process may allocate as before


def test_a_slow_call_ends_at_the_deadline():
    """A Python loop that would run for minutes: a TimeoutError at the deadline, not after?"""

    def slow():
        total = 0
        while True:
            total += 1

    start = time.monotonic()
    with pytest.raises(TimeoutError):
        served.call(slow, (), {}, start + 0.3, "slow")
    assert time.monotonic() - start < 30  # bounded: it would never end otherwise
    with pytest.raises(TimeoutError):  # a deadline already past: not called at all
        served.call(slow, (), {}, time.monotonic() - 1, "slow")


def test_a_call_ending_at_its_deadline_leaves_nothing_behind():
    """Calls ending just as the deadline passes: none leaves an interruption pending for later."""
    for _ in range(200):
        try:
            served.call(time.sleep, (0.001,), {}, time.monotonic() + 0.001, "sleep")
        except TimeoutError:
            pass
        total = 0
        for i in range(20000):  # a pending interruption would surface here
            total += i
    assert total == sum(range(20000))


def test_a_cells_calls_wake_the_watchdog_once(monkeypatch):
    """Fifty calls sharing a cell's deadline: the watchdog thread is woken for the first only?

    Each wake is a thread switch that cost more than the call it watched. Each call
    here ends before the thread has looked, the case that used to wake it every time.
    """
    watchdog = served._Watchdog()
    notified = []
    notify = watchdog._lock.notify
    monkeypatch.setattr(watchdog._lock, "notify", lambda *a: notified.append(1) or notify(*a))
    deadline = time.monotonic() + 60
    for _ in range(50):
        watchdog.release(watchdog.watch(deadline))
        time.sleep(0.002)  # the thread runs, and finds the call already over
    assert len(notified) == 1


def test_a_call_due_before_the_watchdog_would_wake_still_ends_in_time(monkeypatch):
    """The thread asleep until an ended call's far deadline: a nearer one still fires?"""
    monkeypatch.setattr(served, "_WATCHDOG", served._Watchdog())
    served.call(abs, (1,), {}, time.monotonic() + 600, "abs")  # it now sleeps ten minutes

    def slow():
        while True:
            pass

    start = time.monotonic()
    with pytest.raises(TimeoutError):
        served.call(slow, (), {}, start + 0.3, "slow")
    assert time.monotonic() - start < 30
