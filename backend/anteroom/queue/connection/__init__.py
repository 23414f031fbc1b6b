"""The Redis connection: the client (one server or a Cluster), its circuit breaker, the Lua
scripts' assembly and calls, and the threads the process runs beside its workers."""
