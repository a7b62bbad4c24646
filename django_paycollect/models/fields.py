"""The app's own model fields and helpers: canonical uuids, exact indexes, money columns, JSON-safe values."""

from __future__ import annotations

import uuid as uuid_lib
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from django.db import models
from django.db.models import Value
from django.db.models.functions import Lower, Replace

from ..ids import canonical_uuid

MONEY: dict[str, Any] = {"max_digits": 14, "decimal_places": 2}
#: A link that may be left empty, emptied when what it points to is deleted (``null=True`` is written on each
#: field, where django-stubs reads it).
OPTIONAL_LINK: dict[str, Any] = {"blank": True, "on_delete": models.SET_NULL}
ZERO = Decimal("0.00")

_ST = TypeVar("_ST", contravariant=True)
_GT = TypeVar("_GT", covariant=True)

if TYPE_CHECKING:
    _TextField = models.CharField
else:

    class _TextField(models.CharField):
        # django-stubs declares fields generic (so the model attribute is typed str); Django's own
        # classes cannot be subscripted at run time.
        def __class_getitem__(cls, _item: Any) -> type:
            return cls


class CanonicalUuidField(_TextField[_ST, _GT]):
    """A transaction uuid, stored and looked up in its canonical form (lower case, with dashes).

    Every save and every exact or ``in`` lookup goes through :func:`~django_paycollect.ids.canonical_uuid`,
    so ``filter(uuid="3F1C2A9E8B7D...")`` finds the row stored as ``3f1c2a9e-8b7d-...``. A value that
    is not a uuid is kept as the text it is.
    """

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return canonical_uuid(value) if isinstance(value, str) else value

    def to_python(self, value: Any) -> Any:
        value = super().to_python(value)
        return canonical_uuid(value) if isinstance(value, str) else value

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = getattr(model_instance, self.attname)
        if isinstance(value, str):
            value = canonical_uuid(value)
            setattr(model_instance, self.attname, value)  # the instance says what the row holds
        return value


def canonical_unique(field: str, name: str) -> models.UniqueConstraint:
    """A unique index on the uuid's letters and digits in lower case: the database itself refuses a
    second row for one uuid in another spelling (an older process, raw SQL), not only our Python."""
    return models.UniqueConstraint(Lower(Replace(field, Value("-"), Value(""))), name=name)


def exact_indexes(model: str, **columns: str) -> list[models.Index]:
    """Plain indexes ``paycollect_<model>_<name>`` on columns matched only exactly (identifiers, states):
    ``exact_indexes("call", task_id="task_id")``. Unlike ``db_index=True`` on a text column, no second
    ``varchar_pattern_ops`` index for ``LIKE`` on PostgreSQL, which every write would keep up to date."""
    return [
        models.Index(fields=[field], name=f"paycollect_{model}_{name}") for field, name in columns.items()
    ]


def last4(secret: str) -> str:
    return secret[-4:] if len(secret) > 8 else ""


def json_safe(value: Any) -> Any:
    """Decimals (and uuids) to text so a JSONField stores them exactly (never as floats)."""
    if isinstance(value, (Decimal, uuid_lib.UUID)):
        return str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
