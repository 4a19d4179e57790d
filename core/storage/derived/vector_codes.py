"""Normalised float32 rows held as int8 codes plus what makes them exact again, in 4 bytes a
dimension (the float32 rows' own size), and the bound on a code's score error.

A row ``v`` is kept as:

- ``codes``: ``round(v / scale)`` in int8, ``scale = max|v| / 127``: what the scan reads,
  a quarter of the float32 bytes;
- ``low``: each float32's low 24 bits (the mantissa and the exponent's lowest bit), as a
  uint16 plane and a uint8 plane;
- the high 8 bits (the sign and the rest of the exponent) are not stored: the code says the
  sign, and the value within ``(|c| -+ 1/2) * scale``, which for ``|c| >= 2`` spans less
  than a factor 2, so of the two exponents it can have the low bit tells which (see
  :func:`_guess`). Where the guess is wrong (mostly ``|c| <= 1``, a component below
  ``1.5 * scale``) the true high byte is kept in one of the row's :func:`patches` slots,
  ``(dimension, byte)``; a row that needs more keeps its float32 copy whole beside.

Encoding compares every guess with the true bits, so a row reads back exactly the float32
it was given.

The bound: with ``v = s c + e`` (``|e| = residual``, stored rounded up) and a normalised
query ``q = t d + f`` (``d`` its int8 codes), ``|q.v - t s (d.c)| <= |t d| |e| + |f| |v|``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def patches(dimension: int) -> int:
    """Slots a row has for high bytes the code guesses wrong: 16 at 256 dimensions, where
    a real model's rows need 7 on average and 0.25 % need more."""
    return min(dimension, max(4, dimension // 16))


_MANTISSA = np.uint32(0x7FFFFF)
# Indexed by a code's byte (its uint8 view): the least its value can be, in scales, and its
# sign bit. 0.7 and 0.2 (not 0.5 and 0) measured on a real model's 100k vectors: 7 patches
# a row on average, 0.25 % of rows needing more than 16.
_CODE_VALUES = np.arange(256, dtype=np.uint8).view(np.int8).astype(np.float32)
_BASE = np.abs(_CODE_VALUES) - np.float32(0.5)
_BASE[np.abs(_CODE_VALUES) == 1] = 0.7
_BASE[_CODE_VALUES == 0] = 0.2
# The least a code's value can be, signed as the code: one lookup gives the sign bit too.
_SIGNED_BASE = np.where(_CODE_VALUES < 0, -_BASE, _BASE).astype(np.float32)
# Rows of a scale at least this have every code's least value a normal float (>= 2**-120).
_NORMAL_SCALE = np.float32(2.0 ** -117)


@dataclass
class Encoded:
    """Rows as kept: each array has one entry (or row) per input row."""

    codes: np.ndarray  # int8 (n, d)
    low16: np.ndarray  # uint16 (n, d): the float32 bits 0-15
    low8: np.ndarray  # uint8 (n, d): the float32 bits 16-23
    scales: np.ndarray  # float32 (n,)
    residuals: np.ndarray  # float32 (n,), |v - scale * codes| rounded up
    patch_dims: np.ndarray  # uint16 (n, patches(d))
    patch_bytes: np.ndarray  # uint8 (n, patches(d))
    whole: dict[int, np.ndarray]  # input row -> its float32 row, where patches were too few


def encode(rows: np.ndarray) -> Encoded:
    """The kept form of normalised float32 ``rows`` (n, d)."""
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    count, dimension = rows.shape
    peak = np.abs(rows).max(axis=1) if dimension else np.zeros(count, dtype=np.float32)
    scales = (peak / np.float32(127)).astype(np.float32)
    safe = np.where(scales > 0, scales, np.float32(1))
    codes = np.clip(np.rint(rows / safe[:, None]), -127, 127).astype(np.int8)
    # In float32 (a build's temporaries stay small), then raised past its rounding: each
    # component errs by at most 2**-24 (|v| + 2|e|), 1e-7 in all, and the sum of d squares
    # by d * 2**-24 of itself.
    error = codes.astype(np.float32)
    error *= scales[:, None]
    np.subtract(rows, error, out=error)
    residuals = np.sqrt(np.einsum("ij,ij->i", error, error))
    residuals *= np.float32(1 + dimension * 2.0 ** -23)
    residuals += np.float32(1e-7)
    residuals = np.nextafter(residuals, np.float32(np.inf))
    bits = rows.view(np.uint32)
    low16 = (bits & 0xFFFF).astype(np.uint16)
    low8 = ((bits >> 16) & 0xFF).astype(np.uint8)
    wrong = _guess(codes, scales, bits & 0xFFFFFF) != bits
    # Each row's slots name its wrong dimensions first, then right ones (harmless to write).
    slots = patches(dimension)
    patch_dims = np.argsort(~wrong, axis=1, kind="stable")[:, :slots].astype(np.uint16)
    patch_bytes = (np.take_along_axis(bits, patch_dims.astype(np.intp), axis=1) >> 24
                   ).astype(np.uint8)
    whole = {int(row): rows[row].copy()
             for row in np.flatnonzero(wrong.sum(axis=1) > slots)}
    return Encoded(codes, low16, low8, scales, residuals, patch_dims, patch_bytes, whole)


def decode(codes: np.ndarray, low16: np.ndarray, low8: np.ndarray, scales: np.ndarray,
           patch_dims: np.ndarray, patch_bytes: np.ndarray) -> np.ndarray:
    """The float32 rows that :func:`encode` was given (rows kept whole aside, not these)."""
    low = low8.astype(np.uint32)
    low <<= 16
    low |= low16
    bits = _guess(codes, scales, low)
    if len(bits):
        rows = np.arange(len(bits))[:, None]
        bits[rows, patch_dims] = low[rows, patch_dims] | (patch_bytes.astype(np.uint32) << 24)
    return bits.view(np.float32)


def _guess(codes: np.ndarray, scales: np.ndarray, low: np.ndarray) -> np.ndarray:
    """Float32 bits from their low 24 (``low``) and the code: 0.0 for a code 0 whose low bits
    are 0, else the code's sign (+ for 0) and the lowest exponent of the right parity (the
    low bits' top one) at or above that of ``base(c) * scale``, ``base(c) = |c| - 1/2``:
    the value's least. For ``|c| <= 1`` the value spans more than a factor 2 and the bases
    in :data:`_BASE` were chosen on real vectors (the fewest patches)."""
    by_code = codes.view(np.uint8)
    least = np.take(_SIGNED_BASE, by_code)
    least *= scales[:, None]
    if scales.size and not scales.min() >= _NORMAL_SCALE:  # a normal float: an exponent
        np.copysign(np.maximum(np.abs(least), np.float32(2.0 ** -120)), least, out=least)
    head = least.view(np.uint32) >> 23  # the sign and the exponent
    head += (head ^ (low >> 23)) & 1
    head <<= 23
    head |= low & _MANTISSA
    zero = low == 0  # a code 0 with no low bits is most likely 0.0 (sparse vectors)
    if zero.any():
        zero &= by_code == 0
        head[zero] = 0
    return head


def quantise_query(query: np.ndarray) -> tuple[np.ndarray, float, float, float]:
    """A normalised float32 query as int8 codes ``d`` with its scale ``t``, ``|t d|`` and
    the norm of what the codes miss, ``|q - t d|`` (both rounded up)."""
    peak = float(np.abs(query).max())
    scale = peak / 127 if peak > 0 else 1.0
    codes = np.clip(np.rint(query.astype(np.float64) / scale), -127, 127).astype(np.int8)
    approximation = codes.astype(np.float64) * scale
    missed = float(np.linalg.norm(query.astype(np.float64) - approximation))
    return codes, scale, float(np.linalg.norm(approximation)) * (1 + 1e-9), missed * (1 + 1e-9)
