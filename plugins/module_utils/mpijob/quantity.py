# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Kubernetes resource quantities ("500m", "2Gi", "1e3"): exact parsing, adding and formatting."""

from __future__ import annotations

import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: dict[str, Fraction | int] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


def parse_quantity(value: object) -> Fraction:
    """The exact value of a quantity; raises ValueError naming the bad text."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"must be a quantity, got {value!r}")
    text = str(value).strip()
    m = _QUANTITY.match(text)
    if not m:
        raise ValueError(f"must be a quantity (e.g. 500m, 2Gi), got {value!r}")
    number = Fraction(m.group(1))
    if m.group(2):
        return number * Fraction(10) ** int(m.group(2)[1:])
    suffix = m.group(3) or ""
    return number * (_BINARY.get(suffix) or _DECIMAL[suffix])


def format_quantity(value: Fraction, binary: bool = False) -> str:
    """Canonical text: the largest suffix that keeps an integer (binary suffixes when asked and exact)."""
    if value == 0:
        return "0"
    if binary and value.denominator == 1:
        for suffix, power in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
            if value % power == 0:
                return f"{value // power}{suffix}"
    for suffix, factor in sorted(_DECIMAL.items(), key=lambda kv: -Fraction(kv[1])):
        scaled = value / Fraction(factor)
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    return f"{int(value * 10**9)}n"  # sub-nano precision is rounded down, as Kubernetes does


def is_binary(value: object) -> bool:
    return isinstance(value, str) and value.strip()[-2:] in _BINARY
