"""Ed25519 (RFC 8032) with the standard library only: what checks a receipt's signature.

The service signs receipts with the ``cryptography`` package; a sceptical visitor's
``anteroom verify-draw`` must not need it, so the site SDK carries this verify (RFC 8032
section 5.1.7), plus the key derivation and signing it is tested with. It is plain integer
arithmetic and NOT constant-time: fine for checking public signatures, never for signing with a
secret an attacker may time (the service signs with ``cryptography``, not with this).

The check is the cofactorless equation ``[S]B = R + [k]A``, as OpenSSL (and so
``cryptography``) checks it, so both accept the same signatures; ``S`` must be below ``L``
and both points must decode (RFC 8032 5.1.3), which rules out malleable encodings.

Speed (bench/signed_agents.py, where a signed agent's request pays one verify): ``[S]B`` reads a
table of the base point's multiples (``j * 16^i * B`` for every 4-bit digit ``j`` at every
position ``i``, built once on first use, in affine form so each step is a mixed addition), so it
costs 64 additions and no doubling; ``[k]A`` is a 4-bit fixed window over a table of ``A``'s first
16 multiples, with the dedicated doubling formula (4 squarings and 4 products instead of an
addition's 9 products); a key that has verified twice gets a comb of its own too (below), so an
agent's later requests pay 128 additions in all. ``R`` is never decoded: ``[S]B - [k]A`` is
encoded and compared with its bytes (an inversion instead of a square root), and inversions use
``pow(z, -1, p)``.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

__all__ = ["public_key", "sign", "verify"]

_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493  # the base point's order
_D = -121665 * pow(121666, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)

# Points in extended coordinates (X, Y, Z, T), x = X/Z, y = Y/Z, x*y = T/Z (RFC 8032 5.1.4).
Point = tuple[int, int, int, int]
_IDENTITY: Point = (0, 1, 1, 0)


def _add(p: Point, q: Point) -> Point:
    a = (p[1] - p[0]) * (q[1] - q[0]) % _P
    b = (p[1] + p[0]) * (q[1] + q[0]) % _P
    c = 2 * p[3] * q[3] * _D % _P
    d = 2 * p[2] * q[2] % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _double(p: Point) -> Point:
    # RFC 8032 5.1.4's doubling: cheaper than adding a point to itself.
    x, y, z, _ = p
    a, b = x * x % _P, y * y % _P
    c = 2 * z * z % _P
    h = a + b
    xy = x + y
    e = h - xy * xy % _P
    g = a - b
    f = c + g
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


# An affine point ready for a mixed addition: (y + x, y - x, 2d * x * y).
Cached = tuple[int, int, int]


def _add_cached(p: Point, q: Cached) -> Point:
    """``p + q`` for an affine ``q`` (Z = 1) given as :data:`Cached`: 7 products, not 9."""
    a = (p[1] - p[0]) * q[1] % _P
    b = (p[1] + p[0]) * q[0] % _P
    c = p[3] * q[2] % _P
    d = 2 * p[2]
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _multiply(scalar: int, point: Point) -> Point:
    """``[scalar]point``: a 4-bit fixed window, most significant digit first."""
    table = [_IDENTITY, point]
    for _ in range(14):
        table.append(_add(table[-1], point))
    result = _IDENTITY
    for shift in range(((scalar.bit_length() + 3) // 4 - 1) * 4, -1, -4):
        result = _double(_double(_double(_double(result))))
        digit = (scalar >> shift) & 15
        if digit:
            result = _add(result, table[digit])
    return result


Comb = list[list[Cached]]  # [i][j - 1] = j * 16^i * P, for the 64 4-bit digits of a scalar
_base_table: Comb | None = None  # the base point's, built on first use


def _comb(point: Point) -> Comb:
    """``point``'s comb: 960 multiples (15 a digit, 64 digits), in affine form."""
    rows: list[list[Point]] = []
    step = point
    for _ in range(64):
        row = [step]
        for _ in range(14):
            row.append(_add(row[-1], step))
        rows.append(row)
        step = _double(_double(_double(_double(step))))
    # One inversion for all 960 points (Montgomery's trick), then each to affine form.
    points = [p for row in rows for p in row]
    prefix = [1]
    for p in points:
        prefix.append(prefix[-1] * p[2] % _P)
    inverse = pow(prefix[-1], -1, _P)
    cached: list[Cached] = [(0, 0, 0)] * len(points)
    for index in range(len(points) - 1, -1, -1):
        z_inv = inverse * prefix[index] % _P
        inverse = inverse * points[index][2] % _P
        x, y = points[index][0] * z_inv % _P, points[index][1] * z_inv % _P
        cached[index] = ((y + x) % _P, (y - x) % _P, 2 * _D * x * y % _P)
    return [cached[i * 15 : i * 15 + 15] for i in range(64)]


def _multiply_base(scalar: int) -> Point:
    """``[scalar]B`` for ``0 <= scalar < 2**256``."""
    global _base_table
    table = _base_table
    if table is None:  # two threads may both build it: the same table, one kept
        table = _base_table = _comb(_BASE)
    return _multiply_comb(scalar, table)


def _multiply_comb(scalar: int, table: Comb) -> Point:
    """``[scalar]P`` from ``P``'s comb: one mixed addition per nonzero 4-bit digit."""
    result = _IDENTITY
    for row in table:
        digit = scalar & 15
        if digit:
            result = _add_cached(result, row[digit - 1])
        scalar >>= 4
    return result


def _recover_x(y: int, sign: int) -> int | None:
    if y >= _P:
        return None
    x2 = (y * y - 1) * pow(_D * y * y + 1, -1, _P) % _P
    if x2 == 0:
        return None if sign else 0
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P:
        x = x * _SQRT_M1 % _P
    if (x * x - x2) % _P:
        return None  # y is on no point of the curve
    return _P - x if (x & 1) != sign else x


_BASE_Y = 4 * pow(5, _P - 2, _P) % _P
_BASE_X = _recover_x(_BASE_Y, 0) or 0
_BASE: Point = (_BASE_X, _BASE_Y, 1, _BASE_X * _BASE_Y % _P)


def _encode(point: Point) -> bytes:
    inverse = pow(point[2], -1, _P)
    x, y = point[0] * inverse % _P, point[1] * inverse % _P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def _decode(data: bytes) -> Point | None:
    if len(data) != 32:
        return None
    y = int.from_bytes(data, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    x = _recover_x(y, sign)
    return None if x is None else (x, y, 1, x * y % _P)


def _hash_int(*parts: bytes) -> int:
    return int.from_bytes(hashlib.sha512(b"".join(parts)).digest(), "little")


def _expand(secret: bytes) -> tuple[int, bytes]:
    if len(secret) != 32:
        raise ValueError("an Ed25519 private key is 32 bytes")
    digest = hashlib.sha512(secret).digest()
    scalar = int.from_bytes(digest[:32], "little")
    scalar = (scalar & ((1 << 254) - 8)) | (1 << 254)  # clamp (RFC 8032 5.1.5)
    return scalar, digest[32:]


def public_key(secret: bytes) -> bytes:
    """The 32-byte public key of a 32-byte private key (RFC 8032 5.1.5)."""
    scalar, _ = _expand(secret)
    return _encode(_multiply_base(scalar))


def sign(secret: bytes, message: bytes) -> bytes:
    """The 64-byte signature of ``message`` (RFC 8032 5.1.6). Not constant-time: tests only."""
    scalar, prefix = _expand(secret)
    public = _encode(_multiply_base(scalar))
    r = _hash_int(prefix, message) % _L
    encoded_r = _encode(_multiply_base(r))
    s = (r + _hash_int(encoded_r, public, message) % _L * scalar) % _L
    return encoded_r + s.to_bytes(32, "little")


class _Key:
    """A public key as the check uses it: ``-A``, and its comb once it signed twice."""

    __slots__ = ("comb", "negated", "verified")

    def __init__(self, negated: Point) -> None:
        self.negated = negated
        self.comb: Comb | None = None
        self.verified = 0


# A signed agent signs request after request with one key: its comb (about 200 kB) makes
# ``[k]A`` 64 additions instead of 252 doublings and 63 additions. Built only once a key has
# verified a signature (a forger cannot make us build tables for keys it does not hold), for a
# few keys, least recently used forgotten first.
KEY_COMBS = 16
_KEY_CACHE = 4 * KEY_COMBS
_keys: OrderedDict[bytes, _Key] = OrderedDict()
_keys_lock = threading.Lock()


def _key(public: bytes) -> _Key | None:
    with _keys_lock:
        known = _keys.get(public)
        if known is not None:
            _keys.move_to_end(public)
            return known
    point = _decode(public)
    if point is None:
        return None
    key = _Key((_P - point[0], point[1], point[2], _P - point[3]))
    with _keys_lock:
        _keys[public] = key
        while len(_keys) > _KEY_CACHE:
            _keys.popitem(last=False)
    return key


def _verified_with(key: _Key) -> None:
    key.verified += 1
    if key.comb is None and key.verified >= 2:
        with _keys_lock:
            combs = [k for k in _keys.values() if k.comb is not None]
            for stale in combs[: max(0, len(combs) - KEY_COMBS + 1)]:  # oldest first
                stale.comb = None
        key.comb = _comb(key.negated)


def verify(public: bytes, message: bytes, signature: bytes) -> bool:
    """True when ``signature`` is ``public``'s over ``message`` (RFC 8032 5.1.7)."""
    if len(public) != 32 or len(signature) != 64:
        return False
    key = _key(public)
    if key is None:
        return False
    s = int.from_bytes(signature[32:], "little")
    if s >= _L:
        return False
    k = _hash_int(signature[:32], public, message) % _L
    # [S]B - [k]A, encoded, against R's bytes: an encoding is canonical, so equal bytes are R
    # decoding (RFC 8032 5.1.3) to this very point, without the square root decoding R costs.
    comb = key.comb
    product = _multiply_comb(k, comb) if comb is not None else _multiply(k, key.negated)
    if _encode(_add(_multiply_base(s), product)) != signature[:32]:
        return False
    _verified_with(key)
    return True
