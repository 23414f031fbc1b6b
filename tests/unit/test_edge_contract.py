"""The edge contract, tests/fixtures/edge_cases.json, against ``edge_decision.decide``.

No server and no transport: each case's requests go straight to the decision function, and
when it asks for a call to Anteroom, the case's canned answer is fed back to it.
tests/js/node-edge-contract.test.mjs runs the same table
against the Node middleware's decision function.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote_to_bytes

import pytest

from anteroom.sdk.bypass_rules import RuleError
from anteroom.sdk.edge_decision import Decision, EdgeConfig, EdgeState, Facts, decide
from anteroom.sdk.edge_paths import raw_path_of
from fixtures import make_edge_fixtures

TABLE: dict[str, Any] = json.loads(make_edge_fixtures.PATH.read_text(encoding="utf-8"))
ALL_REASONS = {
    "queue:no-admission", "queue:admission-malformed", "queue:admission-forged",
    "queue:admission-expired", "queue:admission-unknown-key", "queue:wrong-room",
    "queue:ip-mismatch", "queue:session-mismatch", "queue:ambiguous-path",
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


def config_of(case: dict[str, Any], clock: list[float]) -> EdgeConfig:
    c = TABLE["config"] | case.get("config", {})
    return EdgeConfig(
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
        clock=lambda: clock[0],
    )


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


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"] for c in TABLE["cases"]])
def test_edge_case(case: dict[str, Any]) -> None:
    clock = [float(TABLE["now"])]
    config = config_of(case, clock)
    state = EdgeState()
    for number, step in enumerate(case["steps"]):
        clock[0] = TABLE["now"] + step.get("at", 0)
        answers = list(step.get("anteroom", []))
        first = decide(facts_of(step["request"], clock[0]), config, state)
        decision, calls = answered(first, answers, clock[0])
        try:
            check_decision(decision, step["expect"])
            assert calls == step["expect"].get("calls", [])
            assert answers == []  # every canned answer was asked for
            if "verifications" in step["expect"]:
                assert state.verifications == step["expect"]["verifications"]
        except AssertionError as error:
            raise AssertionError(f"step {number}: {decision}") from error


@pytest.mark.parametrize("bad", TABLE["bypassErrors"], ids=lambda b: b["error"])
def test_a_bad_bypass_rule_is_refused_naming_its_field(bad: dict[str, Any]) -> None:
    with pytest.raises(RuleError) as caught:
        config_of({"config": {"bypass": bad["bypass"]}}, [0.0])
    assert str(caught.value).startswith(bad["error"])
