"""A real DNS server for the tests: Debian's dnsmasq on a free port of 127.0.0.1, answering only
the records given on its command line (no upstream, no /etc/hosts), which the Makefile installs.

``crawler_dns()`` serves a verified Googlebot (its reverse name in googlebot.com, forward back to
the same address), a spoofed one (a reverse name in googlebot.com whose forward address is
another) and an address with no reverse name at all.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

DNSMASQ = "/usr/sbin/dnsmasq"
TTL = 120  # every record's TTL (--local-ttl)

GOOGLEBOT = "66.249.66.1"  # crawl-66-249-66-1.googlebot.com, both ways
GOOGLEBOT_NAME = "crawl-66-249-66-1.googlebot.com"
GOOGLEBOT_V6 = "2001:4860:4801:10::1"
SPOOFED = "203.0.113.5"  # reverse: fake.googlebot.com, whose address is 198.51.100.7
NO_PTR = "192.0.2.9"  # no reverse name
BINGBOT = "157.55.39.1"  # msnbot-157-55-39-1.search.msn.com, both ways

GOOGLEBOT_UA = (
    "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like "
    "Gecko) Chrome/120.0.0.0 Mobile Safari/537.36 (compatible; Googlebot/2.1; "
    "+http://www.google.com/bot.html)"
)
BINGBOT_UA = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
BROWSER_UA = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


@dataclass(frozen=True)
class DnsServer:
    """A running dnsmasq: ``resolver`` is its ``host:port``."""

    port: int

    @property
    def resolver(self) -> str:
        return f"127.0.0.1:{self.port}"


def free_udp_port() -> int:
    """A port of 127.0.0.1 nobody uses right now, over UDP and TCP both: dnsmasq listens on
    both, and a port free for UDP only made it fail to start on a busy machine."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind(("127.0.0.1", 0))
            port = int(udp.getsockname()[1])
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    raise RuntimeError("no port of 127.0.0.1 is free for both UDP and TCP")


def _answers(port: int) -> bool:
    """Does a DNS server answer on ``port`` (any answer to a question for '.')?"""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.2)
        s.connect(("127.0.0.1", port))
        try:
            s.send(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x01")
            return len(s.recv(512)) >= 12
        except OSError:
            return False


@contextmanager
def dnsmasq(records: Sequence[str]) -> Iterator[DnsServer]:
    """dnsmasq with only ``records`` (its options: ``--host-record=…``, ``--ptr-record=…``)."""
    port = free_udp_port()
    argv = [
        DNSMASQ, "--keep-in-foreground", "--no-daemon", "--conf-file=/dev/null", "--no-resolv",
        "--no-hosts", f"--port={port}", "--listen-address=127.0.0.1", "--bind-interfaces",
        "--pid-file=", f"--local-ttl={TTL}", "--log-facility=-", *records,
    ]  # fmt: skip
    if os.geteuid() == 0:
        argv.append("--user=root")  # as root it would switch to the 'nobody' user otherwise
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not _answers(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"dnsmasq did not start: {err}")
            time.sleep(0.05)  # waiting for a process to listen, not for a race
        yield DnsServer(port)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


def crawler_records() -> list[str]:
    """The crawler world of the tests (see the module docstring)."""
    return [
        f"--host-record={GOOGLEBOT_NAME},{GOOGLEBOT},{GOOGLEBOT_V6}",
        "--ptr-record=5.113.0.203.in-addr.arpa,fake.googlebot.com",
        "--address=/fake.googlebot.com/198.51.100.7",
        f"--host-record=msnbot-157-55-39-1.search.msn.com,{BINGBOT}",
    ]


@contextmanager
def silent_udp_port() -> Iterator[str]:
    """``host:port`` of a UDP socket that reads nothing and never answers: a resolver that hangs."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{s.getsockname()[1]}"
