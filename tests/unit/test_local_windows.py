"""The per-worker fixed windows (challenge, fairness): counted, refused past the limit, reset
when the window ends, bounded in memory."""

from __future__ import annotations

from limits import parse

from anteroom.web.visitor.local_windows import LocalWindows


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_window_counts_refuses_past_its_limit_and_resets_at_its_end() -> None:
    clock = Clock()
    windows = LocalWindows(clock=clock)
    three = parse("3/minute")
    assert [windows.hit(three, "p", "10.0.0.1") for _ in range(4)] == [True, True, True, False]
    assert windows.hit(three, "p", "10.0.0.2")  # another address has its own window
    stats = windows.get_window_stats(three, "p", "10.0.0.1")
    assert stats.remaining == 0 and stats.reset_time == clock.now + 60
    clock.now += 59.9
    assert not windows.hit(three, "p", "10.0.0.1")
    clock.now += 0.1  # the window opened at the first hit has ended
    assert windows.hit(three, "p", "10.0.0.1")
    assert windows.get_window_stats(three, "p", "10.0.0.1").remaining == 2


def test_expired_windows_are_dropped_when_the_table_is_full() -> None:
    clock = Clock()
    windows = LocalWindows(max_keys=10, clock=clock)
    one = parse("1/second")
    for i in range(10):
        assert windows.hit(one, "p", f"10.0.0.{i}")
    clock.now += 1
    assert windows.hit(one, "p", "10.0.1.1")
    assert len(windows.windows) == 1
