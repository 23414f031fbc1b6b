"""The public fairness report of an opening (docs/draw.md, issue 23 items 5
and 6): its figures on a small scripted opening, the page a sceptical visitor reads, the
operator's switch, and the management API's copy. Time moves on the room's clock only."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from anteroom.queue.line.line_blocks import POST_OPEN_KEY
from anteroom.service_container import Services

pytestmark = pytest.mark.redis

API = "/api/management/v1"
MINUTE = 60_000
START = 1_800_000_000_000  # a whole minute: the report's minutes are clock minutes


class Opening:
    """One environment's room scheduled to open a minute after START, driven on its clock."""

    def __init__(self, client: FlaskClient, services: Services, **config: Any) -> None:
        public, secret = services.keystore.create("shop")
        self.client, self.services, self.key = client, services, public.public_key
        self.headers = {"Authorization": f"Bearer {secret}"}
        body = {"slug": "drop", "name": "Drop", "redirectUrl": "https://shop.example/checkout"}
        answer = client.post(f"{API}/queues", json=body | config, headers=self.headers)
        assert answer.status_code == 201, answer.json
        self.id = answer.json["id"]
        self.engine = services.engine
        self.engine.set_clock(self.id, START)
        self.sample()
        self.patch({"action": "open", "opensAt": START + MINUTE})

    def patch(self, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.client.patch(f"{API}/queues/{self.id}", json=body, headers=self.headers)
        assert answer.status_code == 200, answer.json
        return answer.json  # type: ignore[no-any-return]

    def enter(self, vid: str, score: int = 10) -> None:
        self.engine.enter(self.id, vid, "s", score)

    def run(self, ms: int) -> None:
        """Move the room's clock ``ms`` a second at a time, the service's tick (draw, regroup,
        drain: a second's admissions at most) and series sample after each, as it runs them."""
        for _ in range(ms // 1_000):
            self.engine.shift_clock(self.id, 1_000)
            self.engine.tick(self.id)
            self.sample()

    def sample(self) -> None:
        self.services.series.sample(self.id)

    def public(self) -> dict[str, Any]:
        answer = self.client.get(f"/queue/drop/fairness.json?key={self.key}")
        assert answer.status_code == 200, answer.json
        return answer.json  # type: ignore[no-any-return]


def test_the_report_states_what_the_opening_dealt(client: FlaskClient, services: Services) -> None:
    room = Opening(client, services, ratePerMinute=60, holdScore=70)
    for i in range(5):
        room.enter(f"pre{i}")
    room.enter("suspect", score=80)  # held by its score: drawn, never admitted
    before = room.public()
    assert before["seed"] is None and before["admittedFromPreQueue"] == 0
    assert before["held"] == 1 and before["waitSeconds"] == {"p50": None, "p90": None, "p99": None}

    room.run(MINUTE)  # opensAt: the draw is made
    room.enter("late0")
    room.enter("late1")
    room.run(3_000)  # one a second: three of the pool admitted
    room.patch({"action": "pause"})
    room.run(62_000)
    room.patch({"action": "open"})  # resumed: paused time earned nothing
    room.run(10_000)  # the pool's last two, then the later arrivals, in arrival order

    report = room.public()
    assert report["seed"] is not None and report["entrants"] == 6
    assert report["admittedFromPreQueue"] == 5 and report["admittedLater"] == 2
    assert report["outOfOrder"] == 0
    assert report["held"] == 1 and report["released"] == 0
    assert report["longestPauseSec"] == 62.0
    # Three in the opening's first minute, four in the one after the pause.
    assert report["ratePerMinute"] == 60 and report["mostDealtInMinute"] == 4
    # Three of the pool waited 61-63 s, the later two 68-69 s (the 60-120 s bucket); the
    # pool's last two 126-127 s (120-300 s). Quantiles interpolate inside a bucket.
    waits = report["waitSeconds"]
    assert 60 < waits["p50"] <= 120 < waits["p90"] <= waits["p99"] <= 300
    # No visitor's data: the figures are counts, the draw its public part.
    assert "pre0" not in str(report) and "suspect" not in str(report)


def test_a_held_spot_released_is_no_out_of_order_admission(
    client: FlaskClient, services: Services
) -> None:
    room = Opening(client, services, ratePerMinute=60, holdScore=70)
    room.enter("pre0")
    room.run(MINUTE)
    room.enter("flagged", score=80)  # arrives first, held
    room.enter("after")
    room.run(5_000)  # the pool's one, then "after": "flagged" waits on hold
    room.patch({"holdScore": 90})  # the operator releases it
    room.run(2_000)
    report = room.public()
    assert report["admittedLater"] == 2 and report["held"] == 1 and report["released"] == 1
    assert report["outOfOrder"] == 0  # behind "after" by the operator's choice, counted apart


def test_an_admission_behind_its_arrival_is_counted(
    client: FlaskClient, services: Services
) -> None:
    room = Opening(client, services, ratePerMinute=60)
    room.run(MINUTE)
    engine = room.engine
    with_keys = [engine.enter(room.id, f"late{i}", "s", 10) for i in range(3)]
    assert all(answer.position for answer in with_keys)  # all three wait: nothing earned yet
    room.run(2_000)  # late0 and late1 admitted
    # As a faulty script would: file the last one back at late0's order key, below late1's.
    line = engine.keys.room_base(room.id) + "line"
    assert engine.redis.zadd(line, {"late2": POST_OPEN_KEY + 1}, xx=True, ch=True) == 1
    room.run(1_000)
    report = room.public()
    assert report["admittedLater"] == 3 and report["outOfOrder"] == 1


def test_the_operator_can_keep_the_report_off_the_public_routes(
    client: FlaskClient, services: Services
) -> None:
    room = Opening(client, services)
    assert room.patch({"publicFairness": False})["publicFairness"] is False
    document = client.get(f"/queue/drop/fairness.json?key={room.key}")
    assert document.status_code == 404 and document.json["error"] == "NotFound"
    page = client.get(f"/queue/drop/fairness?key={room.key}", headers={"Accept": "text/html"})
    assert page.status_code == 404 and page.mimetype == "text/html"
    listed = client.get(f"/queue/drop/fairness/entrants.json?key={room.key}")
    assert listed.status_code == 404
    # The management API has it all the same, with its figures.
    private = client.get(f"{API}/queues/{room.id}/fairness", headers=room.headers)
    assert private.status_code == 200
    assert private.json["commitment"] and private.json["outOfOrder"] == 0
    room.patch({"publicFairness": True})
    assert client.get(f"/queue/drop/fairness.json?key={room.key}").status_code == 200


def test_the_management_copy_needs_the_read_scope(client: FlaskClient, services: Services) -> None:
    room = Opening(client, services)
    _, audit_only = services.keystore.create("shop", ["audit:read"])
    refused = client.get(
        f"{API}/queues/{room.id}/fairness", headers={"Authorization": f"Bearer {audit_only}"}
    )
    assert refused.status_code == 403 and refused.json["error"] == "Forbidden"
    assert client.get(f"{API}/queues/{room.id}/fairness").status_code == 401
    _, other = services.keystore.create("elsewhere")
    foreign = client.get(
        f"{API}/queues/{room.id}/fairness", headers={"Authorization": f"Bearer {other}"}
    )
    assert foreign.status_code == 403
    # A room opened now has no pre-queue, so no draw and no report.
    answer = client.post(
        f"{API}/queues",
        json={"slug": "walk-in", "name": "Walk in", "redirectUrl": "https://shop.example/"},
        headers=room.headers,
    )
    walk_in = answer.json["id"]
    client.patch(f"{API}/queues/{walk_in}", json={"action": "open"}, headers=room.headers)
    none = client.get(f"{API}/queues/{walk_in}/fairness", headers=room.headers)
    assert none.status_code == 404 and none.json["error"] == "NotFound"


def test_the_page_tells_a_visitor_how_to_check_and_escapes_the_room_name(
    client: FlaskClient, services: Services
) -> None:
    hostile = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'
    room = Opening(client, services, name=hostile)
    room.enter("pre0")
    room.run(MINUTE)
    room.run(2_000)
    page = client.get(f"/queue/drop/fairness?key={room.key}")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;img" in html
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    report = room.public()
    assert report["seed"] in html and report["root"] in html
    json_url = f"http://localhost/queue/drop/fairness.json?key={room.key}"
    assert f"anteroom verify-draw --fairness {json_url}" in html
    assert '<dd id="admitted-pre">1</dd>' in html
    # No beacon named: the page says the draw rests on the commitment alone.
    assert "The commitment only (the operator knew the seed)" in html
    # In the visitor's language, through the hosted page's catalogs.
    arabic = client.get(f"/queue/drop/fairness?key={room.key}&lang=ar").get_data(as_text=True)
    assert 'dir="rtl"' in arabic and "تحقق بنفسك" in arabic


def test_the_console_links_each_rooms_report(client: FlaskClient, services: Services) -> None:
    room = Opening(client, services)
    console_key, secret = services.keystore.create("shop")
    signed = client.post(
        "/console/sign-in", data={"secret": secret}, headers={"Sec-Fetch-Site": "same-origin"}
    )
    assert signed.status_code in (302, 303)
    page = client.get(f"/console/rooms/{room.id}").get_data(as_text=True)
    # With the signed-in key's own public key, which names the same environment.
    link = f"/queue/drop/fairness?key={console_key.public_key}"
    public = f'href="{link}"'
    assert public in page
    # The link leads to the report, and the console's own copy answers with the session.
    assert client.get(link).status_code == 200
    copy = client.get(f"/console/api/queues/{room.id}/fairness")
    assert copy.status_code == 200 and copy.json["commitment"] == room.public()["commitment"]
    room.patch({"publicFairness": False})
    page = client.get(f"/console/rooms/{room.id}").get_data(as_text=True)
    assert public not in page and "not public (the room does not publish it)" in page
    assert client.get(f"/console/api/queues/{room.id}/fairness").status_code == 200


def test_the_report_counts_those_who_left_before_their_turn(
    client: FlaskClient, services: Services
) -> None:
    room = Opening(client, services, ratePerMinute=60)
    for i in range(5):
        room.enter(f"pre{i}")
    gone = room.engine.enter(room.id, "pre-gone", "s", 10)
    room.engine.leave(room.id, "pre-gone", gone.ticket or 0, gone.generation)  # before opening
    room.run(MINUTE)
    late = room.engine.enter(room.id, "late", "s", 10)  # behind the pool: waits
    room.run(2_000)
    assert room.engine.leave(room.id, "late", late.ticket or 0, late.generation)
    report = room.public()
    # the opening's count: the one who left the pre-queue before it opened is not in it
    assert report["leftBeforeTurn"] == 1
    page = client.get(f"/queue/drop/fairness?key={room.key}").get_data(as_text=True)
    assert '<dd id="left-early">1</dd>' in page
