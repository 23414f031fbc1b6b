"""The container image and compose file, for real: Debian's podman builds the ``Dockerfile`` and
podman-compose starts ``compose.yaml`` (Redis and two Anteroom instances). A visitor goes from
challenge to admission through the containers, the Redis container is stopped and started with
the line kept (its append-only file), and everything stops cleanly on SIGTERM.

No image registry is reachable here, so ``debian:bookworm-slim`` is built once from Debian's
packages (mmdebstrap, the machine's apt sources) and tagged with that name: the same
``Dockerfile`` builds unchanged elsewhere. Podman's settings are this folder's
``containers.conf`` (CONTAINERS_CONF), never the machine's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from helpers import free_port
from visitor_client import Visitor

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BASE = "docker.io/library/debian:bookworm-slim"
IMAGE = "localhost/anteroom:latest"
REDIS_IMAGE = "localhost/anteroom-redis:latest"
GRACE_SEC = 30  # compose.yaml's stop_grace_period
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
SAME_ORIGIN = {"Sec-Fetch-Site": "same-origin"}


def podman_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    env["CONTAINERS_CONF"] = str(Path(__file__).with_name("containers.conf"))
    env["BUILDAH_FORMAT"] = "docker"  # the OCI format drops HEALTHCHECK
    return env


def run(*command: str, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    done = subprocess.run(
        command, env=env or podman_env(), cwd=ROOT, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout


def ensure_base(cache: Path) -> None:
    """``debian:bookworm-slim`` in podman's store: built from Debian's packages when missing."""
    if subprocess.run(["podman", "image", "exists", BASE], env=podman_env()).returncode == 0:
        return
    tar = cache / "bookworm-minbase.tar"
    # As Debian's own slim image: no documentation, manuals or locales, no apt caches.
    slim = [f"--dpkgopt=path-exclude=/usr/share/{d}/*" for d in ("doc", "man", "locale", "info")]
    clean = '--customize-hook=rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*'
    run("mmdebstrap", "--variant=minbase", *slim, clean, "bookworm", str(tar))
    run("podman", "import", str(tar), BASE)


def build(target: str, tag: str) -> None:
    command = ["podman", "build", "--pull=never", "--network=host", "--target", target, "-t", tag]
    if HOST_CA.exists():
        # This machine reaches npm and PyPI through a TLS-inspecting proxy whose CA only the
        # host trusts; elsewhere the argument is simply left out.
        command += ["-v", f"{HOST_CA}:/run/build-ca.crt:ro", "--build-arg",
                    "BUILD_CA_CERTS=/run/build-ca.crt"]  # fmt: skip
    run(*command, ".")


def ready(url: str) -> bool:
    try:
        return requests.get(url + "/readyz", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def wait_ready(*urls: str, timeout: float = 90) -> float:
    start = time.monotonic()
    while not all(ready(u) for u in urls):
        assert time.monotonic() - start < timeout, f"not ready within {timeout} s: {urls}"
        time.sleep(0.2)  # waiting for containers to boot, not for a race
    return time.monotonic() - start


class Compose:
    """``podman-compose`` on the repository's compose.yaml, as project ``name``."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.name = name
        self.env = podman_env() | env
        self.started = 0.0  # when `up` was called (time.monotonic)

    def __call__(self, *args: str) -> str:
        return run("podman-compose", "-p", self.name, "-f", "compose.yaml", *args, env=self.env)

    def container(self, service: str) -> str:
        return f"{self.name}_{service}_1"

    def podman(self, *args: str) -> str:
        return run("podman", *args, env=self.env)


@pytest.fixture(scope="module")
def compose(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Compose, dict[str, str]]]:
    ensure_base(tmp_path_factory.mktemp("base"))
    build("redis", REDIS_IMAGE)
    build("anteroom", IMAGE)
    keys = subprocess.run(
        [str(Path(sys.executable).with_name("anteroom")), "keys", "generate"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    ports = {"ANTEROOM_PORT": str(free_port()), "ANTEROOM_PORT_2": str(free_port())}
    project = Compose(f"anteroomtest{os.getpid()}", {"ANTEROOM_KEYS": keys} | ports)
    project.started = time.monotonic()
    project("up", "-d")
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    try:
        yield project, urls
    finally:
        # podman-compose's `down -v` leaves the containers' anonymous volumes and the network.
        names = [project.container(s) for s in ("anteroom", "anteroom-2", "redis")]
        for command in (
            ["podman", "rm", "--force", "--volumes", "--time", "5", *names],
            ["podman-compose", "-p", project.name, "-f", "compose.yaml", "down", "-v"],
            ["podman", "network", "rm", "--force", f"{project.name}_default"],
        ):
            subprocess.run(
                command, env=project.env, cwd=ROOT, capture_output=True, check=False, timeout=120
            )


def test_the_image_is_slim_non_root_and_healthy(compose: tuple[Compose, dict[str, str]]) -> None:
    project, urls = compose
    wait_ready(*urls.values())
    cold = time.monotonic() - project.started
    user = project.podman("exec", project.container("anteroom"), "id", "-u").strip()
    assert user != "0"
    for service in ("anteroom", "anteroom-2", "redis"):
        project.podman("healthcheck", "run", project.container(service))  # exit 0: healthy
    size = int(project.podman("image", "inspect", "--format", "{{.Size}}", IMAGE).strip())
    print(f"\nimage {IMAGE}: {size / 1e6:.0f} MB; all services ready {cold:.1f} s from `up`")
    config = project.podman("image", "inspect", "--format", "{{.Config.Env}}", IMAGE)
    assert "ANTEROOM_BIND=0.0.0.0:8000" in config


def test_a_visitor_is_admitted_and_the_line_survives_a_redis_restart(
    compose: tuple[Compose, dict[str, str]],
) -> None:
    project, urls = compose
    one, two = urls["ANTEROOM_PORT"], urls["ANTEROOM_PORT_2"]
    wait_ready(one, two)
    # No secret key yet: the first instance printed a setup token; the console exchanges it.
    logs = subprocess.run(
        ["podman", "logs", project.container("anteroom")], env=project.env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=True,
    ).stdout  # fmt: skip
    token = re.findall(r"Setup token\s+(\S+)\s+\(once", logs)
    assert len(token) == 1, logs[-2000:]
    done = requests.post(
        one + "/console/setup", data={"setup_token": token[0], "environment": "production"},
        headers=SAME_ORIGIN, timeout=10,
    )  # fmt: skip
    assert done.status_code == 201, done.text
    secret = re.search(r'id="secret-key">(sk_[^<]+)<', done.text)
    public = re.search(r'id="public-key">(pk_[^<]+)<', done.text)
    assert secret and public
    manage = {"Authorization": f"Bearer {secret.group(1)}"}
    api = "/api/management/v1/queues"
    room = requests.post(
        one + api, headers=manage, timeout=10,
        json={"slug": "drop", "name": "Drop", "redirectUrl": "https://shop.example/checkout",
              "ratePerMinute": 60, "capacity": 1},
    ).json()  # fmt: skip
    opened = requests.patch(f"{two}{api}/{room['id']}", json={"action": "open"}, headers=manage)
    assert opened.status_code == 200, opened.text

    first = Visitor(one, public.group(1))
    assert first.enter("drop").status_code == 200
    deadline = time.monotonic() + 30
    while first.last["status"] != "admitted":
        assert time.monotonic() < deadline, first.last
        time.sleep(0.5)  # the poll cadence a visitor keeps; the room drains once a second
        assert first.poll().status_code == 200
    assert first.last["token"]

    second = Visitor(two, public.group(1))  # the other instance; capacity 1 keeps it waiting
    assert second.enter("drop").status_code == 200 and second.last["status"] == "waiting"
    position = second.last["position"]
    ticket = second.ticket

    start = time.monotonic()
    project.podman("stop", "-t", str(GRACE_SEC), project.container("redis"))
    assert time.monotonic() - start < GRACE_SEC
    project.podman("start", project.container("redis"))
    wait_ready(one, two)
    answer = Visitor(one, public.group(1))
    answer.ticket = ticket
    assert answer.poll().status_code == 200, answer.last
    assert answer.last["status"] == "waiting" and answer.last["position"] == position

    raised = requests.patch(f"{one}{api}/{room['id']}", json={"capacity": 2}, headers=manage)
    assert raised.status_code == 200, raised.text
    deadline = time.monotonic() + 30
    while answer.last["status"] != "admitted":
        assert time.monotonic() < deadline, answer.last
        time.sleep(0.5)
        assert answer.poll().status_code == 200
    assert answer.last["token"]


def test_every_container_stops_cleanly_on_sigterm(compose: tuple[Compose, dict[str, str]]) -> None:
    project, urls = compose
    wait_ready(*urls.values())
    for service in ("anteroom", "anteroom-2", "redis"):
        name = project.container(service)
        start = time.monotonic()
        project.podman("stop", "-t", str(GRACE_SEC), name)
        took = time.monotonic() - start
        code = project.podman("inspect", "--format", "{{.State.ExitCode}}", name).strip()
        # 137 would be the SIGKILL after the grace period; 0 is a clean stop on SIGTERM.
        assert code == "0" and took < GRACE_SEC, (service, code, took)
        print(f"{service} stopped in {took:.1f} s")
