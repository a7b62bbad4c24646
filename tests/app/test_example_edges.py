"""The example project's edges refused in words (issue 33): OPTIONS is answered (never a 500) on every URL the
example mounts, its schema's Swagger page among them; a NUL character in the thanks and failed pages' query
is a 400 in words (on PostgreSQL it was a 500: such a text cannot be a query's parameter). The site runs in a
process of its own, on a copy of the run's migrated SQLite file."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from tests.example_project import run_example

ASK = """
import json, os, sys
sys.path.insert(0, "example_project")
os.environ["DJANGO_SETTINGS_MODULE"] = "clubsite.settings"
import django
django.setup()
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

call_command("migrate", verbosity=0)


def mounted(patterns, prefix=""):
    # Every URL of the project with a sample value for each path converter (a uuid, a number, a word).
    samples = {"uuid": "0b0b0b0b-1111-4222-8333-44445555aaaa", "int": "1"}
    for item in patterns:
        route = str(item.pattern)
        if route.startswith("^"):
            continue  # a regular expression of Django's own (the admin's catch-all)
        for name, converter in getattr(item.pattern, "converters", {}).items():
            kind = type(converter).__name__.replace("Converter", "").lower()
            route = route.replace(f"<{kind}:{name}>", samples.get(kind, "x")).replace(f"<{name}>", "x")
        if isinstance(item, URLResolver):
            yield from mounted(item.url_patterns, prefix + route)
        else:
            yield "/" + prefix + route


client = Client(HTTP_HOST="127.0.0.1", raise_request_exception=False)
every = sorted(set(mounted(get_resolver().url_patterns)))
options = {path: client.options(path).status_code for path in every}
gets = {}
for path in sys.argv[1:]:
    answer = client.get(path)
    gets[path] = [answer.status_code, answer.content.decode(errors="replace")]
print(json.dumps({"options": options, "gets": gets}))
"""


def ask(tmp_path: Path, migrated: Path, *paths: str) -> dict:
    database = Path(shutil.copyfile(migrated, tmp_path / "club.sqlite3"))
    done = run_example("-c", ASK, *paths, CLUBSITE_DEBUG="0", CLUBSITE_DB=str(database))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


NUL_PATHS = [
    "/payment/thanks/?transaction_uuid=%00",
    "/payment/thanks/?transaction_uuid=0b0b0b0b%00",
    "/payment/thanks/?transaction_id=%00",
    "/payment/failed/?transaction_uuid=%00",
    "/payment/failed/?transaction_id=4%002",
    "/payment/failed/?%00=1",
]


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory, example_migrated: Path) -> dict:
    return ask(tmp_path_factory.mktemp("club-edges"), example_migrated, *NUL_PATHS)


def test_options_is_answered_everywhere_the_example_mounts(answers):
    options = answers["options"]
    assert "/payment/thanks/" in options
    assert "/api/payments/" in options
    if importlib.util.find_spec("drf_spectacular"):
        assert "/api/docs/" in options
    broken = {path: status for path, status in options.items() if status >= 500}
    assert broken == {}


@pytest.mark.parametrize("path", NUL_PATHS)
def test_a_nul_in_the_thanks_or_failed_pages_query_is_a_400_in_words(answers, path):
    status, text = answers["gets"][path]
    assert status == 400, text[:300]
    assert "NUL" in text
