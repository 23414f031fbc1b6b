"""Running Anteroom: the CLI, the embedded Redis, demo seeding, the key store and the audit log."""
