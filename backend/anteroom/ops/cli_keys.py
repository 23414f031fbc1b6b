"""``anteroom keys generate|create|list|revoke``: the signing keyring, and API keys in Redis.

``generate`` prints a new signing keyring for ``ANTEROOM_KEYS`` and touches no Redis. The Redis
of the others is ``ANTEROOM_REDIS_URL``, or else the embedded one of ``ANTEROOM_DATA_DIR`` — used
as it is when ``anteroom serve`` is running beside us, started (and stopped again) when not.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from anteroom.config import Settings
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.connection.storage_errors import StorageError
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.sdk.tokens import Keyring
from anteroom.store.keystore import SCOPES, KeyStore

GENERATED = (
    "Put this keyring in ANTEROOM_KEYS on every instance (the first key signs, every key "
    "verifies), and in the backends of the sites that verify admissions offline. Keep it secret: "
    "whoever holds it can sign admissions."
)


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``keys`` and its subcommands."""
    keys = sub.add_parser("keys", help="generate a signing keyring; create, list, revoke API keys")
    verbs = keys.add_subparsers(dest="verb", required=True)
    verbs.add_parser(
        "generate",
        help="print a new signing keyring for ANTEROOM_KEYS (the same on every instance)",
    )
    create = verbs.add_parser("create", help="a new public + secret key (shown once)")
    create.add_argument("--environment", required=True, help="e.g. production, staging")
    create.add_argument(
        "--scopes",
        default=",".join(SCOPES),
        help=f"comma-separated, among {', '.join(SCOPES)} (default: all)",
    )
    create.add_argument("--json", action="store_true", help="print JSON")
    listing = verbs.add_parser("list", help="every key (never a secret)")
    listing.add_argument("--environment", help="only this environment")
    listing.add_argument("--json", action="store_true", help="print JSON")
    revoke = verbs.add_parser("revoke", help="revoke a secret key and its public key")
    revoke.add_argument("key_id")


@contextmanager
def keystore(settings: Settings) -> Iterator[KeyStore]:
    """A key store on the service's Redis (starting the embedded one if it is down)."""
    server: EmbeddedRedis | None = None
    url = settings.redis_url
    if not url:
        embedded = EmbeddedRedis(settings.data_dir)
        url = embedded.url
        if not embedded.is_running():  # when it runs, it is the service's: leave it be
            server = embedded.start()
    client = connect(url)
    try:
        yield KeyStore(client, KeySpace(settings.key_prefix))
    finally:
        client.close()
        if server is not None:
            server.stop()


def run(args: argparse.Namespace, settings: Settings, out: Callable[[str], None] = print) -> int:
    """Carry out ``anteroom keys …``; returns the exit status."""
    if args.verb == "generate":
        # Only stdout carries the keyring, so `export ANTEROOM_KEYS=$(anteroom keys generate)`.
        out(Keyring.generate().serialize())
        print(GENERATED, file=sys.stderr)
        return 0
    try:
        with keystore(settings) as store:
            if args.verb == "create":
                scopes = [s.strip() for s in args.scopes.split(",") if s.strip()]
                try:
                    record, secret = store.create(args.environment, scopes)
                except ValueError as exc:
                    print(f"anteroom keys create: {exc}", file=sys.stderr)
                    return 2
                if args.json:
                    out(json.dumps({"environment": record.environment,
                                    "publicKey": record.public_key, "secretKey": secret,
                                    "scopes": record.scopes, "keyId": record.id}))  # fmt: skip
                else:
                    out(f"environment  {record.environment}")
                    out(f"key id       {record.id}")
                    out(f"scopes       {','.join(record.scopes)}")
                    out(f"public key   {record.public_key}")
                    out(f"secret key   {secret}")
                    out("The secret key is shown only now; Anteroom keeps only its hash.")
                return 0
            if args.verb == "list":
                records = store.list(args.environment)
                if args.json:
                    out(json.dumps([r.public() for r in records]))
                    return 0
                out(f"{'KEY ID':<14}{'ENVIRONMENT':<16}{'PUBLIC KEY':<24}{'STATE':<9}SCOPES")
                for r in records:
                    state = "revoked" if r.revoked else "live"
                    line = f"{r.id:<14}{r.environment:<16}{r.public_key:<24}{state:<9}"
                    out(line + ",".join(r.scopes))
                return 0
            if not store.revoke(args.key_id):
                print(f"anteroom keys revoke: no key {args.key_id!r}", file=sys.stderr)
                return 1
            out(f"revoked {args.key_id}")
            return 0
    except StorageError as exc:
        print(f"anteroom keys: Redis is not usable: {exc}", file=sys.stderr)
        return 1
