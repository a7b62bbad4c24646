"""Ages as people write them on command lines and in task arguments: ``"30m"``, ``"2h"``, ``"90d"``."""

from __future__ import annotations

import re
from datetime import timedelta

_AGE = re.compile(r"\s*(\d{1,6})\s*([smhdw])\s*", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_age(text: str, *, allow_zero: bool = True) -> timedelta:
    """``"30m"`` -> 30 minutes; units s, m, h, d, w. Raises ValueError with a message for people."""
    match = _AGE.fullmatch(str(text))
    if match is None:
        raise ValueError(
            f"{text!r} is not an age: write a whole number and a unit, s, m, h, d or w (30m, 2h, 90d)"
        )
    age = timedelta(**{_UNITS[match[2].lower()]: int(match[1])})
    if not age and not allow_zero:
        raise ValueError(f"{text!r}: the age must be more than zero")
    return age


def format_age(age: timedelta) -> str:
    seconds = int(age.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
