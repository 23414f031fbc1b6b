"""Shapes of a draw's public answers (docs/draw.md): what a room's JSON says of
its draw, and the fairness document ``anteroom verify-draw`` checks."""

from __future__ import annotations

from pydantic import Field, RootModel

from anteroom.web.api.api_models import Answer, Body

HEX64 = r"^[0-9a-f]{64}$"


class WithdrawnCommitment(Answer):
    """A commitment a re-roll replaced before the draw: kept public, so a re-roll is seen."""

    commitment: str = Field(pattern=HEX64)
    committedAt: int = Field(description="Room clock, epoch ms.")
    withdrawnAt: int = Field(description="Room clock, epoch ms.")


class Beacon(Answer):
    """The public randomness beacon round a draw named at commitment, and its value once fetched."""

    url: str = Field(description="The beacon's base URL: the value is at {url}/public/{round}.")
    round: int = Field(ge=1, description="The round named at commitment (after opensAt).")
    value: str | None = Field(
        None, pattern=r"^(?:[0-9a-f]{2})+$", description="The round's randomness, once fetched."
    )


class Draw(Answer):
    """A room's draw: the commitment from scheduling on; seed, root and count once drawn."""

    commitment: str = Field(pattern=HEX64, description="SHA-256 hex of the seed's hex text.")
    committedAt: int = Field(description="Room clock, epoch ms.")
    withdrawn: list[WithdrawnCommitment] = Field(default_factory=list)
    seed: str | None = Field(None, pattern=HEX64, description="Revealed once drawn.")
    root: str | None = Field(None, pattern=HEX64, description="Merkle root, once drawn.")
    entrants: int | None = Field(None, ge=0, description="Entrants drawn, once drawn.")
    beacon: Beacon | None = Field(None, description="The beacon round named; null: none.")
    waiting: str | None = Field(
        None, description='"waiting for beacon round N" while the beacon does not answer.'
    )


class WaitSeconds(Answer):
    """Seconds from ticket to admission of this opening's admitted visitors, by quantile.

    Bucketed: read from the wait histogram (bounds 1, 2, 5, 10 … 7200 s), interpolated inside
    a bucket; null with nobody admitted yet.
    """

    p50: float | None
    p90: float | None
    p99: float | None


class Fairness(Answer):
    """One opening's fairness document: what ``anteroom verify-draw --fairness`` reads."""

    room: str = Field(description="The room's slug.")
    opensAt: int | None = Field(description="Epoch ms of the opening.")
    commitment: str = Field(pattern=HEX64)
    committedAt: int
    withdrawn: list[WithdrawnCommitment]
    seed: str | None = Field(description="null until the draw is made.")
    root: str | None = Field(description="null until the draw is made.")
    entrants: int | None = Field(description="null until the draw is made.")
    entrantsUrl: str | None = Field(description="The entrant ids in drawn order, once drawn.")
    beacon: Beacon | None = Field(
        description="The public beacon round the order takes, named at commitment; null: none."
    )
    guarantee: str = Field(
        description='"commitment" (the seed alone) or "commitment + beacon" (the order also '
        "takes a beacon value nobody knew at commitment)."
    )
    receiptKeys: dict[str, str] = Field(
        description="The Ed25519 public keys (base64url, by key id) that sign entrants' receipts."
    )
    admittedFromPreQueue: int = Field(ge=0, description="Admitted from the drawn pre-queue.")
    admittedLater: int = Field(ge=0, description="Admitted after arriving once open (FIFO).")
    outOfOrder: int = Field(
        ge=0,
        description="Later arrivals admitted before one who arrived earlier and was not held "
        "(must be 0).",
    )
    waitSeconds: WaitSeconds
    held: int = Field(ge=0, description="Spots held by their signal score (holdScore).")
    released: int = Field(ge=0, description="Held spots released by a raised holdScore.")
    longestPauseSec: float = Field(ge=0, description="The opening's longest pause (room clock).")
    ratePerMinute: int = Field(description="The rate promised: the room's ratePerMinute.")
    mostDealtInMinute: int | None = Field(
        description="The most admissions dealt in any clock minute (the series); null before "
        "a minute is sampled."
    )


class Entrants(RootModel[list[str]]):
    """The entrant ids (salted hashes) of a draw, in drawn order."""


class FairnessQuery(Body):
    """The room's environment, named by one of its public keys, as the hosted page takes it."""

    key: str = Field(description="A public key (pk_…) of the room's environment.")


class EntrantsQuery(FairnessQuery):
    """The environment's public key, and optionally the draw whose list is asked for."""

    root: str | None = Field(
        None,
        pattern=HEX64,
        description="The draw's Merkle root (as entrantsUrl names it): that draw's list, served "
        "immutable; 404 once the room has drawn again. Without it: the room's latest draw.",
    )
