"""Every guarantee of an arrival, through its two calls (arrive, join), on two ``anteroom serve``
instances of two workers each (four processes) sharing one Redis: each request of a visitor
goes to the other instance than its last, as behind a load balancer without affinity.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from anteroom.engine import Engine
from anteroom.identity import proof_of_work as pow
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.sdk import tokens
from anteroom.sdk import verification as verify
from anteroom.store.keystore import KeyStore
from helpers import TEST_KEYS, free_port, make_room
from live_server import LiveServers
from visitor_client import HUMAN, Answer, HttpAnswer, Visitor

pytestmark = [pytest.mark.redis, pytest.mark.slow]

ENV = {
    "ANTEROOM_WORKERS": "2",
    "ANTEROOM_TRUSTED_PROXIES": "1",  # each visitor's address comes in X-Forwarded-For
    "ANTEROOM_POW_DIFFICULTY": "4",
    "ANTEROOM_LIMIT_IDENTIFY": "4/hour",
    "ANTEROOM_LIMIT_ENTER": "6/hour",
}
ADDRESSES = (f"198.51.100.{i}" for i in itertools.count(1))  # a fresh address per visitor
START = 1_800_000_000_000
MINUTE = 60_000


class Alternating:
    """Sends each request to the next instance in turn."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.turn = itertools.count()
        self.session = requests.Session()

    def post(self, path: str, body: Any, headers: Mapping[str, str], address: str | None) -> Answer:
        url = self.urls[next(self.turn) % len(self.urls)]
        sent = dict(headers) | ({"X-Forwarded-For": address} if address else {})
        return HttpAnswer(self.session.post(url + path, json=body, headers=sent, timeout=10))

    def close(self) -> None:
        self.session.close()


class Site:
    """Two instances, an environment's keys, and a way to make rooms and visitors."""

    def __init__(self, urls: list[str], redis_client: redis.Redis) -> None:
        self.urls = urls
        self.engine = Engine(redis_client)
        record, self.secret = KeyStore(redis_client, self.engine.keys).create("arrivals")
        self.api_key = record.public_key

    def room(self, slug: str, **config: Any) -> str:
        room = make_room(self.engine, env="arrivals", slug=slug, **config)
        self.engine.open(room)
        return room

    def visitor(self, address: str | None = None, headers: Mapping[str, str] = HUMAN) -> Visitor:
        return Visitor(Alternating(self.urls), self.api_key, next(ADDRESSES) if address is None
                       else address, headers)  # fmt: skip

    def manage(self, method: str, path: str, body: Any) -> Any:
        auth = {"Authorization": f"Bearer {self.secret}"}
        url = self.urls[0] + "/api/management/v1" + path
        answer = requests.request(method, url, json=body, headers=auth, timeout=10)
        assert answer.status_code < 300, answer.text
        return answer.json()


@pytest.fixture(scope="module")
def servers(module_live_server: LiveServers) -> list[str]:
    return [module_live_server(**ENV).url for _ in range(2)]


@pytest.fixture
def site(servers: list[str], redis_client: redis.Redis) -> Site:
    return Site(servers, redis_client)


def test_two_calls_to_a_ticket_and_a_retry_gets_the_first_answer(site: Site) -> None:
    site.room("retry", ratePerMinute=1)
    v = site.visitor()
    issued = v.arrive("retry")
    assert issued.status_code == 200, issued.text
    body = v.join_body("retry", issued.json)
    first = v.post("queue/join", body)  # to one instance
    again = v.post("queue/join", body)  # the same proof again (its answer lost), to the other
    assert first.status_code == again.status_code == 200, again.text
    assert again.json["session"]["sessionToken"] == first.json["session"]["sessionToken"]
    assert again.json["queue"]["ticket"] == first.json["queue"]["ticket"] == 1
    # Sent twice at once, to both instances: one spot, one session.
    other = site.visitor()
    body = other.join_body("retry", other.arrive("retry").json)
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: other.post("queue/join", body), range(2)))
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    assert len({a.json["session"]["sessionToken"] for a in answers}) == 1
    assert {a.json["queue"]["ticket"] for a in answers} == {2}


def test_the_proof_is_refused_the_second_time(site: Site) -> None:
    site.room("spent", ratePerMinute=1)
    v = site.visitor()
    issued = v.arrive("spent").json
    body = v.join_body("spent", issued)
    assert v.post("queue/join", body).status_code == 200
    # Another proof of the same challenge (its first puzzle's next solution), on the other
    # instance: refused.
    first = issued["puzzles"][0]
    another = pow.solve(first["prefix"], first["difficulty"], int(body["solutions"][0]) + 1)
    other = body | {"solutions": [another, *body["solutions"][1:]]}
    refused = v.post("queue/join", other)
    assert refused.status_code == 401 and refused.json["error"] == "TokenInvalid", refused.text
    # The older call refuses it too: a challenge is spent once, whichever call spends it.
    legacy = {
        "apiKey": site.api_key,
        "challenge": issued["challenge"],
        "solutions": other["solutions"],
    }
    assert v.post("identify", legacy).status_code == 401


def test_the_identify_and_enter_limits_are_counted_across_processes(site: Site) -> None:
    site.room("limits", ratePerMinute=1)
    address = next(ADDRESSES)
    sessions = []
    for _ in range(4):  # ANTEROOM_LIMIT_IDENTIFY: 4 an hour, whichever process answers
        v = site.visitor(address)
        _, joined = v.arrive_and_join("limits")
        assert joined.status_code == 200, joined.text
        sessions.append(v)
    over = site.visitor(address)
    _, refused = over.arrive_and_join("limits")
    assert refused.status_code == 429 and refused.json["error"] == "RateLimited", refused.text
    assert int(refused.headers["Retry-After"]) > 0
    # The four joins counted four entries too (6 an hour): two more enters, then refused.
    enters = [sessions[i].enter("limits").status_code for i in range(3)]
    assert enters == [200, 200, 429]


def test_a_high_score_is_held(site: Site) -> None:
    site.room("holds", ratePerMinute=600, holdScore=40)
    bare = site.visitor(headers={"User-Agent": HUMAN["User-Agent"]})  # no Accept-Language: 30
    issued = bare.arrive("holds").json
    body = bare.join_body("holds", issued) | {"signals": {"webdriver": False, "languages": 0}}
    joined = bare.join(body)  # 30 + no languages 20 = 50, at or above holdScore 40
    assert joined.status_code == 200, joined.text
    assert joined.json["session"]["score"] == 50
    assert joined.json["queue"]["status"] == "held"
    assert bare.poll().json["status"] == "held"
    person = site.visitor()
    _, entered = person.arrive_and_join("holds")
    assert entered.json["session"]["score"] == 0
    assert entered.json["queue"]["status"] != "held"


def test_an_invite_and_a_bypass_rule_take_the_skip_lane(site: Site) -> None:
    room = site.room("lanes", ratePerMinute=1)
    ahead = site.visitor()
    assert ahead.arrive_and_join("lanes")[1].status_code == 200
    public = site.visitor()
    assert public.arrive_and_join("lanes")[1].json["queue"]["status"] == "waiting"
    expires = int(time.time() * 1000) + 3_600_000
    invite = site.manage("POST", f"/queues/{room}/invites",
                         {"count": 1, "expiresAt": expires, "uses": 1, "lane": "skip"})  # fmt: skip
    vip = site.visitor()
    _, joined = vip.arrive_and_join("lanes", invite=invite["invites"][0])
    assert joined.json["queue"]["status"] == "admitted", joined.text
    late = site.visitor()
    _, spent = late.arrive_and_join("lanes", invite=invite["invites"][0])
    assert spent.status_code == 409 and spent.json["error"] == "InviteSpent", spent.text
    rule = {"kind": "address-range", "value": "203.0.113.0/24"}
    site.manage("PATCH", f"/queues/{room}", {"bypass": [rule]})
    outside = site.visitor()
    assert outside.arrive_and_join("lanes")[1].json["queue"]["status"] == "waiting"
    deadline = time.monotonic() + 10  # each process's room directory reads the change (2 s)
    for host in itertools.count(
        1
    ):  # an address of the range each time (the limits are per address)
        _, passed = site.visitor(f"203.0.113.{host}").arrive_and_join("lanes")
        if passed.json["queue"]["status"] == "admitted" or time.monotonic() > deadline:
            break
        time.sleep(0.2)  # until the processes' room directories have read the rules
    assert passed.json["queue"]["status"] == "admitted", passed.text


def test_the_pre_queue_entrants_are_drawn(site: Site, redis_client: redis.Redis) -> None:
    room = make_room(site.engine, env="arrivals", slug="draw", ratePerMinute=6)
    site.engine.set_clock(room, START)
    site.engine.open(room, START + MINUTE)
    entrants = [site.visitor() for _ in range(6)]
    for v in entrants:
        _, joined = v.arrive_and_join("draw")
        assert joined.status_code == 200, joined.text
        assert joined.json["queue"]["status"] == "waiting"
        assert "receipt" not in joined.json["queue"]  # no draw yet: nothing to prove
    site.engine.shift_clock(room, MINUTE)  # opensAt comes: the instances' tickers draw
    url = f"{site.urls[0]}/queue/draw/fairness.json?key={site.api_key}"
    deadline = time.monotonic() + 20
    while requests.get(url, timeout=10).json().get("entrants") != 6:
        assert time.monotonic() < deadline, "the draw was not made"
        time.sleep(0.2)  # waiting for the tickers (other processes), not for a race
    positions = {v.poll().json.get("position") for v in entrants}
    assert positions == set(range(1, 7))
    # Each process builds the draw's receipt tree in the background as it first sees the draw:
    # an answer before that carries no receipt, every later one does.
    deadline = time.monotonic() + 20
    while not all("receipt" in v.poll().json for v in entrants):
        assert time.monotonic() < deadline, "no receipt for every entrant"
        time.sleep(0.2)  # waiting for the other processes' background builds, not for a race


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path, port=free_port()).start()
    yield server
    server.stop()


def test_an_outage_spends_no_proof_and_a_session_is_admitted_fail_open(
    live_server: LiveServers, own_redis: EmbeddedRedis
) -> None:
    live = [live_server(redis_url=own_redis.url, **ENV) for _ in range(2)]
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    site = Site([server.url for server in live], client)
    site.room("outage", failMode="open", ratePerMinute=1)
    ahead = site.visitor()
    assert ahead.arrive_and_join("outage")[1].status_code == 200
    returning = site.visitor()
    assert returning.arrive_and_join("outage")[1].json["queue"]["status"] == "waiting"
    newcomer = site.visitor()
    body = newcomer.join_body("outage", newcomer.arrive("outage").json)
    # A process applies a room's fail mode offline once it has read the room: the returning
    # visitor's ticket is polled through every worker of both instances first, as a crowd
    # would have done, so whichever worker takes its poll in the outage knows the room.
    poll = json.dumps({"apiKey": site.api_key, "ticket": returning.ticket})
    for server in live:
        answers = server.request_through_every_worker(
            "POST", "/api/v1/queue/poll", poll, {"Content-Type": "application/json"}
        )
        assert len(answers) == 2 and {status for status, _ in answers.values()} == {200}, answers
    own_redis.stop()
    # A proof cannot be spent once without Redis: no session, no outage admission from it.
    for _ in range(2):  # both instances
        refused = newcomer.post("queue/join", body)
        assert refused.status_code == 503 and refused.json["error"] == "Unavailable", refused.text
    # The visitor whose join gave a session polls: admitted fail-open, bound to that session.
    admitted = returning.poll()
    assert admitted.status_code == 200 and admitted.json.get("failOpen") is True, admitted.text
    claims = verify.verify_admission(admitted.json["token"], TEST_KEYS, room="outage").claims
    keyring = tokens.Keyring.parse(TEST_KEYS)
    session = tokens.decode(keyring, returning.session or "", tokens.SESSION)
    assert claims and claims["fo"] is True and claims["qj"] == session["jti"]
    own_redis.start()
    # Redis is back: the proof the outage refused is still unspent, and joins.
    deadline = time.monotonic() + 15  # the breakers' 3 s pause
    while (joined := newcomer.post("queue/join", body)).status_code == 503:
        assert time.monotonic() < deadline
        time.sleep(0.5)  # the breaker's pause in other processes
    assert joined.status_code == 200, joined.text
    assert joined.json["queue"]["ticket"] == 3
    # The outage admission was booked (the fail-open ledger): its spot is admitted, not dealt
    # again, and the visitor's next poll says so.
    while (after := returning.poll()).json.get("status") != "admitted":
        assert time.monotonic() < deadline, after.text
        time.sleep(0.5)  # the first tick of a ticker once Redis is back books it
