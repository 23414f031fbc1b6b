"""``anteroom keys`` as an operator runs it: a real process against a real Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.store.keystore import KeyStore

pytestmark = pytest.mark.redis

ANTEROOM = str(Path(sys.executable).with_name("anteroom"))


def keys(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    return subprocess.run(
        [ANTEROOM, "keys", *args], env=clean | env, capture_output=True, text=True, timeout=60
    )


def test_create_list_revoke(redis_server: EmbeddedRedis, redis_client: redis.Redis) -> None:
    url = {"ANTEROOM_REDIS_URL": redis_server.url}
    made = keys("create", "--environment", "prod", "--scopes", "queues:read", "--json", **url)
    assert made.returncode == 0, made.stderr
    created = json.loads(made.stdout)
    assert created["environment"] == "prod" and created["scopes"] == ["queues:read"]
    assert created["publicKey"].startswith("pk_") and created["secretKey"].startswith("sk_")
    store = KeyStore(redis_client, KeySpace())
    record = store.authenticate(created["secretKey"])
    assert record is not None and record.environment == "prod"
    # only the hash is stored, nowhere the secret itself
    dump = json.dumps(redis_client.hgetall(KeySpace().secret_keys()))
    assert created["secretKey"] not in dump

    text = keys("create", "--environment", "staging", **url)
    assert text.returncode == 0 and "secret key   sk_" in text.stdout
    listed = keys("list", "--json", **url)
    records = json.loads(listed.stdout)
    assert sorted(r["environment"] for r in records) == ["prod", "staging"]
    assert created["secretKey"] not in listed.stdout and "sk_" not in listed.stdout
    table = keys("list", "--environment", "prod", **url).stdout
    assert record.id in table and "staging" not in table and "sk_" not in table

    revoked = keys("revoke", record.id, **url)
    assert revoked.returncode == 0
    assert store.authenticate(created["secretKey"]) is None
    assert store.environment_of(created["publicKey"]) is None
    states = {r["id"]: r["revoked"] for r in json.loads(keys("list", "--json", **url).stdout)}
    assert states[record.id] is True and list(states.values()).count(False) == 1
    missing = keys("revoke", "nosuchkey000", **url)
    assert missing.returncode == 1 and "no key" in missing.stderr


def test_bad_arguments_are_refused_clearly(redis_server: EmbeddedRedis) -> None:
    url = {"ANTEROOM_REDIS_URL": redis_server.url}
    bad_env = keys("create", "--environment", "Prod!", **url)
    assert bad_env.returncode == 2 and "environment must match" in bad_env.stderr
    bad_scope = keys("create", "--environment", "prod", "--scopes", "root", **url)
    assert bad_scope.returncode == 2 and "scopes must be among" in bad_scope.stderr
    down = keys("list", ANTEROOM_REDIS_URL="redis://127.0.0.1:1/0")
    assert down.returncode == 1 and "Redis is not usable" in down.stderr


def test_uses_the_data_folder_redis_running_or_not(tmp_path: Path) -> None:
    data = {"ANTEROOM_DATA_DIR": str(tmp_path)}
    # Not running: started for the command, stopped after it, the key kept on disk.
    first = json.loads(keys("create", "--environment", "prod", "--json", **data).stdout)
    server = EmbeddedRedis(tmp_path)
    assert not server.is_running()
    server.start()
    try:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        store = KeyStore(client, KeySpace())
        assert store.authenticate(first["secretKey"]) is not None
        # Running (as beside `anteroom serve`): used as it is and left running.
        second = json.loads(keys("create", "--environment", "prod", "--json", **data).stdout)
        assert server.is_running()
        assert store.authenticate(second["secretKey"]) is not None
    finally:
        server.stop()
