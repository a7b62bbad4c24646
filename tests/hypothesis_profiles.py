"""Hypothesis profiles of the property and fuzz tests, chosen by ``PAYCOLLECT_HYPOTHESIS_PROFILE``.

``default`` (``make test``, and every target unless told otherwise): every test runs its full number of
examples. ``matrix`` (``HYPOTHESIS_PROFILE=matrix``: ``make test-matrix``, and CI's PostgreSQL run): a tenth
of them, at least :data:`MIN_EXAMPLES`. Those runs repeat code paths the default run has fuzzed in full;
they look for what another Django, Python or database changes, and so need every rule exercised, not the
same hunt again.

Deterministic either way (``derandomize``): CI never turns red by chance. ``PAYCOLLECT_FUZZ_SCALE=10``
multiplies every count, for a longer hunt by hand.
"""

from __future__ import annotations

import os

from hypothesis import settings

SHARES = {"default": 1.0, "matrix": 0.1}
MIN_EXAMPLES = 20

PROFILE = os.environ.get("PAYCOLLECT_HYPOTHESIS_PROFILE", "default")
if PROFILE not in SHARES:
    raise RuntimeError(f"PAYCOLLECT_HYPOTHESIS_PROFILE={PROFILE!r}: choose one of {', '.join(SHARES)}")
SHARE = SHARES[PROFILE]
SCALE = max(1, int(os.environ.get("PAYCOLLECT_FUZZ_SCALE", "1")))
#: True when every test runs all of its examples: the fuzz tests then also check that every kind of input
#: was generated often enough (a fraction of the examples cannot promise that).
FULL = SHARE == 1.0

settings.register_profile("matrix", max_examples=MIN_EXAMPLES)
settings.load_profile(PROFILE)


def examples(count: int) -> int:
    """How many examples a test written for ``count`` runs under the current profile."""
    return max(MIN_EXAMPLES, round(count * SCALE * SHARE))
