-- Spend a proof-of-work challenge once, remembering what it earned (the session's claims,
-- behind the proof's fingerprint) for the challenge's life: a retry of the same proof gets the
-- same session back (identity/sessions.py, spend_challenge).
-- Not a room operation (lua_scripts.STANDALONE): its one key is passed as is.
-- KEYS[1]: the challenge's spent marker (KeySpace.challenge_spent).
-- ARGV: fingerprint of the proof, the session claims (JSON), life in ms.
-- Reply: nil when this call spent it, else the marker's "<fingerprint>|<claims>".
local held = redis.call('GET', KEYS[1])
if held then return held end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. ARGV[2], 'PX', ARGV[3])
return false
