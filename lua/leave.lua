-- Leave: frees a waiting spot or an admitted visitor's active slot at once. Idempotent.
-- ARGV: vid, ticket, generation.
-- Reply: 1 when a spot or slot was freed, else 0.
local vid, ticket, gen = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local r = load_room()
if not r or r.gen ~= gen then return 0 end
local s = get_spot(vid)
if not s or s.t ~= ticket then return 0 end
drop_spot(vid, s)
redis.call('HINCRBY', ROOM, 'nleft', 1)
return 1
