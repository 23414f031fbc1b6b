"""``anteroom regions span|show``: which rooms span which regions (docs/regions.md).

A room across regions is created in each region's Redis as any room is (the management API of
that region's instances); ``span`` then writes its spec to etcd, naming the room's id in each
region and each region's fallback (what the region may admit while it holds no lease: ``0``
pauses, a share in (0, 1] of the room's rate and capacity). The region cells read the spec at
their next step. ``show`` prints the specs with each region's lease as last written. Both talk
to ``ANTEROOM_ETCD_ENDPOINTS``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from typing import Any

from anteroom.config import Settings
from anteroom.queue.regions.etcd_kv import Etcd, EtcdError, EtcdUnavailable
from anteroom.queue.regions.region_cell import DEFAULT_PREFIX, read_specs, write_spec

NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
REGION = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")  # as ANTEROOM_REGION
ROOM_ID = re.compile(r"q[0-9a-f]{16}")
PART = "REGION=ROOM_ID[:FALLBACK]"


class SpecError(ValueError):
    """An argument of ``span`` that cannot be a spec (its message says which and why)."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``regions`` and its subcommands."""
    regions = sub.add_parser("regions", help="make a room span regions; show which do")
    verbs = regions.add_subparsers(dest="verb", required=True)
    span = verbs.add_parser(
        "span",
        help="make room NAME span the regions named (its id in each, and each one's fallback)",
    )
    span.add_argument("name", help="the room's name across regions (lowercase, digits, -)")
    span.add_argument(
        "parts",
        nargs="+",
        metavar=PART,
        help="a region, the room's id there, and what it may admit without a lease: 0 pauses "
        "(the default), a share in (0, 1] of the rate and capacity",
    )
    show = verbs.add_parser("show", help="the rooms across regions and their leases")
    show.add_argument("name", nargs="?", help="only this room")
    show.add_argument("--json", action="store_true", help="print JSON")


def parse_parts(name: str, parts: list[str]) -> dict[str, tuple[str, float]]:
    """``span``'s arguments as {region: (room id, fallback share)}; SpecError naming the first
    that is wrong."""
    if not NAME.fullmatch(name):
        raise SpecError(f"name {name!r}: lowercase letters, digits and '-', at most 64")
    regions: dict[str, tuple[str, float]] = {}
    for part in parts:
        region, eq, rest = part.partition("=")
        room, _, share_text = rest.partition(":")
        if not eq or not REGION.fullmatch(region):
            raise SpecError(f"{part!r}: expected {PART}, the region as ANTEROOM_REGION names it")
        if not ROOM_ID.fullmatch(room):
            raise SpecError(f"{part!r}: the room id is q and 16 hex digits (the API's `id`)")
        try:
            share = float(share_text) if share_text else 0.0
        except ValueError:
            share = math.nan
        if not 0 <= share <= 1:  # NaN fails too
            raise SpecError(f"{part!r}: the fallback is 0 (pause) or a share in (0, 1]")
        if region in regions:
            raise SpecError(f"region {region!r} is named twice")
        regions[region] = (room, share)
    if len(regions) < 2:
        raise SpecError("a room across regions names at least two regions")
    return regions


def run(args: argparse.Namespace, settings: Settings) -> int:
    """``anteroom regions …``; the exit status."""
    endpoints = [url.strip() for url in settings.etcd_endpoints.split(",") if url.strip()]
    if not endpoints:
        print("anteroom: ANTEROOM_ETCD_ENDPOINTS must name etcd's members", file=sys.stderr)
        return 2
    etcd = Etcd(endpoints)
    try:
        if args.verb == "span":
            try:
                regions = parse_parts(args.name, args.parts)
            except SpecError as exc:
                print(f"anteroom: {exc}", file=sys.stderr)
                return 2
            write_spec(etcd, args.name, regions)
            listed = ", ".join(f"{r} ({room}, fallback {s:g})" for r, (room, s) in regions.items())
            print(f"{args.name} spans {listed}: each region's cell takes it at its next step")
            return 0
        return _show(etcd, args.name, args.json)
    except EtcdUnavailable as exc:
        print(f"anteroom: etcd unreachable: {exc}", file=sys.stderr)
        return 1
    except EtcdError as exc:
        print(f"anteroom: etcd refused: {exc}", file=sys.stderr)
        return 1


def _show(etcd: Etcd, only: str | None, as_json: bool) -> int:
    rooms: list[dict[str, Any]] = []
    for spec in read_specs(etcd):
        if only and spec.name != only:
            continue
        leases = {}
        for region in spec.rooms:
            kv = etcd.get(f"{DEFAULT_PREFIX}rooms/{spec.name}/lease/{region}")
            leases[region] = json.loads(kv.value) if kv else None
        rooms.append(
            {
                "name": spec.name,
                "regions": {
                    r: {"room": spec.rooms[r], "fallback": spec.fallbacks[r], "lease": leases[r]}
                    for r in spec.rooms
                },
            }
        )
    if only and not rooms:
        print(f"anteroom: no room {only!r} spans regions", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps(rooms, indent=2))
        return 0
    for room in rooms:
        print(room["name"])
        for region, part in room["regions"].items():
            lease = part["lease"]
            held = "no lease yet" if lease is None else f"lease {json.dumps(lease)}"
            print(f"  {region}: {part['room']}, fallback {part['fallback']:g}, {held}")
    return 0
