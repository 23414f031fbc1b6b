"""A fault-injecting TCP proxy (standard library only), for the tests and bench/.

Put it between the service and Redis (``redis://127.0.0.1:<proxy.port>/0``) and turn faults on
and off while a crowd runs: ``latency`` (seconds added to each reply from the server, without
limiting throughput), ``stall()`` (every open connection stops forwarding both ways but stays
open: a half-open peer, as after a network partition), ``reset()`` (every open connection is
aborted with a TCP RST, as by a restarting load balancer), ``refuse`` (new connections are
closed at once: Redis is down).
"""

from __future__ import annotations

import contextlib
import queue
import socket
import struct
import threading
import time
from types import TracebackType
from typing import Self


class Pipe:
    """One client connection and its upstream connection, pumped both ways."""

    def __init__(
        self, proxy: FaultProxy, client: socket.socket, upstream: socket.socket, flowing: bool
    ) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.flowing = threading.Event()  # cleared while stalled
        if flowing:  # decided before its threads start: a stalled proxy forwards no first byte
            self.flowing.set()
        self.closed = False
        for source, sink, delayed in ((client, upstream, False), (upstream, client, True)):
            chunks: queue.Queue[tuple[float, bytes] | None] = queue.Queue()
            threading.Thread(target=self._read, args=(source, chunks, delayed), daemon=True).start()
            threading.Thread(target=self._write, args=(sink, chunks), daemon=True).start()

    def _read(self, source: socket.socket, chunks: queue.Queue, delayed: bool) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if not data:
                chunks.put(None)
                return
            due = time.monotonic() + (self.proxy.latency if delayed else 0.0)
            chunks.put((due, data))

    def _write(self, sink: socket.socket, chunks: queue.Queue) -> None:
        while True:
            item = chunks.get()
            if item is None:
                self.close()
                return
            due, data = item
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)  # the injected latency itself
            self.flowing.wait()
            if self.closed:
                return
            try:
                sink.sendall(data)
            except OSError:
                self.close()
                return

    def close(self, reset: bool = False) -> None:
        """Close both sides; with ``reset``, abort them with an RST instead of a FIN."""
        if self.closed:
            return
        self.closed = True
        self.flowing.set()
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                if reset:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                else:
                    sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        self.proxy.forget(self)


class FaultProxy:
    """Listens on 127.0.0.1:``port`` and forwards to ``target`` with the faults asked for."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.latency = 0.0
        self.refuse = False
        self.stalled = False
        self.pipes: set[Pipe] = set()
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=512)
        self.port = self.listener.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.connections = 0  # accepted so far
        threading.Thread(target=self._accept, daemon=True, name="fault-proxy").start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            self.connections += 1
            if self.refuse:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=2)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                pipe = Pipe(self, client, upstream, flowing=not self.stalled)
                self.pipes.add(pipe)

    def forget(self, pipe: Pipe) -> None:
        with self.lock:
            self.pipes.discard(pipe)

    def reset(self) -> int:
        """Abort every open connection with an RST; returns how many there were."""
        with self.lock:
            pipes = list(self.pipes)
        for pipe in pipes:
            pipe.close(reset=True)
        return len(pipes)

    def stall(self) -> None:
        """Stop forwarding on every connection, open or new, keeping them open (half-open)."""
        with self.lock:
            self.stalled = True
            for pipe in self.pipes:
                pipe.flowing.clear()

    def resume(self) -> None:
        """Forward again what stalled connections hold."""
        with self.lock:
            self.stalled = False
            for pipe in self.pipes:
                pipe.flowing.set()

    def close(self) -> None:
        """Stop listening and close every connection."""
        with contextlib.suppress(OSError):
            self.listener.close()
        self.resume()
        with self.lock:
            pipes = list(self.pipes)
        for pipe in pipes:
            pipe.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
