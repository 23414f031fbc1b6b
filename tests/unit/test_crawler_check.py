"""The crawler check (anteroom.sdk.crawlers) against a real DNS server: dnsmasq, started by the
tests with its own records (tests/dns_server.py); the resolver is never patched."""

from __future__ import annotations

import time

import pytest

from anteroom.sdk import crawlers
from anteroom.sdk.crawlers import CrawlerCheck
from dns_server import (
    BINGBOT,
    BINGBOT_UA,
    BROWSER_UA,
    GOOGLEBOT,
    GOOGLEBOT_UA,
    GOOGLEBOT_V6,
    NO_PTR,
    SPOOFED,
    TTL,
    DnsServer,
    free_udp_port,
    silent_udp_port,
)


class Clock:
    """Monotonic seconds the test moves."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_googlebot_whose_reverse_name_comes_back_to_its_address_is_verified(
    dns_server: DnsServer,
) -> None:
    check = CrawlerCheck(dns_server.resolver)
    engine = check.verified(GOOGLEBOT, GOOGLEBOT_UA)
    assert engine is not None and engine.name == "google"
    assert check.verified(GOOGLEBOT_V6, GOOGLEBOT_UA) is not None  # AAAA for an IPv6 client
    assert check.verified(f"::ffff:{GOOGLEBOT}", GOOGLEBOT_UA) is not None  # v4-mapped
    bing = check.verified(BINGBOT, BINGBOT_UA)
    assert bing is not None and bing.name == "bing"


def test_claims_that_fail_are_not_verified(dns_server: DnsServer) -> None:
    check = CrawlerCheck(dns_server.resolver)
    # A reverse name in googlebot.com whose forward address is another: spoofed PTR.
    assert check.verified(SPOOFED, GOOGLEBOT_UA) is None
    assert check.verified(NO_PTR, GOOGLEBOT_UA) is None  # no reverse name
    # Google's address claiming to be Bing: its name is not in search.msn.com.
    assert check.verified(GOOGLEBOT, BINGBOT_UA) is None
    # No claim: no question asked at all.
    before = check.lookups
    assert check.verified(GOOGLEBOT, BROWSER_UA) is None
    assert check.verified(GOOGLEBOT, None) is None
    assert check.lookups == before
    # Only the engines asked for: Googlebot in a list of Bing alone is no crawler of that list.
    bing_only = [e for e in crawlers.ENGINES if e.name == "bing"]
    assert check.verified(GOOGLEBOT, GOOGLEBOT_UA, bing_only) is None
    # Not an address: no question.
    assert check.verified("not-an-address", GOOGLEBOT_UA) is None


def test_a_verdict_is_kept_for_the_records_ttl_then_asked_again(dns_server: DnsServer) -> None:
    clock = Clock()
    check = CrawlerCheck(dns_server.resolver, clock=clock)
    assert check.verified(GOOGLEBOT, GOOGLEBOT_UA) is not None
    assert check.verified(SPOOFED, GOOGLEBOT_UA) is None
    assert check.lookups == 2
    clock.now += TTL - 1
    assert check.verified(GOOGLEBOT, GOOGLEBOT_UA) is not None
    assert check.verified(SPOOFED, GOOGLEBOT_UA) is None
    assert check.lookups == 2  # both from the cache
    clock.now += 2  # past the records' TTL
    assert check.verified(GOOGLEBOT, GOOGLEBOT_UA) is not None
    assert check.verified(SPOOFED, GOOGLEBOT_UA) is None
    assert check.lookups == 4


def test_the_cache_is_bounded_least_recently_used_first(dns_server: DnsServer) -> None:
    check = CrawlerCheck(dns_server.resolver, max_entries=2)
    for address in (GOOGLEBOT, SPOOFED, NO_PTR):
        check.verified(address, GOOGLEBOT_UA)
    assert check.lookups == 3
    check.verified(GOOGLEBOT, GOOGLEBOT_UA)  # the oldest, forgotten: asked again
    assert check.lookups == 4
    check.verified(NO_PTR, GOOGLEBOT_UA)  # still known
    assert check.lookups == 4


def test_a_resolver_that_never_answers_costs_one_timeout_and_verifies_nobody() -> None:
    clock = Clock()
    with silent_udp_port() as silent:
        check = CrawlerCheck(silent, timeout=0.3, clock=clock)
        started = time.monotonic()
        assert check.verified(GOOGLEBOT, GOOGLEBOT_UA) is None
        took = time.monotonic() - started
        assert 0.25 <= took < 1.0
        started = time.monotonic()
        assert check.verified(GOOGLEBOT, GOOGLEBOT_UA) is None  # the failure is remembered
        assert time.monotonic() - started < 0.05
        clock.now += crawlers.FAILURE_TTL + 1
        assert check.verified(GOOGLEBOT, GOOGLEBOT_UA) is None
        assert check.lookups == 2


def test_a_resolver_that_is_down_answers_at_once() -> None:
    check = CrawlerCheck(f"127.0.0.1:{free_udp_port()}", timeout=2.0)
    started = time.monotonic()
    assert check.verified(GOOGLEBOT, GOOGLEBOT_UA) is None
    assert time.monotonic() - started < 1.0  # the refusal (ICMP) ends the wait


@pytest.mark.parametrize("bad", ["dns.example:53", "127.0.0.1", "127.0.0.1:0", "[::1]:x", ":53"])
def test_a_resolver_that_is_not_host_port_is_refused_by_name(bad: str) -> None:
    with pytest.raises(ValueError, match="host:port"):
        CrawlerCheck(bad)


def test_the_system_resolver_is_the_first_nameserver(tmp_path) -> None:  # type: ignore[no-untyped-def]
    conf = tmp_path / "resolv.conf"
    conf.write_text("# comment\nsearch example\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n")
    assert crawlers.system_resolver(str(conf)) == "10.0.0.2:53"
    conf.write_text("nameserver fe80::1%eth0\n")
    assert crawlers.system_resolver(str(conf)) == "[fe80::1]:53"
    assert crawlers.system_resolver(str(tmp_path / "none")) == "127.0.0.1:53"


def test_new_verifications_are_budgeted_and_known_crawlers_keep_their_verdict(
    dns_server: DnsServer,
) -> None:
    """A flood of claims from ever new addresses asks DNS at most the budget's worth; a crawler
    verified before keeps passing, and a claim refused for the budget is asked again later."""
    clock = Clock()
    check = CrawlerCheck(dns_server.resolver, clock=clock, new_per_sec=2, new_burst=3)
    assert check.verified(GOOGLEBOT, GOOGLEBOT_UA) is not None
    flood = [f"2001:db8::{i:x}" for i in range(50)]
    for address in flood:
        assert check.verified(address, GOOGLEBOT_UA) is None
    assert check.lookups == 3 and check.over_budget == 48
    assert check.verified(GOOGLEBOT, GOOGLEBOT_UA) is not None  # from the cache
    assert check.verified(SPOOFED, GOOGLEBOT_UA) is None
    assert check.lookups == 3  # the budget is spent: not asked, not remembered
    clock.now += 1  # two more
    assert check.verified(BINGBOT, BINGBOT_UA) is not None
    assert check.lookups == 4


def test_a_dns_resolver_setting_that_is_not_host_port_stops_the_start() -> None:
    from anteroom.config import Settings

    assert Settings.from_env({"ANTEROOM_DNS_RESOLVER": "[::1]:5353"}).dns_resolver == "[::1]:5353"
    for bad in ("dns.example:53", "127.0.0.1", "127.0.0.1:99999"):
        with pytest.raises(ValueError, match="ANTEROOM_DNS_RESOLVER"):
            Settings.from_env({"ANTEROOM_DNS_RESOLVER": bad})
