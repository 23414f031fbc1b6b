-- Re-roll a committed draw before it is made: a new seed and a new, published commitment; the old
-- commitment stays listed as withdrawn (field `dwd`, a JSON list), so a re-roll is visible.
-- needs: _base, _room
-- KEYS: room
-- ARGV: the new seed (64 hex), its commitment (SHA-256 hex); the room's drawBeacon now: url,
--   genesisTime (s), period (s) ('' when it names none).
-- Reply: {'OK', committedAt ms} or {'ERR', 'NoDraw', 0} when no draw waits to be made, or it
--   waits for its beacon and no beacon is named now (or the round's value is already known),
--   or the draw is shared across regions: one region's new seed would split the one commitment
--   (a shared draw is re-rolled by scheduling the opening again: docs/regions-policies.md).
local seed, commitment = ARGV[1], ARGV[2]
local beacon_url, genesis, period = ARGV[3] or '', tonumber(ARGV[4]) or 0, tonumber(ARGV[5]) or 0
local room = load_room()
if not room then return err('RoomNotFound') end
if room.draw_state ~= 'c' then return err('NoDraw') end
if (redis.call('HGET', ROOM, @drawRegion) or '') ~= '' then return err('NoDraw') end
local now = clock(room)
local b = redis.call('HMGET', ROOM, @{beaconUrl, beaconValue})
local waits_for_beacon = now >= room.opens_at and (b[@beaconUrl] or '') ~= ''
if waits_for_beacon then
  -- The named round may be public now: a new seed alone could be chosen against it. So the
  -- new seed takes a new round too, one not emitted yet (the first at or after now + 1 ms), of
  -- the beacon the room names now (a beacon that never answered may be replaced); without
  -- one, or once the old round's value is known, there is no re-roll.
  if (b[@beaconValue] or '') ~= '' or beacon_url == '' or period <= 0 then return err('NoDraw') end
  local since = now + 1 - genesis * 1000
  local round = math.max(1, math.ceil(since / (period * 1000)) + 1)
  redis.call('HSET', ROOM, @beaconUrl, beacon_url, @beaconRound, fmt(round), @beaconValue, '',
    @beaconWaitingSince, 0)
end
local v = redis.call('HMGET', ROOM, @{commitment, committedAt, withdrawn})
local withdrawn = (v[@withdrawn] and v[@withdrawn] ~= '') and cjson.decode(v[@withdrawn]) or {}
withdrawn[#withdrawn + 1] = {commitment = v[@commitment], committedAt = tonumber(v[@committedAt]),
  withdrawnAt = now}
redis.call('HSET', ROOM, @drawSeed, seed, @commitment, commitment, @committedAt, fmt(now),
  @withdrawn, cjson.encode(withdrawn))
return {'OK', fmt(now)}
