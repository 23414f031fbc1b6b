"""The HTTP layer: the app factory, one blueprint module per API area, HTTP errors, request
bodies, per-address limits and the OpenAPI document. Only the app factory's callers (the CLI)
import it."""
