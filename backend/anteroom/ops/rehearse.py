"""``anteroom rehearse``: a rush rehearsal against a running deployment, on Locust (headless).

Simulated visitors arrive at a chosen rate (``--visitors 20000 --over 60s``), each once: in two
calls, as the browser agent does, it asks the room's challenge (``arrive``), solves its floor's
puzzles and joins (``queue/join``: the session and the spot at once); a share of them enters a
second time with that session, as a second tab would (``queue/enter``); it polls exactly when
told (``pollAfterMs``; ``Retry-After`` on a 429 or 503), and leaves as soon as it is admitted.
Given several instances (``--host A,B``) each request goes to the next one, as a load balancer
without affinity would send it. The report
(printed, and written as JSON) gives admissions per minute against the room's rate, order
inversions, one-spot-per-visitor violations, poll latency, error answers by code and the
wait-time distribution (:mod:`anteroom.ops.rehearsal_report`).

Run it on a deployment whose environment has a low proof-of-work difficulty
(``ANTEROOM_POW_DIFFICULTY``, e.g. 8): every simulated visitor solves its challenge here. With
``--spread-addresses`` each visitor sends its own ``X-Forwarded-For`` address (from 198.18.0.0/15,
the range reserved for benchmarks; a header only, nothing is sent there), which the deployment
believes when it trusts one proxy hop (``ANTEROOM_TRUSTED_PROXIES=1``); otherwise every visitor
shares the load generator's address and the per-address limits apply to all of them together.

The same file is a plain locustfile, for Locust's web UI or its own options::

    locust -f backend/anteroom/ops/rehearse.py -H https://queue.example -u 20000 -r 333 \
        --api-key pk_… --room rehearsal

``anteroom rehearse`` runs this module in a fresh interpreter (Locust patches the standard
library with gevent, which must come before anything else imports ``socket`` or ``ssl``).
"""

from __future__ import annotations

# Locust monkey-patches the standard library when imported: it must come first.
from locust import events, task
from locust.contrib.fasthttp import FastHttpUser
from locust.env import Environment

# isort: split
import argparse
import ipaddress
import itertools
import json
import math
import random
import re
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gevent
from geventhttpclient.client import HTTPClientPool

from anteroom.identity.proof_of_work import solve
from anteroom.ops.rehearsal_report import Journey, Tally, report, summary, token_claims
from anteroom.sdk import tokens

__all__ = ["Plan", "RushVisitor", "main"]

HUMAN = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0 (rehearsal)",
         "Accept-Language": "en"}  # fmt: skip
SIGNALS = {"webdriver": False, "languages": 2}  # what the browser agent reports for a person
FIRST_ADDRESS = int(ipaddress.IPv4Address("198.18.0.0"))
ADDRESSES = 1 << 17  # 198.18.0.0/15
RETRIES = 5  # answers in a row without a way forward (connection errors, 429s) before giving up
# What the transport says when a kept-alive connection was closed by the server before the request
# on it was read: resent once on a fresh connection, as browsers do, and counted apart.
STALE_CONNECTION = frozenset({"HTTPConnectionClosed"})
DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")


def seconds(text: str) -> float:
    """``"60s"``, ``"2m"``, ``"1h"``, ``"500ms"`` or a plain number of seconds."""
    match = DURATION.match(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 60s, 2m)")
    unit = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[match.group(2) or "s"]
    return float(match.group(1)) * unit


@dataclass
class Plan:
    """One rehearsal: whom to call, how many visitors over how long, where the report goes."""

    host: str  # one URL, or several instances' separated by commas
    api_key: str
    room: str
    visitors: int
    over: float  # seconds over which the visitors arrive
    run_time: float  # seconds after which the rehearsal stops, whoever is still waiting
    report: str = "rehearsal.json"
    secret_key: str | None = None
    rate: int | None = None  # the room's rate, when no secret key can read it
    spread_addresses: bool = False
    second_tabs: float = 0.1  # share of visitors who enter twice
    connections: int = 100  # keep-alive connections shared by all simulated visitors

    @property
    def hosts(self) -> list[str]:
        """Every instance named: requests go to each in turn, as a balancer without affinity."""
        return [h.strip().rstrip("/") for h in self.host.split(",") if h.strip()]

    def public(self) -> dict[str, Any]:
        """The plan as the report shows it (no key)."""
        out = asdict(self)
        for secret in ("api_key", "secret_key"):
            out.pop(secret)
        return out


class Run:
    """The one rehearsal this process runs (Locust users are created by the runner)."""

    plan: Plan | None = None
    hosts: list[str] = []  # the plan's, read once
    tally = Tally()
    room_before: dict[str, Any] | None = None
    started: float = 0.0
    outcome: dict[str, Any] | None = None


# -- the simulated visitor -------------------------------------------------------------------


class RushVisitor(FastHttpUser):
    """One visitor of the rush: arrives once, waits its turn, leaves once admitted."""

    network_timeout = 30.0
    connection_timeout = 10.0
    client_pool: HTTPClientPool | None = None  # shared by all: set when the rehearsal starts
    turn = itertools.count()  # next() on a count is atomic: the next instance to call

    @task
    def arrive(self) -> None:
        plan, tally = Run.plan, Run.tally
        assert plan is not None
        journey = tally.new_journey()
        index = len(tally.journeys) - 1
        self.headers = dict(HUMAN)
        if plan.spread_addresses:
            address = ipaddress.IPv4Address(FIRST_ADDRESS + index % ADDRESSES)
            self.headers["X-Forwarded-For"] = str(address)
        try:
            self.visit(plan, tally, journey)
        finally:
            if tally.finish() >= plan.visitors:
                gevent.spawn(self.environment.runner.quit)  # type: ignore[union-attr]
        while True:  # one journey per visitor: it stays gone until the rehearsal ends
            gevent.sleep(3600)

    def post(self, tally: Tally, name: str, body: dict[str, Any]) -> tuple[int, Any, float]:
        """POST ``body`` to /api/v1/``name``: (status, JSON body or None, seconds to retry)."""
        tally.requests[name] += 1
        hosts = Run.hosts
        url = hosts[next(self.turn) % len(hosts)] + "/api/v1/" + name
        started = time.perf_counter()
        for attempt in range(2):
            with self.client.post(
                url, json=body, headers=self.headers, name=name, catch_response=True
            ) as answer:
                elapsed_ms = (time.perf_counter() - started) * 1000
                status = answer.status_code or 0
                try:
                    data = answer.json() if status not in (0, 204) else None
                except ValueError:
                    data = None
                if status == 0:  # no answer: say what the transport said, in the error's place
                    data = {"error": type(getattr(answer, "error", None)).__name__}
                retry = float(answer.headers.get("Retry-After") or 0) if status else 0.0
                resend = attempt == 0 and status == 0 and data["error"] in STALE_CONNECTION
                if status in (200, 204) or (status in (429, 503) and retry) or resend:
                    answer.success()  # asked to wait is the flow working, not a failure
                else:
                    answer.failure(f"{status} {(data or {}).get('error', '')}")
            if not resend:
                break
            # The server closed a kept-alive connection as the request went out on it (its
            # keep-alive timeout met the visitor's poll interval): nothing reached the app, and
            # a browser sends the request again on a new connection without telling anyone.
            tally.resend()
        if name == "queue/poll":
            tally.poll_ms.append(elapsed_ms)
        return status, data, retry

    def call(self, tally: Tally, name: str, body: dict[str, Any]) -> tuple[int, Any]:
        """POST until an answer other than "wait" (a 429/503 with Retry-After, or no answer)."""
        for _ in range(RETRIES):
            status, data, retry = self.post(tally, name, body)
            if status in (200, 204):
                return status, data
            tally.error(status, data)
            if not (status == 0 or (status in (429, 503) and retry)):
                return status, data
            gevent.sleep(retry or 1.0)
        return status, data

    def arrive_and_join(
        self, plan: Plan, tally: Tally, journey: Journey
    ) -> tuple[str, dict[str, Any]] | None:
        """A session and its spot in two calls, as the browser agent takes them (arrive, then
        join); a challenge refused at join (401: spent, e.g. by an attempt whose answer was
        lost) is replaced by a fresh one. A load generator solves the floor's puzzles only."""
        key = plan.api_key
        for _ in range(RETRIES):
            ask = {"apiKey": key, "room": plan.room, "signals": SIGNALS}
            status, issued = self.call(tally, "arrive", ask)
            if status != 200:
                journey.lost = f"arrive {status}"
                return None
            started = time.perf_counter()
            floor = issued["puzzles"][: int(issued["minPuzzles"])]
            solutions = [solve(p["prefix"], int(p["difficulty"])) for p in floor]
            tally.solve_sec += time.perf_counter() - started
            # The work in bits (its puzzles' expected hashes), as ANTEROOM_POW_DIFFICULTY pins it.
            tally.difficulty = round(math.log2(max(1, int(issued["expectedHashes"]))))
            body = ask | {"challenge": issued["challenge"], "solutions": solutions}
            status, joined = self.call(tally, "queue/join", body)
            if status == 200:
                return str(joined["session"]["sessionToken"]), joined["queue"]
            if status != 401:
                break
            tally.recovery("join again with a fresh challenge")
        journey.lost = f"join {status}"
        return None

    def visit(self, plan: Plan, tally: Tally, journey: Journey) -> None:
        arrived = self.arrive_and_join(plan, tally, journey)
        if arrived is None:
            return
        session, answer = arrived
        entry = {"apiKey": plan.api_key, "room": plan.room, "sessionToken": session}
        journey.entered_at = time.monotonic()
        self.keep_spot(journey, answer)
        if random.random() < plan.second_tabs:
            status, again = self.call(tally, "queue/enter", entry)
            # Only within one opening: a room closed and opened again in between (a new
            # generation) rightly gives the second enter a new spot.
            same_opening = again.get("queueToken") and journey.generation == int(
                token_claims(again["queueToken"]).get("g", 0)
            )
            if status == 200 and same_opening and again.get("ticket") != journey.ticket:
                tally.violation("a second enter moved the spot")
        self.wait_turn(plan, tally, journey, answer, entry)

    @staticmethod
    def keep_spot(journey: Journey, answer: dict[str, Any]) -> None:
        """Note the spot an enter answer gave: its ticket, and the room's opening it is of."""
        journey.ticket = answer.get("ticket")
        if answer.get("queueToken"):
            journey.generation = int(token_claims(answer["queueToken"]).get("g", 0))

    def wait_turn(
        self, plan: Plan, tally: Tally, journey: Journey, answer: Any, entry: dict[str, Any]
    ) -> None:
        """Poll as told until admitted, then leave. A spot gone (410, or a ticket that no
        longer verifies) is entered again with the same session, as the browser agent does."""
        key = plan.api_key
        while answer["status"] in ("waiting", "held"):
            delay = (answer.get("pollAfterMs") or 1000) / 1000
            failures = 0
            while True:
                gevent.sleep(delay)
                status, data, retry = self.post(
                    tally, "queue/poll", {"apiKey": key, "ticket": answer["queueToken"]}
                )
                if status == 200:
                    break
                tally.error(status, data)
                failures += 1
                if status in (401, 410) and journey.reentries < RETRIES:
                    status, data = self.call(tally, "queue/enter", entry)
                    if status == 200:
                        tally.recovery("spot gone: entered again")
                        journey.reentries += 1
                        self.keep_spot(journey, data)
                        break
                if failures > RETRIES or not (status == 0 or (status in (429, 503) and retry)):
                    journey.lost = f"poll {status} {(data or {}).get('error', '')}".strip()
                    return
                delay = retry or 1.0
            if data.get("ticket") not in (None, journey.ticket):
                tally.violation("the spot's ticket changed between polls")
            answer = data
        if answer["status"] != "admitted":
            journey.lost = f"status {answer['status']}"
            return
        journey.admitted_at = time.monotonic()
        claims = tokens.AdmissionClaims.from_wire(token_claims(answer["token"]))
        journey.dealt_at = int(claims.issued_at or 0)
        journey.admission = claims.admission_id
        status, _ = self.call(tally, "queue/leave", {"apiKey": key, "ticket": answer["queueToken"]})
        if status != 204:
            journey.lost = f"leave {status}"  # admitted all the same; its slot frees on expiry


# -- the room, as the operator's secret key reads it -----------------------------------------


def read_room(plan: Plan) -> dict[str, Any] | None:
    """The room's configuration and ``dealtTotal`` (management API), or None without a key."""
    if not plan.secret_key:
        return None
    auth = {"Authorization": f"Bearer {plan.secret_key}"}
    api = plan.hosts[0] + "/api/management/v1/queues"

    def get(url: str) -> Any:
        with urllib.request.urlopen(urllib.request.Request(url, headers=auth), timeout=30) as r:
            return json.load(r)

    try:
        listed = get(api)["queues"]
        room_id = next(q["id"] for q in listed if q["slug"] == plan.room)
        room = get(f"{api}/{room_id}")
    except (OSError, ValueError, KeyError, StopIteration) as exc:
        print(f"anteroom rehearse: cannot read room {plan.room!r}: {exc}", file=sys.stderr)
        return None
    fields = ("id", "slug", "status", "ratePerMinute", "capacity", "maxWaiting", "admissionTtlSec")
    return {f: room.get(f) for f in fields} | {"dealtTotal": room["stats"]["dealtTotal"]}


# -- Locust's events: both as `anteroom rehearse` and as a plain locustfile ------------------


def add_arguments(parser: Any, *, standalone: bool) -> None:
    """The rehearsal's options (``standalone``: also those Locust's own parser would give)."""
    if standalone:
        parser.add_argument(
            "--host",
            required=True,
            help="the deployment (https://queue.example), or its instances: URL,URL,…",
        )
        parser.add_argument("--visitors", type=int, default=1000, help="how many arrive")
        parser.add_argument("--over", type=seconds, default=60.0, help="arriving over (60s, 2m)")
        parser.add_argument(
            "--run-time",
            type=seconds,
            default=None,
            help="stop after this long (default: --over + 10m)",
        )
    parser.add_argument("--api-key", default="", help="the environment's public key (pk_…)")
    parser.add_argument("--room", default="", help="slug of the rehearsal room")
    parser.add_argument(
        "--secret-key",
        default="",
        help="sk_… with queues:read: reads the room's rate and its own count",
    )
    parser.add_argument(
        "--rate",
        type=int,
        default=None,
        help="the room's ratePerMinute, when no secret key is given",
    )
    parser.add_argument("--report", default="rehearsal.json", help="where the JSON report goes")
    parser.add_argument(
        "--spread-addresses",
        action="store_true",
        help="one X-Forwarded-For address per visitor (needs a trusted hop)",
    )
    parser.add_argument(
        "--second-tabs",
        type=float,
        default=0.1,
        help="share of visitors who enter twice (default 0.1)",
    )
    parser.add_argument(
        "--connections",
        type=int,
        default=100,
        help="keep-alive connections shared by all visitors (default 100)",
    )


@events.init_command_line_parser.add_listener
def _locust_options(parser: Any) -> None:
    add_arguments(parser, standalone=False)


def plan_from_locust(options: Any, host: str) -> Plan:
    """The plan of a plain ``locust -f`` run: ``-u`` visitors arriving at ``-r`` a second."""
    visitors = int(options.num_users or 1)
    over = visitors / float(options.spawn_rate or 1)
    run_time = float(options.run_time or over + 600)
    return Plan(
        host,
        options.api_key,
        options.room,
        visitors,
        over,
        run_time,
        options.report,
        options.secret_key or None,
        options.rate,
        options.spread_addresses,
        options.second_tabs,
        options.connections,
    )


@events.test_start.add_listener
def _start(environment: Environment, **_: Any) -> None:
    if Run.plan is None:  # a plain locustfile run
        Run.plan = plan_from_locust(environment.parsed_options, environment.host or "")
    plan = Run.plan
    if not plan.api_key or not plan.room:
        raise SystemExit("anteroom rehearse: --api-key and --room are required")
    RushVisitor.client_pool = HTTPClientPool(concurrency=plan.connections)
    Run.hosts = plan.hosts
    Run.tally = Tally()
    Run.room_before = read_room(plan)
    Run.started = time.monotonic()


@events.test_stop.add_listener
def _stop(environment: Environment, **_: Any) -> None:
    plan = Run.plan
    if plan is None or Run.outcome is not None:
        return
    room = None
    if Run.room_before is not None:
        after = read_room(plan)
        room = dict(Run.room_before)
        dealt_before = room.pop("dealtTotal")
        room["dealtDuring"] = after["dealtTotal"] - dealt_before if after else None
    setup = plan.public() | {
        "arrivals_per_second": round(plan.visitors / plan.over, 2),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_seconds": round(time.monotonic() - Run.started, 1),
    }
    Run.outcome = report(Run.tally, setup, room)
    Path(plan.report).write_text(json.dumps(Run.outcome, indent=2) + "\n")
    print(summary(Run.outcome, plan.report))


def broken(figures: dict[str, Any]) -> bool:
    """True when the rehearsal saw a promise broken (order, one spot, rate) or a visitor who
    never got in."""
    excess = figures["admissions_per_minute"]["rate_excess"] or 0
    promises = figures["order_inversions"] or figures["one_spot_violations"] or excess > 0
    return bool(promises or figures["visitors"]["not_admitted"])


def main(argv: list[str] | None = None) -> int:
    """``anteroom rehearse``: run headless, print and write the report; 1 if a promise broke
    or a visitor was not admitted, 2 on bad options."""
    parser = argparse.ArgumentParser(
        prog="anteroom rehearse",
        description="A rush rehearsal against a running Anteroom deployment (Locust, headless).",
    )
    add_arguments(parser, standalone=True)
    args = parser.parse_args(argv)
    if args.visitors < 1 or args.over <= 0:
        parser.error("--visitors must be at least 1 and --over above 0")
    if not 0 <= args.second_tabs <= 1 or args.connections < 1:
        parser.error("--second-tabs must be between 0 and 1, --connections at least 1")
    Run.plan = Plan(
        host=args.host,
        api_key=args.api_key,
        room=args.room,
        visitors=args.visitors,
        over=args.over,
        run_time=args.run_time if args.run_time is not None else args.over + 600,
        report=args.report,
        secret_key=args.secret_key or None,
        rate=args.rate,
        spread_addresses=args.spread_addresses,
        second_tabs=args.second_tabs,
        connections=args.connections,
    )
    if not args.api_key or not args.room:
        parser.error("--api-key and --room are required")
    RushVisitor.host = Run.plan.hosts[0]
    environment = Environment(user_classes=[RushVisitor], events=events, host=RushVisitor.host)
    runner = environment.create_local_runner()
    runner.start(Run.plan.visitors, spawn_rate=Run.plan.visitors / Run.plan.over)
    gevent.spawn_later(Run.plan.run_time, runner.quit)
    runner.greenlet.join()
    return 1 if Run.outcome is None or broken(Run.outcome) else 0


if __name__ == "__main__":
    sys.exit(main())
