-- Offer a first-start setup token (store/setup_tokens.py): each instance that starts with no
-- secret key adds its token's hash, until one of them has been exchanged.
-- Not a room operation (lua_scripts.STANDALONE): its one key is passed as is.
-- KEYS[1]: the setup hash (KeySpace.setup).
-- ARGV: the token's SHA-256 (hex).
-- Reply: 1 when offered, 0 when a setup token was already exchanged.
if redis.call('HEXISTS', KEYS[1], 'spent') == 1 then return 0 end
redis.call('HSET', KEYS[1], 't:' .. ARGV[1], 1)
return 1
