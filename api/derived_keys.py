"""Keys derived from the store's secret, one per purpose.

Each use of the secret (idempotency stream names, and any later one) MACs under its own
key, `HMAC-SHA256(secret, "planledger/<purpose>")`, so a value computed for one purpose
can never be replayed as a value of another, and no purpose handles the secret itself.
"""

import hashlib
import hmac

IDEMPOTENCY_STREAMS = "idempotency-stream"


def derived_key(secret: bytes, purpose: str) -> bytes:
    return hmac.new(secret, b"planledger/" + purpose.encode(), hashlib.sha256).digest()
