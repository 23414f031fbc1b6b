"""The edge contract, tests/fixtures/edge_cases.json, against ``edge_decision.decide``.

No server and no transport: each case's requests go straight to the decision function, and
when it asks for a call to Anteroom, the case's canned answer is fed back to it.
tests/js/node-edge-contract.test.mjs runs the same table
against the Node middleware's decision function.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any
from urllib.parse import unquote_to_bytes

import pytest

from anteroom.sdk import dns_client as dns
from anteroom.sdk.bypass_rules import RuleError
from anteroom.sdk.crawlers import CrawlerCheck
from anteroom.sdk.edge_decision import Decision, EdgeConfig, EdgeState, Facts, decide
from anteroom.sdk.edge_paths import raw_path_of
from anteroom.sdk.message_signatures import SignedRequest
from anteroom.sdk.signed_agents import AgentVerifier, Directories, Nonces
from fixtures import make_edge_fixtures

TABLE: dict[str, Any] = json.loads(make_edge_fixtures.PATH.read_text(encoding="utf-8"))
ALL_REASONS = {
    "queue:no-admission", "queue:admission-malformed", "queue:admission-forged",
    "queue:admission-expired", "queue:admission-unknown-key", "queue:wrong-room",
    "queue:ip-mismatch", "queue:session-mismatch", "queue:ambiguous-path",
    "agent:refused", "agent:signature-refused",
}  # fmt: skip


def test_the_checked_in_table_is_what_the_generator_writes() -> None:
    # If this fails, run: .venv/bin/python tests/fixtures/make_edge_fixtures.py
    assert make_edge_fixtures.PATH.read_text(encoding="utf-8") == make_edge_fixtures.build()


def test_the_table_names_every_refusal_reason() -> None:
    reasons = {
        step["expect"].get("reason") for case in TABLE["cases"] for step in case["steps"]
    } - {None}
    assert reasons == ALL_REASONS


def answered(
    decision: Decision, answers: list[dict[str, Any]], now: float
) -> tuple[Decision, list[dict[str, Any]]]:
    """Feed the canned answers to the calls ``decision`` asks for: (the decision they lead to,
    the calls, in order)."""
    calls = []
    while decision.kind == "call":
        assert decision.call is not None
        calls.append({"path": decision.call.path, "body": decision.call.body})
        answer = answers.pop(0)
        status, body = (0, {}) if answer.get("unreachable") else (answer["status"], answer["body"])
        decision = decision.call.then(status, body, now)
    return decision, calls


def facts_of(request: dict[str, Any], now: float) -> Facts:
    """The facts a WSGI server gives for this request (PATH_INFO decoded per PEP 3333)."""
    r = TABLE["defaults"] | request
    raw = raw_path_of(r["target"])
    query = r["target"].partition("?")[2]
    full = unquote_to_bytes(raw).decode("latin-1")
    assert full.startswith(r["scriptName"])  # as gunicorn requires
    return Facts(
        method=r["method"],
        path=full[len(r["scriptName"]) :],
        script_name=r["scriptName"],
        query=query,
        headers={name.lower(): value for name, value in r["headers"].items()},
        raw_path=raw,
        url_path=raw,
        scheme=r["scheme"],
        host=r["host"],
        client_ip=r["clientIp"],
        session_jti=r["sessionJti"],
        now=now,
    )


def canned_dns(facts: dict[str, Any]) -> Any:
    """A ``dns_client.ask`` answering from the case's DNS facts (see make_edge_fixtures)."""
    reverse = {ipaddress.ip_address(ip).reverse_pointer: v for ip, v in facts["ptr"].items()}

    def ask(server: tuple[str, int], name: str, qtype: int, deadline: float) -> dns.Answer:
        if facts.get("down"):
            raise dns.DnsTimeout("timeout")
        if qtype == dns.PTR:
            found = reverse.get(name)
            records = [(name, dns.PTR, found["ttl"], n) for n in (found or {}).get("names", [])]
        else:
            found = facts["forward"].get(name)
            size = 4 if qtype == dns.A else 16
            packed = [ipaddress.ip_address(a).packed for a in (found or {}).get("addresses", [])]
            records = [(name, qtype, found["ttl"], p) for p in packed if len(p) == size]
        return dns.Answer(dns.NOERROR if found else dns.NXDOMAIN, tuple(records))

    return ask


def config_of(case: dict[str, Any], clock: list[float]) -> EdgeConfig:
    c = TABLE["config"] | case.get("config", {})
    config = EdgeConfig(
        keys=c["keys"],
        base_url=c["baseUrl"],
        public_key=c["publicKey"],
        routes=c["routes"],
        refresh_after=c["refreshAfter"],
        pause_after_failure=c["pauseAfterFailure"],
        secure_cookie=c["secureCookie"],
        case_sensitive=c["caseSensitive"],
        mount=c["mount"],
        languages=c["languages"],
        preflight_headers=c["preflightHeaders"],
        app_answers_options=c["appAnswersOptions"],
        bypass=c["bypass"],
        crawlers=c.get("crawlers", "queue"),
        agents=c.get("agents", {}),
        dns_resolver=c.get("dnsResolver", ""),
        clock=lambda: clock[0],
    )
    if config.crawler_check is not None and "dns" in case:
        # The transport swapped, as the canned answers stand for Anteroom's: the check is the SDK's.
        config.crawler_check = CrawlerCheck(
            c["dnsResolver"], clock=lambda: clock[0], ask=canned_dns(case["dns"])
        )
    if config.agent_verifier is not None and "directories" in case:
        directories = Directories(canned_directories(case["directories"]), lambda: clock[0])
        config.agent_verifier = AgentVerifier(directories, Nonces(), lambda: clock[0])
    return config


def canned_directories(listed: dict[str, Any]) -> Any:
    """A key directory fetch answering from the case's directories (see make_edge_fixtures)."""

    def fetch(url: str) -> tuple[int, str, bytes]:
        found = listed.get(url)
        if found is None:
            return 404, "", b""
        return found["status"], found["cacheControl"], json.dumps(found["body"]).encode()

    return fetch


def check_decision(decision: Decision, expect: dict[str, Any]) -> None:
    assert decision.kind == expect["kind"]
    if "status" in expect:
        assert decision.status == expect["status"]
    if "reason" in expect:
        assert decision.reason == expect["reason"]
    headers = dict(decision.headers)
    for name, value in expect.get("headers", {}).items():
        assert headers.get(name) == value, name
    if "body" in expect:
        assert decision.body == expect["body"]
    for name, value in expect.get("bodyIncludes", {}).items():
        assert (decision.body or {}).get(name) == value, name
    for name, value in expect.get("claims", {}).items():
        assert (decision.claims or {}).get(name) == value, name
    if "bypassRule" in expect:
        assert decision.bypass_rule == expect["bypassRule"]
    if "crawler" in expect:
        assert decision.crawler == expect["crawler"]


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"] for c in TABLE["cases"]])
def test_edge_case(case: dict[str, Any]) -> None:
    clock = [float(TABLE["now"])]
    config = config_of(case, clock)
    state = EdgeState()
    for number, step in enumerate(case["steps"]):
        clock[0] = TABLE["now"] + step.get("at", 0)
        answers = list(step.get("anteroom", []))
        facts = facts_of(step["request"], clock[0])
        # As the adapters do: DNS asked before the decision, which never asks it itself.
        facts.crawler = config.verified_crawler(facts.client_ip, facts.header("user-agent"))
        if config.checks_agent(facts):
            signed = SignedRequest(
                facts.method, facts.scheme, facts.host, facts.raw_path or facts.path,
                facts.query, facts.headers,
            )  # fmt: skip
            facts.agent = config.signed_agent(facts, signed)
        first = decide(facts, config, state)
        decision, calls = answered(first, answers, clock[0])
        try:
            check_decision(decision, step["expect"])
            assert calls == step["expect"].get("calls", [])
            assert answers == []  # every canned answer was asked for
            if "verifications" in step["expect"]:
                assert state.verifications == step["expect"]["verifications"]
            if "agentDirectoryFetches" in step["expect"]:
                verifier = config.agent_verifier
                fetches = verifier.directories.fetches if verifier else 0
                assert fetches == step["expect"]["agentDirectoryFetches"]
            if "dnsLookups" in step["expect"]:
                check = config.crawler_check
                assert (check.lookups if check else 0) == step["expect"]["dnsLookups"]
        except AssertionError as error:
            raise AssertionError(f"step {number}: {decision}") from error


@pytest.mark.parametrize("bad", TABLE["bypassErrors"], ids=lambda b: b["error"])
def test_a_bad_bypass_rule_is_refused_naming_its_field(bad: dict[str, Any]) -> None:
    with pytest.raises(RuleError) as caught:
        config_of({"config": {"bypass": bad["bypass"]}}, [0.0])
    assert str(caught.value).startswith(bad["error"])


@pytest.mark.parametrize("bad", TABLE["crawlerErrors"], ids=lambda b: b["error"])
def test_a_bad_crawlers_option_is_refused_naming_it(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError) as caught:
        config_of({"config": {"crawlers": bad["crawlers"], "dnsResolver": "192.0.2.53:53"}}, [0.0])
    assert "crawlers" in str(caught.value) and bad["error"] in str(caught.value)


@pytest.mark.parametrize("bad", TABLE["agentErrors"], ids=lambda b: b["error"])
def test_a_bad_agents_option_is_refused_naming_it(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError) as caught:
        config_of({"config": {"agents": bad["agents"]}}, [0.0])
    assert "agents" in str(caught.value) and bad["error"] in str(caught.value)
