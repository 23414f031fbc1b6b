"""A room's settings and the keys it owns: the room hash and its fields, the validated
configuration, events over time, the directory of rooms and the ticker."""
