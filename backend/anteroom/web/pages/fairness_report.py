"""An opening's figures for its fairness document (docs/draw.md): what
queue/draw/opening_report.py reads, under the document's field names."""

from __future__ import annotations

from typing import Any

from anteroom.queue.draw.opening_report import opening_figures
from anteroom.service_container import Services


def figures(s: Services, room: dict[str, Any]) -> dict[str, Any]:
    """The fields of ``room``'s fairness document that say what its opening dealt."""
    found = opening_figures(s.engine, s.series, room)
    return {
        "admittedFromPreQueue": found.admitted_from_pre_queue,
        "admittedLater": found.admitted_later,
        "outOfOrder": found.out_of_order,
        "waitSeconds": found.wait_seconds,
        "held": found.held,
        "released": found.released,
        "longestPauseSec": found.longest_pause_sec,
        "ratePerMinute": found.rate_per_minute,
        "mostDealtInMinute": found.most_dealt_in_minute,
        "leftBeforeTurn": found.left_before_turn,
    }
