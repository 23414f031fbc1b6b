"""The visitor API's HTTP door: parse a call, hand it to the visitor use cases, serialise the
answer; the fast entrance, the per-worker limits and fail-open answers."""
