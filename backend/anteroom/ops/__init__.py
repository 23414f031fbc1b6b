"""Running Anteroom: the CLI, the embedded Redis, demo seeding and its crowd, the rehearsal."""
