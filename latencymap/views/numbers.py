"""`format_number` / `format_duration` of many values at once, each text exactly as `latencymap.core.units` writes it.

A value's text depends only on its suffix (k, M, ms, µs...), sign, exponent and the mantissa rounded to the
digits shown. NumPy computes that key for every value; the text of a key is formatted once, by the real
function on the first value seen with it, and looked up after. Values whose rounding NumPy cannot decide for
sure (a mantissa within a hair of a half, a power of ten, an exponent form, infinities) are formatted one by one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from latencymap.core.units import format_duration, format_number

#: Suffix thresholds, ascending, and the divisor when a value reaches `i` of them (`format_number`: none, k, M, G;
#: `format_duration`: ns, µs, ms, s). Both functions take the largest scale a magnitude reaches.
_NUMBER_STEPS, _NUMBER_DIV = np.array([1e3, 1e6, 1e9]), np.array([1.0, 1e3, 1e6, 1e9])
_DURATION_STEPS, _DURATION_DIV = np.array([1e-6, 1e-3, 1.0]), np.array([1e-9, 1e-6, 1e-3, 1.0])
_POW10 = 10.0 ** np.arange(-22, 23)
#: Key parts: `_COMBOS` suffix/sign/exponent combinations (a "bank" of mantissas each); bank 0 holds NaN and 0.
_COMBOS = 4 * 32
_NAN_KEY, _ZERO_KEY, _PYTHON = 0, 1, -1
#: Distance from a half (in units of the last digit shown) under which NumPy's rounding is not trusted.
_HALF_MARGIN = 1e-6


def text_keys(values: np.ndarray, digits: int, duration: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per value, (combo, mantissa): equal pairs give equal texts. Combo -1: NaN (mantissa 0) or zero (1);
    combo -2: format this value one by one."""
    v = np.asarray(values, dtype=np.float64)
    steps, divisors = (_DURATION_STEPS, _DURATION_DIV) if duration else (_NUMBER_STEPS, _NUMBER_DIV)
    a = np.abs(v)
    idx = np.searchsorted(steps, a, side="right")
    a /= divisors[idx]  # |q|: the functions divide the signed value, and division is exact in its sign
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        exp = np.log10(a)
        np.floor(exp, out=exp)
        exp = np.nan_to_num(exp, nan=-99.0, posinf=99.0, neginf=-99.0).astype(np.int64)
        np.clip(exp, -5, digits, out=exp)  # outside [-4, digits): an exponent form, formatted one by one
        a *= _POW10[22 + digits - 1 - exp]
        mantissa = np.rint(a)
        a -= mantissa
    sure = np.abs(a) < 0.5 - _HALF_MARGIN
    sure &= mantissa >= 10 ** (digits - 1)
    sure &= mantissa < 10 ** digits
    sure &= exp >= -4
    sure &= exp < digits
    combo = idx * 32 + (v < 0) * 16 + exp + 4
    combo[~sure] = -2
    mantissa[~sure] = 0
    special = np.isnan(v) | (v == 0)
    if special.any():
        combo[special] = -1
        mantissa[special] = v[special] == 0
    return combo, mantissa.astype(np.int64)


_NUMBER_SUFFIX = ("", "k", "M", "G")
_DURATION_SUFFIX = ("ns", "µs", "ms", "s")


def key_text(combo: int, mantissa: int, digits: int, duration: bool) -> str:
    """The text of a key (combo >= 0) as %g writes the rounded value, with its suffix (`_compact` and its callers)."""
    suffix, rest = divmod(combo, 32)
    negative, exp = divmod(rest, 16)
    exp -= 4
    shown = str(mantissa)
    if exp >= 0:
        whole, frac = shown[: exp + 1], shown[exp + 1:].rstrip("0")
    else:
        whole, frac = "0", ("0" * (-exp - 1) + shown).rstrip("0")
    text = f"{whole}.{frac}" if frac else whole
    return ("-" if negative else "") + text + (_DURATION_SUFFIX if duration else _NUMBER_SUFFIX)[suffix]


class TextCache:
    """Texts of numbers as one function writes them, in a given style (bytes), kept in a table indexed by key."""

    def __init__(self, digits: int = 3, duration: bool = False,
                 style: Callable[[str], bytes] = str.encode) -> None:
        self.digits = digits
        self.duration = duration
        self.style = style
        self._size = 10 ** digits
        self._banks = np.full(_COMBOS + 1, -1, dtype=np.int64)
        self._banks[-1] = 0  # combo -1 (NaN, zero) indexes the last entry
        self._table = np.empty(self._size, dtype=object)
        self._filled = np.zeros(self._size, dtype=bool)

    def text(self, value: float) -> str:
        """The text of one value, by the real function."""
        return format_duration(value, self.digits) if self.duration else format_number(value, self.digits)

    def texts(self, values: np.ndarray) -> np.ndarray:
        """Styled texts of `values`: an object array of bytes of the same shape."""
        v = np.asarray(values, dtype=np.float64)
        combo, mantissa = text_keys(v.reshape(-1), self.digits, self.duration)
        keyed = combo >= -1
        bank = self._banks[np.where(keyed, combo, -1)]
        if (bank < 0).any():
            for c in np.unique(combo[bank < 0]).tolist():
                self._banks[c] = len(self._table) // self._size
                self._table = np.concatenate((self._table, np.empty(self._size, dtype=object)))
                self._filled = np.concatenate((self._filled, np.zeros(self._size, dtype=bool)))
            bank = self._banks[np.where(keyed, combo, -1)]
        slot = bank * self._size + mantissa
        missing = ~self._filled[slot] & keyed
        if missing.any():
            new, at = np.unique(slot[missing], return_index=True)
            rows = np.flatnonzero(missing)[at]
            style, digits, duration = self.style, self.digits, self.duration
            texts = [style(key_text(c, m, digits, duration) if c >= 0 else "-" if m == _NAN_KEY else "0")
                     for c, m in zip(combo[rows].tolist(), mantissa[rows].tolist(), strict=True)]
            column = np.empty(len(texts), dtype=object)
            column[:] = texts
            self._table[new] = column
            self._filled[new] = True
        out = self._table[slot]
        if not keyed.all():
            flat = v.reshape(-1)
            for i in np.flatnonzero(~keyed).tolist():
                out[i] = self.style(self.text(float(flat[i])))
        return out.reshape(v.shape)
