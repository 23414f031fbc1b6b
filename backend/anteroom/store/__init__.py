"""What the service keeps in Redis besides the queues: API keys and the audit log.

Below ``identity/`` and ``web/``, above ``queue/`` (whose connection and key layout it uses).
"""
