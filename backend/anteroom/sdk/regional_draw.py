"""A draw that spans regions (docs/regions-policies.md): one commitment, a root over regions' roots.

Standard library only, like :mod:`anteroom.sdk.draw`, whose rules each region follows for its
own pool. A room across regions commits one seed (and beacon round) for all of them; each
region orders its own entrants with it and publishes its list and root as a room in one
region does. The order key is a keyed hash per entrant, so the regions' lists need no
coordination to be parts of one order: the global order is the merge of the regions' lists by
(order key, entrant id), the very key each region sorted by.

- **Region leaf**: the ASCII text ``<region>:<root>:<count>``: the region's name (1-32 of
  ``a-z 0-9 -``, so it holds no colon), its list's root (64 lowercase hex) and its entrant
  count (decimal, no leading zero). The count is in the leaf so a region cannot publish a root
  of fewer or more entrants than its document counts without the global root changing.
- **Global root**: the RFC 6962 tree head (:mod:`anteroom.sdk.merkle`) over the regions'
  leaves sorted by region name; a region's inclusion proof is its audit path at its place in
  that order.
- **Global rank**: an entrant's place in the merge, 1-based: one plus how many entrants of every
  region sort before it by (order key, id). It needs every region's list, which exist only once
  every region has drawn, so no receipt carries it: a region's receipts are signed at its own
  draw, which does not wait for the others' (a region lost at the opening must not hold the
  rest). :func:`global_rank` computes it from the published lists; verify-draw reports it.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from anteroom.sdk.draw import Verdict, order_key
from anteroom.sdk.merkle import inclusion_proof, root, verify_inclusion

__all__ = [
    "FAILURES",
    "RegionRoot",
    "check_regions",
    "global_rank",
    "global_root",
    "merged_order",
    "region_leaf",
    "region_proof",
    "regions_of",
]

REGION = re.compile(r"[a-z0-9-]{1,32}\Z")
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")

FAILURES = {
    "regions-malformed": "the document's regions or globalRoot is missing or of the wrong form",
    "region-missing": "the document's own region is not among its regions",
    "region-root-mismatch": "a region's root or count is not what its own list gives",
    "global-root-mismatch": "the root over the regions' roots is not the published globalRoot",
    "region-proof": "a region's leaf does not lead to the global root",
    "region-order-mismatch": "a region's list is not in the order the shared seed draws",
    "cross-region-duplicate": "an entrant id is listed by two regions",
    "receipt-region": "the receipt names another region than the document's",
}


@dataclass(frozen=True)
class RegionRoot:
    """One region's part of a draw: its name, its list's root and count (and where the list is)."""

    region: str
    root: str
    entrants: int
    entrants_url: str | None = None

    def leaf(self) -> bytes:
        """This region's leaf in the global tree."""
        return region_leaf(self.region, self.root, self.entrants)


def region_leaf(region: str, head: str, count: int) -> bytes:
    """``<region>:<root>:<count>`` as ASCII; ValueError on a name, root or count of wrong form."""
    if not isinstance(region, str) or not REGION.match(region):
        raise ValueError("a region's name is 1-32 of a-z, 0-9 and -")
    if not isinstance(head, str) or not _HEX64.match(head):
        raise ValueError("a region's root is 64 lowercase hex characters")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError("a region's entrant count is a non-negative integer")
    return f"{region}:{head}:{count}".encode("ascii")


def _sorted(regions: Sequence[RegionRoot]) -> list[RegionRoot]:
    names = [r.region for r in regions]
    if len(set(names)) != len(names):
        raise ValueError("a region is listed twice")
    return sorted(regions, key=lambda r: r.region)


def global_root(regions: Sequence[RegionRoot]) -> str:
    """The tree head over the regions' leaves, in region name order."""
    return root([r.leaf() for r in _sorted(regions)])


def region_proof(regions: Sequence[RegionRoot], region: str) -> tuple[int, list[str]]:
    """``region``'s index among the sorted regions and its audit path to the global root."""
    ordered = _sorted(regions)
    index = [r.region for r in ordered].index(region)
    return index, inclusion_proof([r.leaf() for r in ordered], index)


def regions_of(document: Mapping[str, Any]) -> list[RegionRoot]:
    """The regions a fairness document lists (``regions``: objects of ``region``, ``root``,
    ``entrants``, optional ``entrantsUrl``); ValueError when the list is malformed."""
    listed = document.get("regions")
    if not isinstance(listed, list) or not listed:
        raise ValueError("regions is not a non-empty list")
    regions = []
    for item in listed:
        if not isinstance(item, Mapping):
            raise ValueError("a region is not an object")
        url = item.get("entrantsUrl")
        if url is not None and not isinstance(url, str):
            raise ValueError("a region's entrantsUrl is not a string")
        region = RegionRoot(item.get("region"), item.get("root"), item.get("entrants"), url)  # type: ignore[arg-type]
        region.leaf()  # checks its form
        regions.append(region)
    _sorted(regions)
    return regions


def _fail(name: str, detail: str) -> Verdict:
    return Verdict(name, f"{name}: {detail}")


def check_regions(document: Mapping[str, Any]) -> Verdict:
    """Check a regional document's own region against its regions and the global root.

    The document's ``root`` and ``entrants`` (which :func:`anteroom.sdk.draw.check_draw` checked
    against its own list) must be its region's entry; the regions' leaves must give
    ``globalRoot``, and its region's leaf must prove its way there (the audit path a receipt's
    holder would check).
    """
    try:
        regions = regions_of(document)
    except ValueError as exc:
        return _fail("regions-malformed", str(exc))
    head, own = document.get("globalRoot"), document.get("region")
    if not isinstance(head, str) or not _HEX64.match(head):
        return _fail("regions-malformed", "globalRoot is not 64 lowercase hex characters")
    mine = [r for r in regions if r.region == own]
    if not mine:
        return _fail("region-missing", f"{own!r} is not listed")
    if mine[0].root != document.get("root") or mine[0].entrants != document.get("entrants"):
        return _fail(
            "region-root-mismatch",
            f"{own} lists root {mine[0].root} of {mine[0].entrants}, its draw has "
            f"{document.get('root')} of {document.get('entrants')}",
        )
    computed = global_root(regions)
    if computed != head:
        return _fail("global-root-mismatch", f"the regions' leaves give {computed}")
    index, proof = region_proof(regions, mine[0].region)
    if not verify_inclusion(mine[0].leaf(), index, len(regions), proof, head):
        return _fail("region-proof", f"{own}'s leaf does not lead to {head}")
    return Verdict(detail=f"region {own}'s root is leaf {index + 1} of {len(regions)} under {head}")


def merged_order(
    seed: str, lists: Mapping[str, Sequence[str]], beacon: str | None = None
) -> list[tuple[str, str]]:
    """Every region's entrants as one order: (region, entrant id), merged by (key, id).

    Each list must already be in its drawn order (check_draw checks each); the merge of
    sorted lists is then the sort of them all.
    """

    def keyed(region: str, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        return [(order_key(seed, e, beacon), e, region) for e in ids]

    merged = heapq.merge(*(keyed(region, ids) for region, ids in sorted(lists.items())))
    return [(region, entrant) for _, entrant, region in merged]


def global_rank(
    seed: str,
    lists: Mapping[str, Sequence[str]],
    region: str,
    entrant: str,
    beacon: str | None = None,
) -> int:
    """``entrant``'s 1-based place in the merge of every region's list (0: not listed)."""
    mine = (order_key(seed, entrant, beacon), entrant)
    if entrant not in lists.get(region, ()):
        return 0
    before = 0
    for ids in lists.values():
        before += sum(1 for e in ids if (order_key(seed, e, beacon), e) < mine)
    return before + 1
