-- Exchange a setup token once (store/setup_tokens.py): the first valid one spends them all, for
-- good, so two instances (or two browsers) racing with their tokens get exactly one key.
-- Not a room operation (lua_scripts.STANDALONE): its one key is passed as is.
-- KEYS[1]: the setup hash (KeySpace.setup).
-- ARGV: the token's SHA-256 (hex), the time (ms).
-- Reply: 1 when this call spent it, 0 for an unknown token, -1 when setup is already done.
if redis.call('HEXISTS', KEYS[1], 'spent') == 1 then return -1 end
if redis.call('HEXISTS', KEYS[1], 't:' .. ARGV[1]) == 0 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'spent', ARGV[2])
return 1
