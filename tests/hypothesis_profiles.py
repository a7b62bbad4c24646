"""Hypothesis profiles of the property and fuzz tests, chosen by ``PAYCOLLECT_HYPOTHESIS_PROFILE``.

``quick`` (the default: ``make test``, the Django matrix, PostgreSQL): a tenth of each test's examples, at
least :data:`MIN_EXAMPLES`. Every rule of every generator is exercised, which is what a change of code,
Django, Python or database needs checking against; the long hunt is not repeated on each run.

``full`` (``make test-fuzz``, a CI stage of its own): every test runs its full number of examples, and the
fuzz tests also check that every kind of input was generated often enough (a fraction of the examples
cannot promise that). Every test built with ``@given`` is marked ``fuzz`` (tests/conftest.py), so that stage
selects exactly them.

Deterministic either way (``derandomize``): CI never turns red by chance. ``PAYCOLLECT_FUZZ_SCALE=10``
multiplies every count, for a longer hunt by hand.
"""

from __future__ import annotations

import os

from hypothesis import settings

SHARES = {"quick": 0.1, "full": 1.0}
MIN_EXAMPLES = 20

PROFILE = os.environ.get("PAYCOLLECT_HYPOTHESIS_PROFILE", "quick")
if PROFILE not in SHARES:
    raise RuntimeError(f"PAYCOLLECT_HYPOTHESIS_PROFILE={PROFILE!r}: choose one of {', '.join(SHARES)}")
SHARE = SHARES[PROFILE]
SCALE = max(1, int(os.environ.get("PAYCOLLECT_FUZZ_SCALE", "1")))
#: True when every test runs all of its examples: the fuzz tests then also check that every kind of input
#: was generated often enough (a fraction of the examples cannot promise that).
FULL = SHARE == 1.0

settings.register_profile("quick", max_examples=MIN_EXAMPLES)
settings.register_profile("full")
settings.load_profile(PROFILE)


def examples(count: int) -> int:
    """How many examples a test written for ``count`` runs under the current profile."""
    return max(MIN_EXAMPLES, round(count * SCALE * SHARE))
