"""The management API and the operator's console: rooms, events, keys, the audit log and the
series, and the console's session."""
