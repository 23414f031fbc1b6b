"""The queue core on Redis: room configuration, key layout, Lua scripts, the engine facade,
the Redis connection and its circuit breaker, the offline room directory. No Flask here."""
