"""An opening's fairness report (SPEC "A draw anyone can check"): the draw and the figures of
queue/opening_report.py in one answer, for the public routes (web/fairness.py) and the
management API, which has it whatever ``publicFairness`` says."""

from __future__ import annotations

from typing import Any

from anteroom.queue.opening_report import opening_figures
from anteroom.service_container import Services
from anteroom.web.fairness_models import Fairness


def report(s: Services, room: dict[str, Any], entrants_url: str | None) -> Fairness:
    """``room``'s fairness document (``room["draw"]`` set); ``entrants_url`` once drawn."""
    draw = room["draw"]
    drawn = draw.get("seed") is not None
    figures = opening_figures(s.engine, s.series, room)
    return Fairness(
        room=room["slug"],
        opensAt=room["opensAt"],
        commitment=draw["commitment"],
        committedAt=draw["committedAt"],
        withdrawn=draw.get("withdrawn", []),
        seed=draw.get("seed"),
        root=draw.get("root"),
        entrants=draw.get("entrants"),
        entrantsUrl=entrants_url if drawn else None,
        admittedFromPreQueue=figures.admitted_from_pre_queue,
        admittedLater=figures.admitted_later,
        outOfOrder=figures.out_of_order,
        waitSeconds=figures.wait_seconds,
        held=figures.held,
        released=figures.released,
        longestPauseSec=figures.longest_pause_sec,
        ratePerMinute=figures.rate_per_minute,
        mostDealtInMinute=figures.most_dealt_in_minute,
    )
