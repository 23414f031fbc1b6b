"""The `anteroom` command line: serve, keys, rehearse, verify-draw, conformance and --version."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import multiprocessing
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from anteroom.config import Settings
from anteroom.ops import cli_keys, cli_regions
from anteroom.ops.embedded_redis import EmbeddedRedis
from anteroom.sdk import verify_draw
from anteroom.sdk.tokens import Keyring

log = logging.getLogger("anteroom")
NO_KEYRING = """\
anteroom serve: ANTEROOM_KEYS is not set, and Redis is an external one (ANTEROOM_REDIS_URL).
Every instance must sign with the same keyring, or each refuses the others' tokens.
  1. Make one:  anteroom keys generate
  2. Set ANTEROOM_KEYS to it on every instance, and give it to the sites that verify admissions.
A single instance may instead keep a keyring of its own in ANTEROOM_DATA_DIR/keys:
set ANTEROOM_GENERATE_KEYS=1 (never with a second instance)."""
REHEARSE_NEEDS_LOCUST = (
    "anteroom rehearse needs Locust, which the base install leaves out: "
    "pip install 'anteroom[rehearse]' (in a clone: .venv/bin/pip install -e '.[rehearse]')"
)


def persisted_keys(data_dir: Path) -> str:
    """The keyring kept in ``data_dir/keys`` (created on first use, readable by us only)."""
    path = data_dir / "keys"
    if path.exists():
        return path.read_text().strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    text = Keyring.generate().serialize()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text + "\n")
    return text


def embedded_redis(settings: Settings) -> tuple[EmbeddedRedis, bool]:
    """The data folder's embedded Redis, started unless already running; (server, started)."""
    server = EmbeddedRedis(settings.data_dir)
    if server.is_running():
        return server, False
    return server.start(), True


def metrics_folder() -> tuple[Path, bool]:
    """The folder gunicorn's workers share their Prometheus counters through, emptied.

    ``PROMETHEUS_MULTIPROC_DIR`` if given, else a fresh temporary one. Set before anything
    imports prometheus_client (it picks its storage at import); emptied so a restart does not
    add the last run's counts to this one's. True: the folder is ours to remove.
    """
    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    folder = Path(given) if given else Path(tempfile.mkdtemp(prefix="anteroom-metrics-"))
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.db"):
        old.unlink()
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
    return folder, not given


def _start_background(worker: Any) -> None:
    """gunicorn's post_worker_init: one way to stop, then the worker app's own threads."""
    _stop_on_one_signal(worker)
    worker.wsgi.extensions["anteroom"].start_background()


def _stop_background(_arbiter: Any, worker: Any) -> None:
    """gunicorn's worker_exit: the worker's threads stopped, its fail-open registers left."""
    try:
        worker.wsgi.extensions["anteroom"].stop_background()
    except Exception:  # a worker on its way out must still exit
        log.exception("worker exit: background threads not stopped")


def _stop_on_one_signal(worker: Any) -> None:
    """Let a worker be told to quit once: by its master, never also by the terminal.

    A Ctrl-C signals the whole process group: each worker got the terminal's SIGINT and, a
    moment later, its master's SIGQUIT. The second handler could interrupt the first while it
    held the thread pool's shutdown lock and then wait on that lock for ever, until the master
    killed the worker 30 s later. The master turns the SIGINT into a SIGQUIT for each worker
    anyway, so the worker ignores SIGINT and acts on the first SIGQUIT only.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quitting = False

    def quit_once(signum: int, frame: Any) -> None:
        nonlocal quitting
        if not quitting:
            quitting = True
            worker.handle_quit(signum, frame)

    signal.signal(signal.SIGQUIT, quit_once)


# Open connections per worker (idle ones included) before it stops accepting more.
WORKER_CONNECTIONS = 4096


def open_files_for_connections() -> None:
    """Raise the soft open-files limit towards the hard one, so the idle connections the
    workers hold cannot run a worker out of descriptors first (1,024 is a common default)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = WORKER_CONNECTIONS + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))


def _serve(settings: Settings) -> int:
    if not settings.keys and settings.redis_url and not settings.generate_keys:
        print(NO_KEYRING, file=sys.stderr)
        return 2
    open_files_for_connections()
    folder, ours = metrics_folder()  # first: the worker class's module imports the metrics
    from anteroom.ops.gevent_worker import resolve_in_place

    resolve_in_place()
    from gunicorn.app.base import BaseApplication
    from prometheus_client import multiprocess

    from anteroom.ops import access_log
    from anteroom.ops.connection_limits import Limits
    from anteroom.ops.demo_crowd import start_crowd
    from anteroom.ops.demo_seed import DEMO_SECRET_FILE, ensure_demo, ensure_demo_secret
    from anteroom.queue.connection.redis_link import connect
    from anteroom.queue.line.room_engine import Engine
    from anteroom.store.keystore import KeyStore
    from anteroom.web.app_factory import create_app
    from anteroom.web.serving import metrics

    server: EmbeddedRedis | None = None
    started = False
    crowd: threading.Event | None = None
    if not settings.redis_url:
        server, started = embedded_redis(settings)
        settings = settings.with_overrides(redis_url=server.url)
        log.info("embedded Redis at %s (data in %s)", server.url, server.data_dir)
    if not settings.keys:
        # The embedded Redis serves this instance alone (or it was told so): a keyring of its own.
        if server is None:
            log.warning("ANTEROOM_GENERATE_KEYS: signing with %s/keys, this instance's own; "
                        "a second instance would sign apart", settings.data_dir)  # fmt: skip
        settings = settings.with_overrides(keys=persisted_keys(Path(settings.data_dir)))
    host, port = settings.bind.rsplit(":", 1) if ":" in settings.bind else ("", settings.bind)
    base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"
    try:
        if (refused := check_layout(settings)) is not None:
            print(refused, file=sys.stderr)
            return 2
        demo_key: tuple[str, Path] | None = None
        if settings.demo_enabled:
            engine = Engine(connect(settings.redis_url), settings.key_prefix)
            room_id = ensure_demo(engine, base)
            secret = ensure_demo_secret(KeyStore(engine.redis, engine.keys),
                                        Path(settings.data_dir))  # fmt: skip
            demo_key = (secret, Path(settings.data_dir) / DEMO_SECRET_FILE)
            crowd = start_crowd(engine, room_id, on_admit=metrics.ADMISSIONS.inc)
        setup = None if settings.demo_enabled else offer_setup_token(settings)
        page = start_page(base, demo_key, setup)
        booted = multiprocessing.Value("i", 0)

        def worker_ready(worker: Any) -> None:
            _start_background(worker)
            # The last worker up shows the start page once, after the boot logs.
            with booted.get_lock():
                booted.value += 1
                last = booted.value == settings.workers
            if last:
                print(page, file=sys.stderr, flush=True)

        class Service(BaseApplication):  # type: ignore[misc]
            # Read by the worker class (ops/gevent_worker.py) as each worker boots.
            connection_limits = Limits.from_settings(settings)

            def load_config(self) -> None:
                binds = [settings.bind]
                if settings.metrics_listen:
                    binds.append(settings.metrics_listen)  # the scraper's: /metrics alone
                self.cfg.set("bind", binds)
                self.cfg.set("workers", settings.workers)
                # gevent (ops/gevent_worker.py): idle and slow clients hold no thread, so they
                # delay nobody; gthread's few threads each waited on one such connection.
                self.cfg.set("worker_class", "anteroom.ops.gevent_worker.Worker")
                self.cfg.set("worker_connections", WORKER_CONNECTIONS)
                # gunicorn's control socket (gunicornc) is not part of Anteroom's interface, and
                # its default path is one per user, shared by every server that user runs.
                self.cfg.set("control_socket_disable", True)
                # With ANTEROOM_LOG_FORMAT=json the app writes one JSON line per request.
                self.cfg.set("accesslog", None if settings.log_format == "json" else "-")
                # Query strings carry tokens (?abq=…): log the path only, never a token.
                # The worker's pid (<pid>) says which worker answered.
                self.cfg.set("access_log_format", access_log.FORMAT)
                # The same line, built and written without gunicorn's per-request dicts of
                # every header and environ variable (ops/access_log.py).
                self.cfg.set("logger_class", "anteroom.ops.access_log.Logger")
                # Each worker's background threads (rooms directory, series sampler) start
                # when it boots, not at its first request: a quiet room is sampled too.
                self.cfg.set("post_worker_init", worker_ready)
                # A worker that stops leaves the fail-open rooms' registers, so their drains
                # do not wait for it (queue/line/fail_open_checkin.py).
                self.cfg.set("worker_exit", _stop_background)
                # A dead worker's live gauges (breaker state) stop counting.
                self.cfg.set("child_exit", lambda _arbiter, worker: multiprocess.mark_process_dead(
                    worker.pid))  # fmt: skip

            def load(self) -> Any:
                return create_app(settings)

        Service().run()
    finally:
        # The crowd's thread first: it must not meet a stopped Redis.
        if crowd is not None:
            crowd.set()
        if server is not None and started:
            server.stop()
        if ours:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


def check_layout(settings: Settings) -> str | None:
    """The data's layout checked (and upgraded) before any worker starts; the refusal, if any."""
    from anteroom.queue.connection.redis_link import connect
    from anteroom.queue.rooms.key_layout import KeySpace
    from anteroom.store.layout_version import LayoutRefused, check_at_start

    client = connect(settings.redis_url)
    try:
        check_at_start(client, KeySpace(settings.key_prefix))
    except LayoutRefused as exc:
        return str(exc)
    finally:
        client.close()
    return None


def version_text() -> str:
    """``anteroom --version``: the service's version, and the SDK's and agent's beside it."""
    from importlib import metadata

    def installed(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return f"anteroom {installed('anteroom')} (anteroom-sdk {installed('anteroom-sdk')})"


def offer_setup_token(settings: Settings) -> str | None:
    """The first start's setup token, when no secret key exists yet (else None).

    ``ANTEROOM_SETUP_TOKEN`` if set, else a random one. Each instance offers its own until one
    is exchanged. A Redis not reachable yet is no reason to stop: the next start offers it.
    """
    from anteroom.queue.connection.redis_link import connect
    from anteroom.queue.connection.storage_errors import StorageError
    from anteroom.queue.rooms.key_layout import KeySpace
    from anteroom.store.setup_tokens import SetupTokens, new_token

    client = connect(settings.redis_url)
    try:
        tokens = SetupTokens(client, KeySpace(settings.key_prefix))
        if not tokens.needed():
            return None
        token = settings.setup_token.strip() or new_token()
        return token if tokens.offer(token) else None
    except StorageError as exc:
        log.warning("no setup token offered: Redis is not usable yet (%s); restart to get one", exc)
        return None
    finally:
        client.close()


def start_page(base: str, demo_key: tuple[str, Path] | None, setup_token: str | None = None) -> str:
    """The block ``anteroom serve`` prints once it answers: where to go, and the console's key.

    ``demo_key``: the demo's secret key and the file it is kept in (None without the demo);
    ``setup_token``: the first start's one-time token (None once any secret key exists).
    """
    rows = [("Front door", f"{base}/")]
    if demo_key is not None:
        secret, path = demo_key
        try:
            shown = path.resolve().relative_to(Path.cwd())
        except ValueError:
            shown = path.resolve()
        rows += [
            ("Hosted page", f"{base}/queue/demo?key=pk_demo"),
            ("Demo shop", f"{base}/demo/shop"),
            ("Console", f"{base}/console"),
            # The one place the demo's secret key is shown: this terminal, never a page.
            ("Console key", f"{secret}  (kept in {shown})"),
        ]
    elif setup_token is not None:
        # Shown while no secret key exists; once exchanged it is spent and never shown again.
        rows += [
            ("Console", f"{base}/console"),
            ("Setup token", f"{setup_token}  (once, in the console, for the first secret key)"),
        ]
    else:
        rows += [
            ("Console", f"{base}/console"),
            ("Console key", "a secret key: anteroom keys create --environment <name>"),
        ]
    width = max(len(label) for label, _ in rows)
    lines = [f"  {label.ljust(width)}  {value}" for label, value in rows]
    rule = "-" * min(78, max(len(line) for line in lines))
    return "\n".join(["", rule, "  Anteroom is up. Ctrl-C stops it.", "", *lines, rule, ""])


def rehearse(argv: list[str]) -> int:
    """``anteroom rehearse …``: the Locust rehearsal (:mod:`anteroom.ops.rehearse`).

    In a fresh interpreter: Locust patches the standard library with gevent on import, which
    must happen before anything (here: redis-py) has imported ``socket`` and ``ssl``.
    """
    if importlib.util.find_spec("locust") is None:
        print(REHEARSE_NEEDS_LOCUST, file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "anteroom.ops.rehearse", *argv]
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 130


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``anteroom`` command."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--version"]:  # no settings, no Redis
        print(version_text())
        return 0
    if argv[:1] == ["rehearse"]:  # its options are its own module's (and need no settings)
        return rehearse(argv[1:])
    if argv[:1] == ["verify-draw"]:  # standard library only: no settings, no Redis
        return verify_draw.main(argv[1:])
    if argv[:1] == ["conformance"]:  # its own options; starts its own Redis and app
        from anteroom.ops import conformance

        return conformance.main(argv[1:])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    parser = argparse.ArgumentParser(prog="anteroom", description="Anteroom waiting room")
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the service under gunicorn")
    cli_keys.add_parser(sub)
    cli_regions.add_parser(sub)
    sub.add_parser(
        "rehearse",
        help="run a rush rehearsal against a deployment (Locust; pip install 'anteroom[rehearse]')",
        add_help=False,
    )
    sub.add_parser("verify-draw", help="check a published draw and a receipt", add_help=False)
    sub.add_parser(
        "conformance",
        help="run a client's driver against scripted answers and judge it (--client CMD)",
        add_help=False,
    )
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
    except ValueError as exc:
        print(f"anteroom: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        return _serve(settings)
    if args.command == "keys":
        return cli_keys.run(args, settings)
    if args.command == "regions":
        return cli_regions.run(args, settings)
    return 2


if __name__ == "__main__":
    sys.exit(main())
