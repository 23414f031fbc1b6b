"""Flask blueprints, one per area of the HTTP surface."""
