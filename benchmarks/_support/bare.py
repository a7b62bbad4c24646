"""The baseline of the callback benchmarks: a table of the same shape as ``ReceivedCallback``.

Same columns, same indexes (the columns' own and the model's ``Meta.indexes``); foreign keys become indexed
integer columns. Not part of any app's migrations: a benchmark creates the table
(``connection.schema_editor().create_model(BareCallback)``) before it drives the bare view
(``urls.bare_callback``), which inserts the body and the client address into it.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from django_paycollect.models import ReceivedCallback


def _bare_model() -> Any:
    attrs: dict[str, Any] = {"__module__": __name__}
    for field in ReceivedCallback._meta.local_fields:
        if field.primary_key:
            continue
        if field.is_relation:
            attrs[field.attname] = models.BigIntegerField(null=True, blank=True, db_index=True)
        else:
            name, _path, args, kwargs = field.deconstruct()
            attrs[name] = type(field)(*args, **kwargs)
    indexes = [
        models.Index(fields=index.fields, name=f"bench_bare_{n}")
        for n, index in enumerate(ReceivedCallback._meta.indexes)
    ]
    attrs["Meta"] = type(
        "Meta", (), {"app_label": "paycollect_bench", "db_table": "bench_bare_callback", "indexes": indexes}
    )
    return type("BareCallback", (models.Model,), attrs)


BareCallback = _bare_model()
