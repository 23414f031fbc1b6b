-- Leave: frees a waiting spot or an admitted visitor's active slot at once. Idempotent.
-- needs: _room, _spot, _waits, _use
-- KEYS: room spots line active bks blk waits used
-- ARGV: vid, ticket, generation.
-- Reply: 1 when a spot or slot was freed (counted in `nleft`), else 0.
local vid, ticket, generation = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local room = load_room()
if not room or room.generation ~= generation then return 0 end
local spot = get_spot(vid)
if not spot or spot.ticket ~= ticket then return 0 end
book_abandoned(spot, clock(room))
forget_use(vid, spot)
drop_spot(vid, spot)
redis.call('HINCRBY', ROOM, @leaves, 1)
return 1
