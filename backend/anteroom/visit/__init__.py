"""The visitor's use cases, between the HTTP entrances (web/) and identity/ + queue/.

Each function takes what a request proved (typed claims, the caller's address and headers) and
returns a tagged answer (outcomes.py): one dataclass per outcome, never a state read from nulls.
``arrival.arrive`` and ``arrival.enter`` are the two calls of an arrival (a challenge that
carries its own measurement; the proof checked, the session opened and the spot taken at once);
``arrival.identify`` and ``arrival.take_spot`` are their halves, which the older identify and
enter calls run alone; ``arrival.enter_without_script`` is the page without JavaScript's entry.

What still lives in web/ (the room lookup by slug, the per-address limits kept in the app, the
rendering of a queue answer and the fail-open admission) is reached through the ``Door`` the
adapter hands in (ports.py; web/visitor/visit_door.py builds it); those parts raise the web's own
errors, which pass through here.
"""
