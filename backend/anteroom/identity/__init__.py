"""Who a visitor is: proof-of-work challenges, signal rules and scores, session tokens,
revocations."""
