-- Close a room: every live spot expires, the opening's counters restart, back to idle. A new
-- generation makes every queue token of the old one answer TicketGone. The life counters
-- (nent, nfull, nleft, nswept) and the wait histogram are kept, and so is a finished draw (its
-- report stays public until the next opening); a draw not yet made is dropped with the pool, its
-- commitment kept as withdrawn.
-- needs: _base, _room, _bucket, _blocks, _pause
-- KEYS: room spots line active adm bks blk drawn pqz used park mail mailq
-- ARGV: none. Reply: {'OK'} or {'ERR', 'RoomNotFound', 0}.
local room = load_room()
if not room then return err('RoomNotFound') end
for _, score in ipairs(redis.call('SMEMBERS', BKS)) do redis.call('UNLINK', bucket(score)) end
redis.call('UNLINK', SPOTS, ACTIVE, ADM, BKS, LINE, BLOCKS, PQZ, USED)
-- parked spots' addresses and return links go with their spots
redis.call('UNLINK', PARK, MAIL, MAILQ)
-- an event's pre-queue goes with the line it was in (its tickets start again from 1)
redis.call('HDEL', ROOM, @prequeueState, @prequeueFirst, @prequeueLast, @prequeueUntil,
  @prequeueCursor)
redis.call('HSET', ROOM, @status, 'idle', @generation, room.generation + 1, @ticketsTaken, 0,
  @admitted, 0, @bank, 0, @accruedAt, 0, @opensAt, 0, @peakActive, 0, @seed, '',
  @sweepCursor, '0', @releasing, '0', @convictFrom, '', @blocksCounted, 1)
if room.status == 'paused' then end_pause(clock(room)) end -- a close ends a pause
if room.draw_state ~= 'd' then
  -- A commitment closed before its draw is withdrawn, and stays listed with the next opening's
  -- commitment: a close and a new opening must not be a re-roll nobody sees.
  local v = redis.call('HMGET', ROOM, @{commitment, committedAt, withdrawn})
  local withdrawn = (v[@withdrawn] and v[@withdrawn] ~= '') and cjson.decode(v[@withdrawn]) or {}
  if room.draw_state == 'c' and v[@commitment] and v[@commitment] ~= '' then
    withdrawn[#withdrawn + 1] = {commitment = v[@commitment],
      committedAt = tonumber(v[@committedAt]),
      withdrawnAt = clock(room)}
  end
  redis.call('UNLINK', DRAWN)
  redis.call('HSET', ROOM, @drawState, '', @drawSeed, '', @drawSalt, '', @commitment, '',
    @committedAt, 0, @withdrawn, #withdrawn > 0 and cjson.encode(withdrawn) or '',
    @drawHolder, '', @drawLease, 0, @drawRoot, '', @drawEntrants, 0)
end
return {'OK'}
