"""``anteroom verify-draw``: check a published draw, and a receipt, with the standard library only.

Usage: ``python -m anteroom.sdk.verify_draw --fairness FILE|URL [--receipt rc1.…|FILE]
[--entrants FILE|URL]``. The fairness document is one opening's report (``commitment``, ``seed``,
``root``, ``entrants``, ``entrantsUrl``, optional ``beacon``, ``room``, ``opensAt``,
``receiptKeys``) or an object listing them under ``openings`` (its ``room`` and ``receiptKeys``
apply to each). A receipt's signature is checked with the document's ``receiptKeys``. The
entrant ids come from ``--entrants`` or the opening's ``entrantsUrl`` (relative to the
document), as a JSON array or one id a line, in drawn order. Exit 0 when every check passes;
1 naming the first failure.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from anteroom.sdk import regional_draw
from anteroom.sdk.draw import (
    FAILURES,
    Verdict,
    beacon_value,
    check_draw,
    check_receipt,
    read_receipt,
    signature_checker,
)

MEANINGS = FAILURES | regional_draw.FAILURES

# 100,000 ids of 64 hex characters are 6.7 MB; refuse what cannot be an honest list.
MAX_BYTES = 64 * 1024 * 1024


class Unreadable(Exception):
    """A document or list that cannot be fetched, read or parsed."""


def _is_url(source: str) -> bool:
    return urllib.parse.urlsplit(source).scheme in ("http", "https")


def fetch(source: str) -> bytes:
    """The bytes at ``source``: an http(s) URL or a file path."""
    try:
        if _is_url(source):
            with urllib.request.urlopen(source, timeout=30) as answer:
                data: bytes = answer.read(MAX_BYTES + 1)
        else:
            with open(source, "rb") as fh:
                data = fh.read(MAX_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise Unreadable(f"{source}: {exc}") from exc
    if len(data) > MAX_BYTES:
        raise Unreadable(f"{source}: larger than {MAX_BYTES} bytes")
    return data


def beside(base: str, reference: str) -> str:
    """``reference`` read relative to ``base`` (a URL, or a file's folder).

    Beside a fetched document, every reference is a URL (``/queue/...`` is on its host): a
    document from the network never makes the checker read a local file.
    """
    if _is_url(base):
        return urllib.parse.urljoin(base, reference)
    if _is_url(reference) or Path(reference).is_absolute():
        return reference
    return str(Path(base).parent / reference)


def parse_entrants(data: bytes) -> list[str]:
    """Entrant ids from a JSON array of strings, or from text with one id a line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable("the entrant list is not UTF-8 text") from exc
    if text.lstrip().startswith("["):
        try:
            ids = json.loads(text)
        except ValueError as exc:
            raise Unreadable(f"the entrant list is not JSON: {exc}") from exc
        if not isinstance(ids, list) or not all(isinstance(e, str) for e in ids):
            raise Unreadable("the entrant list is not an array of strings")
        return ids
    return [line.strip() for line in text.splitlines() if line.strip()]


def openings(document: Any) -> list[Mapping[str, Any]]:
    """The openings a fairness document reports (one, or its ``openings``), each with its room."""
    if not isinstance(document, Mapping):
        raise Unreadable("the fairness document is not a JSON object")
    listed = document.get("openings")
    if listed is None:
        return [document]
    if not isinstance(listed, list) or not all(isinstance(o, Mapping) for o in listed):
        raise Unreadable("openings is not a list of objects")
    shared = {name: document[name] for name in ("room", "receiptKeys") if name in document}
    return [shared | dict(o) for o in listed]


def chosen(reports: Sequence[Mapping[str, Any]], receipt: str | None) -> list[Mapping[str, Any]]:
    """The receipt's opening when there is a receipt and it is listed, else every drawn one."""
    if receipt is not None and len(reports) > 1:
        try:
            opening = read_receipt(receipt).opening
        except ValueError:
            return list(reports[:1])  # check_receipt names what is wrong with it
        mine = [o for o in reports if o.get("opensAt") == opening]
        if mine:
            return mine
    drawn = [o for o in reports if o.get("seed") is not None]
    return drawn or list(reports[:1])


def verify(source: str, receipt: str | None, entrants_source: str | None) -> list[Verdict]:
    """Every check's verdict, stopping at the first failure."""
    try:
        document = json.loads(fetch(source))
    except ValueError as exc:
        raise Unreadable(f"{source}: not JSON: {exc}") from exc
    verdicts = []
    for report in chosen(openings(document), receipt):
        listed = entrants_source or report.get("entrantsUrl")
        if not isinstance(listed, str):
            raise Unreadable("no entrant list: the document has no entrantsUrl; give --entrants")
        entrants = parse_entrants(fetch(beside(source, listed) if not entrants_source else listed))
        verdicts.append(check_draw(report, entrants))
        regional = verdicts[-1].ok and "regions" in report
        if regional:
            verdicts.append(regional_draw.check_regions(report))
        elif verdicts[-1].ok and report.get("region"):
            note = "note: the other regions' roots are not published yet (once all have drawn)"
            verdicts.append(Verdict(detail=note))
        if verdicts[-1].ok and receipt is not None:
            keys = report.get("receiptKeys")
            hook = signature_checker(keys) if isinstance(keys, Mapping) else None
            verdicts.append(check_receipt(report, entrants, receipt, hook))
        if verdicts[-1].ok and regional:
            verdicts += check_other_regions(source, report, entrants, receipt)
        if not verdicts[-1].ok:
            break
    return verdicts


_IN_REGION = {
    "order-mismatch": "region-order-mismatch",
    "root-mismatch": "region-root-mismatch",
    "entrant-dropped": "region-root-mismatch",
    "entrant-added": "region-root-mismatch",
}


def check_other_regions(
    source: str, report: Mapping[str, Any], own: list[str], receipt: str | None
) -> list[Verdict]:
    """Each other region's list against its published root under the shared seed, no id in
    two regions, and the receipt's global rank: its place in the merge of every list."""
    verdicts, lists = [], {str(report["region"]): own}
    for region in regional_draw.regions_of(report):
        if region.region == report["region"]:
            continue
        if region.entrants_url is None:
            verdicts.append(Verdict(detail=f"note: region {region.region} lists no entrantsUrl"))
            continue
        ids = parse_entrants(fetch(beside(source, region.entrants_url)))
        # the region's draw is checked as a draw of its own, with the shared commitment
        theirs = dict(report) | {"root": region.root, "entrants": region.entrants}
        verdict = check_draw(theirs, ids)
        if not verdict.ok:
            name = _IN_REGION.get(verdict.failure or "", verdict.failure or "")
            return [*verdicts, Verdict(name, f"{name}: region {region.region}: {verdict.detail}")]
        lists[region.region] = ids
        verdicts.append(Verdict(detail=f"region {region.region}: {verdict.detail}"))
    seen: dict[str, str] = {}
    for region, ids in lists.items():
        for entrant in ids:
            if entrant in seen:
                detail = f"cross-region-duplicate: {entrant} in {seen[entrant]} and {region}"
                return [*verdicts, Verdict("cross-region-duplicate", detail)]
            seen[entrant] = region
    if receipt is not None:
        claims = read_receipt(receipt)  # check_receipt accepted it
        if len(lists) < len(regional_draw.regions_of(report)):
            verdicts.append(Verdict(detail="global rank not computed: a region's list is missing"))
        else:
            rank = regional_draw.global_rank(
                str(report["seed"]), lists, str(claims.region), claims.entrant, beacon_value(report)
            )
            total = sum(len(ids) for ids in lists.values())
            detail = (
                f"global rank {rank} of {total} ({claims.rank} of {len(own)} in {claims.region})"
            )
            verdicts.append(Verdict(detail=detail))
    return verdicts


def receipt_text(given: str) -> str:
    """The receipt itself (``rc1.…``), or the text of a file holding one (the hosted page's
    "proof of your place" download), surrounding whitespace dropped."""
    if given.startswith("rc1."):
        return given
    try:
        with open(given, encoding="ascii") as fh:
            return fh.read(64 * 1024).strip()
    except (OSError, ValueError) as exc:
        raise Unreadable(f"the receipt is neither rc1.… nor a readable file: {exc}") from exc


def build_parser() -> argparse.ArgumentParser:
    """The command's options (also what ``anteroom verify-draw --help`` shows)."""
    parser = argparse.ArgumentParser(
        prog="anteroom verify-draw",
        description="Check a published draw: commitment, order, Merkle root, and a receipt.",
    )
    parser.add_argument("--fairness", required=True, help="fairness JSON: a file or a URL")
    parser.add_argument(
        "--receipt", help="a receipt (rc1.…), or a file holding one, to check against the draw"
    )
    parser.add_argument("--entrants", help="the entrant ids in drawn order, if not entrantsUrl")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the checks; print what passed, or the first failure. Exit 0, or 1 on a failure."""
    args = build_parser().parse_args(argv)
    try:
        receipt = None if args.receipt is None else receipt_text(args.receipt)
        verdicts = verify(args.fairness, receipt, args.entrants)
    except Unreadable as exc:
        print(f"verify-draw: FAILED unreadable: {exc} ({FAILURES['unreadable']})", file=sys.stderr)
        return 1
    for verdict in verdicts:
        if not verdict.ok:
            meaning = MEANINGS.get(verdict.failure or "", "")
            print(f"verify-draw: FAILED {verdict.detail} ({meaning})", file=sys.stderr)
            return 1
        print(f"ok: {verdict.detail}")
    if args.receipt is not None and not any(v.signature_checked for v in verdicts):
        # A document without receiptKeys: say plainly what was not checked.
        print("note: the receipt's signature was not checked (the document has no receiptKeys)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
