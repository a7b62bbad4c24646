"""Argument types the app's management commands share: a bad value is a clear usage error (a
``CommandError`` under ``call_command``), never a traceback."""

from __future__ import annotations

import argparse
import re
from datetime import timedelta

from ..reconciliation import parse_age
from ..reporting.figures import MAX_DAYS


def age(text: str, *, allow_zero: bool = True) -> timedelta:
    """An age as people write it: ``30m``, ``2h``, ``90d`` (zero allowed unless ``allow_zero`` is False)."""
    try:
        return parse_age(text, allow_zero=allow_zero)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_age(text: str) -> timedelta:
    """An age of more than zero."""
    return age(text, allow_zero=False)


def days(text: str) -> int:
    """A number of days, from 1 to ``reporting.figures.MAX_DAYS``."""
    if not text.isdigit() or not 1 <= int(text) <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of days from 1 to {MAX_DAYS}")
    return int(text)


def currency(text: str) -> str:
    """A currency code, three letters, in upper case."""
    if not re.fullmatch(r"[A-Za-z]{3}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a currency code (three letters: EGP, USD, ...)")
    return text.upper()
