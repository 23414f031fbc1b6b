"""``anteroom regions`` as an operator runs it: a real process against a real etcd."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from anteroom.queue.regions.etcd_kv import Etcd
from anteroom.queue.regions.region_cell import read_specs
from etcd_cluster import EtcdCluster
from helpers import free_port

ANTEROOM = str(Path(sys.executable).with_name("anteroom"))
EU, US = "q" + "1" * 16, "q" + "2" * 16


@pytest.fixture(scope="module")
def etcd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    with EtcdCluster(tmp_path_factory.mktemp("etcd"), 1) as cluster:
        yield cluster


def regions(endpoints: str, *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANTEROOM_")}
    env = clean | {"ANTEROOM_ETCD_ENDPOINTS": endpoints}
    return subprocess.run(
        [ANTEROOM, "regions", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_span_writes_the_spec_the_cells_read_and_show_prints_it(etcd_cluster: EtcdCluster) -> None:
    endpoints = ",".join(etcd_cluster.endpoints)
    done = regions(endpoints, "span", "drop", f"eu={EU}:0.25", f"us={US}")
    assert done.returncode == 0, done.stderr
    assert "drop spans eu" in done.stdout
    (spec,) = [s for s in read_specs(Etcd(etcd_cluster.endpoints)) if s.name == "drop"]
    assert spec.rooms == {"eu": EU, "us": US}
    assert spec.fallbacks == {"eu": 0.25, "us": 0.0}  # no share named: the region pauses
    shown = regions(endpoints, "show", "drop", "--json")
    assert shown.returncode == 0, shown.stderr
    (room,) = json.loads(shown.stdout)
    assert room["regions"]["eu"] == {"room": EU, "fallback": 0.25, "lease": None}
    plain = regions(endpoints, "show")
    assert f"eu: {EU}, fallback 0.25, no lease yet" in plain.stdout
    # spanning again replaces the spec (a region's fallback changed)
    assert regions(endpoints, "span", "drop", f"eu={EU}:1", f"us={US}:0.5").returncode == 0
    (spec,) = [s for s in read_specs(Etcd(etcd_cluster.endpoints)) if s.name == "drop"]
    assert spec.fallbacks == {"eu": 1.0, "us": 0.5}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["Drop!", f"eu={EU}", f"us={US}"], "name 'Drop!'"),
        (["drop", f"eu={EU}"], "at least two regions"),
        (["drop", f"eu={EU}", f"eu={US}"], "named twice"),
        (["drop", EU, f"us={US}"], "expected REGION=ROOM_ID[:FALLBACK]"),
        (["drop", "eu=spring", f"us={US}"], "the room id is q and 16 hex digits"),
        (["drop", f"eu={EU}:1.5", f"us={US}"], "the fallback is 0 (pause) or a share"),
        (["drop", f"eu={EU}:half", f"us={US}"], "the fallback is 0 (pause) or a share"),
        (["drop", f"eu={EU}:nan", f"us={US}"], "the fallback is 0 (pause) or a share"),
    ],
)
def test_a_wrong_argument_is_named_and_nothing_is_written(
    etcd_cluster: EtcdCluster, args: list[str], says: str
) -> None:
    endpoints = ",".join(etcd_cluster.endpoints)
    before = read_specs(Etcd(etcd_cluster.endpoints))
    done = regions(endpoints, "span", *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert read_specs(Etcd(etcd_cluster.endpoints)) == before


def test_without_etcd_it_says_so() -> None:
    missing = regions("", "show")
    assert missing.returncode == 2 and "ANTEROOM_ETCD_ENDPOINTS" in missing.stderr
    down = regions(f"http://127.0.0.1:{free_port()}", "span", "drop", f"eu={EU}", f"us={US}")
    assert down.returncode == 1 and "etcd unreachable" in down.stderr, down.stderr
    assert "Traceback" not in down.stderr
    unknown = regions(f"http://127.0.0.1:{free_port()}", "show", "nope")
    assert unknown.returncode == 1
