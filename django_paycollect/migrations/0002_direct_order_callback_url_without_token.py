"""Direct orders' stored callback URLs without their secret token.

Until this version ``DirectOrder.callback_url`` kept the URL the service was given, token and all. The token
is replaced by ``[redacted]`` in every stored one, as the model now stores them (``without_callback_token``):
the last segment of a path ending in ``callback/<token>/``, whichever token it held (rotated away or not), and
any path segment that is one of ``CALLBACK_TOKENS``. Nothing is sent to the service, which keeps the URL it
was given. The URL's reading is written out here, not imported, so this step does the same whatever the
model's code becomes.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.db import migrations

REDACTED = "[redacted]"
CALLBACK_PATH = re.compile(r"(/callback/)([^/]+)(/?)$")
BATCH = 500


def _tokens() -> set[str]:
    from django_paycollect.conf import paycollect_settings  # the one reading of the setting

    return set(paycollect_settings.texts("CALLBACK_TOKENS"))


def without_token(url: str, tokens: set[str]) -> str:
    parts = urlsplit(url)
    path = "/".join(REDACTED if segment in tokens else segment for segment in parts.path.split("/"))
    path = CALLBACK_PATH.sub(lambda found: f"{found[1]}{REDACTED}{found[3]}", path)
    return urlunsplit(parts._replace(path=path))


def strip_tokens(apps: Any, schema_editor: Any) -> None:
    DirectOrder = apps.get_model("paycollect", "DirectOrder")
    orders = DirectOrder.objects.using(schema_editor.connection.alias).exclude(callback_url="")
    tokens = _tokens()
    last = 0
    while True:
        batch = list(orders.filter(pk__gt=last).order_by("pk").values_list("pk", "callback_url")[:BATCH])
        if not batch:
            return
        for pk, url in batch:
            stripped = without_token(url, tokens)
            if stripped != url:
                orders.filter(pk=pk).update(callback_url=stripped)
        last = batch[-1][0]


class Migration(migrations.Migration):
    dependencies = [("paycollect", "0001_initial")]

    # Backwards: nothing to restore (the tokens are gone, as they should be).
    operations = [migrations.RunPython(strip_tokens, migrations.RunPython.noop, elidable=True)]
