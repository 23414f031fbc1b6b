"""The pre-queue's committed draw: the draw itself, its public beacon, the receipts and the opening
report, and the bounded outbound fetches they need."""
