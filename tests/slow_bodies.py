"""Slow-body clients for tests and bench/: connections that send a request's headers and the
first byte of its body, then nothing, each from a chosen source address on loopback (Linux
accepts any 127/8 source), and what became of each one.

Thousands of them are best opened in a process of their own, so that the process measuring
other visitors' answers is not slowed by the opening (``python tests/slow_bodies.py PORT COUNT``
prints each connection's fate as JSON; :func:`attack` runs it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import selectors
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ATTACKER = "127.0.0.2"  # the one address holding slow bodies; other visitors come from 127.0.0.1
KINDS = ("length", "chunked")
PATHS = ("/api/v1/queue/poll", "/api/v1/challenge")  # the hot path's body read, and Flask's
CONNECT_TIMEOUT = 1.0


def slow_request(kind: str, path: str, forwarded_for: str | None = None) -> bytes:
    """A request's headers and one byte of its body: 16,000 announced, or a chunk of 16."""
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    if forwarded_for is not None:
        head += f"X-Forwarded-For: {forwarded_for}\r\n"
    if kind == "length":
        return (head + "Content-Length: 16000\r\n\r\n{").encode()
    return (head + "Transfer-Encoding: chunked\r\n\r\n10\r\n{").encode()


@dataclass
class SlowClient:
    """One slow-body connection: its kind, when it began connecting, what came back, when it
    was closed (monotonic seconds: one clock for every process of the machine)."""

    kind: str
    opened_at: float
    received: bytes = b""
    closed_at: float | None = None
    connected: bool = False
    sock: socket.socket | None = field(default=None, repr=False)

    @property
    def status(self) -> int | None:
        """The status of the answer it got (None: none)."""
        if not self.received.startswith(b"HTTP/1.1 "):
            return None
        return int(self.received[9:12])

    @property
    def body(self) -> bytes:
        """The answer's body (after its headers)."""
        return self.received.partition(b"\r\n\r\n")[2]

    @property
    def outcome(self) -> str:
        """``open``, ``refused`` (closed without a word) or the answer's status."""
        if self.closed_at is None:
            return "open"
        return "refused" if self.status is None else str(self.status)

    def to_json(self) -> dict[str, Any]:
        received = self.received[:2000].decode("latin-1")
        return {"kind": self.kind, "opened_at": self.opened_at, "received": received,
                "closed_at": self.closed_at, "connected": self.connected}  # fmt: skip

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> SlowClient:
        return cls(**(fields | {"received": fields["received"].encode("latin-1")}))


def enough_files(wanted: int) -> None:
    """Raise this process's soft open-files limit to ``wanted`` (as the hard one allows)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))


class Crowd:
    """Slow-body connections to ``port`` from ``source``, their answers read as they come."""

    def __init__(
        self,
        port: int,
        source: str = ATTACKER,
        forwarded_for: Callable[[int], str] | None = None,
        paths: Sequence[str] = PATHS,
    ) -> None:
        self.port, self.source, self.forwarded_for, self.paths = port, source, forwarded_for, paths
        self.clients: list[SlowClient] = []
        self.watch = selectors.DefaultSelector()

    def open(self) -> SlowClient:
        """One more connection, the kinds and paths taken in turn."""
        i = len(self.clients)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((self.source, 0))
        # Taken before connecting: the server cannot have accepted it earlier.
        client = SlowClient(KINDS[i % len(KINDS)], time.monotonic(), sock=sock)
        self.clients.append(client)
        xff = self.forwarded_for(i) if self.forwarded_for is not None else None
        try:
            # A server whose backlog is full drops the handshake: give up on it, not wait.
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(("127.0.0.1", self.port))
            client.connected = True
            sock.sendall(slow_request(client.kind, self.paths[(i // 2) % len(self.paths)], xff))
        except OSError:  # not connected, or refused while still being written to
            self._closed(client)
            return client
        sock.setblocking(False)
        self.watch.register(sock, selectors.EVENT_READ, client)
        return client

    def read(self, timeout: float) -> list[SlowClient]:
        """Read what has come within ``timeout`` seconds; the clients closed meanwhile."""
        closed = []
        if not self.watch.get_map():
            return closed
        for key, _ in self.watch.select(timeout=max(0.0, timeout)):
            client = key.data
            try:
                data = client.sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            client.received += data
            if not data:
                self.watch.unregister(client.sock)
                self._closed(client)
                closed.append(client)
        return closed

    def open_count(self) -> int:
        """How many of its connections are still open."""
        return len(self.watch.get_map())

    def settle(self, until: float) -> None:
        """Read until every connection is closed or ``until`` (monotonic) has passed."""
        while self.watch.get_map() and time.monotonic() < until:
            self.read(until - time.monotonic())

    def close(self) -> None:
        """Close every connection still open."""
        for client in self.clients:
            if client.sock is not None:
                with contextlib.suppress(OSError):
                    client.sock.close()
        self.watch.close()

    def _closed(self, client: SlowClient) -> None:
        client.closed_at = time.monotonic()
        assert client.sock is not None
        client.sock.close()


def open_slow(
    port: int,
    count: int,
    source: str = ATTACKER,
    forwarded_for: Callable[[int], str] | None = None,
    seconds: float = 10.0,
) -> list[SlowClient]:
    """Open ``count`` slow bodies (reading answers between openings) and read their answers
    until each is closed or ``seconds`` after the last opening: each one's fate."""
    enough_files(count + 512)
    crowd = Crowd(port, source, forwarded_for)
    try:
        for i in range(count):
            crowd.open()
            if i % 16 == 15:
                crowd.read(0)
        crowd.settle(time.monotonic() + seconds)
    finally:
        crowd.close()
    return crowd.clients


def hold(port: int, count: int, seconds: float, source: str = ATTACKER) -> dict[str, Any]:
    """Keep ``count`` slow bodies open for ``seconds``, opening a new one for each the server
    closes, as an attacker would; what it came to. Prints ``opened`` once the first ``count``
    are (the measuring process's cue)."""
    enough_files(count + 512)
    crowd = Crowd(port, source)
    began = time.monotonic()
    try:
        for i in range(count):
            crowd.open()
            if i % 16 == 15:
                crowd.read(0)
        print("opened", flush=True)
        end = time.monotonic() + seconds
        most = 0
        while time.monotonic() < end:
            crowd.read(0.01)
            most = max(most, crowd.open_count())
            for i in range(count - crowd.open_count()):
                crowd.open()
                if i % 16 == 15:
                    crowd.read(0)
        kept = crowd.open_count()
    finally:
        crowd.close()
    fates = Counter(c.outcome for c in crowd.clients if c.connected and c.closed_at is not None)
    return {
        "attempts": len(crowd.clients),
        "attempts_per_second": round(len(crowd.clients) / (time.monotonic() - began), 1),
        "not_connected": sum(not c.connected for c in crowd.clients),
        "closed_unanswered": fates.pop("refused", 0),
        "answered": dict(fates),
        "open_at_end": kept,
        "most_open": most,
    }


def attack(
    port: int, count: int, seconds: float, source: str = ATTACKER, forwarded_for: str | None = None
) -> subprocess.Popen[str]:
    """:func:`open_slow` in a process of its own; :func:`fates` reads its result.

    ``forwarded_for``: a format string given the connection's number (``198.51.100.{i}``).
    """
    command = [sys.executable, __file__, str(port), str(count), "--seconds", str(seconds)]
    command += ["--source", source]
    if forwarded_for is not None:
        command += ["--forwarded-for", forwarded_for]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def fates(process: subprocess.Popen[str], timeout: float = 120) -> list[SlowClient]:
    """What became of each connection of an :func:`attack`, once it is over."""
    out, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, out[-2000:]
    return [SlowClient.from_json(fields) for fields in json.loads(out)]


@dataclass
class Held:
    """Connections from one address that each of a server's workers holds open."""

    per_worker: dict[int, int] = field(default_factory=dict)

    @property
    def most(self) -> int:
        """The most any one worker holds."""
        return max(self.per_worker.values(), default=0)


def held_by_workers(port: int, workers: Sequence[int], source: str = ATTACKER) -> Held:
    """How many of ``source``'s connections to ``port`` each worker holds a descriptor of
    (Linux /proc: the server-side sockets' inodes, then each worker's descriptors)."""
    wanted = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        cols = line.split()
        local, remote, inode = cols[1], cols[2], cols[9]
        if int(local.split(":")[1], 16) != port:
            continue
        ip = socket.inet_ntoa(bytes.fromhex(remote.split(":")[0])[::-1])
        if ip == source and inode != "0":
            wanted.add(f"socket:[{inode}]")
    held = Held()
    for pid in workers:
        count = 0
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    count += fd.readlink().as_posix() in wanted
        held.per_worker[pid] = count
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description="slow-body connections; their fates as JSON")
    parser.add_argument("port", type=int)
    parser.add_argument("count", type=int)
    parser.add_argument("--source", default=ATTACKER)
    parser.add_argument("--forwarded-for", help="a format string of i, the connection's number")
    parser.add_argument("--seconds", type=float, default=10.0, help="to wait after the last one")
    parser.add_argument("--hold", action="store_true", help="keep COUNT open for --seconds")
    args = parser.parse_args()
    if args.hold:
        json.dump(hold(args.port, args.count, args.seconds, args.source), sys.stdout)
        return
    template = args.forwarded_for
    named = (lambda i: template.format(i=i)) if template else None
    clients = open_slow(args.port, args.count, args.source, named, args.seconds)
    json.dump([client.to_json() for client in clients], sys.stdout)


if __name__ == "__main__":
    main()
