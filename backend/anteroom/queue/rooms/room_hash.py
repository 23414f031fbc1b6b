"""The room hash (``KeySpace.room``): every field it holds, declared once.

The stored names are short and stay as they are (rooms already stored keep them; renaming one
would need a data migration). This table gives each a readable name, the API's where the API
shows the field, and its meaning. The scripts in ``lua/`` read and write the stored names as
literals (Lua cannot import this), and the Python readers look them up here;
tests/unit/test_room_hash.py fails on a stored name used in either but not declared here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RoomField:
    """One field of the room hash: readable name, stored name, what it holds."""

    name: str
    stored: str
    meaning: str


FIELDS: tuple[RoomField, ...] = (
    # Who the room is.
    RoomField("id", "rid", "the room's id (q + 16 hex digits)"),
    RoomField("environment", "env", "the environment the room belongs to"),
    # Configuration (room_config.FIELDS gives each its default and check).
    RoomField("slug", "slug", "the room's name in URLs, unique in its environment"),
    RoomField("name", "name", "the room's display name"),
    RoomField("ratePerMinute", "rate", "admissions a minute"),
    RoomField("capacity", "cap", "most active admissions at once (0: no bound)"),
    RoomField("admissionTtlSec", "ttl", "seconds an active slot lasts unless refreshed"),
    RoomField("holdScore", "hold", "signal score from which a spot is held"),
    RoomField("noScriptScore", "nss", "score of a visitor without JavaScript ('': default)"),
    RoomField("bindIp", "bip", "1 when tokens are bound to the network they came from"),
    RoomField("redirectUrl", "url", "where an admitted visitor is sent"),
    RoomField("maxWaiting", "maxw", "longest line before QueueFull"),
    RoomField("abandonAfterSec", "aban", "seconds unpolled before a spot may be dropped"),
    RoomField("gracePeriodSec", "grace", "seconds a quiet spot is kept beyond its cadence's due"),
    RoomField("pollBudgetPerSecond", "pbud", "polls a second the line behind the front may cost"),
    RoomField("failMode", "fm", "what the web tier does when Redis is down: closed or open"),
    RoomField("notice", "ntc", "waiting page notice, JSON ('' for none)"),
    RoomField("closedMessage", "cmsg", "message shown while closed, JSON ('' for none)"),
    RoomField("theme", "thm", "waiting page theme, JSON ('' for none)"),
    RoomField("mode", "mode", "queueing mode: fifo, random, passthrough, reject (rooms.MODES)"),
    RoomField("bypass", "byp", "bypass rules, JSON, secrets as scrypt hashes ('' for none)"),
    RoomField("sessionRenewal", "srn", "0 when admissions end at their expiry (never renewed)"),
    RoomField("crawlers", "crw", "verified crawlers: queue, pass or engines (a,b); web tier only"),
    RoomField("agentLaneRatePerMinute", "aglr", "the signed agents' lane's admissions a minute"),
    RoomField("agents", "agt", "signed agents' policies by directory host, JSON; web tier only"),
    RoomField("notify", "ntf", "1 when a waiting visitor may leave an address to be told"),
    RoomField("returnWindowSec", "rws", "seconds a notified visitor's return link is honoured"),
    RoomField("drawBeacon", "dbc", "public randomness beacon a draw takes, JSON ('' for none)"),
    # Scheduled events (queue/rooms/room_events.py, lua/_events.lua).
    RoomField("events", "evs", "the room's scheduled events, JSON sorted by startsAt ('' none)"),
    RoomField("eventsVersion", "evv", "bumped by every write of the events (compare-and-set)"),
    RoomField(
        "eventState",
        "evo",
        "next event boundary and the running event's overrides (absent: no event to come)",
    ),
    RoomField("safetyNet", "snc", "'activeSessions:arrivalsPerMinute:coolDownSec' ('': none)"),
    # An event's own pre-queue (lua/_events.lua, shuffle_prequeue.lua).
    RoomField("prequeueState", "pqs", "'o' collecting, 'p'/'q' its draw being made (absent: none)"),
    RoomField("prequeueFirst", "pqf", "the pre-queue's first ticket (kept after its draw)"),
    RoomField("prequeueLast", "pqt", "its last ticket once closed (0 while collecting)"),
    RoomField("prequeueUntil", "pqu", "the event's startsAt, shown as the entrants' opensAt"),
    RoomField("prequeueCursor", "pqc", "where the draw's current step goes on from"),
    # How Redis keeps the hash (create_room.lua): a value longer than 64 bytes, so the hash is a
    # hash table (each field read in O(1)) rather than a listpack scanned per field.
    RoomField("hashTable", "hte", "65 dashes: keeps the room's hash a hash table"),
    # State of the room and of its current opening.
    RoomField("status", "st", "idle, open or paused"),
    RoomField("generation", "gen", "opening number: a close starts the next"),
    RoomField("opensAt", "oa", "when the opening starts (room clock ms; 0 when idle)"),
    RoomField("seed", "seed", "the opening's random seed of the pre-opening lottery"),
    # The opening's draw (docs/draw.md; queue/draw.py), when it has a pool.
    RoomField("drawState", "dst", "'' no draw, 'c' committed, 'r' being drawn, 'd' drawn"),
    RoomField("drawSeed", "dsd", "the draw's seed (64 hex): secret until drawn"),
    RoomField("drawSalt", "dsl", "the opening's salt of entrant ids (hex): never published"),
    RoomField("commitment", "dcm", "SHA-256 hex of the draw's seed, published at once"),
    RoomField("committedAt", "dca", "room clock ms the commitment was made"),
    RoomField("withdrawn", "dwd", "JSON list of re-rolled commitments ('' for none)"),
    RoomField("drawHolder", "dlk", "token of the process drawing ('' when none)"),
    RoomField("drawLease", "dls", "room clock ms until which the drawing process holds it"),
    RoomField("drawRoot", "drt", "Merkle root of the entrant ids in drawn order"),
    RoomField("drawEntrants", "dnn", "entrants in the draw"),
    RoomField("beaconUrl", "dbu", "the beacon's base URL named at commitment ('' for none)"),
    RoomField("beaconRound", "dbr", "the beacon round named at commitment (0 for none)"),
    RoomField("beaconValue", "dbv", "that round's randomness (hex), once fetched ('' before)"),
    RoomField("beaconWaitingSince", "dbw", "room clock ms the draw began waiting for it (0)"),
    # A draw shared across regions (queue/regions/shared_draw.py): this region's name in it,
    # and once every region has drawn, the regions' parts and their global root (JSON).
    RoomField("drawRegion", "dre", "this region's name in a draw across regions ('' for none)"),
    RoomField("drawRegions", "drs", "JSON {globalRoot, regions} once all regions drew ('')"),
    RoomField("ticketsTaken", "tk", "tickets handed out in this opening"),
    RoomField("bank", "bank", "admissions earned and not yet dealt (units of 1/60,000)"),
    RoomField("accruedAt", "last", "room clock ms up to which the bank has been earned"),
    RoomField("peakActive", "peak", "most active admissions seen at once in this opening"),
    RoomField("blocksCounted", "blkz", "1 when the line's blocks are counted (lua/_blocks.lua)"),
    RoomField("lastTick", "tick", "room clock ms of the last tick that worked"),
    RoomField(
        "failOpenLease",
        "fol",
        "room clock ms until which every process has booked its outage admissions (absent:"
        " none registered); the drain waits from then (lua/check_in_fail_open.lua)",
    ),
    RoomField(
        "failOpenHold",
        "foh",
        "room clock ms until which the drain waits after a booking of outage admissions, for"
        " processes no register knows (lua/book_fail_open.lua)",
    ),
    # A room across regions (queue/regions/, lua/_region_gate.lua): the lease this region holds.
    RoomField(
        "regionLease",
        "rgl",
        "'epoch:ceiling:watermark:expires:fallback' of the region's lease from the coordinator"
        " (absent: the room is in one region only)",
    ),
    # The room's clock (tests and tooling move it; lua/_clock.lua).
    RoomField("clockOffset", "clk", "ms added to Redis TIME"),
    RoomField("pinnedClock", "fix", "ms the clock is pinned at (0: not pinned)"),
    # Bounded passes in progress.
    RoomField("sweepStartedAt", "swt", "room clock ms the sweep pass in progress began"),
    RoomField("sweepCursor", "swc", "the sweep pass's ZSCAN cursor ('0': none in progress)"),
    RoomField("sweepPurgeCursor", "swr", "the sweep's HSCAN cursor over lapsed revocations"),
    RoomField("revokePurgeCursor", "rvc", "revoke.lua's HSCAN cursor over lapsed revocations"),
    RoomField("releasing", "rel", "'1' while a raised holdScore still releases held spots"),
    RoomField("convictFrom", "cvk", "order key a lowered holdScore's pass has reached ('')"),
    RoomField("revocationCount", "rvn", "bumped on every revocation: readers re-read on change"),
    # Counters over the room's life (a close keeps them; room_series samples them).
    RoomField("admitted", "dealt", "admissions dealt in this opening (a close restarts it)"),
    RoomField("entries", "nent", "entries taken"),
    RoomField("refusedFull", "nfull", "QueueFull refusals"),
    RoomField("refusedDenied", "ndenied", "QueueDenied refusals (counted by the web tier)"),
    RoomField("refusedBusy", "nbusy", "Busy refusals (counted by the web tier)"),
    RoomField("leaves", "nleft", "spots and slots freed by leave"),
    RoomField("abandoned", "nswept", "spots dropped as abandoned, expired or revoked"),
    RoomField("unusedAdmissions", "nunused", "admissions that ran out with no renewal seen"),
    # Signed agents' arrivals by outcome (counted by the web tier: visit/agents.py).
    RoomField("agentsQueued", "nagq", "verified signed agents queued without proof of work"),
    RoomField("agentsRefused", "nagr", "verified signed agents the agents setting refused"),
    RoomField("agentsInvalid", "nagi", "signed arrivals whose signature did not hold"),
    RoomField("agentsLane", "nagl", "signed agents admitted through the agents' lane"),
    RoomField("notifySent", "nmsent", "turn e-mails sent (queue/line/parking.py)"),
    RoomField("notifyFailed", "nmfail", "tries of a turn e-mail that failed (each retried)"),
    RoomField("notifyGivenUp", "nmlost", "turn e-mails given up after their last try"),
    RoomField("notifyLastError", "nmerr", "the last failed send: 'room clock ms' what failed"),
    # The opening's fairness counts (docs/draw.md): reset when an idle room
    # opens, kept by a close so the last opening's report stays whole.
    RoomField("admittedFromPreQueue", "npre", "admissions of order keys below 2^52 (the pool)"),
    RoomField("admittedLater", "nlate", "admissions of later arrivals (order key from 2^52)"),
    RoomField("outOfOrder", "nooo", "later arrivals admitted below `lak` (must stay 0)"),
    RoomField("lastLaterKey", "lak", "highest later arrival's order key admitted ('' none)"),
    RoomField("heldCount", "nheld", "spots filed as held by score"),
    RoomField("releasedCount", "nrel", "held spots released by a raised holdScore"),
    RoomField("pausedAt", "pat", "room clock ms the pause in progress began (0: none)"),
    RoomField("longestPause", "lps", "longest pause of the opening, ms"),
    RoomField("publicFairness", "pfr", "1 when the fairness report is public (room_config)"),
    # The safety net's state (lua/_safety_net.lua): switched by enter.lua and tick.lua.
    RoomField("safetyNetState", "sns", "'q' while the safety net queues; '' or 'c': calm"),
    RoomField("safetyNetSince", "snt", "room clock ms of the safety net's last switch (none)"),
    RoomField("safetyNetQuietSince", "snq", "room clock ms the queueing room went quiet ('')"),
    RoomField("safetyNetMinute", "snm", "the room clock's minute whose arrivals `sna` counts"),
    RoomField("safetyNetArrivals", "sna", "a safety net room's arrivals in minute `snm`"),
    RoomField("safetyNetArrivalsBefore", "snp", "its arrivals in the minute before `snm`"),
    RoomField("safetyNetSwitches", "snl", "switches tick.lua has not yet handed over, 'q@ms;'"),
)

STORED: dict[str, str] = {f.name: f.stored for f in FIELDS}
STORED_NAMES: frozenset[str] = frozenset(STORED.values())


def stored(name: str) -> str:
    """The stored name of the room hash's field ``name`` (KeyError for an undeclared one)."""
    return STORED[name]
