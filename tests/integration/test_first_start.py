"""A first start with no default secret: a keyring to generate, a refusal to start that says what
to do, the demo only when asked for, and a one-time setup token the console exchanges once for
the deployment's first secret key (across instances and restarts)."""

from __future__ import annotations

import multiprocessing
import re
import threading
from pathlib import Path

import pytest
import redis
import requests

from anteroom.config import Settings
from anteroom.ops import cli
from anteroom.queue.connection.redis_link import connect
from anteroom.queue.rooms.key_layout import KeySpace
from anteroom.sdk.tokens import Keyring
from anteroom.store.keystore import KeyStore
from anteroom.store.setup_tokens import SetupRefused, SetupTokens
from live_server import LiveServer, LiveServers

SAME_ORIGIN = {"Sec-Fetch-Site": "same-origin"}
TOKEN_LINE = re.compile(r"Setup token\s+(\S+)\s+\(once")


def setup_token_of(server: LiveServer) -> str:
    found = TOKEN_LINE.findall(server.output())
    assert len(found) == 1, server.output(30)
    return str(found[0])


def exchange(base: str, token: str, environment: str = "production") -> requests.Response:
    form = {"setup_token": token, "environment": environment}
    return requests.post(
        base + "/console/setup", data=form, headers=SAME_ORIGIN, timeout=10, allow_redirects=False
    )


def test_keys_generate_prints_a_keyring_and_needs_no_redis(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTEROOM_REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens there
    assert cli.main(["keys", "generate"]) == 0
    first = capsys.readouterr()
    assert cli.main(["keys", "generate"]) == 0
    second = capsys.readouterr().out.strip()
    keyring = Keyring.parse(first.out.strip())  # stdout is the keyring alone: $(…) works
    assert len(keyring[keyring.signing_kid]) == 32
    assert second != first.out.strip()
    assert "ANTEROOM_KEYS on every instance" in first.err and "verify" in first.err


def test_an_instance_on_an_external_redis_without_a_keyring_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_server: object
) -> None:
    for name in ("ANTEROOM_KEYS", "ANTEROOM_GENERATE_KEYS", "ANTEROOM_DEMO"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTEROOM_REDIS_URL", "redis://127.0.0.1:6379/0")
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err
    assert "ANTEROOM_KEYS is not set" in err
    assert "anteroom keys generate" in err and "ANTEROOM_GENERATE_KEYS=1" in err


def test_a_setup_token_shorter_than_twelve_characters_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTEROOM_SETUP_TOKEN", "elevenchars")
    assert cli.main(["serve"]) == 2
    assert "ANTEROOM_SETUP_TOKEN must be at least 12 characters" in capsys.readouterr().err
    assert Settings.from_env({"ANTEROOM_SETUP_TOKEN": "twelve-chars"}).setup_token


def test_the_demo_is_on_only_when_asked_for() -> None:
    assert not Settings.from_env({}).demo_enabled  # the embedded Redis alone no longer turns it on
    assert Settings.from_env({"ANTEROOM_DEMO": "1"}).demo_enabled
    makefile = (Path(__file__).parents[2] / "Makefile").read_text()
    assert "\tANTEROOM_DEMO=1 $(BIN)/anteroom serve\n" in makefile  # make serve keeps it


@pytest.mark.redis
def test_the_setup_token_is_exchanged_once_for_the_first_key_and_never_shown_again(
    live_server: LiveServers, redis_client: redis.Redis, tmp_path: Path
) -> None:
    # No ANTEROOM_KEYS on an external Redis: it starts only because it was told to keep its own.
    server = live_server(
        data_dir=tmp_path / "a", ANTEROOM_KEYS="", ANTEROOM_GENERATE_KEYS="1", ANTEROOM_WORKERS="1"
    )
    assert (tmp_path / "a" / "keys").exists()
    token = setup_token_of(server)
    sign_in = requests.get(server.url + "/console", timeout=5).text
    assert 'action="/console/setup"' in sign_in

    wrong = exchange(server.url, token[:-1] + ("x" if token[-1] != "x" else "y"))
    assert wrong.status_code == 403 and "That setup token is not valid." in wrong.text
    bad_env = exchange(server.url, token, environment="Not An Env")
    assert bad_env.status_code == 400 and "Environment: environment must match" in bad_env.text

    first = exchange(server.url, token)  # neither refusal spent it
    assert first.status_code == 201, first.text
    secret = re.search(r'id="secret-key">(sk_[^<]+)<', first.text)
    assert secret is not None
    store = KeyStore(redis_client, KeySpace("anteroom:"))
    record = store.authenticate(secret.group(1))
    assert record is not None and record.environment == "production"
    assert "anteroom_console" in first.headers.get("Set-Cookie", "")  # signed in already

    again = exchange(server.url, token)
    assert again.status_code == 403 and "Setup is done" in again.text
    assert len(store.list()) == 1
    assert 'action="/console/setup"' not in requests.get(server.url + "/console", timeout=5).text
    server.stop()
    assert server.output().count(token) == 1  # the start page only: never logged after

    restarted = live_server(data_dir=tmp_path / "a", ANTEROOM_KEYS="", ANTEROOM_GENERATE_KEYS="1")
    assert "Setup token" not in restarted.output() and token not in restarted.output()
    assert exchange(restarted.url, token).status_code == 403


@pytest.mark.redis
def test_two_instances_racing_with_their_tokens_make_exactly_one_first_key(
    live_server: LiveServers, redis_client: redis.Redis
) -> None:
    servers = [live_server(ANTEROOM_WORKERS="1") for _ in range(2)]
    tokens = [setup_token_of(s) for s in servers]
    assert tokens[0] != tokens[1]  # each instance offers its own; either works, once
    start = threading.Barrier(2)
    answers: list[requests.Response] = []

    def claim(i: int) -> None:
        start.wait()
        answers.append(exchange(servers[i].url, tokens[i]))

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(a.status_code for a in answers) == [201, 403]
    assert len(KeyStore(redis_client, KeySpace("anteroom:")).list()) == 1
    for server, token in zip(servers, tokens, strict=True):
        assert exchange(server.url, token).status_code == 403


def _race(url: str, token: str, start: multiprocessing.synchronize.Barrier, out: object) -> None:
    client = connect(url)
    tokens = SetupTokens(client, KeySpace("anteroom:"))
    start.wait()
    try:
        tokens.exchange(token, "production")
        out.put("won")  # type: ignore[attr-defined]
    except SetupRefused:
        out.put("refused")  # type: ignore[attr-defined]
    finally:
        client.close()


@pytest.mark.redis
def test_processes_racing_with_valid_tokens_spend_them_exactly_once(
    redis_client: redis.Redis, redis_url: str
) -> None:
    ctx = multiprocessing.get_context("fork")
    for _ in range(5):
        redis_client.flushall()
        setup = SetupTokens(redis_client, KeySpace("anteroom:"))
        offered = [f"token-number-{i:02d}" for i in range(4)]
        assert setup.needed() and all(setup.offer(t) for t in offered)
        start, out = ctx.Barrier(8), ctx.Queue()
        racers = [
            ctx.Process(target=_race, args=(redis_url, offered[i % 4], start, out))
            for i in range(8)
        ]
        for p in racers:
            p.start()
        for p in racers:
            p.join(30)
        results = sorted(out.get(timeout=5) for _ in racers)
        assert results == ["refused"] * 7 + ["won"]
        assert len(KeyStore(redis_client, KeySpace("anteroom:")).list()) == 1
        assert not setup.needed() and not setup.offer("a-later-start-token")


@pytest.mark.redis
def test_a_key_made_with_the_command_line_ends_setup(redis_client: redis.Redis) -> None:
    setup = SetupTokens(redis_client, KeySpace("anteroom:"))
    assert setup.needed() and setup.offer("offered-before-the-key")
    KeyStore(redis_client, KeySpace("anteroom:")).create("ops")  # `anteroom keys create`
    assert not setup.needed()
    with pytest.raises(SetupRefused, match="Setup is done"):
        setup.exchange("offered-before-the-key", "production")
    assert len(KeyStore(redis_client, KeySpace("anteroom:")).list()) == 1
