-- The poll of a spot far from the head, for the common case: it writes nothing, so it may run
-- as EVALSHA_RO on a replica. It answers exactly what poll.lua would answer when the spot is
-- waiting, eligible, more than NEAR_HEAD from the head and not revoked, no sweep pass or
-- regrouping is due and the drain is owed nothing. Otherwise it replies {'MORE'} and the engine
-- runs poll.lua on the primary, so the drain still runs as soon as anything is owed, whoever
-- polls. When the spot's last-seen booking falls short (see seen_lead in _expiry.lua), its answer
-- says so and the engine books it on the primary with the small book_seen.lua.
-- needs: _base, _clock, _event_state, _record, _due, _expiry, _revocations, _bank, _cadence
-- KEYS: room spots line active rvk
-- ARGV: vid, ticket, generation, session jti ('' in older tickets; poll.lua uses it), spent
--   (see `limited` in _cadence.lua).
-- Reply: poll.lua's waiting answer (see `answer` in _answer.lua; kept-until as booked once
--   book_seen.lua has run) followed by 1 when last-seen
--   must be booked (else 0), {'ERR', 'RateLimited', retry s} or {'MORE'}.
local NEAR_HEAD = 100 -- room_engine.NEAR_HEAD
local MORE = {'MORE'}
local vid, ticket, generation, spent = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[5]

local v = redis.call('HMGET', ROOM, 'gen', 'st', 'clk', 'fix', 'oa', 'rate', 'cap', 'hold',
  'swt', 'swc', 'rel', 'cvk', 'bank', 'last', 'aban', 'pbud', 'mode', 'evo', 'snc', 'sns', 'pqs')
if tonumber(v[1]) ~= generation then return MORE end
if v[21] then return MORE end -- an event's pre-queue or its draw: poll.lua knows who is in it
local n = tonumber
local room = {status = v[2], clock_offset = n(v[3]) or 0, pinned_clock = n(v[4]) or 0,
  opens_at = n(v[5]) or 0, rate = n(v[6]) or 0, capacity = n(v[7]) or 0, hold_score = n(v[8]),
  sweep_started = n(v[9]) or 0, sweep_cursor = v[10] or '0', releasing = v[11] or '0',
  convict_key = v[12] or '', bank = n(v[13]) or 0, accrued_at = n(v[14]) or 0,
  abandon_after = n(v[15]) or 0, poll_budget = n(v[16]) or 5000} -- _room.lua's default
if regroup_due(room.releasing, room.convict_key) then return MORE end
local now = room_clock(room.pinned_clock, room.clock_offset)
local mode = v[17]
if v[18] then -- a scheduled event runs or is to come (see _events.lua)
  local event = parse_event_state(v[18])
  if now >= event.boundary then return MORE end -- the full poll crosses the boundary
  if event.mode ~= '' then mode = event.mode end
  room.rate, room.capacity = event.rate or room.rate, event.capacity or room.capacity
end
-- a calm safety net admits everyone: the mode in force is passthrough (see _safety_net.lua)
if (v[19] or '') ~= '' and v[20] ~= 'q' and mode ~= 'reject' then mode = 'passthrough' end
if mode == 'random' then return MORE end -- no place to answer: the full poll gives the odds
if sweep_due(room.sweep_cursor, room.sweep_started, now) then return MORE end

local open = room.status == 'open'
local live = -1 -- live admissions, read once if capacity bounds the room
if room.capacity > 0 and open then
  live = redis.call('ZCOUNT', ACTIVE, '(' .. fmt(now), '+inf')
end
if open and now >= room.opens_at and not (room.capacity > 0 and live >= room.capacity) then
  local bank = earned(room.bank, room.accrued_at, room.opens_at, room.rate, now)
  if bank >= UNIT then return MORE end -- the drain is owed an admission
  if mode == 'passthrough' then return MORE end -- owed everyone, whatever the bank
end

local raw = redis.call('HGET', SPOTS, vid)
if not raw then return MORE end
local spot_ticket, score, state, seen, session_jti, network_tag = parse_head(raw)
if spot_ticket ~= ticket or state ~= 'w' or score >= room.hold_score then return MORE end
if revoked(vid, session_jti, now) then return MORE end
local wait = limited(generation, ticket, now, spent)
if wait then return err('RateLimited', wait) end

local rank = redis.call('ZRANK', LINE, vid)
if not rank or rank + 1 <= NEAR_HEAD then return MORE end
local position = rank + 1
local eta = -1
if open then
  if room.capacity > 0 and live >= room.capacity then return MORE end -- an ETA from the pace
  eta = eta_at_rate(room.opens_at, room.rate, position, now)
end
local interval = poll_after(position, room.rate / 60, math.max(0, room.opens_at - now),
  redis.call('ZCARD', LINE), room.poll_budget)
local lead = seen_lead(interval, room.abandon_after)
local due = seen_due(seen, now, lead)
if due then seen = seen_booking(room.abandon_after, now, lead) end -- booked by book_seen.lua
return {'waiting', ticket, position, eta, fmt(room.opens_at), interval, room.status,
  generation, 0, 0, '', session_jti, network_tag, 0, score, fmt(now),
  redis.call('ZSCORE', LINE, vid), fmt(seen + room.abandon_after * 1000), due and 1 or 0}
