"""Running the example project (``clubsite``) in a process of its own, as a deployment would: its settings
from its environment only, never the test suite's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: What the test suite's environment may hold that the example project must not see.
_SCRUBBED = ("PAYCOLLECT_", "CLUBSITE_", "CELERY_", "DJANGO_")


def run_example(*args: str, **environ: str) -> subprocess.CompletedProcess[str]:
    """``python *args`` from the repository's root, with ``environ`` (CLUBSITE_... settings) and a secret key
    (required when DEBUG is off)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(_SCRUBBED)}
    env.update(CLUBSITE_SECRET_KEY="example-check-only-not-secret-0123456789", **environ)
    return subprocess.run(  # noqa: S603 (our own project)
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
