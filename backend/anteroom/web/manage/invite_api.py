"""The management API's record of issued invites (docs/operators.md, "Invite links"): list a
room's invites with their spent counts, withdraw one. Issuing is ``management_api.create_invites``.
"""

from __future__ import annotations

from flask import Response
from flask.typing import ResponseReturnValue

from anteroom.queue.line import room_engine as eng
from anteroom.store.audit_log import AuditLog
from anteroom.web.api import api_routes as routes
from anteroom.web.manage.invite_models import INVITE_ID, InvitePage, InviteQuery, shown
from anteroom.web.manage.management_api import Call, load_room, management_call, storage
from anteroom.web.serving import http_errors as errors


@management_call(routes.LIST_INVITES)
def list_invites(call: Call[InviteQuery], room_id: str) -> ResponseReturnValue:
    """The room's invites on record, newest first, ``limit`` at a time before ``cursor``."""
    load_room(call.key, room_id)
    s, query = call.services, call.data
    with storage():
        now = s.series.now_ms(room_id)
        try:
            page = s.engine.invites(room_id, query.cursor or None, query.limit)
        except eng.RoomNotFound:
            raise errors.RoomNotFound("No such room (it was just deleted).") from None
    cursor = str(page.next_cursor) if page.next_cursor is not None else None
    return InvitePage.model_validate(
        {
            "queue": room_id,
            "now": now,
            "total": page.total,
            "invites": [shown(i, now) for i in page.invites],
            "nextCursor": cursor,
        }
    )


@management_call(routes.WITHDRAW_INVITE)
def withdraw_invite(call: Call[None], room_id: str, invite_id: str) -> ResponseReturnValue:
    """Withdraw an invite: newcomers presenting it get 410 InviteWithdrawn from now on."""
    room = load_room(call.key, room_id)
    if not INVITE_ID.match(invite_id):
        fields = {"inviteId": "must be an invite's id: 16 letters, digits, '-' or '_'"}
        raise errors.BadRequest("That is not an invite id.", fields=fields)
    s = call.services
    with storage():
        now = s.series.now_ms(room_id)
        try:
            invite = s.engine.withdraw_invite(room_id, invite_id, now)
        except eng.InviteNotFound:
            raise errors.InviteNotFound(f"No invite {invite_id} on record in this room.") from None
        except eng.RoomNotFound:
            raise errors.RoomNotFound("No such room (it was just deleted).") from None
        if invite.withdrawn_at_ms != now:  # withdrawn before: on record already
            return Response(status=204)
        terms = {"id": invite.id, "lane": invite.lane, "uses": invite.uses}
        AuditLog(s.redis, s.keys).record(
            call.env,
            "queue.invite.withdrawn",
            queue=room,
            key_id=call.key.id,
            invite=terms | {"expiresAt": invite.expires_at_ms},
        )
    return Response(status=204)
