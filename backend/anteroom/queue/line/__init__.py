"""The line engine: entering, polling and draining a room's line, the snapshot far polls read, the
poll cadence, the bookings and the fail-open ledger."""
