"""Real servers the service's outbound fetches meet in tests: a DNS server over UDP that may
answer late, and an HTTP server that may send its answer a byte a second.

Both run in threads of the test process on 127.0.0.1, count what they were asked, and stop
with :meth:`close`.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading
import time
from types import TracebackType
from typing import Self


class DnsStandIn:
    """A DNS server: each A question for a name in ``answers`` gets its address, ``delay``
    seconds after it was asked (other questions: an empty answer, as late)."""

    def __init__(self, answers: dict[str, str], delay: float = 0.0) -> None:
        self.answers = {name.lower().rstrip("."): ip for name, ip in answers.items()}
        self.delay = delay
        self.asked: list[str] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        self.address = f"127.0.0.1:{self._sock.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        pending: list[tuple[float, bytes, tuple[str, int]]] = []
        while not self._stop.is_set():
            try:
                query, peer = self._sock.recvfrom(512)
                name, qtype, end = _question(query)
                self.asked.append(name)
                pending.append((time.monotonic() + self.delay, _reply(query, end, qtype,
                                                                       self.answers.get(name)),
                                peer))  # fmt: skip
            except (TimeoutError, ValueError, IndexError, struct.error):
                pass
            now = time.monotonic()
            for item in [p for p in pending if p[0] <= now]:
                pending.remove(item)
                self._sock.sendto(item[1], item[2])

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


def _question(query: bytes) -> tuple[str, int, int]:
    labels, at = [], 12
    while query[at]:
        labels.append(query[at + 1 : at + 1 + query[at]].decode("ascii"))
        at += 1 + query[at]
    qtype = struct.unpack(">H", query[at + 1 : at + 3])[0]
    return ".".join(labels).lower(), qtype, at + 5


def _reply(query: bytes, end: int, qtype: int, ip: str | None) -> bytes:
    answer = b""
    if ip is not None and qtype == 1:
        answer = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + ipaddress.IPv4Address(ip).packed
    header = query[:2] + struct.pack(">HHHHH", 0x8180, 1, 1 if answer else 0, 0, 0)
    return header + query[12:end] + answer


class HttpStandIn:
    """An HTTP server that answers every request with ``answer`` (the raw bytes: status line,
    headers, body), all at once or, with ``trickle``, one byte a second. ``connections``
    counts the connections it accepted."""

    def __init__(self, answer: bytes, trickle: bool = False) -> None:
        self.answer, self.trickle = answer, trickle
        self.connections = 0
        self.requests: list[bytes] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.05)
        self.port = self._server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            self.connections += 1
            thread = threading.Thread(target=self._answer, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                self.requests.append(conn.recv(4096))
                if not self.trickle:
                    conn.sendall(self.answer)
                    return
                for i in range(len(self.answer)):
                    conn.sendall(self.answer[i : i + 1])
                    if self._stop.wait(1.0):  # the pace of a hostile server, not a race
                        return
            except OSError:
                return  # the client gave up: what a deadline is for

    def close(self) -> None:
        self._stop.set()
        self._accept.join()
        for thread in self._threads:
            thread.join()
        self._server.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


def http_answer(status: str, body: bytes, headers: str = "") -> bytes:
    """A raw HTTP/1.1 answer with ``body`` (and any extra ``headers`` lines)."""
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"{headers}Connection: close\r\n\r\n"
    ).encode() + body
