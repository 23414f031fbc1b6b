"""An arrival: a challenge that carries its own measurement, then the proof checked, the session
opened and the spot taken in one call. The older identify and enter calls run its halves.

Every guarantee of the older journey holds here because it is the same code: the proof is
spent once (lua/spend_challenge.lua) and a retry of it gets the session it earned, so a retried
:func:`enter` finds the same spot again; the per-address limits (challenge, identify, enter) are
charged as before, after the offline checks; hold scores, invites, bypass rules, the pre-queue
and its draw are the enter script's; an outage at the entry is the fail-open room's admission.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from anteroom.identity import sessions as identity
from anteroom.identity import work_inputs
from anteroom.identity.signal_rules import BUSY_NETWORK_PER_MINUTE, assess
from anteroom.queue.connection.storage_errors import StorageBusy, StorageError, StorageUnavailable
from anteroom.queue.line import room_engine as eng
from anteroom.queue.line.room_engine import AddressLimited
from anteroom.queue.rooms import room_config
from anteroom.queue.series.room_series import AGENT_COUNTS
from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit import agents, answers, bypass, room_lookup
from anteroom.visit.agents import AgentVerdict
from anteroom.visit.fail_open import fail_open
from anteroom.visit.outcomes import Admitted, Challenge, Entered, Refused, Session, Spot
from anteroom.visit.ports import Caller, Door
from anteroom.visit.refusals import (
    STORAGE_RETRY_SEC,
    Refusal,
    engine_refusal,
    network_tag,
    storage_refusal,
)


def arrive(
    s: Services,
    door: Door,
    env: str,
    slug: str,
    caller: Caller,
    signals: Mapping[str, Any],
    max_puzzles: int,
    on_agent: Callable[[AgentVerdict], None] | None = None,
) -> Challenge | Refused:
    """An arrival's first call: the work this request pays for ``slug``, fitted by the device
    itself (identity.arrival_challenge), so no measurement round trip comes first. A signed
    agent the room's ``agents`` setting names is judged first (visit/agents.py): refused, or
    queued with a challenge of no work; ``on_agent`` hears each verdict (the metrics)."""
    door.charge("challenge")  # in this worker's memory: issuing a challenge writes nothing
    room = s.directory.room_by_slug(env, slug)  # no round trip: an unknown room weighs nothing
    if room is None and caller.signed is not None:
        # A signed request to a room created since the directory's last round: its agents
        # setting must be read, or a room that refuses agents would let this one in.
        with contextlib.suppress(Refusal):
            room = room_lookup.room_by_slug(s, env, slug)
    verdict = agents.agent_verdict(s, room, caller)
    if verdict is not None:
        if on_agent is not None:
            on_agent(verdict)
        if verdict.refusal is not None:
            return verdict.refusal
        if verdict.outcome in ("queued", "lane"):
            return Challenge(identity.agent_challenge(s.identity, env))
    address = caller.address or "0.0.0.0"
    work = work_inputs.work_of_request(
        s.identity, env, room, address, lambda n: caller.evidence(signals, n)
    )
    return Challenge(identity.arrival_challenge(s.identity, env, work, max_puzzles=max_puzzles))


def _proof(
    s: Services, env: str, challenge: str, solutions: str | list[str]
) -> tokens.ChallengeClaims | Refused:
    """The claims of a challenge ``solutions`` solve (offline: nothing written), or Refused."""
    try:
        claims = identity.solved_challenge(s.identity, env, challenge, solutions)
    except identity.WrongSolution as exc:
        work_inputs.outcomes(s.identity).record(failed=True)  # the attack signal's ratio
        return Refused(
            "BadRequest", exc.message, fields={exc.field: "does not solve the challenge"}
        )
    except identity.TokenExpired as exc:
        return Refused("TokenExpired", exc.message)
    except identity.IdentityRefused as exc:
        return Refused("TokenInvalid", exc.message)
    work_inputs.outcomes(s.identity).record(failed=False)
    return claims


def identify(
    s: Services,
    door: Door,
    env: str,
    caller: Caller,
    challenge: str,
    solutions: str | list[str],
    signals: Mapping[str, Any],
    previous_session: str | None,
) -> Session | Refused:
    """Trade a solved challenge for a session; a retry of the same proof gets the same one."""
    claims = _proof(s, env, challenge, solutions)
    if isinstance(claims, Refused):
        return claims
    if claims.agent:  # no work: only a signed join spends it (enter)
        return Refused("TokenInvalid", "This challenge was issued to a signed agent: join with it.")
    return _identify_solved(s, door, env, caller, claims, solutions, signals, previous_session)


def _identify_solved(
    s: Services,
    door: Door,
    env: str,
    caller: Caller,
    claims: tokens.ChallengeClaims,
    solutions: str | list[str],
    signals: Mapping[str, Any],
    previous_session: str | None,
) -> Session | Refused:
    # Counted only now, before the first write: an over-limit request keeps its challenge unspent.
    door.charge("identify")
    try:
        network = tokens.network_tag(s.keyring, caller.address or "0.0.0.0")
        seen = identity.network_identifies(s.identity, network, env)
        evidence = caller.evidence(signals, seen)
        fresh = identity.session_claims(s.identity, env, evidence, previous_session)
        # Spent last, with what it earned: a retry of this proof gets this session, never 401.
        session = identity.spend_challenge(s.identity, claims, solutions, fresh)
    except identity.IdentityRefused as exc:
        return Refused("TokenInvalid", exc.message)
    except (StorageUnavailable, StorageBusy) as exc:
        # A challenge cannot be spent once without Redis: no new sessions during an outage.
        return storage_refusal(exc)
    return _session(s, session)


def _session(s: Services, session: tokens.SessionClaims) -> Session:
    answer = identity.session_answer(s.identity, session)
    return Session(
        token=answer["sessionToken"],
        expires_at_ms=answer["expiresAt"],
        score=answer["score"],
        signals=tuple(answer["sig"]),
        claims=session,
    )


def take_spot(
    s: Services,
    door: Door,
    env: str,
    caller: Caller,
    slug: str,
    session: tokens.SessionClaims,
    invite_token: str | None,
) -> Spot | Refused:
    """Take (or find again) the session's spot in room ``slug``."""
    if "bot" in session.signals:
        known = s.directory.room_by_slug(env, slug)  # no Redis call to count it
        if known:
            s.series.tally(known["id"], "ndenied")
        return Refused("QueueDenied")
    try:
        room = room_lookup.room_by_slug(s, env, slug)
        invite = _invite(s, room, invite_token)
        tag = network_tag(s, room, caller.address)
    except Refusal as refusal:
        return refusal.refused
    score = int(session.score)
    # After the offline checks (garbage costs Redis no write): counted by the enter script
    # itself on one server, charged here on a cluster (web/address_limits.enter_counters).
    counters = door.enter_counters() or ()
    if score >= int(room.get("holdScore") or 100):
        # Remembered only for an entry that may count (its round trip is a held session's
        # alone): a convicted session's refusal above writes nothing.
        with contextlib.suppress(StorageError, ValueError):
            work_inputs.count_refusal(s.identity, room["id"], caller.address or "0.0.0.0")
    # A bypass rule lets the request through the skip lane (an invite keeps its own lane).
    through = invite is None and bypass.matches(room, caller.address, caller.headers, caller.cookie)

    def enter_line() -> eng.QueueAnswer:
        try:
            return s.engine.enter(room["id"], session.visitor_id, session.session_id, score, tag,
                                  counters, invite, through)  # fmt: skip
        except AddressLimited as exc:
            door.over_limit("enter", exc.retry_after or 1)

    try:
        # Revocations are checked inside the script, in the room's own store.
        answer = s.breaker.call(enter_line, s.keys.room(room["id"]))
    except StorageUnavailable:
        binding = answers.Binding(session.session_id, session.visitor_id, score, tag)
        try:
            return fail_open(s, room, binding)
        except Refusal as refusal:
            return refusal.refused
    except StorageBusy:
        s.series.tally(room["id"], "nbusy")
        return Refused("Busy", retry_after=STORAGE_RETRY_SEC)
    except eng.EngineError as exc:
        return engine_refusal(exc, room)
    return answers.render(s, room, session.visitor_id, answer)


def enter(
    s: Services,
    door: Door,
    env: str,
    caller: Caller,
    slug: str,
    challenge: str,
    solutions: str | list[str],
    signals: Mapping[str, Any],
    previous_session: str | None,
    invite_token: str | None,
) -> Entered | Refused:
    """An arrival's second call: check the proof, open the session, take the spot.

    The room is looked up first, so a wrong slug leaves the challenge unspent. A retry with the
    same proof (after a timeout, a 503, a lost answer) gets the same session, hence the same
    spot: the first answer again.
    """
    try:
        room = room_lookup.room_by_slug(s, env, slug)
    except Refusal as refusal:
        return refusal.refused
    proof = _proof(s, env, challenge, solutions)
    if isinstance(proof, Refused):
        return proof
    if caller.signed is not None or proof.agent:
        verdict = agents.agent_verdict(s, room, caller, count=False)  # counted at its arrival
        if verdict is not None and verdict.refusal is not None:
            return verdict.refusal
        if proof.agent and (verdict is None or verdict.outcome not in ("queued", "lane")):
            # A challenge of no work was issued to a verified agent: an unsigned join (or one
            # the room no longer queues) must not spend it, nor skip a lane for the line.
            message = "This challenge was issued to a signed agent: sign the join as the arrival."
            return Refused("TokenInvalid", message)
        if verdict is not None and verdict.outcome == "lane":
            ask = Join(room, proof, solutions, signals, previous_session, invite_token)
            return _enter_lane(s, door, env, caller, ask)
    counters = door.identify_counters()
    if counters is not None:  # one server: the whole entry in one round trip
        ask = Join(room, proof, solutions, signals, previous_session, invite_token)
        return _join_in_one_call(s, door, env, caller, ask, counters)
    session = _identify_solved(s, door, env, caller, proof, solutions, signals, previous_session)
    if isinstance(session, Refused):
        return session
    spot = take_spot(s, door, env, caller, slug, session.claims, invite_token)
    if isinstance(spot, Refused):
        return spot
    return Entered(session, spot)


def _enter_lane(s: Services, door: Door, env: str, caller: Caller, ask: Join) -> Entered | Refused:
    """A verified agent's join through the room's agents' lane (agents policy ``lane``):
    admitted at once when the lane's own budget allows (lua/agent_lane.lua: at the room's
    ``agentLaneRatePerMinute``, apart from its bank), else 429 with the wait; never in the line.
    The budget is taken before the proof is spent, so a refusal leaves nothing spent but a
    token of the lane, and its admission is not renewable (no active entry stands for it)."""
    room = ask.room
    try:
        tag = network_tag(s, room, caller.address)
    except Refusal as refusal:
        return refusal.refused
    rate = int(room.get("agentLaneRatePerMinute") or 60)
    try:
        lane = s.breaker.call(lambda: s.agent_lane.admit(room["id"], rate), s.keys.room(room["id"]))
    except (StorageUnavailable, StorageBusy) as exc:
        return storage_refusal(exc)
    if not lane.open:
        message = "The agents' lane admits while the room is open."
        return Refused("RateLimited", message, retry_after=60)
    if not lane.admitted:
        message = "The agents' lane is at its rate; come back after Retry-After seconds."
        return Refused("RateLimited", message, retry_after=max(1, -(-lane.retry_after_ms // 1000)))
    session = _identify_solved(
        s, door, env, caller, ask.challenge, ask.solutions, ask.signals, ask.previous_session
    )
    if isinstance(session, Refused):
        return session
    now = lane.now_ms // 1000
    token = answers.admission_token(
        s, room, session.claims.visitor_id, admission_id=tokens.new_id(),
        session_id=session.claims.session_id, network_tag=tag or None, issued_at=now,
        expires_at=now + int(room.get("admissionTtlSec") or 600), not_renewable=True,
    )  # fmt: skip
    body = answers.answer_body(room, "admitted", room_status="open", opens_at=None, token=token)
    s.series.tally(str(room["id"]), AGENT_COUNTS["lane"])
    return Entered(session, Admitted(body))


@dataclass(frozen=True)
class Join:
    """A join's request, its proof checked offline."""

    room: dict[str, Any]
    challenge: tokens.ChallengeClaims  # the solved challenge's claims
    solutions: str | list[str]
    signals: Mapping[str, Any]
    previous_session: str | None
    invite_token: str | None


def _join_in_one_call(
    s: Services,
    door: Door,
    env: str,
    caller: Caller,
    ask: Join,
    identify_counters: Sequence[tuple[str, int, int]],
) -> Entered | Refused:
    """Identify and enter in one round trip (lua/join.lua): the same limits, counts, spend
    and entry as :func:`identify` then :func:`take_spot`, in the same order, in one script.

    The signal rules read the network's count only as busy or not, so both sessions it may
    earn are made here and the script spends the proof for the one its count chooses.
    """
    room = ask.room
    try:
        invite = _invite(s, room, ask.invite_token)
        tag = network_tag(s, room, caller.address)
    except Refusal as refusal:
        return refusal.refused
    address = caller.address or "0.0.0.0"
    try:
        network = tokens.network_tag(s.keyring, address)
        calm = identity.session_claims(
            s.identity, env, caller.evidence(ask.signals, 1), ask.previous_session
        )
    except identity.IdentityRefused as exc:
        return Refused("TokenInvalid", exc.message)
    except (StorageUnavailable, StorageBusy) as exc:
        return storage_refusal(exc)
    score, sig = assess(caller.evidence(ask.signals, BUSY_NETWORK_PER_MINUTE + 1))
    busy = dataclasses.replace(calm, score=score, signals=tuple(sig))
    counters = door.enter_counters() or ()
    jti = ask.challenge.challenge_id
    minute = int(time.time() // 60)
    who = eng.JoinIdentify(
        counters=identify_counters,
        network_key=s.keys.network_identifies(network, minute),
        environment_key=work_inputs.env_identifies_key(s.identity, env, minute),
        busy_above=BUSY_NETWORK_PER_MINUTE,
        marker_key=s.keys.challenge_spent(jti),
        mark=identity.proof_fingerprint(jti, ask.solutions),
        life_ms=max(1, int(ask.challenge.expires_at) - int(time.time()) + 1) * 1000,
        vid=calm.visitor_id,
        session_id=calm.session_id,
        calm=(identity.session_json(calm), int(calm.score), "bot" in calm.signals),
        busy=(identity.session_json(busy), score, "bot" in sig),
    )
    through = invite is None and bypass.matches(room, caller.address, caller.headers, caller.cookie)

    def join_line() -> eng.JoinAnswer:
        try:
            return s.engine.join(room["id"], who, tag, counters, invite, through)
        except eng.IdentifyLimited as exc:
            door.over_limit("identify", exc.retry_after or 1)
        except AddressLimited as exc:
            door.over_limit("enter", exc.retry_after or 1)

    try:
        joined = s.breaker.call(join_line, s.keys.room(room["id"]))
    except eng.ChallengeSpent:
        return Refused("TokenInvalid", "This challenge has already been used.")
    except (StorageUnavailable, StorageBusy) as exc:
        # A challenge cannot be spent once without Redis: no new sessions during an outage.
        return storage_refusal(exc)
    except eng.EngineError as exc:
        return engine_refusal(exc, room)
    session = {"calm": calm, "busy": busy}.get(joined.which) or tokens.SessionClaims.from_wire(
        orjson.loads(joined.earned)
    )
    if joined.entered is None:  # convicted: the proof is spent, the entry refused
        s.series.tally(room["id"], "ndenied")
        return Refused("QueueDenied")
    if int(session.score) >= int(room.get("holdScore") or 100):
        with contextlib.suppress(StorageError, ValueError):
            work_inputs.count_refusal(s.identity, room["id"], address)
    spot = answers.render(s, room, session.visitor_id, joined.entered)
    return Entered(_session(s, session), spot)


def enter_without_script(
    s: Services, door: Door, env: str, caller: Caller, room: dict[str, Any]
) -> Spot | Refused:
    """The page without JavaScript's entry, in one request: no proof of work, so the visitor
    queues at the room's noScriptScore, or at the score the signal rules give the request if
    that is worse (a convicted one is refused), within the identify and enter limits."""
    address = caller.address or ""
    door.charge("identify")  # the same per-address limits as a solved challenge
    try:
        try:
            network = tokens.network_tag(s.keyring, address)
        except ValueError:  # no address, or not an IP one: counted with every such visitor
            network = tokens.network_tag(s.keyring, "0.0.0.0")
        seen = identity.network_identifies(s.identity, network, env)
        score, sig = assess(caller.evidence({}, seen))
        if "bot" in sig or score >= int(room["holdScore"]):
            # The room's history of refused ranges, as the API's enter keeps it (best effort);
            # the operator's choice to hold visitors without JavaScript is no mark against it.
            with contextlib.suppress(StorageError, ValueError):
                work_inputs.count_refusal(s.identity, room["id"], address or "0.0.0.0")
        if "bot" in sig:
            s.series.tally(room["id"], "ndenied")
            return Refused("QueueDenied")
        score = max(score, room_config.no_script_score(room))
        tag = network_tag(s, room, caller.address)  # as the API's enter: no address, no entry
        door.charge("enter")
        vid, jti = tokens.new_id(), tokens.new_id()
        through = bypass.matches(room, caller.address, caller.headers, caller.cookie)
        answer = s.breaker.call(
            lambda: s.engine.enter(room["id"], vid, jti, score, tag, bypass=through),
            s.keys.room(room["id"]),
        )
    except Refusal as refusal:
        return refusal.refused
    except (StorageUnavailable, StorageBusy) as exc:
        return storage_refusal(exc)
    except eng.EngineError as exc:
        return engine_refusal(exc, room)
    return answers.render(s, room, vid, answer)


def _invite(s: Services, room: dict[str, Any], token: str | None) -> tokens.InviteClaims | None:
    """The verified invite of ``room`` the body carries; one forged, malformed or of another
    room is TokenInvalid (its expiry and uses are the enter script's, on the room's clock)."""
    if token is None:
        return None
    try:
        invite = tokens.InviteClaims.from_wire(tokens.decode(s.keyring, token, tokens.INVITE))
    except tokens.TokenError as exc:
        why = f"is not valid ({exc.reason})"
        bad = Refused("TokenInvalid", f"The invite {why}.", fields={"invite": why})
        raise Refusal(bad) from None
    cell = s.region_cell  # a room across regions: an invite signed by another region's room
    same = invite.room_id == room["id"] or (
        cell is not None and cell.same_room(room["id"], invite.room_id)
    )
    if not same or invite.environment != room["environment"]:
        why = "belongs to another room"
        raise Refusal(Refused("TokenInvalid", f"The invite {why}.", fields={"invite": why}))
    if invite.lane not in tokens.INVITE_LANES or not isinstance(invite.uses, int):
        bad = Refused("TokenInvalid", "The invite is not valid.", fields={"invite": "is malformed"})
        raise Refusal(bad)
    return invite
