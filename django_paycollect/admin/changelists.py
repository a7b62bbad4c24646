"""Admin changelists that cost about the same at a million rows as at ten thousand, on PostgreSQL (the list
in docs/admin.md; the filters' fixed choices are in ``filters``): capped counts, exact searches on indexes,
orderings one index ``(column, id)`` serves in both directions, large columns deferred, and a query holding a
NUL character refused as a 400 in words (PostgreSQL refuses such a text: the page would fail to render)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import BadRequest
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext

from ..ids import canonical_uuid, looks_like_uuid

#: Rows a changelist counts at most; past it the page says "more than" this number.
COUNT_LIMIT = 10_000


class CappedCountPaginator(Paginator):  # type: ignore[type-arg]
    """Counts at most ``count_limit + 1`` rows: a bounded index scan instead of counting a whole table."""

    count_limit = COUNT_LIMIT

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if not isinstance(queryset, QuerySet):
            return len(queryset)
        # Unordered: the rows counted need no sort, only the limit.
        return int(queryset.order_by()[: self.count_limit + 1].count())

    @property
    def count_capped(self) -> bool:
        """True when there are more rows than were counted (the count shown is then a lower bound)."""
        return self.count > self.count_limit


class NulInQuery(BadRequest):
    """A changelist's query (a filter, the search) holds a NUL character; the message names the parameter."""


def refuse_nul(request: HttpRequest) -> None:
    """Raise :class:`NulInQuery` when a parameter of the query, or its name, holds a NUL character."""
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            shown = name.replace("\x00", "\\x00")
            raise NulInQuery(
                gettext("%(parameter)s: Must not contain a NUL character.") % {"parameter": shown}
            )


class ScalableChangeList(ChangeList):
    """Leaves the model admin's ``changelist_defer`` columns (large JSON) out of the page's query, and
    breaks ties of an ordering by the primary key in the column's own direction. Refuses a query holding a
    NUL character (:func:`refuse_nul`) before any filter reads it."""

    def __init__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        refuse_nul(request)
        super().__init__(request, *args, **kwargs)

    def get_queryset(self, request: HttpRequest, *args: Any, **kwargs: Any) -> QuerySet[Any]:
        queryset = super().get_queryset(request, *args, **kwargs)
        deferred: Sequence[str] = getattr(self.model_admin, "changelist_defer", ())
        return queryset.defer(*deferred) if deferred else queryset

    def get_ordering(self, request: HttpRequest, queryset: QuerySet[Any]) -> list[Any]:
        ordering = list(super().get_ordering(request, queryset))
        # Django appends "-pk" whatever the direction: "amount, -pk" cannot be read from one index in
        # order, "amount, pk" can (and "-amount, -pk" backwards).
        first = ordering[0] if ordering else None
        if len(ordering) > 1 and ordering[-1] == "-pk" and isinstance(first, str) and first[:1] != "-":
            ordering[-1] = "pk"
        return ordering


def exact_search(
    queryset: QuerySet[Any], search_fields: Sequence[str], search_term: str, *, extra: Q | None = None
) -> QuerySet[Any]:
    """Rows whose ``search_fields`` equal the term exactly (a uuid in any spelling: its canonical form).

    A related field (``transaction__uuid``) is looked up in its own table first, and this table is then
    filtered on the foreign key: each branch of the OR is an index lookup.
    """
    term = search_term.strip()
    terms = {term, canonical_uuid(term)} if looks_like_uuid(term) else {term}
    matches = extra if extra is not None else Q()
    for name in search_fields:
        field = name.lstrip("=^@")
        relation, _sep, column = field.rpartition("__")
        if relation:
            related = queryset.model._meta.get_field(relation).related_model
            assert related is not None
            assert not isinstance(related, str)
            pks = list(
                related._default_manager.filter(**{f"{column}__in": terms}).values_list("pk", flat=True)[:100]
            )
            if pks:
                matches |= Q(**{f"{relation}__in": pks})
        else:
            matches |= Q(**{f"{field}__in": terms})
    return queryset.filter(matches) if matches else queryset.none()
