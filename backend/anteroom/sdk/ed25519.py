"""Ed25519 (RFC 8032) with the standard library only: what checks a receipt's signature.

The service signs receipts with the ``cryptography`` package; a sceptical visitor's
``anteroom verify-draw`` must not need it, so the site SDK carries this verify (RFC 8032
section 5.1.7), plus the key derivation and signing it is tested with. It is plain integer
arithmetic and NOT constant-time: fine for checking public signatures, never for signing with a
secret an attacker may time (the service signs with ``cryptography``, not with this).

The check is the cofactorless equation ``[S]B = R + [k]A``, as OpenSSL (and so
``cryptography``) checks it, so both accept the same signatures; ``S`` must be below ``L``
and both points must decode (RFC 8032 5.1.3), which rules out malleable encodings.
"""

from __future__ import annotations

import hashlib

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


def _multiply(scalar: int, point: Point) -> Point:
    result = _IDENTITY
    while scalar > 0:
        if scalar & 1:
            result = _add(result, point)
        point = _add(point, point)
        scalar >>= 1
    return result


def _same(p: Point, q: Point) -> bool:
    # x1/z1 == x2/z2 and y1/z1 == y2/z2, without inverting
    return (p[0] * q[2] - q[0] * p[2]) % _P == 0 and (p[1] * q[2] - q[1] * p[2]) % _P == 0


def _recover_x(y: int, sign: int) -> int | None:
    if y >= _P:
        return None
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
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
    inverse = pow(point[2], _P - 2, _P)
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
    return _encode(_multiply(scalar, _BASE))


def sign(secret: bytes, message: bytes) -> bytes:
    """The 64-byte signature of ``message`` (RFC 8032 5.1.6). Not constant-time: tests only."""
    scalar, prefix = _expand(secret)
    public = _encode(_multiply(scalar, _BASE))
    r = _hash_int(prefix, message) % _L
    encoded_r = _encode(_multiply(r, _BASE))
    s = (r + _hash_int(encoded_r, public, message) % _L * scalar) % _L
    return encoded_r + s.to_bytes(32, "little")


def verify(public: bytes, message: bytes, signature: bytes) -> bool:
    """True when ``signature`` is ``public``'s over ``message`` (RFC 8032 5.1.7)."""
    if len(public) != 32 or len(signature) != 64:
        return False
    point_a, point_r = _decode(public), _decode(signature[:32])
    if point_a is None or point_r is None:
        return False
    s = int.from_bytes(signature[32:], "little")
    if s >= _L:
        return False
    k = _hash_int(signature[:32], public, message) % _L
    return _same(_multiply(s, _BASE), _add(point_r, _multiply(k, point_a)))
