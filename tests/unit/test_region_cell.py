"""The cell's pure parts: the place it shows in the global line, its summaries' round trip."""

from __future__ import annotations

from anteroom.queue.regions.etcd_kv import Etcd
from anteroom.queue.regions.global_line import BUCKET_MS, Summary
from anteroom.queue.regions.region_cell import RegionCell, _summary_json, summary_of


def cell_with(summaries: dict[str, Summary]) -> RegionCell:
    cell = RegionCell(None, Etcd(["http://127.0.0.1:9"]), "eu", "eu-1")  # type: ignore[arg-type]
    cell.by_room["q1"] = summaries
    return cell


def us_with(arrivals: int, at: int = 1_000) -> Summary:
    return Summary("us", 5_000, 0, 0, arrivals, ((at, arrivals),), 600, 0)


def test_the_place_shown_counts_earlier_arrivals_elsewhere_and_stretches_the_eta() -> None:
    cell = cell_with({"us": us_with(30)})
    # third in eu, arrived after us's thirty: 33rd, its ETA eleven times its own line's
    assert cell.global_place("q1", 3, 6, 2_000) == (33, 66)
    # arrived before them: its own line's place and ETA
    assert cell.global_place("q1", 3, 6, 900) == (3, 6)
    assert cell.global_place("q1", 3, None, 2_000) == (33, None)


def test_a_room_without_summaries_shows_its_own_line() -> None:
    assert cell_with({}).global_place("q2", 4, 8, 2_000) == (4, 8)


def test_a_summary_survives_its_trip_through_etcd() -> None:
    summary = Summary("ap", 7, 3, 2, 9, ((100, 4), (100 + BUCKET_MS, 5)), 60, 10, ((12, 400),))
    assert summary_of(_summary_json(summary, 1234).encode()) == (summary, 1234)
