"""Anteroom: a self-hosted virtual waiting room on Redis."""

import logging

__version__ = "0.1.0"
__all__ = ["__version__"]

logging.getLogger(__name__).addHandler(logging.NullHandler())
