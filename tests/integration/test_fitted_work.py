"""Proof of work, fitted (docs/visitor-api.md, "Proof of work, fitted"): split challenges, the work
rule's facts, the device measurement.

Through the real app and a real Redis, with the work rule deciding (no pinned difficulty).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.config import Settings
from anteroom.identity import proof_of_work as pow
from anteroom.identity import work_inputs
from anteroom.sdk import tokens
from anteroom.service_container import Services
from helpers import make_room
from visitor_client import HUMAN, SIGNALS, Visitor

pytestmark = pytest.mark.redis


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.with_overrides(pow_difficulty=0)  # the rule decides


@pytest.fixture
def api_key(services: Services) -> str:
    record, _ = services.keystore.create("shop")
    return record.public_key


@pytest.fixture
def room(services: Services, api_key: str) -> str:
    room_id = make_room(services.engine, env="shop", slug="drop", ratePerMinute=60)
    services.engine.open(room_id)
    return room_id


def ask(visitor: Visitor, **body: Any) -> dict[str, Any]:
    answer = visitor.post("challenge", {"apiKey": visitor.api_key, **body})
    assert answer.status_code == 200, answer.text
    return answer.json  # type: ignore[no-any-return]


def solutions_of(issued: dict[str, Any]) -> list[str]:
    bits = {p["difficulty"] for p in issued["puzzles"]}
    assert bits == {issued["difficulty"]}
    return pow.solve_puzzles([p["prefix"] for p in issued["puzzles"]], issued["difficulty"])


def identify(visitor: Visitor, issued: dict[str, Any], **fields: Any) -> Any:
    body = {"apiKey": visitor.api_key, "challenge": issued["challenge"], "signals": SIGNALS}
    return visitor.post("identify", body | fields)


def test_a_split_challenge_buys_one_session(client: FlaskClient, api_key: str, room: str) -> None:
    visitor = Visitor(client, api_key)
    issued = ask(visitor, room="drop", maxPuzzles=16)
    assert issued["tier"] == "low-calm"
    assert len(issued["puzzles"]) == 16 and issued["expectedHashes"] == 2**15
    prefixes = [p["prefix"] for p in issued["puzzles"]]
    assert prefixes == pow.puzzle_prefixes(issued["challenge"], 16)
    solutions = solutions_of(issued)
    first = identify(visitor, issued, solutions=solutions)
    assert first.status_code == 200, first.text
    # The same proof again (a retry, issue 21) gets the same session back, not a second one.
    again = identify(visitor, issued, solutions=solutions)
    assert again.status_code == 200 and again.json == first.json
    # Another proof of the spent challenge buys nothing.
    other = [pow.solve(prefixes[0], issued["difficulty"], int(solutions[0]) + 1), *solutions[1:]]
    refused = identify(visitor, issued, solutions=other)
    assert refused.status_code == 401 and refused.json["error"] == "TokenInvalid"


def test_the_old_single_solution_still_works(client: FlaskClient, api_key: str) -> None:
    visitor = Visitor(client, api_key)
    issued = ask(visitor)  # what an existing app sends: only its key
    assert issued["puzzles"] == [{"prefix": issued["challenge"], "difficulty": 15}]
    solution = pow.solve(issued["challenge"], issued["difficulty"])
    assert identify(visitor, issued, solution=solution).status_code == 200
    # The same, sent as a one-item list, is as good.
    issued = ask(visitor)
    listed = identify(visitor, issued, solutions=[pow.solve(issued["challenge"], 15)])
    assert listed.status_code == 200


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda s: {"solutions": [*s[:-1], str(int(s[-1]) + 1)]}, "solutions"),
        (lambda s: {"solutions": s[:-1]}, "solutions"),
        (lambda s: {"solution": s[0]}, "solution"),  # one solution for a split challenge
        (lambda s: {"solution": s[0], "solutions": s}, "solution"),
        (lambda s: {}, "solutions"),
        (lambda s: {"solutions": s * 2}, "solutions"),  # over the most puzzles
    ],
)
def test_solutions_that_do_not_solve_are_named(
    client: FlaskClient, api_key: str, change: Any, field: str
) -> None:
    visitor = Visitor(client, api_key)
    issued = ask(visitor, maxPuzzles=16)
    solutions = solutions_of(issued)
    refused = identify(visitor, issued, **change(solutions))
    assert refused.status_code == 400 and refused.json["error"] == "BadRequest"
    assert field in refused.json["fields"]
    # The challenge was not spent by the refusal.
    assert identify(visitor, issued, solutions=solutions).status_code == 200


def test_the_device_measurement_fits_the_work_but_never_below_the_floor(
    client: FlaskClient, api_key: str
) -> None:
    visitor = Visitor(client, api_key)
    probe = ask(visitor, measure=True, maxPuzzles=16)
    assert probe["tier"] == "measure" and probe["expectedHashes"] == 8 * 2**10
    solved = {"challenge": probe["challenge"], "solutions": solutions_of(probe)}
    # A measurement buys no session.
    refused = identify(visitor, probe, solutions=solved["solutions"])
    assert refused.status_code == 401 and refused.json["error"] == "TokenInvalid"

    def fitted(rate: float) -> int:
        measurement = solved | {"hashesPerSecond": rate}
        return int(ask(visitor, maxPuzzles=16, measurement=measurement)["expectedHashes"])

    assert fitted(5e6) == 2**15  # a fast device: the tier's work
    assert 2**13 < fitted(30_000) < 2**15  # a slow one: less, so its p95 stays under a second
    assert fitted(1) == 2**13  # "very slow" (or lying): the floor, no less
    # A measurement that was not solved, or is not a measurement, is refused by name.
    bad = solved | {"solutions": ["1"] * 8, "hashesPerSecond": 1}
    answer = visitor.post("challenge", {"apiKey": api_key, "maxPuzzles": 16, "measurement": bad})
    assert answer.status_code == 400 and "measurement" in answer.json["fields"]
    real = ask(visitor, maxPuzzles=16)
    fake = {"challenge": real["challenge"], "solutions": ["1"], "hashesPerSecond": 1}
    answer = visitor.post("challenge", {"apiKey": api_key, "measurement": fake})
    assert answer.status_code == 401 and answer.json["error"] == "TokenInvalid"


def test_risk_raises_the_work(client: FlaskClient, services: Services, api_key: str) -> None:
    calm = Visitor(client, api_key, address="198.51.100.1")
    assert ask(calm, maxPuzzles=16)["tier"] == "low-calm"
    # No Accept-Language (a signal rule): medium.
    bare = Visitor(client, api_key, address="198.51.100.2", headers={"User-Agent": "Mozilla/5.0"})
    assert ask(bare, maxPuzzles=16)["tier"] == "medium-calm"
    # A network that identified 25 times this minute: high.
    busy = Visitor(client, api_key, address="198.51.100.3")
    minute = int(time.time() // 60)
    tag = tokens.network_tag(services.keyring, "198.51.100.3")
    services.redis.set(services.keys.network_identifies(tag, minute), 25, ex=120)
    assert ask(busy, maxPuzzles=16)["tier"] == "high-calm"


def test_under_attack_a_new_high_risk_network_pays_20x(
    client: FlaskClient, services: Services, api_key: str
) -> None:
    minute = int(time.time() // 60)
    services.redis.set(work_inputs.env_identifies_key(services, "shop", minute), 5000, ex=120)
    low = ask(Visitor(client, api_key, address="198.51.100.1"), maxPuzzles=16)
    # A network new to us, already identifying 25 times a minute.
    tag = tokens.network_tag(services.keyring, "192.0.2.9")
    services.redis.set(services.keys.network_identifies(tag, minute), 25, ex=120)
    high = ask(Visitor(client, api_key, address="192.0.2.9"), maxPuzzles=16)
    assert (low["tier"], high["tier"]) == ("low-attack", "high-attack")
    assert high["expectedHashes"] >= 20 * low["expectedHashes"]


def test_failing_identifies_read_as_an_attack(client: FlaskClient, api_key: str) -> None:
    visitor = Visitor(client, api_key)
    for _ in range(20):
        issued = ask(visitor)
        refused = identify(visitor, issued, solution="x")
        assert refused.status_code == 400
    assert ask(visitor)["tier"] == "low-attack"


def test_a_range_the_room_refused_pays_more_there(
    client: FlaskClient, services: Services, api_key: str, room: str
) -> None:
    strict = make_room(services.engine, env="shop", slug="strict", holdScore=40)
    services.engine.open(strict)
    # No Accept-Language (30) and no languages (20): 50, held in a room holding from 40.
    suspect = Visitor(
        client, api_key, address="203.0.113.50", headers={"User-Agent": "Mozilla/5.0"}
    )
    identified = suspect.identify(signals={"webdriver": False, "languages": 0})
    assert identified.json["score"] == 50
    assert suspect.enter("strict").json["status"] == "held"
    neighbour = Visitor(client, api_key, address="203.0.113.51", headers=HUMAN)
    assert ask(neighbour, room="strict", maxPuzzles=16)["tier"] == "medium-calm"
    assert ask(neighbour, room="drop", maxPuzzles=16)["tier"] == "low-calm"  # its own history
    elsewhere = Visitor(client, api_key, address="203.0.114.51")
    assert ask(elsewhere, room="strict", maxPuzzles=16)["tier"] == "low-calm"


def test_arrivals_per_minute_from_the_series() -> None:
    def member(at_ms: int, entries: int) -> str:
        counters = [0, entries, 0, 0, 0, 0, 0]
        return ":".join(str(x) for x in [at_ms, 1, 0, 0, 0, 60, 0, *counters, *[0] * 15])

    assert work_inputs.arrivals_per_minute([]) == 0
    assert work_inputs.arrivals_per_minute([member(0, 5)]) == 0
    members = [member(60_000, 130), member(0, 10), member(30_000, 70)]
    assert work_inputs.arrivals_per_minute(members) == 120
