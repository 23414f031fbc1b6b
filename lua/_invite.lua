-- needs: _base
-- Invite links (docs/operators.md, "Invite links"). Hash INV holds, per invite id, its uses so far
-- (field = the id), each identity that spent it (field = '<id>|<vid>') and, once its operator
-- withdrew it, when (field = '<id>|w', room clock ms; a vid is never one character long,
-- withdraw_invite.lua writes it). Invited spots get
-- order keys below every other kind: the draw's keys fill [-2^51, 0), lottery keys [0, 2^52),
-- later arrivals [2^52, ...). The skip lane sorts before the priority lane, each by ticket, so
-- invited spots keep their arrival order among themselves and nobody else's order changes.
local SKIP_LANE = $SKIP_LANE -- 2^53: a skip-lane key is its ticket - 2^53
local PRIORITY_LANE = $PRIORITY_LANE -- 2^52: a priority-lane key is its ticket - 2^52

-- The invite a newcomer presents, from ARGV after the limit counters: id ('' for none),
-- expiry (ms, room clock), uses (in all), lane ('s' skip, 'p' priority).
local function read_invite(at)
  return {id = ARGV[at] or '', expires = tonumber(ARGV[at + 1]) or 0,
    uses = tonumber(ARGV[at + 2]) or 0, lane = ARGV[at + 3], spent_before = false}
end

-- The lane `invite` gives `vid` (nil: none presented), or nil and an error reply: expired on
-- the room's clock, withdrawn by the operator, or used up by `uses` other identities. It spends nothing. A lane with no
-- invite (id '') is a request a bypass rule let through: the skip lane, nothing to spend.
-- An invite puts each identity in its lane once: one that spent it and has no spot any more
-- (it left, or its admission is over) enters the public line, as without it; how long a
-- visit lasts is the room's session rules' to say (sessionRenewal), never a second entry's.
local function invite_lane(invite, vid, now)
  if invite.id == '' then return invite.lane end
  if now >= invite.expires then return nil, err('InviteExpired') end
  if redis.call('HEXISTS', INV, invite.id .. '|w') == 1 then return nil, err('InviteWithdrawn') end
  invite.spent_before = redis.call('HEXISTS', INV, invite.id .. '|' .. vid) == 1
  if invite.spent_before then return nil end
  if (tonumber(redis.call('HGET', INV, invite.id)) or 0) >= invite.uses then
    return nil, err('InviteSpent')
  end
  return invite.lane
end

-- Books one use of `invite` by `vid`; the same identity entering again with it uses none.
local function spend_invite(invite, vid)
  if invite.id == '' or invite.spent_before then return end
  redis.call('HSET', INV, invite.id .. '|' .. vid, '1')
  redis.call('HINCRBY', INV, invite.id, 1)
end

local function lane_key(lane, ticket)
  return (lane == 's' and -SKIP_LANE or -PRIORITY_LANE) + ticket
end
