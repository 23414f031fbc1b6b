"""Rooms by key for the visitor's use cases: a public key's environment, a room by slug or by id.

Each read is cached, answered from the room directory while it is current, and known offline
during an outage (the directory knows every room). A key or room not found is refused as the
visitor's ``Refusal`` (Unauthorized, RoomNotFound, TicketGone): the use cases return it, the
pages and the entrances map it (web/serving/http_errors.from_domain).
"""

from __future__ import annotations

import time
from typing import Any

from anteroom.queue.line import room_engine as eng
from anteroom.queue.rooms import room_events
from anteroom.service_container import Services
from anteroom.visit.outcomes import Refused
from anteroom.visit.refusals import Refusal


def environment_of(services: Services, api_key: str) -> str:
    """Environment of a public key (cached; known offline during an outage); refuses an unknown
    one (Unauthorized)."""
    if not api_key.startswith("pk_"):
        raise Refusal(Refused("Unauthorized", "apiKey must be a public key (pk_…)."))
    known = services.directory.current()
    if known is not None and api_key in known.public_keys:
        return known.public_keys[api_key]  # read by the directory's last round: no round trip
    env = services.public_keys.get(
        api_key,
        lambda: services.breaker.call(
            lambda: services.keystore.environment_of(api_key), services.keys.public_keys()
        ),
        lambda: services.directory.environment_of(api_key),
    )
    if not env:
        raise Refusal(Refused("Unauthorized", "Unknown apiKey."))
    return str(env)


def room_by_slug(services: Services, env: str, slug: str) -> dict[str, Any]:
    """Configuration of room ``slug`` in ``env`` (cached; known offline), or RoomNotFound.

    From the room directory while it is current (no round trip); a room it does not know yet
    (created since its last round) is read from Redis.
    """
    known = services.directory.current()
    if known is not None and (env, slug) in known.slugs:
        return in_effect(known.rooms[known.slugs[(env, slug)]])

    def load() -> dict[str, Any] | None:
        room_id = services.breaker.call(
            lambda: services.engine.room_id(env, slug), services.keys.env_rooms(env)
        )
        if room_id is None:
            return None
        try:
            room = services.breaker.call(
                lambda: services.engine.get_room(room_id), services.keys.room(room_id)
            )
        except eng.RoomNotFound:
            return None
        # Polls find rooms by id: keep both ways in, for the outage that may come.
        services.rooms.put(("id", room_id), room)
        return room

    def offline() -> dict[str, Any] | None:
        # During an outage the directory knows every room, asked for here before or not.
        return services.directory.room_by_slug(env, slug)

    room = services.rooms.get(("slug", env, slug), load, offline)
    if room is None:
        raise Refusal(Refused("RoomNotFound", f"No room {slug!r} here."))
    return in_effect(room)


def room_by_id(services: Services, room_id: str) -> dict[str, Any]:
    """Configuration of a ticket's or admission's room (cached; known offline), or TicketGone.

    From the room directory while it is current, as :func:`room_by_slug`.
    """
    known = services.directory.current()
    if known is not None and room_id in known.rooms:
        return in_effect(known.rooms[room_id])

    def load() -> dict[str, Any] | None:
        try:
            return services.breaker.call(
                lambda: services.engine.get_room(room_id), services.keys.room(room_id)
            )
        except eng.RoomNotFound:
            return None

    room = services.rooms.get(("id", room_id), load, lambda: services.directory.room_by_id(room_id))
    if room is None:
        raise Refusal(Refused("TicketGone", "This room no longer exists."))
    return in_effect(room)


def in_effect(room: dict[str, Any]) -> dict[str, Any]:
    """``room`` as visitors meet it now: the room in force (room_events.in_force)."""
    return room_events.in_force(room, int(time.time() * 1000))
