"""The record of issued invites, against a real Redis: listed newest first with their spent
counts and state, withdrawn one by one (newcomers refused, those in keep their spots), bad ids
refused, gone with the room, and a withdrawal racing entries from other processes."""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.engine import Engine
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.line import room_engine as eng
from anteroom.queue.rooms import invite_book
from anteroom.sdk.tokens import InviteClaims
from anteroom.service_container import Services
from helpers import Operator, open_room
from visitor_client import Visitor

pytestmark = pytest.mark.redis

ROOM = {"slug": "spring-drop", "name": "Spring drop", "redirectUrl": "https://shop.example/co",
        "ratePerMinute": 1}  # fmt: skip
FAR = 2**50


@pytest.fixture
def keys(services: Services) -> dict[str, Any]:
    prod, secret = services.keystore.create("prod")
    _, reader = services.keystore.create("prod", ["queues:read"])
    _, other = services.keystore.create("staging")
    return {"public": prod.public_key, "secret": secret, "reader": reader, "other": other}


@pytest.fixture
def op(client: FlaskClient, keys: dict[str, Any]) -> Operator:
    return Operator(client, keys["secret"], ROOM)


@pytest.fixture
def room(op: Operator) -> dict[str, Any]:
    created = op.create()
    assert op.patch(created["id"], {"action": "open"}).status_code == 200
    return created


def issue(op: Operator, services: Services, room_id: str, **body: Any) -> dict[str, Any]:
    later = services.series.now_ms(room_id) + 3_600_000
    base = {"count": 1, "expiresAt": later, "uses": 1, "lane": "skip"}
    response = op.call("POST", f"/queues/{room_id}/invites", base | body)
    assert response.status_code == 201, response.json
    return response.json  # type: ignore[no-any-return]


def listed(op: Operator, room_id: str, **query: str) -> dict[str, Any]:
    response = op.call("GET", f"/queues/{room_id}/invites", **query)
    assert response.status_code == 200, response.json
    return response.json  # type: ignore[no-any-return]


def test_issued_invites_are_listed_newest_first_with_their_spent_counts(
    client: FlaskClient, keys: dict[str, Any], op: Operator, services: Services,
    room: dict[str, Any],
) -> None:  # fmt: skip
    first = issue(op, services, room["id"], count=2, uses=2, lane="priority")
    second = issue(op, services, room["id"])
    assert len(first["ids"]) == 2 and len(second["ids"]) == 1
    Visitor(client, keys["public"]).enter("spring-drop", first["invites"][0])
    Visitor(client, keys["public"]).enter("spring-drop", first["invites"][0])
    Visitor(client, keys["public"]).enter("spring-drop", second["invites"][0])
    page = listed(op, room["id"])
    assert page["total"] == 3 and page["nextCursor"] is None
    assert [i["id"] for i in page["invites"]] == second["ids"] + first["ids"][::-1]
    by_id = {i["id"]: i for i in page["invites"]}
    assert by_id[second["ids"][0]] | {"expiresAt": 0, "issuedAt": 0} == {
        "id": second["ids"][0], "lane": "skip", "uses": 1, "spent": 1, "expiresAt": 0,
        "issuedAt": 0, "withdrawnAt": None, "state": "spent",
    }  # fmt: skip
    assert (by_id[first["ids"][0]]["spent"], by_id[first["ids"][0]]["state"]) == (2, "spent")
    assert (by_id[first["ids"][1]]["spent"], by_id[first["ids"][1]]["state"]) == (0, "open")
    # a reader may list; the list pages by its cursor, older after newer, none twice
    reader = Operator(client, keys["reader"])
    one = reader.call("GET", f"/queues/{room['id']}/invites", limit="1").json
    assert [i["id"] for i in one["invites"]] == second["ids"]
    rest = listed(op, room["id"], limit="1", cursor=one["nextCursor"])
    last = listed(op, room["id"], limit="5", cursor=rest["nextCursor"])
    seen = [i["id"] for p in (one, rest, last) for i in p["invites"]]
    assert seen == [i["id"] for i in page["invites"]] and last["nextCursor"] is None


def test_an_expired_invite_is_listed_as_expired(
    op: Operator, services: Services, room: dict[str, Any]
) -> None:
    soon = services.series.now_ms(room["id"]) + 60_000
    issue(op, services, room["id"], expiresAt=soon)
    services.engine.shift_clock(room["id"], 60_000)
    assert listed(op, room["id"])["invites"][0]["state"] == "expired"


def test_a_withdrawn_invite_refuses_newcomers_and_keeps_those_in(
    client: FlaskClient, keys: dict[str, Any], op: Operator, services: Services,
    room: dict[str, Any],
) -> None:  # fmt: skip
    issued = issue(op, services, room["id"], uses=5, lane="priority")
    [token], [invite_id] = issued["invites"], issued["ids"]
    Visitor(client, keys["public"]).enter("spring-drop")  # the public line, ahead of nobody
    guest = Visitor(client, keys["public"])
    assert guest.enter("spring-drop", token).json["position"] == 1
    gone = op.call("DELETE", f"/queues/{room['id']}/invites/{invite_id}")
    assert gone.status_code == 204, gone.json
    late = Visitor(client, keys["public"]).enter("spring-drop", token)
    assert (late.status_code, late.json["error"]) == (410, "InviteWithdrawn")
    # the guest in the lane keeps the spot, even entering again with it (a reload)
    assert guest.poll().json["position"] == 1
    again = guest.enter("spring-drop", token)
    assert again.status_code == 200 and again.json["position"] == 1
    record = listed(op, room["id"])["invites"][0]
    assert (record["state"], record["spent"]) == ("withdrawn", 1) and record["withdrawnAt"]
    # withdrawing again changes nothing, audits nothing new
    assert op.call("DELETE", f"/queues/{room['id']}/invites/{invite_id}").status_code == 204
    assert listed(op, room["id"])["invites"][0]["withdrawnAt"] == record["withdrawnAt"]
    events = op.call("GET", "/audit").json["events"]
    assert [e["type"] for e in events[:2]] == ["queue.invite.withdrawn", "queue.invites"]
    assert events[0]["invite"] | {"expiresAt": 0} == {
        "id": invite_id, "lane": "priority", "uses": 5, "expiresAt": 0
    }  # fmt: skip
    assert events[0]["queue"]["id"] == room["id"] and token not in str(events)


@pytest.mark.parametrize(
    ("invite_id", "status", "error"),
    [
        ("AAAAAAAAAAAAAAAA", 404, "InviteNotFound"),  # well formed, never issued here
        ("short", 400, "BadRequest"),
        ("a" * 17, 400, "BadRequest"),
        ("has%20space%20in1", 400, "BadRequest"),
    ],
)
def test_a_bad_invite_id_is_refused_by_name(
    op: Operator, room: dict[str, Any], invite_id: str, status: int, error: str
) -> None:
    answer = op.call("DELETE", f"/queues/{room['id']}/invites/{invite_id}")
    assert (answer.status_code, answer.json["error"]) == (status, error), answer.json
    if status == 400:
        assert set(answer.json["fields"]) == {"inviteId"}


def test_withdrawing_needs_the_write_scope_and_the_room_of_the_key(
    client: FlaskClient, keys: dict[str, Any], op: Operator, services: Services,
    room: dict[str, Any],
) -> None:  # fmt: skip
    [invite_id] = issue(op, services, room["id"])["ids"]
    url = f"/queues/{room['id']}/invites/{invite_id}"
    assert Operator(client, keys["reader"]).call("DELETE", url).status_code == 403
    assert Operator(client, keys["other"]).call("DELETE", url).status_code == 403
    assert (
        Operator(client, keys["other"]).call("GET", f"/queues/{room['id']}/invites").status_code
        == 403
    )
    elsewhere = op.create(slug="autumn-drop")
    moved = op.call("DELETE", f"/queues/{elsewhere['id']}/invites/{invite_id}")
    assert (moved.status_code, moved.json["error"]) == (404, "InviteNotFound")
    assert op.call("DELETE", f"/queues/q0000000000000000/invites/{invite_id}").status_code == 404


@pytest.mark.parametrize("query", [{"limit": "0"}, {"limit": "501"}, {"cursor": "x"},
                                   {"cursor": "0"}, {"limit": "\u00b2"}])  # fmt: skip
def test_a_bad_list_query_is_a_400_naming_it(
    op: Operator, room: dict[str, Any], query: dict[str, str]
) -> None:
    answer = op.call("GET", f"/queues/{room['id']}/invites", **query)
    assert answer.status_code == 400 and set(answer.json["fields"]) == set(query), answer.json


def test_the_record_goes_with_the_room(
    op: Operator, services: Services, room: dict[str, Any], redis_client: Any
) -> None:
    [invite_id] = issue(op, services, room["id"])["ids"]
    assert op.call("DELETE", f"/queues/{room['id']}/invites/{invite_id}").status_code == 204
    names = services.keys.room_keys(room["id"])
    assert redis_client.exists(names["invs"], names["invo"], names["inv"]) == 3
    assert op.call("DELETE", f"/queues/{room['id']}").status_code == 204
    assert redis_client.exists(names["invs"], names["invo"], names["inv"]) == 0
    # and nothing is recorded for a room deleted before its invites are
    with pytest.raises(eng.RoomNotFound):
        services.engine.record_invites(room["id"], ["AAAAAAAAAAAAAAAA"], "{}")
    assert redis_client.exists(names["invs"], names["invo"]) == 0


def _enter_until_refused(url: str, room: str, worker: int, start: Any, withdrawn: Any,
                         out: Any) -> None:  # fmt: skip
    """Enter new identities with the shared invite until one is refused, then once more after
    the withdrawal has been answered."""
    engine = Engine(connect(url, timeout=30))
    token = InviteClaims(room, "test", "SharedInvite0000", FAR, 1_000_000, "priority")
    results: list[str] = []
    start.wait()
    i = 0
    while not results or results[-1] == "in":
        i += 1
        try:
            engine.enter(room, f"w{worker}-v{i}", f"s{worker}-{i}", 10, invite=token)
            results.append("in")
        except eng.InviteWithdrawn:
            results.append("withdrawn")
    withdrawn.wait(60)
    try:
        engine.enter(room, f"w{worker}-after", f"s{worker}-after", 10, invite=token)
        results.append("in")
    except eng.InviteWithdrawn:
        results.append("withdrawn")
    out.put(results)


def test_a_withdrawal_racing_entries_in_other_processes(engine: Engine, redis_url: str) -> None:
    """Three processes enter with one invite while this one withdraws it: each entry is either
    counted as a use or refused, a process refused once is never let in again, and every entry
    after the withdrawal's answer is refused."""
    room = open_room(engine, ratePerMinute=1)
    engine.record_invites(room, ["SharedInvite0000"], invite_book.terms("priority", 10**6, FAR, 0))
    processes = 3
    ctx = mp.get_context("spawn")
    start, withdrawn, out = ctx.Barrier(processes + 1), ctx.Event(), ctx.Queue()
    workers = [
        ctx.Process(target=_enter_until_refused, args=(redis_url, room, w, start, withdrawn, out))
        for w in range(processes)
    ]
    for p in workers:
        p.start()
    start.wait()
    while engine.invites(room).invites[0].spent < 30:  # entries under way in every process
        pass
    engine.withdraw_invite(room, "SharedInvite0000", engine.stats(room).now_ms)
    withdrawn.set()
    results = [out.get(timeout=120) for _ in workers]
    for p in workers:
        p.join(timeout=30)
    for r in results:
        assert r[-2:] == ["withdrawn", "withdrawn"] and "withdrawn" not in r[:-2], r
    entered = sum(r.count("in") for r in results)
    [record] = engine.invites(room).invites
    assert record.spent == entered == engine.stats(room).waiting
    assert record.withdrawn_at_ms is not None
