-- needs: _base
-- Admissions seen in use (USED: '<vid>:<deal number>', while the admission lives): a renewal
-- (refresh.lua; the edge and the agent renew an admission while its visitor browses) marks one.
-- One that runs out unmarked is counted as never used (`unusedAdmissions`): its visitor was
-- let in and never came, or came and left before the first renewal was due.
local function use_member(vid, spot) return vid .. ':' .. fmt(spot.deal_number) end

local function mark_used(vid, spot) redis.call('SADD', USED, use_member(vid, spot)) end

-- The admission ended otherwise (a leave, a revocation, a renewal too late): no count.
local function forget_use(vid, spot)
  if spot.state == 'a' then redis.call('SREM', USED, use_member(vid, spot)) end
end

-- The admission ran out (past its expiry and grace): counted unless it was seen in use.
local function book_ran_out(vid, spot)
  if redis.call('SREM', USED, use_member(vid, spot)) == 0 then
    redis.call('HINCRBY', ROOM, @unusedAdmissions, 1)
  end
end
