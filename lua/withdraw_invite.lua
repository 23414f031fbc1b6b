-- Withdraw an invite on record: from now on enter.lua refuses it to newcomers (InviteWithdrawn);
-- those already in with it keep their spots. Withdrawing it again keeps the first time.
-- needs: _base
-- KEYS: room invs inv
-- ARGV: the invite's id, now (room clock ms).
-- Reply: {terms (JSON), withdrawn at (ms)}; or {'ERR', 'RoomNotFound' | 'InviteNotFound', 0}.
if redis.call('EXISTS', ROOM) == 0 then return err('RoomNotFound') end
local terms = redis.call('HGET', INVS, ARGV[1])
if not terms then return err('InviteNotFound') end
redis.call('HSETNX', INV, ARGV[1] .. '|w', ARGV[2])
return {terms, redis.call('HGET', INV, ARGV[1] .. '|w')}
