"""A waiting visitor's use cases (visit/waiting.py) answer by tag: the state is the answer's
class, and a refusal is a Refused, never an exception or a status read from nulls."""

from __future__ import annotations

import pytest

from anteroom.sdk import tokens
from anteroom.service_container import Services
from anteroom.visit import room_lookup, waiting
from anteroom.visit.outcomes import Admitted, Left, Refused, Waiting
from anteroom.visit.refusals import Refusal
from anteroom.web.serving import http_errors as errors
from helpers import make_room

pytestmark = pytest.mark.redis


def _entered(services: Services, room_id: str, vid: str) -> tokens.TicketClaims:
    answer = services.engine.enter(room_id, vid, "s-" + vid, 0, "")
    assert answer.ticket is not None
    ticket, generation = answer.ticket, answer.generation
    return tokens.TicketClaims(room_id, vid, ticket, generation, "shop", "s-" + vid, 0)


def test_poll_refresh_and_leave_answer_by_tag(services: Services) -> None:
    room_id = make_room(services.engine, env="shop", slug="drop", ratePerMinute=60)
    services.engine.open(room_id)
    first = _entered(services, room_id, "v1" * 8)
    second = _entered(services, room_id, "v2" * 8)
    waited = waiting.poll(services, second, "203.0.113.9")
    assert type(waited) is Waiting and waited.body["position"] == 2 and waited.retry_after
    services.engine.shift_clock(room_id, 1_000)
    admitted = waiting.poll(services, first, "203.0.113.9")
    assert type(admitted) is Admitted and admitted.retry_after is None
    admission = tokens.AdmissionClaims.from_wire(
        tokens.decode(services.keyring, admitted.body["token"], tokens.ADMISSION)
    )
    assert type(waiting.refresh(services, admission, "203.0.113.9")) is Admitted
    ended = tokens.AdmissionClaims(**{**admission.__dict__, "not_renewable": True})
    assert waiting.refresh(services, ended, None) == Refused("NotRenewable")
    assert type(waiting.leave(services, second)) is Left
    services.engine.close(room_id)
    gone = waiting.poll(services, second, "203.0.113.9")
    assert isinstance(gone, Refused) and gone.code == "TicketGone"


def test_the_room_lookup_refuses_as_the_use_cases_answer(services: Services) -> None:
    """The room lookup is the use cases' own (visit/room_lookup.py): a key, room or ticket's
    room not found is a Refused the use case returns, mapped to the API's error in one place."""
    room_id = make_room(services.engine, env="shop", slug="drop")
    with pytest.raises(Refusal) as unknown:
        room_lookup.room_by_slug(services, "shop", "nope")
    assert unknown.value.refused == Refused("RoomNotFound", "No room 'nope' here.")
    with pytest.raises(Refusal) as secret:
        room_lookup.environment_of(services, "sk_not_public")
    assert secret.value.refused.code == "Unauthorized"
    assert room_lookup.room_by_slug(services, "shop", "drop")["id"] == room_id
    orphan = tokens.TicketClaims("q" + "0" * 16, "v9" * 8, 1, 1, "shop", "s-v9", 0)
    gone = waiting.poll(services, orphan, "203.0.113.9")
    assert gone == Refused("TicketGone", "This room no longer exists.")
    mapped = errors.from_domain(unknown.value)
    assert (mapped.code, mapped.error, mapped.body()["message"]) == (
        404,
        "RoomNotFound",
        "No room 'nope' here.",
    )
