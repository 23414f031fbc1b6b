-- Move the data's layout version one step (store/layout_version.py), only from the version the
-- upgrade step started at: a step's outcome is recorded once, even if the lock expired under it.
-- Not a room operation (lua_scripts.STANDALONE): its one key is passed as is.
-- KEYS[1]: the layout version (KeySpace.layout).
-- ARGV: the version the step started at, the version it made.
-- Reply: 1 when moved, 0 when the version was no longer ARGV[1].
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  return 1
end
return 0
