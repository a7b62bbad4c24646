"""Pruning old ApiCall and ReceivedCallback rows: in batches, keeping what is new or never processed."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_paycollect import reconciliation
from django_paycollect.models import ApiCall, ReceivedCallback
from django_paycollect.reconciliation.pruning import BATCH_SIZE

pytestmark = pytest.mark.django_db(transaction=True)

OLD = dt.timedelta(days=100)
CB = ReceivedCallback


def make_calls(count: int, age: dt.timedelta) -> None:
    at = timezone.now() - age
    ApiCall.objects.bulk_create(
        (ApiCall(operation="get_transaction", method="GET", path="/x", created_at=at) for _ in range(count)),
        batch_size=2000,
    )


def make_callback(state: str, age: dt.timedelta, **fields) -> ReceivedCallback:
    return CB.objects.create(state=state, received_at=timezone.now() - age, **fields)


def deletes(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("DELETE")]


def test_deletes_in_batches_of_short_transactions():
    make_calls(12_000, OLD)
    make_calls(10, dt.timedelta(days=1))
    with CaptureQueriesContext(connection) as queries:
        result = reconciliation.prune(dt.timedelta(days=90), batch_size=5000)
    assert result.api_calls == 12_000
    assert result.batches == 3
    assert len(deletes(queries)) == 3  # 5,000 + 5,000 + 2,000; never one statement per 100 rows
    assert all("IN (" not in sql.upper() for sql in deletes(queries))  # by pk range, no long lists
    assert ApiCall.objects.count() == 10


def test_batches_are_of_ten_thousand_rows_by_default():
    make_calls(10_001, OLD)
    result = reconciliation.prune(dt.timedelta(days=90))
    assert (result.api_calls, result.batches) == (10_001, 2)
    assert BATCH_SIZE == 10_000


def test_an_exact_multiple_of_the_batch_size_needs_no_empty_delete():
    make_calls(10, OLD)
    with CaptureQueriesContext(connection) as queries:
        result = reconciliation.prune(dt.timedelta(days=90), batch_size=5)
    assert (result.api_calls, result.batches, len(deletes(queries))) == (10, 2, 2)


def test_each_batch_reads_one_key_and_resumes_after_the_last_deleted_one():
    make_calls(5, OLD)
    keys = sorted(ApiCall.objects.values_list("pk", flat=True))
    with CaptureQueriesContext(connection) as queries:
        result = reconciliation.prune(dt.timedelta(days=90), batch_size=2)
    assert (result.api_calls, result.batches) == (5, 3)
    key_reads = [
        q["sql"] for q in queries.captured_queries if q["sql"].startswith('SELECT "paycollect_apicall"."id"')
    ]
    # Each full batch reads only its last key; the keys themselves are read once, for the last two rows.
    bounds = [sql for sql in key_reads if "LIMIT 1 OFFSET 1" in sql]
    assert len(bounds) == 3
    assert len([sql for sql in key_reads if sql.endswith("LIMIT 2")]) == 1
    # Bounded below by a key: the table's first, then the last deleted one (never from the start again:
    # an index would walk past every row deleted so far).
    assert f'"paycollect_apicall"."id" >= {keys[0]}' in bounds[0]
    assert f'"paycollect_apicall"."id" > {keys[1]}' in bounds[1]
    deleting = deletes(queries)
    assert f'"id" >= {keys[0]}' in deleting[0]
    assert all(f'"id" > {keys[i]}' in sql for i, sql in zip((1, 3), deleting[1:], strict=True))


def test_keeps_newer_rows_and_callbacks_never_processed():
    make_calls(3, OLD)
    make_calls(2, dt.timedelta(days=89))
    old = {state: make_callback(state, OLD) for state, _ in CB.STATE_CHOICES}
    recent = make_callback(CB.PROCESSED, dt.timedelta(days=1))

    result = reconciliation.prune(dt.timedelta(days=90))
    assert (result.api_calls, result.callbacks, result.unprocessed_kept) == (3, 3, 3)
    assert ApiCall.objects.count() == 2
    kept = set(CB.objects.values_list("pk", flat=True))
    assert kept == {old[CB.RECEIVED].pk, old[CB.QUEUED].pk, old[CB.FAILED].pk, recent.pk}

    result = reconciliation.prune(dt.timedelta(days=90), include_unprocessed=True)
    assert result.callbacks == 3
    assert set(CB.objects.values_list("pk", flat=True)) == {recent.pk}


def test_a_kept_duplicate_loses_its_link_to_a_deleted_first_delivery():
    first = make_callback(CB.PROCESSED, OLD, dedupe_key="u|SUCCESSFUL")
    duplicate = make_callback(CB.DUPLICATE, dt.timedelta(days=1), duplicate_of=first)
    reconciliation.prune(dt.timedelta(days=90))
    duplicate.refresh_from_db()
    assert duplicate.duplicate_of is None
    assert not CB.objects.filter(pk=first.pk).exists()


def test_dry_run_counts_and_deletes_nothing():
    make_calls(7, OLD)
    make_callback(CB.INVALID, OLD)
    make_callback(CB.FAILED, OLD)
    result = reconciliation.prune(dt.timedelta(days=90), dry_run=True)
    assert (result.api_calls, result.callbacks, result.unprocessed_kept) == (7, 1, 1)
    assert ApiCall.objects.count() == 7
    assert CB.objects.count() == 2
    assert result.lines()[0].endswith("would delete 7")


def test_command_prints_progress_and_counts():
    make_calls(12, OLD)
    make_callback(CB.PROCESSED, OLD)
    make_callback(CB.QUEUED, OLD)
    out = StringIO()
    call_command("paycollect_prune", "--older-than", "90d", "--batch-size", "5", stdout=out)
    text = out.getvalue()
    assert "  API calls: 5/12 deleted" in text
    assert "  API calls: 12/12 deleted" in text
    assert "API calls before" in text
    assert "deleted 12" in text
    assert "Callbacks before" in text
    assert "deleted 1" in text
    assert "Kept 1 old callback(s) never processed" in text
    assert "4 batch(es)" in text


def test_command_at_verbosity_zero_prints_nothing_and_still_deletes():
    make_calls(7, OLD)
    out = StringIO()
    call_command("paycollect_prune", "--older-than", "90d", "--batch-size", "5", verbosity=0, stdout=out)
    assert out.getvalue() == ""
    assert ApiCall.objects.count() == 0


def test_command_dry_run():
    make_calls(4, OLD)
    out = StringIO()
    call_command("paycollect_prune", "--older-than=12w", "--dry-run", stdout=out)
    assert "would delete 4" in out.getvalue()
    assert ApiCall.objects.count() == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "the following arguments are required: --older-than"),
        (["--older-than", "forever"], "not an age"),
        (["--older-than", "0d"], "more than zero"),
        (["--older-than", "90d", "--batch-size", "0"], "at least 1"),
    ],
)
def test_command_refuses_bad_arguments_clearly(args, message):
    make_calls(1, OLD)
    with pytest.raises(CommandError, match=message):
        call_command("paycollect_prune", *args)
    assert ApiCall.objects.count() == 1
