"""The version of the data's layout in Redis, checked when an instance starts.

An instance reads ``<prefix>layout`` before it serves: a store it does not understand (written by
a newer release) is refused rather than misread; an older one is upgraded in place by the
registered steps, in order, by one instance while the others wait for it (a lock, and a
compare-and-set of the version after each step, so a step is never run twice for one store).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Mapping

from anteroom.queue.connection import lua_scripts
from anteroom.queue.connection.redis_link import Client
from anteroom.queue.connection.storage_errors import (
    StorageError,
    StorageUnavailable,
    storage_errors,
)
from anteroom.queue.rooms.key_layout import KeySpace

log = logging.getLogger("anteroom.layout")

# The layout this code reads and writes. What each version changed:
#   1  the layout of release 0.1.0 and of everything since (queue/rooms/key_layout.py); data written
#      before the version key existed is version 1.
CURRENT = 1

# Turns the layout ``n - 1`` into ``n``, keyed by ``n``. A step must be safe to run again after
# a crash half-way (the version moves only once it has returned).
UpgradeStep = Callable[[Client, KeySpace], None]
UPGRADE_STEPS: Mapping[int, UpgradeStep] = {}

# How long the upgrading instance holds the lock unless it renews it (between steps), and how
# long another instance waits for it before giving up.
LOCK_MS = 30_000
WAIT_S = 120.0
_POLL_S = 0.05


class LayoutRefused(Exception):
    """The store's layout cannot be used by this instance; the message says what to do."""


def too_new(found: int, current: int) -> LayoutRefused:
    """The refusal for a store written by a newer release."""
    return LayoutRefused(
        f"anteroom serve: the data in Redis has layout version {found}, and this instance "
        f"understands up to version {current}.\nA newer release of Anteroom wrote it. Upgrade "
        "this instance to that release, or, to go back, roll the other instances back first and "
        "restore the data from before the upgrade."
    )


def _parse(raw: object, key: str) -> int:
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    if not text.isdigit():
        raise LayoutRefused(f"anteroom serve: {key} holds {text!r}, not a layout version number")
    return int(text)


def _escape_glob(text: str) -> str:
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


def _has_data(client: Client, keys: KeySpace) -> bool:
    """Anything under the prefix besides the layout keys: a store written before they existed."""
    own = {keys.layout(), keys.layout_lock()}
    match = _escape_glob(keys.prefix) + "*"
    for key in client.scan_iter(match=match, count=1000):
        name = key.decode() if isinstance(key, bytes) else key
        if name not in own:
            return True
    return False


def read(client: Client, keys: KeySpace) -> int | None:
    """The stored layout version (None when none is recorded yet)."""
    with storage_errors():
        raw = client.get(keys.layout())
    return None if raw is None else _parse(raw, keys.layout())


def ensure(
    client: Client,
    keys: KeySpace,
    current: int = CURRENT,
    steps: Mapping[int, UpgradeStep] = UPGRADE_STEPS,
    wait_s: float = WAIT_S,
    lock_ms: int = LOCK_MS,
) -> int:
    """Make the store's layout ``current`` or refuse; the version found at first.

    Raises :class:`LayoutRefused` for a newer layout (or one that cannot be upgraded), and
    :class:`~anteroom.queue.connection.storage_errors.StorageError` when Redis fails.
    """
    found = read(client, keys)
    if found is None:
        # An empty store starts at the current layout; data without a version is version 1.
        with storage_errors():
            initial = 1 if _has_data(client, keys) else current
            client.set(keys.layout(), initial, nx=True)  # two instances: the first one wins
        found = read(client, keys)
        assert found is not None
    if found > current:
        raise too_new(found, current)
    if found < current:
        missing = [n for n in range(found + 1, current + 1) if n not in steps]
        if missing:
            raise LayoutRefused(
                f"anteroom serve: no upgrade step to layout version {missing[0]} "
                f"(the data has version {found}, this instance needs {current})"
            )
        _upgrade(client, keys, current, steps, wait_s, lock_ms)
    return found


def _upgrade(
    client: Client,
    keys: KeySpace,
    current: int,
    steps: Mapping[int, UpgradeStep],
    wait_s: float,
    lock_ms: int,
) -> None:
    token = secrets.token_hex(8)
    deadline = time.monotonic() + wait_s
    while True:
        version = read(client, keys)
        assert version is not None
        if version > current:
            raise too_new(version, current)
        if version == current:
            return
        with storage_errors():
            held = client.set(keys.layout_lock(), token, nx=True, px=lock_ms)
        if held:
            break
        if time.monotonic() > deadline:
            raise LayoutRefused(
                f"anteroom serve: another instance has been upgrading the data's layout (to "
                f"version {current}) for over {wait_s:.0f} s; start again once it is done"
            )
        time.sleep(_POLL_S)  # another instance is upgrading: wait for it
    try:
        while True:
            # Read again under the lock: the instance before us may have finished.
            version = read(client, keys)
            assert version is not None
            if version >= current:
                return
            target = version + 1
            log.warning("upgrading the data's layout from version %d to %d", version, target)
            steps[target](client, keys)
            with storage_errors():
                client.eval(
                    lua_scripts.standalone("advance_layout"), 1, keys.layout(), version, target
                )
                client.pexpire(keys.layout_lock(), lock_ms)
    finally:
        try:
            with storage_errors():
                client.eval(
                    lua_scripts.standalone("release_layout_lock"), 1, keys.layout_lock(), token
                )
        except StorageUnavailable:
            pass  # it expires on its own


def check_at_start(client: Client, keys: KeySpace) -> int | None:
    """:func:`ensure` as an instance starts; None when Redis cannot be reached yet.

    A Redis that cannot be used yet, unreachable or refusing (a wrong database number), does
    not stop a start (fail-open rooms serve without it, /readyz says it is not ready); the
    check runs again at the next start. A refusal (:class:`LayoutRefused`) is raised.
    """
    try:
        return ensure(client, keys)
    except StorageError as exc:
        log.warning("the data's layout version was not checked: Redis is not usable yet (%s)", exc)
        return None
