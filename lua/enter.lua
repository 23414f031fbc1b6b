-- Enter the line: one spot per (room, vid); a repeated entry returns the same spot. Like poll,
-- it carries a step of the sweep along, so a full line frees its abandoned places by itself.
-- needs: _base, _room, _events, _spot, _revocations, _drain, _sweep, _regroup, _answer, _admissions, _cadence, _expiry, _invite, _safety_net, _use
-- KEYS: room spots line active adm rvk bks waits blk inv used
--   then, after those, the per-address limit's counters (one per window; none on a Redis
--   Cluster, where they live on another shard and are counted apart).
-- ARGV: vid, session jti, score (0-100), network tag ('' unless the room binds it), spent
--   ('<generation>:<ticket>:<minute>' of a ticket whose polls this minute are used up, else ''),
--   the number of limit counters n, then per counter its limit and its window (seconds), then
--   only for a newcomer with an invite (see read_invite in _invite.lua): its id, expiry (ms),
--   uses and lane; or, for one a bypass rule lets through, '', 0, 0, 's' (the skip lane).
-- Reply: a queue answer (see `answer` in _answer.lua) or {'ERR', code, retry s}; the address
--   over its limit: {'ERR', 'AddressLimited', s until its window resets}; a newcomer to a
--   room in mode reject: {'ERR', 'RoomClosed', 0}; an invite expired, withdrawn or used up:
--   {'ERR', 'InviteExpired' | 'InviteWithdrawn' | 'InviteSpent', 0}.
local POST_OPEN = $POST_OPEN_KEY -- 2^52: post-open order keys sort behind every pool key
local POOL_TICKETS = 16777216      -- 2^24 tickets fit beside a 28-bit lottery number
local vid, session_jti, score, network_tag, spent =
  ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
-- The per-address limit first, counted as `limits`' fixed window counts it (same keys, so a
-- worker counting it apart agrees): every window counts the entry, over in any refuses it.
local counters, over = tonumber(ARGV[6]) or 0, -1
for i = 1, counters do
  local key, limit, window = KEYS[11 + i], tonumber(ARGV[5 + 2 * i]), ARGV[6 + 2 * i]
  local count = redis.call('INCRBY', key, 1)
  if count == 1 then redis.call('EXPIRE', key, window) end
  if count > limit then over = math.max(over, redis.call('TTL', key), 1) end
end
if over > 0 then return err('AddressLimited', over) end
local room = load_room()
if not room then return err('RoomNotFound') end
if room.status == 'idle' then
  return @ANSWER{status = 'idle', ticket = -1, position = -1, eta = -1, opensAt = 0,
    pollAfterMs = 0, roomStatus = 'idle', generation = room.generation, admittedAt = 0,
    expiresAt = 0, dealNumber = 0, score = 0, now = 0}
end
local now = clock(room)
at_events(room, now)
if revoked(vid, session_jti, now, true) then return err('SessionRevoked') end
local spot = get_spot(vid)
if spot and spot.state == 'a' and admission_gone(spot.expires, now) then
  book_ran_out(vid, spot)
  drop_spot(vid, spot)
  spot = nil
end

if spot then -- found again (a second tab, a reload)
  local wait = limited(room.generation, spot.ticket, now, spent)
  if wait then return err('RateLimited', wait) end -- a refused entry changes nothing
  local changed = mark_seen(room.abandon_after, spot, now)
  if spot.state == 'w' and (spot.session_jti ~= session_jti or spot.network_tag ~= network_tag) then
    spot.session_jti, spot.network_tag, changed = session_jti, network_tag, true
  end
  if spot.state == 'w' and spot.score ~= score then
    -- a new session with another score may move between line and held, at its own place
    local order_key = unplace(vid, spot.score)
    if order_key then place(room.hold_score, vid, score, order_key) end
    spot.score, changed = score, true
  end
  if changed then put_spot(vid, spot) end
  sweep_step(room, now, SWEEP_STEP) -- after the spot's own `seen`: a visitor never sweeps itself
  regroup_step(room, REGROUP_CARRIED)
  local dealt = drain(room, now)
  save_room(room, true)
  if dealt > 0 then spot = get_spot(vid) end -- the drain may have admitted this spot
  return keep_for_cadence(room, vid, spot, answer(room, vid, spot, now), now)
end

local invite = read_invite(7 + 2 * counters)
-- a reject room takes no new entries (an invitee's neither); those already in it were answered
-- above, as before. A request a bypass rule lets through (the skip lane without an invite:
-- the operator's own monitoring, say) passes here as it passes the edge, whatever the mode.
local bypassed = invite.id == '' and invite.lane == 's'
if room.mode == 'reject' and not bypassed then return err('RoomClosed') end
local lane, refused = invite_lane(invite, vid, now)
if refused then return refused end
sweep_step(room, now, SWEEP_STEP) -- before the fullness check: a swept place is free at once
regroup_step(room, REGROUP_CARRIED)
drain(room, now)
local eligible, held = waiting_counts()
local pool = now < room.opens_at -- before opensAt: the lottery pool
if eligible + held >= room.max_waiting or (pool and room.tickets + 1 >= POOL_TICKETS) then
  save_room(room, true)
  redis.call('HINCRBY', ROOM, @refusedFull, 1)
  return err('QueueFull', 60)
end
room.tickets = room.tickets + 1
redis.call('HINCRBY', ROOM, @entries, 1)
spend_invite(invite, vid)
spot = {ticket = room.tickets, score = score, state = 'w', seen = now,
  session_jti = session_jti, network_tag = network_tag, since = now}
if room.safety_net ~= '' then net_step(room, now, true) end -- may start queueing: this one waits
local free = room.capacity == 0 or room.capacity - redis.call('ZCARD', ACTIVE) > 0
local passthrough = room.mode == 'passthrough' -- admitted whatever the rate, within capacity
local open = not pool and score < room.hold_score and room.status == 'open'
if lane == 's' and open and free and not room.region_lease then
  -- the skip lane: straight in within capacity, over and above the rate (no budget spent).
  -- Not across regions: a region cannot see the others' sessions to keep the capacity, so
  -- there the lane waits at the head of the global line (_line_arrival.lua) for the lease
  admit(room, vid, spot, now, lane_key(lane, spot.ticket))
elseif open and eligible == 0 and (passthrough or room.bank >= UNIT) and free
    and not room.prequeue -- an event's pre-queue: every newcomer waits for its draw
    and not room.region_lease then -- across regions: only the lease's drain admits
  -- nobody eligible is waiting and the budget allows: straight in, no queue jumped
  if not passthrough then room.bank = room.bank - UNIT end
  admit(room, vid, spot, now, lane and lane_key(lane, spot.ticket))
else
  local order_key
  if lane then
    order_key = lane_key(lane, room.tickets) -- ahead of the public line, behind earlier invitees
  elseif pool then
    local lottery = tonumber(redis.sha1hex(room.seed .. vid):sub(1, 7), 16)
    order_key = lottery * POOL_TICKETS + room.tickets
  else
    order_key = POST_OPEN + room.tickets
  end
  place(room.hold_score, vid, score, fmt(order_key))
  put_spot(vid, spot)
end
save_room(room)
return keep_for_cadence(room, vid, spot, answer(room, vid, spot, now), now)
