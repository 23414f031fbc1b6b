"""Every route of the APIs, declared once (docs/management-api.md, docs/visitor-api.md).

A :class:`Route` says all there is to say about one operation: its path and method, its scope
(management) or tag, the model its body or query string is parsed with, and every answer it
may give. The view decorators (``visitor_api.visitor_call``, ``management_api.management_call``,
:func:`view` for the rest) register the Flask rule and parse the input from it, and
``openapi_document`` builds the document from the same objects, so the two cannot drift apart.
A view returns an answer model (or a Flask answer, when it has no body); :func:`view`
serialises it once, as it was built.

Written here rather than taken from spectree or flask-openapi3: both parse and word request
errors their own way (ours name every field, web/serving/json_body.py), validate answers on every
call
unless told not to, build their own document layout (no shared ``components/responses``), and
flask-openapi3 replaces the Flask app class; neither knows the hot path (web/visitor/hot_path.py),
which
answers the poll outside Flask and reads only the paths and token fields declared here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, jsonify
from flask.typing import ResponseReturnValue
from pydantic import BaseModel

from anteroom.web.api import api_models as shapes
from anteroom.web.api.api_models import Body
from anteroom.web.manage import audit_models as audit
from anteroom.web.manage import event_models as events
from anteroom.web.manage import invite_models as invite_records
from anteroom.web.manage import key_models as keys
from anteroom.web.manage import management_models as management
from anteroom.web.manage import series_models as series
from anteroom.web.pages import fairness_models as fairness
from anteroom.web.visitor import visitor_models as visitor

Schema = dict[str, Any]
View = Callable[..., ResponseReturnValue]
# A path parameter's name in the document -> in the Flask rule.
PATH_PARAMETERS = {
    "{id}": "<room_id>", "{slug}": "<slug>", "{eventId}": "<event_id>", "{keyId}": "<key_id>",
    "{inviteId}": "<invite_id>",
}  # fmt: skip

RETRY_AFTER: Schema = {"description": "Seconds to wait before asking again."}
RETRY_AFTER["schema"] = {"type": "integer", "minimum": 1}
WAIT = {"Retry-After": RETRY_AFTER}
BEARER: Schema = {"schema": {"type": "string", "pattern": "^Bearer"}}


@dataclass(frozen=True)
class Reply:
    """One answer a route may give: an error with these codes, a model's JSON, or no body.

    An error answer with Retry-After also carries retryAfter.
    """

    name: str  # its name under the document's components/responses
    description: str
    errors: tuple[str, ...] = ()
    model: type[BaseModel] | None = None
    headers: dict[str, Schema] = field(default_factory=dict)
    any_object: bool = False  # a JSON object of no declared model (the document itself)


# fmt: off
BAD_REQUEST = Reply("BadRequest", "The request is not valid; fields names each problem.",
                    ("BadRequest",))
VISITOR_UNAUTHORIZED = Reply(
    "VisitorUnauthorized", "Unknown apiKey, or a token that is not valid or has expired.",
    tuple(shapes.error_codes(401)))
MANAGEMENT_UNAUTHORIZED = Reply("ManagementUnauthorized", "No valid secret key.",
                                ("Unauthorized",), headers={"WWW-Authenticate": BEARER})
FORBIDDEN = Reply("Forbidden", "The key lacks the scope, or belongs to another environment.",
                  ("Forbidden",))
ENTER_FORBIDDEN = Reply(
    "EnterForbidden",
    "The session is convicted, revoked, the room needs a visible client address, or its mode "
    "is reject (RoomClosed, with its closedMessage).",
    ("QueueDenied", "SessionRevoked", "AddressRequired", "RoomClosed"))
SPOT_FORBIDDEN = Reply(
    "SpotForbidden", "The session has been revoked, or (while Redis is unreachable) a bindIp "
    "room sees no client address.", ("SessionRevoked", "AddressRequired"))
REFRESH_FORBIDDEN = Reply(
    "RefreshForbidden", "NotRenewable: the admission ends at its exp, as its room's "
    "sessionRenewal is off (its token has the claim nr, or the room turned it off since); queue "
    "again. Or the session has been revoked, or (while Redis is unreachable) a bindIp room sees "
    "no client address.", ("NotRenewable", "SessionRevoked", "AddressRequired"))
ROOM_NOT_FOUND = Reply("RoomNotFound", "No such room.", ("RoomNotFound", "NotFound"))
TICKET_GONE = Reply("TicketGone", "The spot or its room is gone; enter again.", ("TicketGone",))
WRONG_REGION = Reply(
    "WrongRegion", "The ticket was issued in another region (a room across regions): the spot is "
    "kept there; send the call to that region (the message names it), do not enter again.",
    ("WrongRegion",), headers=WAIT)
ENTER_GONE = Reply("EnterGone", "The room is gone, or the invite has expired (on the room's "
                   "clock) or been withdrawn by the room's operator.",
                   ("TicketGone", "InviteExpired", "InviteWithdrawn"))
INVITE_SPENT = Reply("InviteSpent", "The invite has been used by as many other visitors as it "
                     "allows (the same visitor entering again with it uses none).",
                     ("InviteSpent",))
PAYLOAD_TOO_LARGE = Reply("PayloadTooLarge", "The body is larger than 16 KiB.",
                          ("PayloadTooLarge",))
RATE_LIMITED = Reply("RateLimited", "Too many requests.", ("RateLimited",), headers=WAIT)
SPOT_BUSY = Reply("SpotBusy", "Polled too often, or Redis is out of memory.",
                  ("RateLimited", "Busy"), headers=WAIT)
ENTER_BUSY = Reply("EnterBusy", "Polled too often, the line is full, or Redis is out of memory.",
                   ("RateLimited", "QueueFull", "Busy"), headers=WAIT)
BUSY = Reply("Busy", "Redis is out of memory; nothing was changed.", ("Busy",), headers=WAIT)
UNAVAILABLE = Reply("Unavailable", "Redis is unreachable.", ("Unavailable",), headers=WAIT)

CHALLENGE = Reply("Challenge", "A signed challenge, its puzzles and the work they take.",
                  model=visitor.Challenge)
SESSION = Reply("Session", "A session token, its score and signals.", model=visitor.Session)
ARRIVAL = Reply("Arrival", "A signed challenge whose puzzles the device fits to itself.",
                model=visitor.Arrival)
JOINED = Reply(
    "Joined", "The session and the queue answer of its spot; Retry-After is set while it asks "
    "the client to wait.",
    model=visitor.Joined, headers={"Retry-After": RETRY_AFTER | {"required": False}})
QUEUE_ANSWER = Reply(
    "QueueAnswer", "A queue answer; Retry-After is set while it asks the client to wait.",
    model=visitor.QueueAnswer, headers={"Retry-After": RETRY_AFTER | {"required": False}})
PARKED = Reply("Parked", "The spot is parked: it keeps its place without polling until its "
               "turn, when one e-mail with a single-use return link is sent.",
               model=visitor.Parked)
NOTIFY_FORBIDDEN = Reply("NotifyForbidden", "The room does not offer the e-mail (its notify "
                         "setting is off).", ("NotifyOff",))
NOT_WAITING = Reply("NotWaiting", "The spot is not waiting in the line: admitted already (poll "
                    "it for the admission) or held.", ("NotWaiting",))
LEFT = Reply("Left", "Left (also when there was nothing left to free).")
ROOM_LIST = Reply("RoomList", "The rooms.", model=management.RoomList)
ROOM_CREATED = Reply("RoomCreated", "The new room.", model=management.Room,
                     headers={"Location": {"schema": {"type": "string"}}})
ROOM = Reply("Room", "The room after the change.", model=management.Room)
ROOM_DETAIL = Reply("RoomDetail", "The room.", model=management.RoomDetail)
DELETED = Reply("Deleted", "Deleted.")
INVITES = Reply("Invites", "The signed invites; the audit log records how many, never them.",
                model=management.InviteList)
INVITE_PAGE = Reply("InvitePage", "A page of the room's invites on record, newest first.",
                    model=invite_records.InvitePage)
INVITE_NOT_FOUND = Reply("InviteNotFound", "No such room, or no invite of that id on record "
                         "in it.", ("RoomNotFound", "InviteNotFound", "NotFound"))
WITHDRAWN = Reply("Withdrawn", "Withdrawn (also when it already was).")
KEY_LIST = Reply("KeyList", "The environment's keys (never a secret).", model=keys.KeyList)
KEY_CREATED = Reply("KeyCreated", "The new key and its secret, shown this once.",
                    model=keys.KeyCreated)
KEY_NOT_FOUND = Reply("KeyNotFound", "No key of that id in this environment.",
                      ("KeyNotFound", "NotFound"))
KEY_IN_USE = Reply("KeyInUse", "The key named is the one making the call: revoke it with "
                   "another key.", ("KeyInUse",))
REVOKED = Reply("Revoked", "Revoked (also when it already was).")
REVOCATION = Reply("Revocation", "Revoked; recorded as a session.revoked event.",
                   model=audit.Revocation)
AUDIT_PAGE = Reply("AuditPage", "One page of events.", model=audit.AuditPage)
SERIES = Reply("Series", "The room's numbers over time, one point per step.",
               model=series.Series)
ALIVE = Reply("Alive", "Up.", model=shapes.Alive)
READY = Reply("Ready", "Ready.", model=shapes.Ready)
NOT_READY = Reply("NotReady", "Not ready.", model=shapes.NotReady)
DOCUMENT = Reply("Document", "The OpenAPI 3.1 document.", any_object=True)
FAIRNESS = Reply("Fairness", "The opening's fairness document.", model=fairness.Fairness)
DRAWN_ENTRANTS = Reply("DrawnEntrants", "The entrant ids in drawn order.",
                       model=fairness.Entrants)
NO_DRAW = Reply("NoDraw", "No such room, or no draw (for the list: not made yet).",
                ("RoomNotFound", "NotFound"))
EVENT_LIST = Reply("EventList", "The room's events, sorted by startsAt.", model=events.EventList)
EVENT = Reply("Event", "The event.", model=events.Event)
EVENT_CREATED = Reply("EventCreated", "The new event.", model=events.Event,
                      headers={"Location": {"schema": {"type": "string"}}})
EVENT_NOT_FOUND = Reply("EventNotFound", "No such room, or no such event in it.",
                        ("RoomNotFound", "EventNotFound", "NotFound"))
EVENT_CONFLICT = Reply(
    "EventConflict", "EventOverlap: the window meets another event's (named in the message); "
    "EventEnded: the event has ended and stays on record unchanged.",
    ("EventOverlap", "EventEnded"))
# fmt: on

# The refusals every route of a kind may give, by status.
VISITOR = {400: BAD_REQUEST, 401: VISITOR_UNAUTHORIZED, 413: PAYLOAD_TOO_LARGE, 503: UNAVAILABLE}
SPOT = VISITOR | {410: TICKET_GONE, 429: SPOT_BUSY}
READ = {401: MANAGEMENT_UNAUTHORIZED, 403: FORBIDDEN, 429: BUSY, 503: UNAVAILABLE}
WRITE = READ | {400: BAD_REQUEST, 413: PAYLOAD_TOO_LARGE}


@dataclass(frozen=True)
class Route:
    """One operation: what the view registration and the OpenAPI document both read."""

    path: str  # as the document writes it, parameters in braces
    method: str  # lower case, as the document keys it
    operation_id: str
    summary: str
    answers: dict[int, Reply]
    tag: str = "management"  # visitor, management, fairness, health or docs
    scope: str | None = None  # the key's scope a management route needs
    body: type[Body] | None = None  # the JSON body's model
    query: type[Body] | None = None  # the query string's model
    # The visitor body's names for the call's token: its name, then the older one still taken.
    token: tuple[str, ...] = ()
    notes: str = ""  # said after the scope in the description

    @property
    def takes_environment(self) -> bool:
        """A management route of the key's environment (one on a room by id checks the room's
        own environment instead, so it takes no ``environment`` parameter)."""
        return self.scope is not None and "{" not in self.path

    @property
    def rule(self) -> str:
        """The Flask URL rule of :attr:`path`."""
        rule = self.path
        for name, flask_name in PATH_PARAMETERS.items():
            rule = rule.replace(name, flask_name)
        return rule


OLDER_NAME = (
    " The token's older name ({older}) is still taken, for clients written before the rename;"
    " a body sends one of the two, never both (400, naming the field)."
)
POLL_NOTES = (
    " Call it when the last answer's pollAfterMs (or Retry-After) has passed, with the spot's"
    " latest queueToken: each answer may carry a fresh one, which replaces the last. The answer"
    " says whether the visitor still waits (position, etaSeconds, or odds in a random room),"
    " is held while the room is paused, or is admitted, with the admission token and the page"
    " to send them to. Polling sooner than asked answers 429." + OLDER_NAME.format(older="ticket")
)
LEAVE_NOTES = (
    " For a visitor who gives up or has finished: a waiting spot leaves the line (those behind"
    " move up) and an admitted one frees its slot for the next visitor at once, rather than"
    " when the admission expires. The token cannot be polled afterwards."
    + OLDER_NAME.format(older="ticket")
)
REFRESH_NOTES = (
    " An admitted visitor's site calls it before the admission expires, to keep the slot while"
    " the visitor is still active: the answer carries a new admission token with a later"
    " expiry. A room whose session renewal is off refuses (403 NotRenewable): the visitor"
    " queues again once the admission ends." + OLDER_NAME.format(older="token")
)
QUEUES, ROOM_PATH = "/api/management/v1/queues", "/api/management/v1/queues/{id}"
# fmt: off
ARRIVE = Route(
    "/api/v1/arrive", "post", "arrive",
    "An arrival's first call: a challenge carrying its own measurement",
    VISITOR | {200: ARRIVAL, 429: RATE_LIMITED}, tag="visitor", body=visitor.ArriveRequest,
    notes=" The first of the two calls from arrival to ticket (then joinQueue). The puzzles"
    " cover the visitor's work; the first minPuzzles of them reach its floor. The client times"
    " those (no separate measurement call) and solves as many more, in order, as keep it within"
    " fitMs.")
JOIN_QUEUE = Route(
    "/api/v1/queue/join", "post", "joinQueue",
    "An arrival's second call: check the proof, open the session and take the spot",
    SPOT | {200: JOINED, 403: ENTER_FORBIDDEN, 404: ROOM_NOT_FOUND, 409: INVITE_SPENT,
            410: ENTER_GONE, 429: ENTER_BUSY},
    tag="visitor", body=visitor.JoinRequest,
    notes=" identify and enterQueue in one call, with the same rules: the challenge is spent"
    " once, and sending the same challenge and solutions again (after a timeout, a 503, a lost"
    " answer) answers the same session and finds the same spot; the identify and enter limits"
    " are both counted. A wrong room slug leaves the challenge unspent. While Redis is"
    " unreachable no challenge can be spent: 503 Unavailable.")
CREATE_CHALLENGE = Route(
    "/api/v1/challenge", "post", "createChallenge", "A proof-of-work challenge",
    VISITOR | {200: CHALLENGE, 429: RATE_LIMITED}, tag="visitor", body=visitor.ChallengeRequest,
    notes=" The first call of the older journey (challenge, identify, enter), kept for the"
    " clients written for it; new clients arrive and join instead. The device solves the"
    " puzzles (SHA-256 with the given number of leading zero bits) and trades them for a"
    " session at identify. The work asked grows with what the agent's signals suggest and"
    " with the room's load; measure asks first for a tiny challenge that times the device.")
IDENTIFY = Route(
    "/api/v1/identify", "post", "identify", "Trade a solved challenge for a session token",
    VISITOR | {200: SESSION, 429: RATE_LIMITED}, tag="visitor", body=visitor.IdentifyRequest,
    notes=" The second call of the older journey: the challenge is checked and spent once, and"
    " the session token answered is what enter takes. A previous session, when sent, keeps"
    " the visitor's identity across sessions. The score (0 to 100) and the signals named say"
    " how much the service trusts the visitor; rooms may refuse low scores.")
ENTER_QUEUE = Route(
    "/api/v1/queue/enter", "post", "enterQueue",
    "Take (or find again) the session's spot in a room",
    SPOT | {200: QUEUE_ANSWER, 403: ENTER_FORBIDDEN, 404: ROOM_NOT_FOUND, 409: INVITE_SPENT,
            410: ENTER_GONE, 429: ENTER_BUSY},
    tag="visitor", body=visitor.EnterRequest, token=("sessionToken",),
    notes=" The third call of the older journey. A session has one spot per room: entering"
    " again finds it rather than taking another. The answer is the first queue answer: the"
    " visitor waits (poll with its queueToken), or is admitted at once while the room has"
    " room. An invite of this room puts the visitor in its lane.")
POLL_QUEUE = Route(
    "/api/v1/queue/poll", "post", "pollQueue", "Ask where a spot in the line stands",
    SPOT | {200: QUEUE_ANSWER, 403: SPOT_FORBIDDEN, 421: WRONG_REGION}, tag="visitor",
    body=visitor.TicketRequest,
    token=("queueToken", "ticket"), notes=POLL_NOTES)
LEAVE_QUEUE = Route(
    "/api/v1/queue/leave", "post", "leaveQueue",
    "Leave the line: frees a waiting spot or an active slot",
    SPOT | {204: LEFT, 421: WRONG_REGION},
    tag="visitor", body=visitor.TicketRequest, token=("queueToken", "ticket"), notes=LEAVE_NOTES)
NOTIFY_ME = Route(
    "/api/v1/queue/notify", "post", "notifyQueue",
    "Leave an e-mail address: the spot is kept without polling until its turn",
    SPOT | {200: PARKED, 403: NOTIFY_FORBIDDEN, 409: NOT_WAITING, 421: WRONG_REGION},
    tag="visitor",
    body=visitor.NotifyRequest, token=("queueToken", "ticket"),
    notes=" For a room whose notify setting is on. The spot keeps its place with no more"
    " polls; at its turn one e-mail is sent to the address, with a link that admits the"
    " visitor once, on any device (a bindIp room's admission stays bound to the network the"
    " spot entered from), within the room's returnWindowSec from the turn. The address is"
    " kept only until the e-mail is sent or the spot goes, and is never in an answer. A"
    " malformed address answers 400 naming email and changes nothing. Polling a parked spot"
    " is still allowed." + OLDER_NAME.format(older="ticket"))
REFRESH_ADMISSION = Route(
    "/api/v1/admission/refresh", "post", "refreshAdmission",
    "A fresh admission; extends the active slot",
    SPOT | {200: QUEUE_ANSWER, 403: REFRESH_FORBIDDEN}, tag="visitor",
    body=visitor.RefreshRequest, token=("admissionToken", "token"), notes=REFRESH_NOTES)
REVOKE_SESSION = Route(
    "/api/management/v1/sessions/revoke", "post", "revokeSession",
    "Revoke a session (jti) or visitor (vid) in every room of the environment",
    WRITE | {200: REVOCATION}, scope="queues:write", body=audit.RevokeRequest,
    notes=" Its spots answer SessionRevoked at their next poll (a vid's are dropped at once),"
    " its admissions can no longer be refreshed and it cannot enter again; an admission"
    " already issued stays valid offline until its exp. Revocations expire by themselves after"
    " the longest token life (6 h, or a room's queue-token or admission life if longer).")
LIST_QUEUES = Route(
    QUEUES, "get", "listQueues", "Every room of the environment, by slug",
    READ | {200: ROOM_LIST}, scope="queues:read",
    notes=" Each room with its whole configuration and status, so a dashboard needs one call;"
    " the live numbers and the line are in a room's own answer.")
CREATE_QUEUE = Route(
    QUEUES, "post", "createQueue", "Create a room (idle until opened)",
    WRITE | {201: ROOM_CREATED}, scope="queues:write", body=management.RoomCreate,
    notes=" A room is created closed: visitors who come meanwhile see its closed message until"
    " it is opened (at once, or at a time, with a draw among those who came early). Only the"
    " slug, the name and the address admitted visitors are sent to are required; every other"
    " setting has a default, and every problem is named by its field in one 400. Audited as"
    " queue.created.")
GET_QUEUE = Route(
    ROOM_PATH, "get", "getQueue",
    "A room's configuration, status, live stats and, while open, its line",
    READ | {200: ROOM_DETAIL, 404: ROOM_NOT_FOUND}, scope="queues:read",
    notes=" What an operator watches during a drop: the numbers now (waiting, held, active,"
    " admitted in the last minute), the settings in force (a running event's included) and,"
    " while the room is open or paused, the first 200 spots in the order they will be let in.")
GET_QUEUE_SERIES = Route(
    ROOM_PATH + "/series", "get", "getQueueSeries",
    "The room's numbers over time: every 10 s for 24 h, every minute for 14 days",
    READ | {200: SERIES, 400: BAD_REQUEST, 404: ROOM_NOT_FOUND}, scope="queues:read",
    query=series.SeriesQuery,
    notes=" Samples are taken every 10 s (kept 24 h) and every minute (kept 14 days) by the"
    " service itself; a window's gauges (waiting, held, active, rate, capacity) are its last"
    " sample's, its counts (admitted, entries, refusals, leaves, abandoned, the wait"
    " histogram) what was added during it. Null: no sample in that window.")
UPDATE_QUEUE = Route(
    ROOM_PATH, "patch", "updateQueue",
    "Change configuration fields (not slug) and/or run an action",
    WRITE | {200: ROOM, 404: ROOM_NOT_FOUND}, scope="queues:write", body=management.RoomPatch,
    notes=" Only the settings sent change; a change reaches visitors at their next poll. An"
    " action opens (now, or at a time), pauses, closes or re-rolls a room's draw, alone or with"
    " changes. Nothing is changed when any field is refused. Audited as queue.updated, each"
    " change with its value before and after.")
DELETE_QUEUE = Route(
    ROOM_PATH, "delete", "deleteQueue",
    "Delete a room and all its state; its tickets answer 410, its slug is free",
    READ | {204: DELETED, 404: ROOM_NOT_FOUND}, scope="queues:write",
    notes=" Everything the room holds is lost: its line, its admissions' slots, its events, its"
    " series and its draw; its visitors' next poll answers 410. Its audit events stay."
    " Audited as queue.deleted.")
CREATE_INVITES = Route(
    ROOM_PATH + "/invites", "post", "createInvites",
    "Sign invite links: straight in (skip) or ahead of the public line (priority)",
    WRITE | {201: INVITES, 404: ROOM_NOT_FOUND}, scope="queues:write",
    body=management.InviteCreate,
    notes=" Each invite is spent once per visitor identity, at most uses times in all (beyond:"
    " 409 InviteSpent at enter); after expiresAt 410 InviteExpired; one forged or of another"
    " room 401 TokenInvalid; one withdrawn 410 InviteWithdrawn. Each is on record"
    " (listInvites: spent counts, state) and may be withdrawn one by one (withdrawInvite); it"
    " stays valid until then, expiresAt, the room's deletion or the signing key's retirement."
    " The answer's ids are the invites', in the same order.")
LIST_INVITES = Route(
    ROOM_PATH + "/invites", "get", "listInvites",
    "The room's issued invites, newest first, with how much each was used",
    READ | {200: INVITE_PAGE, 400: BAD_REQUEST, 404: ROOM_NOT_FOUND}, scope="queues:read",
    query=invite_records.InviteQuery,
    notes=" Each invite issued is on record until the room is deleted: its lane, uses, expiry,"
    " how many visitors it has let in (spent) and whether it was withdrawn, with its state on"
    " the room's clock now. limit at a time (up to 500); pass nextCursor for older ones."
    " Invites signed by releases that kept no record are not listed.")
WITHDRAW_INVITE = Route(
    ROOM_PATH + "/invites/{inviteId}", "delete", "withdrawInvite",
    "Withdraw one invite: nobody new enters with it from now on",
    WRITE | {204: WITHDRAWN, 404: INVITE_NOT_FOUND}, scope="queues:write",
    notes=" From now on entering with it answers 410 InviteWithdrawn (its link stops working"
    " for anyone not already in); visitors already in the room with it keep their spots and"
    " admissions. It cannot be undone: issue a new invite instead. Audited as"
    " queue.invite.withdrawn.")
KEYS_PATH = "/api/management/v1/keys"
KEY_NOTES = (
    " Keys belong to one environment, which is an isolation boundary: a key sees, creates and"
    " revokes only its own environment's keys. A new environment's first key comes from the"
    " command line (anteroom keys create) or the first start's setup token, never from here.")
LIST_KEYS = Route(
    KEYS_PATH, "get", "listKeys", "The environment's secret keys (never their secrets)",
    READ | {200: KEY_LIST}, scope="keys:write",
    notes=" Each key's id, scopes, public key, creation time and whether it is revoked, oldest"
    " first." + KEY_NOTES)
CREATE_KEY = Route(
    KEYS_PATH, "post", "createKey", "Create a key pair in the caller's environment",
    WRITE | {201: KEY_CREATED}, scope="keys:write", body=keys.KeyCreate,
    notes=" The answer carries the secret (sk_…) this once: Anteroom keeps only its hash, and"
    " neither the log nor the audit log ever holds it. A key grants only scopes it holds itself"
    " (403 naming scopes otherwise). Audited as key.created, with the new key's id and scopes."
    + KEY_NOTES)
REVOKE_KEY = Route(
    KEYS_PATH + "/{keyId}", "delete", "revokeKey",
    "Revoke a key: its secret and its public key stop working at once",
    READ | {204: REVOKED, 400: BAD_REQUEST, 404: KEY_NOT_FOUND, 409: KEY_IN_USE},
    scope="keys:write",
    notes=" Scripts using the secret get 401 from their next call, its console sessions end, and"
    " pages and apps using its public key are refused (processes that saw it forget it within"
    " seconds). The key making the call cannot revoke itself (409 KeyInUse): use another key,"
    " so nobody locks themselves out by accident; nor one holding a scope the caller lacks (403"
    " naming keyId), so a narrow key cannot lock out a wider one. Audited as key.revoked."
    + KEY_NOTES)
LIST_AUDIT_EVENTS = Route(
    "/api/management/v1/audit", "get", "listAuditEvents",
    "The environment's audit events, newest first", READ | {200: AUDIT_PAGE, 400: BAD_REQUEST},
    scope="audit:read", query=audit.AuditQuery,
    notes=" Who did what, and when: rooms created, changed (each setting before and after),"
    " deleted, invites signed or withdrawn, sessions revoked, keys created or revoked, and the"
    " safety net's own switches. A page"
    " holds up to limit events; pass its nextCursor to get the next, older page.")
GET_QUEUE_FAIRNESS = Route(
    ROOM_PATH + "/fairness", "get", "getQueueFairness",
    "The opening's fairness report, public or not",
    READ | {200: FAIRNESS, 404: NO_DRAW}, scope="queues:read",
    notes=" The same document as /queue/{slug}/fairness.json, whatever the room's"
    " publicFairness says; entrantsUrl is null here (the list is public with the report).")
NOT_MODIFIED = Reply("NotModified", "Unchanged since the ETag sent in If-None-Match.")
PUBLIC_BUSY = Reply("PublicBusy", "Too many requests from this address (ANTEROOM_LIMIT_FAIRNESS), "
                    "or Redis is out of memory.", ("RateLimited", "Busy"), headers=WAIT)
PUBLIC = {304: NOT_MODIFIED, 401: VISITOR_UNAUTHORIZED, 404: NO_DRAW, 429: PUBLIC_BUSY,
          503: UNAVAILABLE}
PUBLIC_NOTES = (
    " Answered with a strong ETag (304 to If-None-Match), gzip on Accept-Encoding, and"
    " Cache-Control: immutable for a list named by its draw's root (entrantsUrl), no-cache"
    " otherwise; limited per address.")
GET_FAIRNESS = Route(
    "/queue/{slug}/fairness.json", "get", "getFairness",
    "A room's draw: its commitment from scheduling on, its seed, root and count once drawn",
    PUBLIC | {200: FAIRNESS}, tag="fairness", query=fairness.FairnessQuery, notes=PUBLIC_NOTES)
GET_DRAWN_ENTRANTS = Route(
    "/queue/{slug}/fairness/entrants.json", "get", "getDrawnEntrants",
    "A drawn room's entrant ids (salted hashes) in drawn order",
    PUBLIC | {200: DRAWN_ENTRANTS}, tag="fairness", query=fairness.EntrantsQuery,
    notes=PUBLIC_NOTES)
EVENTS_PATH = ROOM_PATH + "/events"
EVENT_NOTES = (
    " Times are epoch ms of the room's clock. The overrides apply inside the scripts from"
    " startsAt to endsAt (no cron: nothing is missed when nobody polls, once across"
    " instances); events of a room never overlap (409 EventOverlap). Audited as queue.updated"
    " with the change under events.<id>.")
LIST_EVENTS = Route(
    EVENTS_PATH, "get", "listQueueEvents", "The room's scheduled events",
    READ | {200: EVENT_LIST, 404: ROOM_NOT_FOUND}, scope="queues:read", notes=EVENT_NOTES)
CREATE_EVENT = Route(
    EVENTS_PATH, "post", "createQueueEvent",
    "Schedule an event: a window that overrides some of the room's settings",
    WRITE | {201: EVENT_CREATED, 404: ROOM_NOT_FOUND, 409: EVENT_CONFLICT},
    scope="queues:write", body=events.EventCreate, notes=EVENT_NOTES)
UPDATE_EVENT = Route(
    EVENTS_PATH + "/{eventId}", "patch", "updateQueueEvent",
    "Change an event (a running one: only its end and overrides)",
    WRITE | {200: EVENT, 404: EVENT_NOT_FOUND, 409: EVENT_CONFLICT}, scope="queues:write",
    body=events.EventPatch, notes=EVENT_NOTES)
DELETE_EVENT = Route(
    EVENTS_PATH + "/{eventId}", "delete", "cancelQueueEvent",
    "Cancel an event: a scheduled one is removed, a running one ends now (kept on record)",
    READ | {204: DELETED, 404: EVENT_NOT_FOUND, 409: EVENT_CONFLICT}, scope="queues:write",
    notes=EVENT_NOTES)
HEALTHZ = Route(
    "/healthz", "get", "healthz", "Liveness: the process is up", {200: ALIVE}, tag="health",
    notes=" Answers without touching Redis, so an orchestrator restarts the process only when"
    " it is stuck, never because Redis is away.")
READYZ = Route(
    "/readyz", "get", "readyz", "Readiness: Redis answers and every Lua script is loaded",
    {200: READY, 503: NOT_READY}, tag="health",
    notes=" A load balancer sends visitors to this instance only while it answers 200; the"
    " cause of a 503 is written to the service's log, never to the caller.")
OPENAPI = Route(
    "/api/openapi.json", "get", "openapi", "This document", {200: DOCUMENT}, tag="docs",
    notes=" The OpenAPI 3.1 description of every call, built from the same declarations the"
    " service validates requests and writes answers with, so it cannot drift from them.")
# In the document's order.
ROUTES = (
    ARRIVE, JOIN_QUEUE, CREATE_CHALLENGE, IDENTIFY, ENTER_QUEUE, POLL_QUEUE, LEAVE_QUEUE,
    NOTIFY_ME, REFRESH_ADMISSION, REVOKE_SESSION, LIST_QUEUES, CREATE_QUEUE, GET_QUEUE,
    GET_QUEUE_SERIES, UPDATE_QUEUE,
    DELETE_QUEUE, CREATE_INVITES, LIST_INVITES, WITHDRAW_INVITE, LIST_EVENTS, CREATE_EVENT,
    UPDATE_EVENT, DELETE_EVENT, LIST_AUDIT_EVENTS, LIST_KEYS, CREATE_KEY, REVOKE_KEY,
    GET_QUEUE_FAIRNESS, GET_FAIRNESS, GET_DRAWN_ENTRANTS, HEALTHZ, READYZ, OPENAPI,
)
# fmt: on


def answered(result: Any) -> ResponseReturnValue:
    """A view's result as Flask takes it: an answer model (alone or first in Flask's
    ``(body, status)``/``(body, headers)`` tuples) as its JSON, just the fields it was given."""
    if isinstance(result, BaseModel):
        return jsonify(model_json(result))
    if isinstance(result, tuple) and result and isinstance(result[0], BaseModel):
        return (jsonify(model_json(result[0])), *result[1:])  # type: ignore[return-value]
    return result  # type: ignore[no-any-return]


def model_json(model: BaseModel) -> Any:
    """An answer model as its JSON value: just the fields it was given."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def view(bp: Blueprint, route: Route) -> Callable[[View], View]:
    """Register a view for ``route`` on ``bp`` (its rule read from the route), its answer
    models serialised; the view is returned wrapped, so other rules may reuse it."""

    def wrap(fn: View) -> View:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> ResponseReturnValue:
            return answered(fn(*args, **kwargs))

        prefix = bp.url_prefix or ""
        if not route.rule.startswith(prefix):
            raise ValueError(f"{route.path} is not under {bp.name}'s {prefix}")
        bp.add_url_rule(route.rule[len(prefix) :], view_func=run, methods=[route.method.upper()])
        return run

    return wrap
