# This release's migration. Its schema changes come first, then the data (succeeded_at for existing
# payments; every stored transaction uuid rewritten in the canonical form, reporting, never deleting,
# rows that named one transaction in two spellings), then the indexes, which need that data.

import logging
import re
import sys
from collections import defaultdict

import django.db.models.deletion
import django.db.models.functions.text
import django_paycollect.models
from django.conf import settings
from django.db import migrations, models
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce

logger = logging.getLogger("django_paycollect.migrations")

# The canonical form as of this migration (a copy, so later changes to the app never change it).
_DASHED = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX32 = re.compile(r"[0-9a-fA-F]{32}")


def canonical(value):
    if not isinstance(value, str):
        return value
    text = value.strip()
    if _DASHED.fullmatch(text):
        return text.lower()
    if _HEX32.fullmatch(text):
        text = text.lower()
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
    return value


def _odd(queryset, field):
    """(pk, value) of the rows whose ``field`` is a uuid not written canonically, read a chunk at a time."""
    rows = queryset.exclude(**{f"{field}__isnull": True}).exclude(**{field: ""}).order_by("pk")
    return [(pk, value) for pk, value in rows.values_list("pk", field).iterator(chunk_size=2000)
            if canonical(value) != value]


def _raw_update(model, using, pk, **values):
    # Through the base manager and a plain UPDATE: no save() logic of a later app version.
    model._base_manager.using(using).filter(pk=pk).update(**values)


def _unique_uuids(model, using, field, report, note_field=None):
    """Canonicalise a unique uuid column. Rows naming the same uuid in other spellings keep their data;
    all but one get "<uuid> duplicate #<pk>" (not a uuid, so no lookup finds them) and are reported."""
    manager = model._base_manager.using(using)
    groups = defaultdict(list)
    for pk, value in _odd(manager.all(), field):
        groups[canonical(value)].append((pk, value))
    for uuid, rows in groups.items():
        existing = manager.filter(**{field: uuid}).values_list("pk", flat=True).first()
        keeper = existing if existing is not None else rows[0][0]
        for pk, value in rows:
            if pk == keeper:
                _raw_update(model, using, pk, **{field: uuid})
                continue
            renamed = f"{uuid} duplicate #{pk}"
            changes = {field: renamed}
            if note_field:
                previous = manager.filter(pk=pk).values_list(note_field, flat=True).first() or ""
                changes[note_field] = (
                    f"Upgrade to canonical uuids: this row's uuid {value!r} names the same transaction as "
                    f"row #{keeper}; its uuid became {renamed!r} so the transaction has one row. Nothing was "
                    "deleted: check its status, the signals it sent and its refunds against row "
                    f"#{keeper}.\n{previous}"
                )[:10000]
            _raw_update(model, using, pk, **changes)
            report(
                f"{model._meta.label} #{pk}: uuid {value!r} duplicates #{keeper} ({uuid}); "
                f"renamed to {renamed!r}, nothing deleted"
            )


def _plain_uuids(model, using, field):
    for pk, value in _odd(model._base_manager.using(using).all(), field):
        _raw_update(model, using, pk, **{field: canonical(value)})


def _dedupe_keys(model, using, report):
    manager = model._base_manager.using(using)
    rows = manager.exclude(dedupe_key__isnull=True).order_by("pk").values_list("pk", "dedupe_key")
    for pk, key in list(rows.iterator(chunk_size=2000)):
        uuid, bar, status = key.partition("|")
        wanted = f"{canonical(uuid)}{bar}{status}"
        if wanted == key:
            continue
        first = manager.filter(dedupe_key=wanted).values_list("pk", flat=True).first()
        if first is None:
            _raw_update(model, using, pk, dedupe_key=wanted)
        else:
            # Another delivery of the same claim: the later one keeps its state, without the key.
            _raw_update(model, using, pk, dedupe_key=None, duplicate_of=first)
            report(f"{model._meta.label} #{pk}: the same claim as callback #{first}; marked as its redelivery")


def canonicalize_uuids(apps, schema_editor, report=None):
    """Write every stored transaction uuid canonically; report (never delete) rows that collide."""
    lines = []
    say = report or lines.append
    using = schema_editor.connection.alias
    Transaction = apps.get_model("paycollect", "Transaction")
    RecurringSeries = apps.get_model("paycollect", "RecurringSeries")
    ReceivedCallback = apps.get_model("paycollect", "ReceivedCallback")
    _unique_uuids(Transaction, using, "uuid", say, note_field="last_error")
    _unique_uuids(RecurringSeries, using, "parent_uuid", say)
    _plain_uuids(Transaction, using, "parent_uuid")
    _plain_uuids(ReceivedCallback, using, "transaction_uuid")
    _plain_uuids(ReceivedCallback, using, "parent_transaction")
    _dedupe_keys(ReceivedCallback, using, say)
    if schema_editor.connection.vendor == "postgresql":
        # duplicate_of changed above: its deferred foreign key checks run now, or PostgreSQL refuses to
        # build the indexes below in this transaction ("pending trigger events").
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    if lines:
        sys.stdout.write(
            f"\n  django_paycollect: {len(lines)} row(s) named one transaction in another spelling; "
            "nothing was deleted:\n" + "".join(f"    {line}\n" for line in lines)
        )
        for line in lines:
            logger.warning("canonical uuids: %s", line)


def backfill_succeeded_at(apps, schema_editor):
    """Successful payments stored before this release: when their status became SUCCESSFUL (its status
    change), else when they were created. One UPDATE, before the indexes that include the column."""
    Transaction = apps.get_model("paycollect", "Transaction")
    StatusChange = apps.get_model("paycollect", "TransactionStatusChange")
    became = (
        StatusChange.objects.filter(transaction=OuterRef("pk"), to_status="SUCCESSFUL")
        .order_by("at")
        .values("at")[:1]
    )
    Transaction.objects.using(schema_editor.connection.alias).filter(
        status="SUCCESSFUL", succeeded_at__isnull=True
    ).update(succeeded_at=Coalesce(Subquery(became), "created_at"))


def direct_order_states_in_lower_case(apps, schema_editor):
    """Direct order states follow the app's one convention for its own states: lower case (the
    service's transaction statuses keep the spec's upper case)."""
    DirectOrder = apps.get_model("paycollect", "DirectOrder")
    orders = DirectOrder.objects.using(schema_editor.connection.alias)
    for state in ("NEW", "CREATED", "REJECTED", "UNKNOWN"):
        orders.filter(state=state).update(state=state.lower())


def direct_order_states_in_upper_case(apps, schema_editor):
    DirectOrder = apps.get_model("paycollect", "DirectOrder")
    orders = DirectOrder.objects.using(schema_editor.connection.alias)
    for state in ("new", "created", "rejected", "unknown"):
        orders.filter(state=state).update(state=state.upper())


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('paycollect', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Dashboard',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
            ],
            options={
                'verbose_name': 'dashboard',
                'verbose_name_plural': 'dashboard',
                'permissions': [('view_dashboard', 'Can view the payments dashboard')],
                'managed': False,
                'default_permissions': (),
            },
        ),
        migrations.AddField(
            model_name='receivedcallback',
            name='hint_errors',
            field=models.JSONField(blank=True, default=dict, verbose_name='malformed hints'),
        ),
        migrations.AddField(
            model_name='transaction',
            name='succeeded_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='successful since'),
        ),
        migrations.AddField(
            model_name='transaction',
            name='owner',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='paycollect_transactions', to=settings.AUTH_USER_MODEL, verbose_name='owner'),
        ),
        migrations.CreateModel(
            name='FetchMark',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('uuid', django_paycollect.models.CanonicalUuidField(max_length=64, unique=True, verbose_name='transaction uuid')),
                ('claimed_at', models.DateTimeField(blank=True, null=True)),
                ('not_found_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'verbose_name': 'fetch mark',
            },
        ),
        migrations.AddField(
            model_name='receivedcallback',
            name='next_attempt_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='next attempt due at'),
        ),
        migrations.AddField(
            model_name='receivedcallback',
            name='queued_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='verification asked at'),
        ),
        migrations.AddField(
            model_name='transaction',
            name='fetch_sent_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='last fetch sent at'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='parent_transaction',
            field=django_paycollect.models.CanonicalUuidField(blank=True, max_length=64),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='state',
            field=models.CharField(choices=[('received', 'received (not queued)'), ('queued', 'queued for verification'), ('processed', 'verified and applied'), ('failed', 'verification failed'), ('duplicate', 'duplicate delivery'), ('invalid', 'invalid')], db_index=True, default='received', max_length=10),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='transaction_uuid',
            field=django_paycollect.models.CanonicalUuidField(blank=True, db_index=True, max_length=64),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='parent_uuid',
            field=django_paycollect.models.CanonicalUuidField(max_length=64, unique=True, verbose_name='parent transaction uuid'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='parent_uuid',
            field=django_paycollect.models.CanonicalUuidField(blank=True, db_index=True, max_length=64, verbose_name='parent transaction uuid'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='uuid',
            field=django_paycollect.models.CanonicalUuidField(blank=True, max_length=64, null=True, unique=True, verbose_name='transaction uuid'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='service_id',
            field=models.BigIntegerField(blank=True, db_index=True, null=True, verbose_name="service's transaction id"),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='state',
            field=models.CharField(choices=[('new', 'new'), ('created', 'created on the service'), ('rejected', 'rejected by the service'), ('unknown', 'creation outcome unknown')], db_index=True, default='new', max_length=10),
        ),
        migrations.RunPython(direct_order_states_in_lower_case, direct_order_states_in_upper_case, elidable=True),
        migrations.RunPython(backfill_succeeded_at, migrations.RunPython.noop, elidable=True),
        # After the fields above and before the unique indexes below, which need the rows canonical.
        migrations.RunPython(canonicalize_uuids, migrations.RunPython.noop, elidable=False),
        migrations.AddIndex(
            model_name='receivedcallback',
            index=models.Index(fields=['received_at', 'state', 'processed_at'], name='paycollect_callback_report'),
        ),
        migrations.AddIndex(
            model_name='refund',
            index=models.Index(fields=['state', 'completed_at'], name='paycollect_refund_report'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(fields=['community_id', 'currency', 'created_at', 'status', 'total_amount'], name='paycollect_txn_report_started'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(condition=models.Q(('succeeded_at__isnull', False)), fields=['community_id', 'currency', 'succeeded_at', 'total_amount', 'refunded_amount'], name='paycollect_txn_report_paid'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(condition=models.Q(('succeeded_at__isnull', False), models.Q(('parent_uuid', ''), _negated=True), models.Q(('parent_uuid', models.F('uuid')), _negated=True)), fields=['community_id', 'currency', 'succeeded_at', 'total_amount'], name='paycollect_txn_report_renewal'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(condition=models.Q(('uuid__isnull', False)), fields=['community_id'], name='paycollect_txn_report_known'),
        ),
        # The admin at millions of rows: its sorts and exact searches read indexes.
        migrations.AddIndex(
            model_name='receivedcallback',
            index=models.Index(fields=['payment_id'], name='paycollect_callback_payment'),
        ),
        migrations.AddIndex(
            model_name='receivedcallback',
            index=models.Index(fields=['task_id'], name='paycollect_callback_task'),
        ),
        migrations.AddIndex(
            model_name='recurringseries',
            index=models.Index(fields=['created_at'], name='paycollect_series_created'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(fields=['total_amount', 'id'], name='paycollect_txn_amount_sort'),
        ),
        migrations.AddConstraint(
            model_name='recurringseries',
            constraint=models.UniqueConstraint(django.db.models.functions.text.Lower(django.db.models.functions.text.Replace('parent_uuid', models.Value('-'), models.Value(''))), name='paycollect_series_one_row_per_parent'),
        ),
        migrations.AddConstraint(
            model_name='transaction',
            constraint=models.UniqueConstraint(django.db.models.functions.text.Lower(django.db.models.functions.text.Replace('uuid', models.Value('-'), models.Value(''))), name='paycollect_txn_one_row_per_uuid'),
        ),
    ]
