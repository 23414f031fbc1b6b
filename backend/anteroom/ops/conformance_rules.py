"""The conformance kit's judges: what a client did (the requests the kit recorded, its exit code
and the states it printed) against what it was told. Pure functions, no I/O.

Each broken rule is one sentence naming it in words, with the figures that break it
("ignored Retry-After: called poll 0.20 s after a 429 RateLimited that said 2 s").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from anteroom.ops.conformance_server import Record

# Slack for the clock's grain and the thread hand-offs between the answer leaving and it being
# timed: a client that sleeps what it is told after reading the answer is always later than this.
TOLERANCE_SEC = 0.1
# After an outage answer with no Retry-After: the least a client waits, and how many calls it
# may make in the window that follows the first one (exponential backoff from ~0.5 s makes 1).
MIN_BACKOFF_SEC = 0.25
STORM_WINDOW_SEC = 1.5
STORM_MAX_CALLS = 2
ENTRIES = ("join", "enter")
FINAL_ERRORS = frozenset({"RoomClosed", "QueueDenied", "SessionRevoked", "RoomNotFound"})
WAITING = ("waiting", "held")


@dataclass
class Outcome:
    """What the driver did: its exit code (None: killed at the deadline), its state lines."""

    exit_code: int | None
    states: list[dict[str, Any]] = field(default_factory=list)
    deadline_sec: float = 0.0


def _visitor(records: Sequence[Record]) -> list[Record]:
    return [r for r in records if r.kind not in ("resource", "other")]


def _said(r: Record) -> str:
    """An answer in words: '429 RateLimited', '503 (no body)', '200 waiting'."""
    what = r.error or r.answer or ("(no JSON body)" if r.status != 200 else "")
    return f"{r.status} {what}".strip()


def waits_as_told(records: Sequence[Record]) -> list[str]:
    """Never sooner than Retry-After (a 429 or 5xx) or pollAfterMs (a waiting answer) allow."""
    broken: list[str] = []
    visitor = _visitor(records)
    for i, r in enumerate(visitor):
        nxt = next((n for n in visitor[i + 1 :] if n.at >= r.done - 0.001), None)
        if nxt is None:
            continue
        gap = nxt.at - r.done
        if r.status == 200 and r.answer in WAITING and r.poll_after_ms:
            told = r.poll_after_ms / 1000
            if gap < told - TOLERANCE_SEC:
                broken.append(
                    f"polled faster than told: called {nxt.kind} {gap:.2f} s after a "
                    f"'{r.answer}' answer that said pollAfterMs {r.poll_after_ms:g}"
                )
        elif (
            (r.status == 429 or r.status >= 500)
            and r.retry_after is not None
            and gap < r.retry_after - TOLERANCE_SEC
        ):
            broken.append(
                f"ignored Retry-After: called {nxt.kind} {gap:.2f} s after a {_said(r)} "
                f"(on {r.kind}) that said {r.retry_after:g} s"
            )
    resource = [r for r in records if r.kind == "resource"]
    for i, r in enumerate(resource):
        if r.status != 429 or r.retry_after is None:
            continue
        nxt = next((n for n in resource[i + 1 :] if n.admission is None), None)
        if nxt is not None and nxt.at - r.done < r.retry_after - TOLERANCE_SEC:
            broken.append(
                f"ignored Retry-After: called the resource again without an admission "
                f"{nxt.at - r.done:.2f} s after a 429 QueueRequired that said {r.retry_after:g} s"
            )
    return broken


def no_storm(records: Sequence[Record]) -> list[str]:
    """After an outage answer that says nothing of when (a 5xx without Retry-After): back off."""
    broken: list[str] = []
    visitor = _visitor(records)
    first: Record | None = None
    for i, r in enumerate(visitor):
        if not (r.status >= 500 and r.retry_after is None):
            continue
        first = first or r
        nxt = next((n for n in visitor[i + 1 :] if n.at >= r.done - 0.001), None)
        if nxt is not None and nxt.at - r.done < MIN_BACKOFF_SEC:
            broken.append(
                f"no backoff after a {_said(r)} without Retry-After: called {nxt.kind} again "
                f"{nxt.at - r.done:.2f} s later (wait at least {MIN_BACKOFF_SEC:g} s, growing)"
            )
    if first is not None:
        window = [n for n in visitor if first.done < n.at <= first.done + STORM_WINDOW_SEC]
        if len(window) > STORM_MAX_CALLS:
            broken.append(
                f"stormed after a {_said(first)} without Retry-After: {len(window)} calls "
                f"within {STORM_WINDOW_SEC:g} s of it (at most {STORM_MAX_CALLS}: back off "
                f"exponentially, with jitter)"
            )
    return broken


def enters_again_only_when_gone(records: Sequence[Record]) -> list[str]:
    """Enter again after a 410 (or a 401 on the ticket), and only then; never poll a gone ticket."""
    broken: list[str] = []
    holding = False
    gone: set[str] = set()
    last_refusal: Record | None = None
    waiting_for_entry: Record | None = None
    for r in _visitor(records):
        if r.kind in ENTRIES or r.kind == "arrive":
            waiting_for_entry = None
        if r.kind in ENTRIES:
            if holding:
                why = f"a {_said(last_refusal)} on {last_refusal.kind}" if last_refusal else "none"
                broken.append(
                    f"entered again while its spot was kept: {r.kind} at {r.at:.2f} s after "
                    f"{why} (only a 410, or a 401 on the ticket, says the spot is gone)"
                )
                holding = False  # one sentence per re-entry
            if r.status == 200 and r.answer in (*WAITING, "admitted"):
                holding = r.answer != "admitted"
        elif r.kind == "poll":
            if r.ticket is not None and r.ticket in gone:
                broken.append(
                    f"polled a ticket again at {r.at:.2f} s after a 410/401 said it was gone"
                )
                gone.discard(r.ticket)
            if r.status in (401, 410):
                if r.ticket is not None:
                    gone.add(r.ticket)
                holding = False
                waiting_for_entry = r
            elif r.status == 200 and r.answer == "admitted":
                holding = False
        if r.status != 200:
            last_refusal = r
    if waiting_for_entry is not None:
        broken.append(
            f"did not enter again after a {_said(waiting_for_entry)} on poll at "
            f"{waiting_for_entry.at:.2f} s (the spot is gone: take a new one)"
        )
    return broken


def admission_used_once(records: Sequence[Record]) -> list[str]:
    """Each admission is sent once: on the one retry of the refused call."""
    uses: dict[str, int] = {}
    for r in records:
        if r.kind == "resource" and r.admission is not None:
            uses[r.admission] = uses.get(r.admission, 0) + 1
    return [
        f"used an admission {n} times (retry the refused call once with it)"
        for n in uses.values()
        if n > 1
    ]


def stops_when_closed(records: Sequence[Record]) -> list[str]:
    """After the room says it is closed or refuses the visitor for good, no more calls."""
    for i, r in enumerate(records):
        final = (r.status == 403 and r.error in FINAL_ERRORS) or (
            r.status == 200 and r.answer == "idle"
        )
        if final and r.kind != "resource":
            later = [n for n in records[i + 1 :] if n.at >= r.done - 0.001]
            if later:
                kinds = ", ".join(sorted({n.kind for n in later}))
                return [
                    f"kept calling after the room closed: {len(later)} call(s) ({kinds}) after "
                    f"a {_said(r)} on {r.kind} (stop, and say the room is closed)"
                ]
            return []
    return []


def never_resends_refused_proof(records: Sequence[Record]) -> list[str]:
    """A proof refused (400 on join) is never sent again: fetch a new challenge, or stop."""
    refused: set[str] = set()
    broken: list[str] = []
    for r in records:
        if r.kind != "join" or r.challenge is None:
            continue
        if r.challenge in refused:
            broken.append(f"sent a refused proof again: the same challenge at {r.at:.2f} s")
        if r.status == 400:
            refused.add(r.challenge)
    return broken


RULES = (
    waits_as_told,
    no_storm,
    enters_again_only_when_gone,
    admission_used_once,
    stops_when_closed,
    never_resends_refused_proof,
)


def expected_outcome(case: dict[str, Any], records: Sequence[Record], done: Outcome) -> list[str]:
    """The case's expected outcome: exit code, last state printed, the resource's 200."""
    expect = case.get("expect", {})
    broken: list[str] = []
    if done.exit_code is None:
        return [f"did not finish within {done.deadline_sec:g} s (killed)"]
    codes = expect.get("exit", [0])
    if done.exit_code not in codes:
        last = done.states[-1] if done.states else None
        broken.append(
            f"exited {done.exit_code}, expected {' or '.join(map(str, codes))} "
            f"(last state printed: {last})"
        )
    state = expect.get("state")
    if state and not any(s.get("state") == state for s in done.states):
        broken.append(f'never said {{"state": "{state}"}} on its standard output')
    if expect.get("resource") == 200 and not any(
        r.kind == "resource" and r.status == 200 for r in records
    ):
        broken.append("never got the resource: no 200 from it (retry it with the admission)")
    most = expect.get("resourceCalls")
    calls = sum(1 for r in records if r.kind == "resource")
    if most is not None and calls > most:
        broken.append(
            f"called the resource {calls} times (at most {most}: the call, then one retry "
            f"with the admission; a refused retry is the app's answer)"
        )
    if expect.get("reenter") and not any(
        p.kind == "poll"
        and p.status in (401, 410)
        and any(e.kind in ENTRIES and e.at >= p.done for e in records)
        for p in records
    ):
        broken.append("never took a new spot after a 410 or 401 on its poll")
    return broken


def judge(case: dict[str, Any], records: Sequence[Record], done: Outcome) -> list[str]:
    """Every rule broken in this case, in words (empty: the case passed)."""
    ordered = sorted(records, key=lambda r: r.at)
    broken = expected_outcome(case, ordered, done)
    for rule in RULES:
        broken += rule(ordered)
    return list(dict.fromkeys(broken))  # each sentence once, in order
