-- Open (or resume) a room. Resuming a paused room keeps its counters, shuffle, opensAt and draw;
-- paused time earns nothing. Opening an idle room at a future opensAt commits its draw at once
-- (docs/draw.md): the seed is stored, secret, beside its published commitment.
-- needs: _base, _room, _pause
-- KEYS: room drawn
-- ARGV: opensAt (epoch ms, '' for now), a fresh random seed (the pre-open lottery's), the draw's
--   seed (64 hex), the opening's entrant-id salt (hex), the seed's commitment (SHA-256 hex),
--   the beacon's base URL ('' for none) and its round (queue/draw/draw_beacon.py; '' for none),
--   this region's name when the draw is shared across regions (queue/regions/shared_draw.py:
--   the seed and round are then the shared commitment's; '' for a room in one region).
-- Reply: {'OK', status now} or {'ERR', 'RoomNotFound', 0}.
local opens_at, seed = tonumber(ARGV[1]), ARGV[2]
local draw_seed, salt, commitment = ARGV[3], ARGV[4], ARGV[5]
local beacon_url, beacon_round = ARGV[6] or '', ARGV[7] or ''
local draw_region = ARGV[8] or ''
local room = load_room()
if not room then return err('RoomNotFound') end
local now = clock(room)
if room.status == 'paused' then
  redis.call('HSET', ROOM, @status, 'open', @accruedAt, fmt(now))
  end_pause(now)
elseif room.status == 'idle' then
  opens_at = opens_at or now
  -- a past opensAt is taken as given: accrual starts there (capped like any other quiet time)
  redis.call('HSET', ROOM, @status, 'open', @opensAt, fmt(opens_at), @accruedAt,
    fmt(math.min(opens_at, now)), @bank, 0, @seed, seed)
  -- the opening's fairness counts start afresh (a close keeps the last opening's for its report)
  redis.call('HSET', ROOM, @admittedFromPreQueue, 0, @admittedLater, 0, @outOfOrder, 0,
    @lastLaterKey, '', @heldCount, 0, @releasedCount, 0, @pausedAt, 0, @longestPause, 0)
  -- the last opening's draw gives way to this one's; only a future opensAt has a pool to draw.
  -- Commitments withdrawn by a close before their draw stay listed (close_room.lua) until a
  -- draw is made: a finished draw's own list went with its report.
  local withdrawn = room.draw_state == 'd' and '' or (redis.call('HGET', ROOM, @withdrawn) or '')
  redis.call('UNLINK', DRAWN)
  redis.call('HSET', ROOM, @drawState, '', @drawSeed, '', @drawSalt, '', @commitment, '',
    @committedAt, 0, @withdrawn, withdrawn, @drawHolder, '', @drawLease, 0, @drawRoot, '',
    @drawEntrants, 0, @beaconUrl, '', @beaconRound, 0, @beaconValue, '', @beaconWaitingSince, 0,
    @drawRegion, '', @drawRegions, '')
  if opens_at > now then
    -- the beacon round is named with the commitment, and like the seed never changes after
    redis.call('HSET', ROOM, @drawState, 'c', @drawSeed, draw_seed, @drawSalt, salt,
      @commitment, commitment, @committedAt, fmt(now), @beaconUrl, beacon_url,
      @beaconRound, beacon_url ~= '' and beacon_round or 0, @drawRegion, draw_region)
  end
end
return {'OK', redis.call('HGET', ROOM, @status)}
