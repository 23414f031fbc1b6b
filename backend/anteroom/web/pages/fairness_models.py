"""Shapes of a draw's public answers (docs/draw.md): what a room's JSON says of
its draw, and the fairness document ``anteroom verify-draw`` checks."""

from __future__ import annotations

from pydantic import Field, RootModel

from anteroom.web.api.api_models import Answer, Body

HEX64 = r"^[0-9a-f]{64}$"


class WithdrawnCommitment(Answer):
    """A commitment a re-roll replaced before the draw: kept public, so a re-roll is seen."""

    commitment: str = Field(
        examples=["9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a"],
        description="The withdrawn commitment: the SHA-256 of a seed never used.",
        pattern=HEX64,
    )
    committedAt: int = Field(examples=[1765026000000], description="Room clock, epoch ms.")
    withdrawnAt: int = Field(examples=[1765108800000], description="Room clock, epoch ms.")


class Beacon(Answer):
    """The public randomness beacon round a draw named at commitment, and its value once fetched."""

    url: str = Field(
        examples=["https://api.drand.sh"],
        description="The beacon's base URL: the value is at {url}/public/{round}.",
    )
    round: int = Field(
        examples=[5528000], ge=1, description="The round named at commitment (after opensAt)."
    )
    value: str | None = Field(
        None,
        examples=["6f1e6f1e6f1e6f1e6f1e6f1e6f1e6f1e6f1e6f1e6f1e6f1e6f1e6f1e6f1e6f1e"],
        pattern=r"^(?:[0-9a-f]{2})+$",
        description="The round's randomness, once fetched.",
    )


class RegionPart(Answer):
    """One region's part of a draw across regions."""

    region: str = Field(examples=["eu"], description="The region's name.")
    root: str = Field(
        examples=["c41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41d"],
        description="The Merkle root of its entrants in drawn order.",
        pattern=HEX64,
    )
    entrants: int = Field(examples=[9120], ge=0, description="Its entrants.")
    entrantsUrl: str | None = Field(
        examples=[
            "https://eu.queue.example/queue/spring-drop/fairness/entrants.json?key=pk_prod_4f8a1c2e9b7d&root=c41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41d"
        ],
        description="Its list of entrant ids in drawn order.",
    )


class Draw(Answer):
    """A room's draw: the commitment from scheduling on; seed, root and count once drawn."""

    commitment: str = Field(
        examples=["9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a"],
        pattern=HEX64,
        description="SHA-256 hex of the seed's hex text.",
    )
    committedAt: int = Field(examples=[1765108800000], description="Room clock, epoch ms.")
    withdrawn: list[WithdrawnCommitment] = Field(
        examples=[[]],
        description="Commitments replaced by a re-roll before the draw, oldest first.",
        default_factory=list,
    )
    seed: str | None = Field(
        None,
        examples=["3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a"],
        pattern=HEX64,
        description="Revealed once drawn.",
    )
    root: str | None = Field(
        None,
        examples=["c41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41d"],
        pattern=HEX64,
        description="Merkle root, once drawn.",
    )
    entrants: int | None = Field(
        None, examples=[18402], ge=0, description="Entrants drawn, once drawn."
    )
    beacon: Beacon | None = Field(
        None, examples=[None], description="The beacon round named; null: none."
    )
    waiting: str | None = Field(
        None,
        examples=[None],
        description='"waiting for beacon round N" while the beacon does not answer.',
    )
    region: str | None = Field(
        None,
        examples=[None],
        description="A room across regions only: this region (one seed drawn in every region; "
        "docs/regions-policies.md).",
    )
    regions: list[RegionPart] | None = Field(
        None,
        examples=[None],
        description="A room across regions only, once every region has drawn: each region's "
        "root, count and list, in region name order.",
    )
    globalRoot: str | None = Field(
        None,
        examples=[None],
        description="A room across regions only, once every region has drawn: the root over "
        "the regions' leaves.",
        pattern=HEX64,
    )


class WaitSeconds(Answer):
    """Seconds from ticket to admission of this opening's admitted visitors, by quantile.

    Bucketed: read from the wait histogram (bounds 1, 2, 5, 10 … 7200 s), interpolated inside
    a bucket; null with nobody admitted yet.
    """

    p50: float | None = Field(
        examples=[540.0], description="Half were admitted within it; null: nobody admitted yet."
    )
    p90: float | None = Field(
        examples=[900.0],
        description="Nine in ten were admitted within it; null: nobody admitted yet.",
    )
    p99: float | None = Field(
        examples=[1150.0],
        description="99 in 100 were admitted within it; null: nobody admitted yet.",
    )


class Fairness(Answer):
    """One opening's fairness document: what ``anteroom verify-draw --fairness`` reads."""

    room: str = Field(examples=["spring-drop"], description="The room's slug.")
    opensAt: int | None = Field(examples=[1765112400000], description="Epoch ms of the opening.")
    commitment: str = Field(
        examples=["9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a9f2c4e1a"],
        description="SHA-256 hex of the seed's hex text, published before the opening.",
        pattern=HEX64,
    )
    committedAt: int = Field(
        examples=[1765108800000],
        description="When the commitment was made, epoch ms of the room's clock.",
    )
    withdrawn: list[WithdrawnCommitment] = Field(
        examples=[[]],
        description="Commitments replaced by a re-roll before the draw, oldest first.",
    )
    seed: str | None = Field(
        examples=["3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a3b7a"],
        description="null until the draw is made.",
    )
    root: str | None = Field(
        examples=["c41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41d"],
        description="null until the draw is made.",
    )
    entrants: int | None = Field(examples=[18402], description="null until the draw is made.")
    entrantsUrl: str | None = Field(
        examples=[
            "/queue/spring-drop/fairness/entrants.json?key=pk_prod_4f8a1c2e9b7d&root=c41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41d"
        ],
        description="The entrant ids in drawn order, once drawn.",
    )
    beacon: Beacon | None = Field(
        examples=[None],
        description="The public beacon round the order takes, named at commitment; null: none.",
    )
    guarantee: str = Field(
        examples=["commitment"],
        description='"commitment" (the seed alone) or "commitment + beacon" (the order also '
        "takes a beacon value nobody knew at commitment).",
    )
    receiptKeys: dict[str, str] = Field(
        examples=[{"k2026a": "q9xk4Wl0cJcRZ1dG6sW8e2d0p3kJm5nB7vT1yU4iO0E"}],
        description="The Ed25519 public keys (base64url, by key id) that sign entrants' receipts.",
    )
    region: str | None = Field(
        None,
        examples=["eu"],
        description="A room across regions only: this region, whose entrants the list holds "
        "(one seed drawn in every region; docs/regions-policies.md).",
    )
    regions: list[RegionPart] | None = Field(
        None,
        examples=[
            [
                {
                    "region": "eu",
                    "root": "c41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41d",
                    "entrants": 9120,
                    "entrantsUrl": "https://eu.queue.example/queue/spring-drop/fairness/entrants.json?key=pk_prod_4f8a1c2e9b7d&root=c41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41d",
                }
            ]
        ],
        description="A room across regions only, once every region has drawn: each region's "
        "root, count and list, in region name order.",
    )
    globalRoot: str | None = Field(
        None,
        examples=["5dc95dc95dc95dc95dc95dc95dc95dc95dc95dc95dc95dc95dc95dc95dc95dc9"],
        description="A room across regions only: the RFC 6962 root over the regions' leaves "
        "(<region>:<root>:<count>).",
        pattern=HEX64,
    )
    admittedFromPreQueue: int = Field(
        examples=[18402], ge=0, description="Admitted from the drawn pre-queue."
    )
    admittedLater: int = Field(
        examples=[3120], ge=0, description="Admitted after arriving once open (FIFO)."
    )
    outOfOrder: int = Field(
        examples=[0],
        ge=0,
        description="Later arrivals admitted before one who arrived earlier and was not held "
        "(must be 0).",
    )
    waitSeconds: WaitSeconds = Field(
        examples=[{"p50": 540.0, "p90": 900.0, "p99": 1150.0}],
        description="How long the admitted waited, in seconds, by quantile.",
    )
    held: int = Field(
        examples=[37], ge=0, description="Spots held by their signal score (holdScore)."
    )
    released: int = Field(
        examples=[5], ge=0, description="Held spots released by a raised holdScore."
    )
    longestPauseSec: float = Field(
        examples=[0.0], ge=0, description="The opening's longest pause (room clock)."
    )
    ratePerMinute: int = Field(
        examples=[600], description="The rate promised: the room's ratePerMinute."
    )
    mostDealtInMinute: int | None = Field(
        examples=[600],
        description="The most admissions dealt in any clock minute (the series); null before "
        "a minute is sampled.",
    )
    leftBeforeTurn: int = Field(
        examples=[140],
        ge=0,
        description="Spots that left the line before their turn during the opening: their "
        "visitor left, or went quiet and was dropped.",
    )


class Entrants(RootModel[list[str]]):
    """The entrant ids (salted hashes) of a draw, in drawn order."""


class FairnessQuery(Body):
    """The room's environment, named by one of its public keys, as the hosted page takes it."""

    key: str = Field(
        examples=["pk_prod_4f8a1c2e9b7d"],
        description="A public key (pk_…) of the room's environment.",
    )


class EntrantsQuery(FairnessQuery):
    """The environment's public key, and optionally the draw whose list is asked for."""

    root: str | None = Field(
        None,
        examples=["c41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41dc41d"],
        pattern=HEX64,
        description="The draw's Merkle root (as entrantsUrl names it): that draw's list, served "
        "immutable; 404 once the room has drawn again. Without it: the room's latest draw.",
    )
