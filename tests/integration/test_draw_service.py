"""The service's draw (docs/draw.md): committed when the opening is scheduled,
made at opensAt by the service over the frozen pool, revealed after, and checkable by anyone
with ``anteroom verify-draw`` against the live room."""

from __future__ import annotations

import json
import random
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis
from flask.testing import FlaskClient

import anteroom
from anteroom.engine import Engine, QueueAnswer
from anteroom.queue.draw.room_draw import drawn_key
from anteroom.sdk import draw, regional_draw, verify_draw
from anteroom.sdk.tokens import TicketClaims
from anteroom.service_container import Services
from anteroom.store.keystore import KeyStore
from helpers import admitted_in_turn, make_room
from live_server import LiveServers

pytestmark = pytest.mark.redis

MINUTE = 60_000
START = 1_800_000_000_000


def scheduled(engine: Engine, **config: object) -> tuple[str, int]:
    """A room whose opening is scheduled a minute ahead; (room id, opensAt)."""
    room = make_room(engine, **config)
    engine.set_clock(room, START)  # pinned: times below are exact
    opens_at = START + MINUTE
    engine.open(room, opens_at)
    return room, opens_at


def salt_of(engine: Engine, room: str) -> bytes:
    """The opening's secret salt: read from Redis, as only a test may."""
    return bytes.fromhex(engine.redis.hget(engine.keys.room(room), "dsl") or "")


def test_scheduling_commits_the_draw_at_once_and_keeps_the_seed_secret(engine: Engine) -> None:
    room, _ = scheduled(engine)
    public = engine.get_room(room)["draw"]
    assert set(public) == {"commitment", "committedAt", "beacon"}
    assert public["beacon"] is None  # the room names none
    assert public["committedAt"] == engine.stats(room).now_ms
    seed = engine.redis.hget(engine.keys.room(room), "dsd")
    assert public["commitment"] == draw.commitment(seed)
    # Resuming a paused room keeps the committed seed (the API has no reschedule).
    engine.pause(room)
    engine.open(room)
    assert engine.get_room(room)["draw"] == public


def test_an_opening_now_has_no_pool_and_no_draw(engine: Engine) -> None:
    room = make_room(engine)
    engine.open(room)
    assert engine.get_room(room)["draw"] is None
    assert engine.tick(room).draw_due is False


def test_a_reroll_publishes_a_new_commitment_and_lists_the_old_as_withdrawn(
    engine: Engine,
) -> None:
    room, _ = scheduled(engine)
    first = engine.get_room(room)["draw"]
    engine.shift_clock(room, 5_000)
    second = engine.reroll_draw(room)
    assert second["commitment"] != first["commitment"]
    assert second["committedAt"] == first["committedAt"] + 5_000
    assert second["withdrawn"] == [
        {"commitment": first["commitment"], "committedAt": first["committedAt"],
         "withdrawnAt": second["committedAt"]}
    ]  # fmt: skip


def test_the_line_is_in_drawn_order_over_thousands_of_entrants(
    engine: Engine, redis_client: redis.Redis
) -> None:
    room, _ = scheduled(engine, holdScore=70, ratePerMinute=60, maxWaiting=100_000)
    rng = random.Random(23)
    vids = [f"v{rng.getrandbits(64):016x}" for _ in range(3_000)]
    tickets = {}
    for i, vid in enumerate(vids):
        tickets[vid] = engine.enter(room, vid, "s", 80 if i % 10 == 0 else 10).ticket
    for vid in vids[1::97]:  # some leave before the draw: not entrants
        engine.leave(room, vid, tickets[vid], 1)
    gone = set(vids[1::97])
    engine.shift_clock(room, MINUTE)
    assert engine.poll(room, vids[2], tickets[vids[2]], 1).admission is None  # not drawn yet
    assert engine.tick(room).draw_due  # and the tick made the draw
    later = engine.enter(room, "late", "s", 10)  # after opensAt: FIFO, behind the pool

    public = engine.get_room(room)["draw"]
    seed, salt = public["seed"], salt_of(engine, room)
    entrants = [draw.entrant_id(salt, v) for v in vids if v not in gone]
    expected = draw.drawn_order(seed, entrants)
    assert engine.drawn_entrants(room) == expected
    assert public["entrants"] == len(expected) and public["root"] == draw.tree_root(expected)
    # Held or not, every pool spot has its drawn key; the line (eligible ones) is in that order.
    vid_of = {draw.entrant_id(salt, v): v for v in vids}
    eligible = [vid_of[e] for e in expected if vids.index(vid_of[e]) % 10 != 0]
    base = engine.keys.room_base(room)
    line = redis_client.zrange(base + "line", 0, -1)
    dealt = engine.stats(room).dealt_total  # pinned at opensAt: nothing earned yet
    assert dealt == 0 and line == [*eligible, "late"] and later.position == len(line)
    held = redis_client.zrange(base + "b:80", 0, -1, withscores=True)
    ranks = {e: r for r, e in enumerate(expected)}
    assert all(key == drawn_key(ranks[draw.entrant_id(salt, v)], len(expected)) for v, key in held)
    # The visitor sees the published place: the poll's position is the rank among the eligible.
    for place in (5, 400, 2_000):
        vid = line[place - 1]
        assert engine.poll(room, vid, tickets[vid], 1).position == place


def test_the_drain_admits_in_drawn_order(engine: Engine) -> None:
    room, _ = scheduled(engine, ratePerMinute=60)
    vids = [f"v{i}" for i in range(10)]
    tickets = {vid: engine.enter(room, vid, "s", 10).ticket for vid in vids}
    engine.shift_clock(room, MINUTE)
    engine.tick(room)
    salt = salt_of(engine, room)
    vid_of = {draw.entrant_id(salt, v): v for v in vids}
    expected = [vid_of[e] for e in engine.drawn_entrants(room)]
    assert admitted_in_turn(engine, room, expected, tickets) == expected


def test_a_close_keeps_a_made_draw_and_drops_one_not_made(engine: Engine) -> None:
    room, _ = scheduled(engine)
    first = engine.get_room(room)["draw"]
    engine.enter(room, "a", "s", 10)
    engine.close(room)
    assert engine.get_room(room)["draw"] is None  # withdrawn with its pool
    engine.open(room, engine.stats(room).now_ms + MINUTE)
    # a close and a new opening is no hidden re-roll: the closed commitment stays in view
    again = engine.get_room(room)["draw"]
    assert again["commitment"] != first["commitment"]
    assert [w["commitment"] for w in again["withdrawn"]] == [first["commitment"]]
    engine.enter(room, "a", "s", 10)
    engine.shift_clock(room, MINUTE)
    engine.tick(room)
    made = engine.get_room(room)["draw"]
    engine.close(room)
    assert engine.get_room(room)["draw"] == made and len(engine.drawn_entrants(room)) == 1


# -- through the app -------------------------------------------------------------------------

API = "/api/management/v1"


@pytest.fixture
def operator(services: Services) -> tuple[str, dict[str, str]]:
    """The public key and the management headers of one environment, "shop"."""
    public, secret = services.keystore.create("shop")
    return public.public_key, {"Authorization": f"Bearer {secret}"}


def schedule_through_api(
    client: FlaskClient, services: Services, headers: dict[str, str]
) -> dict[str, Any]:
    """A room created and scheduled to open in a minute by the management API; the answer."""
    body = {"slug": "drop", "name": "Drop", "redirectUrl": "https://shop.example/checkout"}
    room = client.post(f"{API}/queues", json=body, headers=headers).json
    services.engine.set_clock(room["id"], START)
    patch = {"action": "open", "opensAt": START + MINUTE}
    answer = client.patch(f"{API}/queues/{room['id']}", json=patch, headers=headers)
    assert answer.status_code == 200, answer.json
    return answer.json  # type: ignore[no-any-return]


def test_the_commitment_is_published_at_scheduling_and_the_seed_nowhere(
    client: FlaskClient, services: Services, operator: tuple[str, dict[str, str]]
) -> None:
    public_key, headers = operator
    room = schedule_through_api(client, services, headers)
    seed = services.redis.hget(services.keys.room(room["id"]), "dsd")
    commitment = draw.commitment(seed)
    assert room["draw"] == {"commitment": commitment, "committedAt": START, "beacon": None}
    document = client.get(f"/queue/drop/fairness.json?key={public_key}").json
    assert document["commitment"] == commitment and document["committedAt"] == START
    # No beacon named: the document says the draw rests on the commitment alone.
    assert document["beacon"] is None and document["guarantee"] == "commitment"
    assert document["seed"] is None and document["entrantsUrl"] is None
    # The audit log records the commitment with the opening.
    events = client.get(f"{API}/audit", headers=headers).json["events"]
    assert events[0]["changes"]["draw"]["after"]["commitment"] == commitment
    # The seed is in no answer before the draw: JSON, list, hosted page, room detail.
    answers = [
        client.get(f"/queue/drop/fairness.json?key={public_key}"),
        client.get(f"/queue/drop/fairness/entrants.json?key={public_key}"),
        client.get(f"/queue/drop?key={public_key}"),
        client.get(f"{API}/queues/{room['id']}", headers=headers),
        client.get(f"{API}/audit", headers=headers),
    ]
    assert answers[1].status_code == 404
    assert not any(seed in a.get_data(as_text=True) for a in answers)
    # The hosted page shows the commitment in the pre-queue, in the visitor's language.
    page = answers[2].get_data(as_text=True)
    assert f"This draw is committed: {commitment}" in page
    german = client.get(f"/queue/drop?key={public_key}&lang=de").get_data(as_text=True)
    assert f"Diese Auslosung ist vorab versiegelt: {commitment}" in german


def test_a_reroll_through_the_api_keeps_the_old_commitment_in_view(
    client: FlaskClient, services: Services, operator: tuple[str, dict[str, str]]
) -> None:
    public_key, headers = operator
    room = schedule_through_api(client, services, headers)
    rerolled = client.patch(
        f"{API}/queues/{room['id']}", json={"action": "reroll"}, headers=headers
    ).json
    assert rerolled["draw"]["withdrawn"][0]["commitment"] == room["draw"]["commitment"]
    document = client.get(f"/queue/drop/fairness.json?key={public_key}").json
    assert document["withdrawn"] == rerolled["draw"]["withdrawn"]
    assert document["commitment"] == rerolled["draw"]["commitment"]
    # A room with no draw waiting cannot re-roll.
    services.engine.shift_clock(room["id"], MINUTE)
    services.engine.tick(room["id"])
    again = client.patch(f"{API}/queues/{room['id']}", json={"action": "reroll"}, headers=headers)
    assert again.status_code == 400 and "action" in again.json["fields"]


def published(
    client: FlaskClient, public_key: str, tmp_path: Path
) -> tuple[dict[str, Any], list[str]]:
    """The fairness document and its list, as a visitor fetches them, saved beside each other."""
    document = client.get(f"/queue/drop/fairness.json?key={public_key}").json
    listed = client.get("/queue/drop/" + document["entrantsUrl"]).json  # relative to it
    return document, listed


def save(tmp_path: Path, document: dict[str, Any], listed: list[str]) -> str:
    (tmp_path / "entrants.json").write_text(json.dumps(listed))
    path = tmp_path / "fairness.json"
    path.write_text(json.dumps(document | {"entrantsUrl": "entrants.json"}))
    return str(path)


def test_the_published_draw_passes_the_check_and_a_tampered_one_fails(
    client: FlaskClient,
    services: Services,
    operator: tuple[str, dict[str, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    public_key, headers = operator
    room = schedule_through_api(client, services, headers)
    tickets = {
        f"v{i}": services.engine.enter(room["id"], f"v{i}", "s", 10).ticket for i in range(300)
    }
    services.engine.shift_clock(room["id"], MINUTE)
    services.engine.tick(room["id"])  # the ticker's tick makes the draw
    document, listed = published(client, public_key, tmp_path)
    assert document["entrants"] == len(listed) == 300 and document["seed"] is not None
    assert draw.check_draw(document, listed).ok
    assert verify_draw.main(["--fairness", save(tmp_path, document, listed)]) == 0
    # The place a visitor is told is its rank in the published list.
    salt = salt_of(services.engine, room["id"])
    first = next(v for v in tickets if draw.entrant_id(salt, v) == listed[0])
    assert services.engine.poll(room["id"], first, tickets[first], 1).position == 1
    tampered = {
        "commitment-mismatch": (document | {"seed": draw.new_seed()}, listed),
        "entrant-dropped": (document, listed[:-1]),
        "order-mismatch": (document, [listed[1], listed[0], *listed[2:]]),
    }
    for failure, (doc, ids) in tampered.items():
        capsys.readouterr()
        assert verify_draw.main(["--fairness", save(tmp_path, doc, ids)]) == 1
        assert failure in capsys.readouterr().err


def fetched(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())  # type: ignore[no-any-return]


@pytest.mark.slow
def test_verify_draw_passes_against_a_live_room(
    live_server: LiveServers, redis_client: redis.Redis
) -> None:
    engine = Engine(redis_client)
    public_key = KeyStore(redis_client, engine.keys).create("test")[0].public_key
    room, _ = scheduled(engine)
    for i in range(50):
        engine.enter(room, f"v{i}", "s", 10)
    # The server runs the code under test (pytest's pythonpath does not reach a subprocess).
    server = live_server(PYTHONPATH=str(Path(anteroom.__file__).parents[1]))
    url = f"{server.url}/queue/drop/fairness.json?key={public_key}"
    engine.shift_clock(room, MINUTE)  # opensAt comes: the service's ticker makes the draw
    deadline = time.monotonic() + 10
    seeded = fetched(url)
    while seeded["seed"] is None and time.monotonic() < deadline:
        time.sleep(0.1)  # the server's ticker draws, and its directory shows it within ~0.2 s
        seeded = fetched(url)
    assert seeded["entrants"] == 50
    assert verify_draw.main(["--fairness", url]) == 0


def test_a_ticket_carrying_its_pre_draw_key_hears_its_drawn_place(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The far poll answers from the ticket's order key and the snapshot's blocks; after the draw
    # a pre-draw key's block is empty, so Redis answers, exactly, with the drawn key to carry.
    room, _ = scheduled(engine, maxWaiting=10_000)
    clock = [1_000.0]
    monkeypatch.setattr(engine.snapshots, "clock", lambda: clock[0])
    monkeypatch.setattr(engine.bookings, "clock", lambda: clock[0])
    answers = {f"v{i}": engine.enter(room, f"v{i}", f"s{i}", 10) for i in range(2_600)}
    engine.shift_clock(room, MINUTE)
    engine.draw(room)
    clock[0] += 5  # the process's snapshot of the room is renewed after the draw
    base = engine.keys.room_base(room)
    for vid in ("v7", "v1500", "v2599"):
        old = answers[vid]
        got = engine.poll(room, vid, old.ticket or 0, 1, old.session_jti, carried=claims(old))
        assert got.position == engine.redis.zrank(base + "line", vid) + 1
        assert got.order_key is not None and got.order_key < 0 <= (old.order_key or 0)
    # A far spot polling with its drawn key is answered from the snapshot: no script runs.
    deep = engine.redis.zrange(base + "line", 2_000, 2_000)[0]
    drawn = engine.poll(room, deep, answers[deep].ticket or 0, 1, "s", near_head=True)
    ran: list[str] = []
    for name in ("_run", "_run_read"):
        original = getattr(engine, name)

        def counted(op: str, *args: Any, _original: Any = original, **kw: Any) -> Any:
            ran.append(op)
            return _original(op, *args, **kw)

        monkeypatch.setattr(engine, name, counted)
    far = engine.poll(room, deep, drawn.ticket or 0, 1, drawn.session_jti, carried=claims(drawn))
    assert ran == [] and 2_001 <= far.position <= 2_001 + 64  # within its block's spots


def claims(answer: QueueAnswer) -> TicketClaims:
    """What the ticket signed for ``answer`` carries (as visit/answers.queue_token signs it)."""
    assert answer.ticket is not None
    return TicketClaims(
        room_id="", visitor_id="", ticket=answer.ticket, generation=answer.generation,
        environment="test", session_id=answer.session_jti, score=answer.score,
        order_key=answer.order_key, kept_until=answer.kept_until_ms,
    )  # fmt: skip


def test_a_draw_shared_across_regions_shows_its_region_and_roots_and_is_not_re_rolled(
    client: FlaskClient, services: Services, operator: tuple[str, dict[str, str]]
) -> None:
    public_key, headers = operator
    body = {"slug": "drop", "name": "Drop", "redirectUrl": "https://shop.example/checkout"}
    room = client.post(f"{API}/queues", json=body, headers=headers).json
    services.engine.set_clock(room["id"], START)
    seed = draw.new_seed()  # as queue/regions/shared_draw.py takes it from etcd
    services.engine.open(room["id"], START + MINUTE, shared=("eu", seed, "", 0))
    refused = client.patch(f"{API}/queues/{room['id']}", json={"action": "reroll"}, headers=headers)
    assert refused.status_code == 400 and "across regions" in refused.json["fields"]["action"]
    document = client.get(f"/queue/drop/fairness.json?key={public_key}").json
    assert document["region"] == "eu" and document["commitment"] == draw.commitment(seed)
    assert "regions" not in document and document["seed"] is None
    services.engine.enter(room["id"], "v1", "s", 10)
    services.engine.shift_clock(room["id"], MINUTE)
    services.engine.tick(room["id"])
    made = services.engine.get_room(room["id"])["draw"]
    parts = [
        regional_draw.RegionRoot("ap", "ab" * 32, 4, "https://ap.example/e.json"),
        regional_draw.RegionRoot("eu", made["root"], 1, "https://eu.example/e.json"),
    ]
    kept = {
        "globalRoot": regional_draw.global_root(parts),
        "regions": [
            {
                "region": p.region,
                "root": p.root,
                "entrants": p.entrants,
                "entrantsUrl": p.entrants_url,
            }
            for p in parts
        ],
    }
    assert services.engine.set_draw_regions(room["id"], kept)
    document = client.get(f"/queue/drop/fairness.json?key={public_key}").json
    assert document["globalRoot"] == kept["globalRoot"] and document["regions"] == kept["regions"]
    assert regional_draw.check_regions(document).ok
