-- Claim the turn e-mails that are due (turns.lua queued them): each claimed one is due again
-- `lease` ms later, so one process sends it and another takes it over only if that one never
-- says how it went (mail_done.lua). A spot's fields in MAIL: `a:<vid>` its address (until
-- sent), `t:<vid>` its turn (ms; until its return link is used), `n:<vid>` its tries, `l:<vid>` its
-- language (none: English). One due
-- with no address or no turn left (sent and its return window over, used, given up) is
-- deleted.
-- needs: _base, _room
-- KEYS: room mail mailq
-- ARGV: most to claim, lease (ms).
-- Reply: {vid, try (1, 2 …), turn ms, address, language ('' English), …}.
local room = load_room()
if not room then return {} end
local now = clock(room)
local due = redis.call('ZRANGE', MAILQ, '-inf', fmt(now), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for _, vid in ipairs(due) do
  local address, turn, lang = unpack(redis.call('HMGET', MAIL, 'a:' .. vid, 't:' .. vid,
    'l:' .. vid))
  if address and turn then
    local tries = redis.call('HINCRBY', MAIL, 'n:' .. vid, 1)
    redis.call('ZADD', MAILQ, fmt(now + tonumber(ARGV[2])), vid)
    out[#out + 1] = vid; out[#out + 1] = tries; out[#out + 1] = turn; out[#out + 1] = address
    out[#out + 1] = lang or ''
  else
    redis.call('HDEL', MAIL, 'a:' .. vid, 't:' .. vid, 'n:' .. vid, 'l:' .. vid)
    redis.call('ZREM', MAILQ, vid)
  end
end
return out
