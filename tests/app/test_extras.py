"""What the install line and the extras bring: a worker on Redis that starts (kombu's Redis transport
imports redis-py and ``packaging``, which a new virtualenv with Celery alone lacked: the worker died at
start), and a ``test`` extra with everything the tests import (prometheus-client was only in ``metrics``:
pytest stopped at a collection error)."""

from __future__ import annotations

import configparser
import importlib.metadata
import re
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def extras() -> dict[str, list[Requirement]]:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return {
        name: [Requirement(line) for line in value.splitlines() if line.strip() and not line.startswith("#")]
        for name, value in config["options.extras_require"].items()
    }


def requirements_of(distribution: str, extra: str) -> set[str]:
    """Names of what ``distribution[extra]`` adds, from its installed metadata."""
    found = set()
    for line in importlib.metadata.requires(distribution) or []:
        requirement = Requirement(line)
        if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}):
            found.add(requirement.name.lower())
    return found


def test_the_redis_extra_brings_celery_s_redis_transport_and_what_it_imports():
    [celery] = extras()["redis"]
    assert celery.name == "celery"
    assert "redis" in celery.extras
    # celery[redis] is kombu[redis], which is redis-py and packaging (the transport imports both).
    assert "kombu" in requirements_of("celery", "redis")
    assert {"redis", "packaging"} <= requirements_of("kombu", "redis")


def test_the_pages_that_install_the_app_for_a_worker_name_the_redis_extra():
    for page in ("quickstart.md", "celery.md", "deployment.md"):
        text = (ROOT / "docs" / page).read_text()
        assert re.search(r"pip install '[^']*\[redis\]'", text), page


def test_the_test_extra_installs_what_the_metrics_tests_import():
    names = {requirement.name for requirement in extras()["test"]}
    assert "prometheus-client" in names
