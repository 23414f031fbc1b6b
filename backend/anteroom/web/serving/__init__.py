"""How the app serves: health probes, metrics, the request log, HTTP errors and JSON bodies."""
