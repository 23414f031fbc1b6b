"""Anteroom: a self-hosted virtual waiting room on Redis.

Two distributions share this package. ``anteroom-sdk`` owns it: this file, ``anteroom.verify``,
``anteroom.edge`` and ``anteroom.sdk`` (standard library only: what a site installs). The service,
``anteroom``, depends on it and adds the rest. Should the two land in different folders of
``sys.path`` (a venv that sees a system-wide anteroom-sdk), ``extend_path`` still finds both.
"""

import logging
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

__version__ = "0.2.0"
__all__ = ["__version__"]

logging.getLogger(__name__).addHandler(logging.NullHandler())
