"""The in-process per-ticket poll count: windows of the room's clock, a bounded memory."""

from __future__ import annotations

from anteroom.queue.line.poll_limit import PollCounter


def test_a_ticket_is_spent_after_its_limit_in_one_minute_only() -> None:
    polls = PollCounter(limit=3)
    for _ in range(3):
        assert polls.spent("r", "v") == ""
        polls.count("r", "v", 1, 7, 120_500)
    assert polls.spent("r", "v") == "1:7:2"  # generation 1, ticket 7, minute 2
    polls.count("r", "v", 1, 7, 180_000)  # the next minute starts a new count
    assert polls.spent("r", "v") == ""


def test_a_new_ticket_or_generation_starts_a_new_count() -> None:
    polls = PollCounter(limit=2)
    polls.count("r", "v", 1, 7, 0)
    polls.count("r", "v", 1, 8, 0)
    assert polls.spent("r", "v") == ""
    polls.count("r", "v", 2, 8, 0)
    polls.count("r", "v", 2, 8, 0)
    assert polls.spent("r", "v") == "2:8:0"


def test_memory_is_bounded_forgetting_the_least_recent() -> None:
    polls = PollCounter(limit=1, max_tickets=2)
    for vid in ("a", "b", "c"):
        polls.count("r", vid, 1, 1, 0)
    assert [polls.spent("r", v) for v in ("a", "b", "c")] == ["", "1:1:0", "1:1:0"]
