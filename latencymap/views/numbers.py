"""`format_number` / `format_duration` of many values at once, each text exactly as `latencymap.core.units` writes it.

A value's text depends only on its suffix (k, M, ms, µs...), sign, decimal exponent and the mantissa rounded to
the digits shown (`%g`, as `_compact` writes it). NumPy computes that key for every value; texts are kept in a
table indexed by key, and those not there yet are written by NumPy too, from the key. Values whose rounding
NumPy cannot decide for sure (a mantissa within a hair of a half) or that `_compact` writes another way (an
exponent of `digits` or more, or a value under 1e-4 in its exponent form), and those that round up to the next
suffix (999.96 is `1k`), are formatted one by one by the real functions.
"""

from __future__ import annotations

import itertools
import operator

import numpy as np

from latencymap.core.units import NUMBER_PREFIXES, format_duration, format_number

#: Suffix thresholds, ascending, and the divisor when a value reaches `i` of them (`format_number`: none, then its
#: `NUMBER_PREFIXES` k to E; `format_duration`: ns, µs, ms, s). Both functions take the largest scale a magnitude
#: reaches.
_NUMBER_STEPS = np.array([scale for scale, _ in reversed(NUMBER_PREFIXES)])
_NUMBER_DIV = np.concatenate(([1.0], _NUMBER_STEPS))
_DURATION_STEPS, _DURATION_DIV = np.array([1e-6, 1e-3, 1.0]), np.array([1e-9, 1e-6, 1e-3, 1.0])
_SUFFIXES = {False: ("", *(suffix for _, suffix in reversed(NUMBER_PREFIXES))), True: ("ns", "µs", "ms", "s")}
_POW10 = 10.0 ** np.arange(-22, 23)
#: A key is (combo, mantissa); combo = suffix * 32 + negative * 16 + exponent + 4 for -4 <= exponent < digits.
_COMBOS = len(_NUMBER_DIV) * 32
#: Combo -1 holds the values written without digits: NaN and zero.
_NAN, _ZERO = 0, 1
_PYTHON = -2
#: Distance from a half (in units of the last digit shown) under which NumPy's rounding is not trusted.
_HALF_MARGIN = 1e-6


def text_keys(values: np.ndarray, digits: int, duration: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per value, (combo, mantissa): equal keys give equal texts. Combo -1: see `_NAN`; combo -2: format this value
    one by one (a value under 1e-4 among them: `_compact` writes its exponent)."""
    v = np.asarray(values, dtype=np.float64)
    steps, divisors = (_DURATION_STEPS, _DURATION_DIV) if duration else (_NUMBER_STEPS, _NUMBER_DIV)
    a = np.abs(v)
    idx = np.searchsorted(steps, a, side="right")
    a /= divisors[idx]  # |q|: the functions divide the signed value, and division is exact in its sign
    negative = v < 0
    a_in = a.copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        exp = np.log10(a)
        np.floor(exp, out=exp)
        finite = np.isfinite(exp)
        exp = np.where(finite, exp, 0.0).astype(np.int64)
        np.clip(exp, -30, 30, out=exp)
        a *= _POW10[22 + np.clip(digits - 1 - exp, -22, 22)]
        mantissa = np.rint(a)
        a -= mantissa
    sure = finite & (np.abs(a) < 0.5 - _HALF_MARGIN) & (np.abs(digits - 1 - exp) <= 22) & (mantissa <= 10 ** digits)
    mantissa = np.where(sure, mantissa, 0.0).astype(np.int64)
    carry = mantissa == 10 ** digits  # rounded up to the next power of ten
    mantissa[carry] = 10 ** (digits - 1)
    exp += carry
    sure &= (exp < 3) | (idx == len(steps))  # 999.96 rounds to 1000: the functions write it `1k`
    sure &= (mantissa >= 10 ** (digits - 1)) & (mantissa < 10 ** digits) & (exp < digits)
    tiny = (sure & (exp < -4)) | ((a_in > 0) & (a_in < 9.9e-5))  # %g's exponent form, shortened by `_compact`
    combo = np.where(sure & ~tiny, idx * 32 + negative * 16 + exp + 4, _PYTHON)
    special = np.isnan(v) | (v == 0)
    if special.any():
        combo[special] = -1
        mantissa[special] = np.where(v[special] == 0, _ZERO, _NAN)
    return combo, mantissa


def _special_text(mantissa: int, duration: bool) -> str:
    """The text of a combo -1 key."""
    return "0" if mantissa == _ZERO else "-"


class TextCache:
    """Texts of numbers as one function writes them, styled as `before + (inner + text).rjust(align) + after` (UTF-8).

    The texts lie in `arena` (grown as needed: read it after the lookups), found by key through offset and length
    tables; texts of values formatted one by one are appended there too, uncached.
    """

    def __init__(self, digits: int = 3, duration: bool = False, before: str = "", inner: str = "", align: int = 0,
                 after: str = "") -> None:
        self.digits, self.duration = digits, duration
        self.before, self.inner, self.align, self.after = before, inner, align, after
        self._size = 10 ** digits
        self._banks = np.full(_COMBOS + 1, -1, dtype=np.int64)
        self._banks[-1] = 0  # combo -1 (NaN, zero) is bank 0
        self._used = 1
        self._offset = np.zeros(4 * self._size, dtype=np.int64)
        self._length = np.zeros(4 * self._size, dtype=np.int64)  # 0: not written yet (no text is empty)
        self._claim = np.zeros(4 * self._size, dtype=np.int64)
        self.arena = np.empty(1 << 16, dtype=np.uint8)
        self._end = 0

    def style(self, text: str) -> bytes:
        return f"{self.before}{self.inner + text:>{self.align}}{self.after}".encode()

    def text(self, value: float) -> str:
        """The text of one value, by the real function."""
        return format_duration(value, self.digits) if self.duration else format_number(value, self.digits)

    def lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(offset in `arena`, length) of the styled text of each of `values`, flattened."""
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        combo, mantissa = text_keys(v, self.digits, self.duration)
        keyed = combo != _PYTHON
        combo_at = np.where(keyed, combo, -1)
        bank = self._banks[combo_at]
        if (bank < 0).any():
            seen = np.bincount(combo_at + 1, minlength=_COMBOS + 1)  # combo -1 counts at 0
            self._add_banks([c - 1 for c in np.flatnonzero(seen).tolist() if self._banks[c - 1] < 0])
            bank = self._banks[combo_at]
        slot = bank * self._size + mantissa
        missing = keyed & (self._length[slot] == 0)
        if missing.any():
            at = np.flatnonzero(missing)
            self._claim[slot[at]] = at  # one value per new key: the last one written for it
            at = at[self._claim[slot[at]] == at]
            self._fill(slot[at], combo[at], mantissa[at], v[at])
        offset, length = self._offset[slot], self._length[slot]
        if not keyed.all():
            for i in np.flatnonzero(~keyed).tolist():
                offset[i], length[i] = self._append_one(self.style(self.text(float(v[i]))))
        return offset, length

    def texts(self, values: np.ndarray) -> list[bytes]:
        """The styled texts of `values`, flattened, as bytes."""
        offset, length = self.lookup(values)
        arena = self.arena
        return [arena[o: o + n].tobytes() for o, n in zip(offset.tolist(), length.tolist(), strict=True)]

    def _add_banks(self, combos: list[int]) -> None:
        for c in combos:
            self._banks[c] = self._used
            self._used += 1
        need = self._used * self._size
        if need > len(self._offset):
            grow = max(need, 2 * len(self._offset)) - len(self._offset)
            self._offset = np.concatenate((self._offset, np.zeros(grow, dtype=np.int64)))
            self._length = np.concatenate((self._length, np.zeros(grow, dtype=np.int64)))
            self._claim = np.concatenate((self._claim, np.zeros(grow, dtype=np.int64)))

    def _room(self, size: int) -> None:
        if self._end + size > len(self.arena):
            grown = np.empty(max(2 * len(self.arena), self._end + size), dtype=np.uint8)
            grown[: self._end] = self.arena[: self._end]
            self.arena = grown

    def _append_one(self, text: bytes) -> tuple[int, int]:
        self._room(len(text))
        at = self._end
        self.arena[at: at + len(text)] = np.frombuffer(text, dtype=np.uint8)
        self._end += len(text)
        return at, len(text)

    def _fill(self, slots: np.ndarray, combos: np.ndarray, mantissas: np.ndarray, values: np.ndarray) -> None:
        """Write the texts of new keys (`values`: one value of each) into the arena and the tables.

        For a key with digits, `%g` of the value's scaled mantissa is `_compact`'s text (its whole-number and
        exponent cases are other keys), so Python's formatting writes them all in a few C-level passes.
        """
        suffix = np.where(combos >= 0, combos // 32, -1)
        # Without a suffix or an inner text, one format spec writes and aligns the value ("{:>9.4g}").
        plain = (suffix == 0 if not self.duration else np.zeros(len(combos), dtype=bool)) & (self.inner == "")
        digital = (combos >= 0) & ~plain
        divisors = _DURATION_DIV if self.duration else _NUMBER_DIV
        texts = list(map(f"%{self.align or ''}.{self.digits}g".__mod__, values[plain].tolist()))  # %g: format's g
        others: list[str] = []
        if digital.any():
            scaled = values[digital] / divisors[suffix[digital]]
            others = list(map(f"%.{self.digits}g".__mod__, scaled.tolist()))
            others = list(map(operator.add, others, [_SUFFIXES[self.duration][c] for c in suffix[digital].tolist()]))
        others += [_special_text(m, self.duration) for m in mantissas[combos < 0].tolist()]
        if self.inner:
            others = list(map(operator.add, itertools.repeat(self.inner), others))
        if self.align:
            others = list(map(str.rjust, others, itertools.repeat(self.align)))
        texts += others
        order = np.concatenate((slots[plain], slots[digital], slots[combos < 0]))
        before, after = self.before, self.after
        data = (before + (after + before).join(texts) + after).encode()
        lengths = np.array(list(map(len, texts)), dtype=np.int64)
        if not data.isascii():
            lengths = np.array([len(t.encode()) for t in texts], dtype=np.int64)
        lengths += len(before.encode()) + len(after.encode())
        self._room(len(data))
        self.arena[self._end: self._end + len(data)] = np.frombuffer(data, dtype=np.uint8)
        self._offset[order] = self._end + np.cumsum(lengths) - lengths
        self._length[order] = lengths
        self._end += len(data)
