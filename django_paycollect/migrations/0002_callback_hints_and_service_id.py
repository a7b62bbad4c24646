# This release's migration. Its schema changes come first, then the data (succeeded_at for existing
# payments; every stored transaction uuid rewritten in the canonical form, reporting, never deleting,
# rows that named one transaction in two spellings), then the indexes, which need that data; last, the
# fields' and models' labels (no change to the schema).

import logging
import re
import sys
from collections import defaultdict
from decimal import Decimal

import django.db.models.deletion
import django.db.models.functions.text
import django.utils.timezone
import django_paycollect.models.fields
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


def watch_from_now(apps, schema_editor):
    # From this upgrade on, a job that never runs is noticed: late once its intervals have passed since now.
    HousekeepingRun = apps.get_model("paycollect", "HousekeepingRun")
    now = django.utils.timezone.now()
    for job in ("sweep", "reconciliation"):
        HousekeepingRun.objects.using(schema_editor.connection.alias).get_or_create(
            job=job, defaults={"watched_since": now}
        )


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
                ('uuid', django_paycollect.models.fields.CanonicalUuidField(max_length=64, verbose_name='transaction uuid')),
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
            field=django_paycollect.models.fields.CanonicalUuidField(blank=True, max_length=64),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='state',
            field=models.CharField(choices=[('received', 'received (not queued)'), ('queued', 'queued for verification'), ('processed', 'verified and applied'), ('failed', 'verification failed'), ('duplicate', 'duplicate delivery'), ('invalid', 'invalid')], default='received', max_length=10),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='transaction_uuid',
            field=django_paycollect.models.fields.CanonicalUuidField(blank=True, max_length=64),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='parent_uuid',
            field=django_paycollect.models.fields.CanonicalUuidField(max_length=64, unique=True, verbose_name='parent transaction uuid'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='parent_uuid',
            field=django_paycollect.models.fields.CanonicalUuidField(blank=True, max_length=64, verbose_name='parent transaction uuid'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='uuid',
            field=django_paycollect.models.fields.CanonicalUuidField(blank=True, max_length=64, null=True, verbose_name='transaction uuid'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='service_id',
            field=models.BigIntegerField(blank=True, db_index=True, null=True, verbose_name="service's transaction id"),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='state',
            field=models.CharField(choices=[('new', 'new'), ('created', 'created on the service'), ('rejected', 'rejected by the service'), ('unknown', 'creation outcome unknown')], default='new', max_length=10),
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
        # Payments open at the service, by community and age (the dashboard's count of those open too long).
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(condition=models.Q(('status', 'PENDING'), models.Q(('status', 'NEW'), ('uuid__isnull', False)), _connector='OR'), fields=['community_id', 'created_at'], name='paycollect_txn_open'),
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
        # Every field, model and state labelled in words that translate (the admin in Arabic).
        migrations.AlterModelOptions(
            name='fetchmark',
            options={'verbose_name': 'fetch mark', 'verbose_name_plural': 'fetch marks'},
        ),
        migrations.AlterModelOptions(
            name='statisticssnapshot',
            options={'ordering': ['-taken_at', '-pk'], 'verbose_name': 'statistics snapshot', 'verbose_name_plural': 'statistics snapshots'},
        ),
        migrations.AlterModelOptions(
            name='transactionstatuschange',
            options={'ordering': ['at', 'pk'], 'verbose_name': 'status change', 'verbose_name_plural': 'status changes'},
        ),
        migrations.AlterField(
            model_name='apicall',
            name='attempts',
            field=models.PositiveSmallIntegerField(default=0, verbose_name='attempts'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='body_excerpt',
            field=models.TextField(blank=True, verbose_name="answer's excerpt"),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='community_id',
            field=models.CharField(blank=True, max_length=100, verbose_name='community id'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='count',
            field=models.IntegerField(blank=True, null=True, verbose_name='count'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='created_at',
            field=models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='called at'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='data',
            field=models.JSONField(blank=True, null=True, verbose_name='data'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='direct_order',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_calls', to='paycollect.directorder', verbose_name='direct order'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='duration_ms',
            field=models.PositiveIntegerField(blank=True, null=True, verbose_name='duration (ms)'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='error_class',
            field=models.CharField(blank=True, max_length=64, verbose_name='error class'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='error_message',
            field=models.TextField(blank=True, verbose_name='error message'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='errors',
            field=models.JSONField(blank=True, default=list, verbose_name='errors'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='http_status',
            field=models.PositiveSmallIntegerField(blank=True, null=True, verbose_name='HTTP status'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='message',
            field=models.TextField(blank=True, verbose_name="service's message"),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='method',
            field=models.CharField(max_length=8, verbose_name='HTTP method'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='next',
            field=models.TextField(blank=True, verbose_name='next page'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='operation',
            field=models.CharField(max_length=32, verbose_name='operation'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='outcome_unknown',
            field=models.BooleanField(default=False, verbose_name='outcome unknown'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='path',
            field=models.CharField(max_length=500, verbose_name='path'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='previous',
            field=models.TextField(blank=True, verbose_name='previous page'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='refund',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_calls', to='paycollect.refund', verbose_name='refund'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='request_body',
            field=models.JSONField(blank=True, null=True, verbose_name='request body'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='sent',
            field=models.BooleanField(default=True, verbose_name='sent'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='series',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_calls', to='paycollect.recurringseries', verbose_name='recurring series'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='transaction',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_calls', to='paycollect.transaction', verbose_name='transaction'),
        ),
        migrations.AlterField(
            model_name='community',
            name='api_key_encrypted',
            field=models.TextField(blank=True, editable=False, verbose_name='encrypted API key'),
        ),
        migrations.AlterField(
            model_name='community',
            name='api_key_last4',
            field=models.CharField(blank=True, editable=False, max_length=4, verbose_name='end of the API key'),
        ),
        migrations.AlterField(
            model_name='community',
            name='basic_credentials_encrypted',
            field=models.TextField(blank=True, editable=False, verbose_name='encrypted basic credentials'),
        ),
        migrations.AlterField(
            model_name='community',
            name='basic_credentials_last4',
            field=models.CharField(blank=True, editable=False, max_length=4, verbose_name='end of the basic credentials'),
        ),
        migrations.AlterField(
            model_name='community',
            name='created_at',
            field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
        ),
        migrations.AlterField(
            model_name='community',
            name='updated_at',
            field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='address',
            field=models.CharField(blank=True, max_length=300, verbose_name='billing address'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='allow_recurring_payments',
            field=models.BooleanField(default=False, verbose_name='recurring order'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='amount',
            field=models.DecimalField(decimal_places=2, max_digits=14, verbose_name='amount'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='callback_url',
            field=models.URLField(blank=True, max_length=2000, verbose_name='callback URL'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='cc_email',
            field=models.EmailField(blank=True, max_length=254, verbose_name='CC e-mail'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='community_id',
            field=models.CharField(max_length=100, verbose_name='community id'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='created_at',
            field=models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='created at'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='created_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL, verbose_name='created by'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='currency',
            field=models.CharField(default='EGP', max_length=3, verbose_name='currency'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='customer_email',
            field=models.EmailField(max_length=254, verbose_name='customer e-mail'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='customer_mobile',
            field=models.CharField(max_length=32, verbose_name='customer mobile'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='customer_name',
            field=models.CharField(max_length=200, verbose_name='customer name'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='customer_title',
            field=models.CharField(blank=True, max_length=100, verbose_name='customer title'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='discount_amount',
            field=models.DecimalField(blank=True, decimal_places=2, max_digits=14, null=True, verbose_name='discount'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='discount_currency',
            field=models.CharField(blank=True, max_length=3, verbose_name='discount currency'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='expiry_date',
            field=models.DateField(blank=True, null=True, verbose_name='recurring until'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='merchant_reference',
            field=models.CharField(blank=True, max_length=200, verbose_name='merchant reference'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='minimum_days_between_payments',
            field=models.PositiveIntegerField(blank=True, null=True, verbose_name='minimum days between payments'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='order_description',
            field=models.TextField(blank=True, verbose_name='order description'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='payment_link',
            field=models.URLField(blank=True, max_length=2000, verbose_name='payment link'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='payment_methods',
            field=models.JSONField(default=list, verbose_name='payment methods'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='raw',
            field=models.JSONField(blank=True, null=True, verbose_name="service's answer"),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='redirect_url',
            field=models.URLField(blank=True, max_length=2000, verbose_name='redirect URL'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='send_by_email',
            field=models.BooleanField(default=False, verbose_name='link sent by e-mail'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='send_by_sms',
            field=models.BooleanField(default=False, verbose_name='link sent by SMS'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='service_message',
            field=models.TextField(blank=True, verbose_name="service's message"),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='state',
            field=models.CharField(choices=[('new', 'new'), ('created', 'created on the service'), ('rejected', 'rejected by the service'), ('unknown', 'creation outcome unknown')], default='new', max_length=10, verbose_name='state'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='tags',
            field=models.JSONField(blank=True, default=list, verbose_name='tags'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='updated_at',
            field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='vat_percentage',
            field=models.DecimalField(blank=True, decimal_places=2, max_digits=5, null=True, verbose_name='VAT percentage'),
        ),
        migrations.AlterField(
            model_name='fetchmark',
            name='claimed_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='last fetch claimed at'),
        ),
        migrations.AlterField(
            model_name='fetchmark',
            name='not_found_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='not found by the fetch sent at'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='attempts',
            field=models.PositiveSmallIntegerField(default=0, verbose_name='attempts'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='body',
            field=models.TextField(blank=True, verbose_name='body'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='claimed_status',
            field=models.CharField(blank=True, max_length=64, verbose_name='claimed status'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='custom_fields',
            field=models.JSONField(blank=True, default=dict, verbose_name='custom fields'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='dedupe_key',
            field=models.CharField(blank=True, max_length=200, null=True, verbose_name='duplicates key'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='duplicate_of',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='paycollect.receivedcallback', verbose_name='duplicate of'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='error',
            field=models.TextField(blank=True, verbose_name='error'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='headers',
            field=models.JSONField(blank=True, default=dict, verbose_name='headers'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='invalid_reason',
            field=models.TextField(blank=True, verbose_name='why it is invalid'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='is_sub_payment',
            field=models.BooleanField(blank=True, null=True, verbose_name='renewal charge'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='member_id',
            field=models.CharField(blank=True, max_length=100, verbose_name='member id'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='merchant_id',
            field=models.CharField(blank=True, max_length=100, verbose_name='merchant id'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='message',
            field=models.TextField(blank=True, verbose_name='message'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='parent_transaction',
            field=django_paycollect.models.fields.CanonicalUuidField(blank=True, max_length=64, verbose_name='parent transaction uuid'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='payment_id',
            field=models.CharField(blank=True, max_length=100, verbose_name='payment id'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='processed_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='processed at'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='received_at',
            field=models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='received at'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='remote_addr',
            field=models.GenericIPAddressField(blank=True, null=True, verbose_name="sender's address"),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='state',
            field=models.CharField(choices=[('received', 'received (not queued)'), ('queued', 'queued for verification'), ('processed', 'verified and applied'), ('failed', 'verification failed'), ('duplicate', 'duplicate delivery'), ('invalid', 'invalid')], default='received', max_length=10, verbose_name='state'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='task_id',
            field=models.CharField(blank=True, max_length=255, verbose_name='Celery task id'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='token_index',
            field=models.PositiveSmallIntegerField(blank=True, null=True, verbose_name='token'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='total_amount',
            field=models.DecimalField(blank=True, decimal_places=2, max_digits=14, null=True, verbose_name='total amount'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='total_amount_piasters',
            field=models.BigIntegerField(blank=True, null=True, verbose_name='total amount in piasters'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='traceback',
            field=models.TextField(blank=True, verbose_name='traceback'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='transaction',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='callbacks', to='paycollect.transaction', verbose_name='transaction'),
        ),
        migrations.AlterField(
            model_name='receivedcallback',
            name='transaction_uuid',
            field=django_paycollect.models.fields.CanonicalUuidField(blank=True, max_length=64, verbose_name='transaction uuid'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='active',
            field=models.BooleanField(db_index=True, default=True, verbose_name='active'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='cancel_state',
            field=models.CharField(blank=True, choices=[('', 'not cancelled'), ('pending', 'cancellation pending'), ('cancelled', 'cancelled'), ('failed', 'cancellation failed'), ('unknown', 'cancellation outcome unknown')], default='', max_length=10, verbose_name='cancellation'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='cancelled_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='cancelled at'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='cancelled_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL, verbose_name='cancelled by'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='community_id',
            field=models.CharField(max_length=100, verbose_name='community id'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='created_at',
            field=models.DateTimeField(default=django.utils.timezone.now, verbose_name='created at'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='expiry_date',
            field=models.DateField(blank=True, null=True, verbose_name='recurring until'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='last_synced_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='last synced at'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='minimum_days_between_payments',
            field=models.PositiveIntegerField(blank=True, null=True, verbose_name='minimum days between payments'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='parent_transaction',
            field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='series_as_parent', to='paycollect.transaction', verbose_name='parent transaction'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='raw',
            field=models.JSONField(blank=True, null=True, verbose_name='as the service last said'),
        ),
        migrations.AlterField(
            model_name='recurringseries',
            name='recurring_count',
            field=models.PositiveIntegerField(default=0, verbose_name='renewals charged'),
        ),
        migrations.AlterField(
            model_name='refund',
            name='amount',
            field=models.DecimalField(decimal_places=2, max_digits=14, verbose_name='amount'),
        ),
        migrations.AlterField(
            model_name='refund',
            name='completed_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='completed at'),
        ),
        migrations.AlterField(
            model_name='refund',
            name='created_at',
            field=models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='created at'),
        ),
        migrations.AlterField(
            model_name='refund',
            name='error',
            field=models.TextField(blank=True, verbose_name='error'),
        ),
        migrations.AlterField(
            model_name='refund',
            name='requested_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL, verbose_name='requested by'),
        ),
        migrations.AlterField(
            model_name='refund',
            name='service_message',
            field=models.TextField(blank=True, verbose_name="service's message"),
        ),
        migrations.AlterField(
            model_name='refund',
            name='state',
            field=models.CharField(choices=[('pending', 'pending'), ('succeeded', 'succeeded'), ('failed', 'failed'), ('unknown', 'outcome unknown')], default='pending', max_length=10, verbose_name='state'),
        ),
        migrations.AlterField(
            model_name='refund',
            name='transaction',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='refunds', to='paycollect.transaction', verbose_name='transaction'),
        ),
        migrations.AlterField(
            model_name='statisticssnapshot',
            name='balance',
            field=models.DecimalField(decimal_places=2, max_digits=14, null=True, verbose_name='balance'),
        ),
        migrations.AlterField(
            model_name='statisticssnapshot',
            name='community_id',
            field=models.CharField(max_length=100, verbose_name='community id'),
        ),
        migrations.AlterField(
            model_name='statisticssnapshot',
            name='raw',
            field=models.JSONField(null=True, verbose_name='as the service answered'),
        ),
        migrations.AlterField(
            model_name='statisticssnapshot',
            name='taken_at',
            field=models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='taken at'),
        ),
        migrations.AlterField(
            model_name='statisticssnapshot',
            name='total_collected_transactions',
            field=models.DecimalField(decimal_places=2, max_digits=14, null=True, verbose_name='total collected'),
        ),
        migrations.AlterField(
            model_name='statisticssnapshot',
            name='total_number_of_transactions',
            field=models.BigIntegerField(null=True, verbose_name='number of transactions'),
        ),
        migrations.AlterField(
            model_name='statisticssnapshot',
            name='total_settled',
            field=models.DecimalField(decimal_places=2, max_digits=14, null=True, verbose_name='total settled'),
        ),
        migrations.AlterField(
            model_name='statisticssnapshot',
            name='weekly_collected_transactions',
            field=models.DecimalField(decimal_places=2, max_digits=14, null=True, verbose_name='collected this week'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='amount_mismatch',
            field=models.BooleanField(default=False, verbose_name='amount mismatch'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='capture_state',
            field=models.CharField(blank=True, choices=[('', 'not captured'), ('pending', 'capture pending'), ('captured', 'captured'), ('failed', 'capture failed'), ('unknown', 'capture outcome unknown')], default='', max_length=10, verbose_name='capture'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='captured_amount',
            field=models.DecimalField(decimal_places=2, default=Decimal('0.00'), max_digits=14, verbose_name='captured amount'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='captured_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='captured at'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='captured_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='captured by'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='content_type',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='contenttypes.contenttype', verbose_name='merchant object type'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='created_at',
            field=models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='created at'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='custom_fields',
            field=models.JSONField(blank=True, default=list, verbose_name='custom fields'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='customer_email',
            field=models.EmailField(blank=True, max_length=254, verbose_name='customer e-mail'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='customer_name',
            field=models.CharField(blank=True, max_length=200, verbose_name='customer name'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='customer_phone',
            field=models.CharField(blank=True, max_length=32, verbose_name='customer phone'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='direct_order',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='transactions', to='paycollect.directorder', verbose_name='direct order'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='iframe_url',
            field=models.URLField(blank=True, max_length=2000, verbose_name='payment page URL'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='kiosk_message',
            field=models.TextField(blank=True, verbose_name='kiosk message'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='last_error',
            field=models.TextField(blank=True, verbose_name='last error'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='last_synced_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='last synced at'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='member_id',
            field=models.CharField(blank=True, max_length=100, verbose_name='member id'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='object_id',
            field=models.CharField(blank=True, max_length=64, verbose_name='merchant object id'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='payment_for',
            field=models.CharField(blank=True, max_length=40, verbose_name='payment for'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='promocode_id',
            field=models.PositiveIntegerField(blank=True, null=True, verbose_name='promocode id'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='refunded_amount',
            field=models.DecimalField(decimal_places=2, default=Decimal('0.00'), max_digits=14, verbose_name='refunded amount'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='series',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='charges', to='paycollect.recurringseries', verbose_name='recurring series'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='updated_at',
            field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='variable_amount_id',
            field=models.PositiveIntegerField(blank=True, null=True, verbose_name='variable amount id'),
        ),
        migrations.AlterField(
            model_name='transactionstatuschange',
            name='at',
            field=models.DateTimeField(default=django.utils.timezone.now, verbose_name='at'),
        ),
        migrations.AlterField(
            model_name='transactionstatuschange',
            name='from_status',
            field=models.CharField(choices=[('NEW', 'new (not yet accepted by the service)'), ('PENDING', 'pending'), ('SUCCESSFUL', 'successful'), ('FAILED', 'failed'), ('REJECTED', 'rejected by the service'), ('ABANDONED', 'abandoned (start outcome unknown)')], max_length=16, verbose_name='from status'),
        ),
        migrations.AlterField(
            model_name='transactionstatuschange',
            name='service_status',
            field=models.CharField(blank=True, max_length=64, verbose_name='status reported by the service'),
        ),
        migrations.AlterField(
            model_name='transactionstatuschange',
            name='source',
            field=models.CharField(choices=[('pay', 'pay'), ('sync', 'sync'), ('callback', 'callback'), ('return', "customer's return"), ('admin', 'admin'), ('reconcile', 'reconciliation')], max_length=32, verbose_name='caused by'),
        ),
        migrations.AlterField(
            model_name='transactionstatuschange',
            name='to_status',
            field=models.CharField(choices=[('NEW', 'new (not yet accepted by the service)'), ('PENDING', 'pending'), ('SUCCESSFUL', 'successful'), ('FAILED', 'failed'), ('REJECTED', 'rejected by the service'), ('ABANDONED', 'abandoned (start outcome unknown)')], max_length=16, verbose_name='to status'),
        ),
        migrations.AlterField(
            model_name='transactionstatuschange',
            name='transaction',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='status_changes', to='paycollect.transaction', verbose_name='transaction'),
        ),
        migrations.AlterField(
            model_name='apicall',
            name='task_id',
            field=models.CharField(blank=True, max_length=255, verbose_name='Celery task id'),
        ),
        migrations.AlterField(
            model_name='directorder',
            name='payment_id',
            field=models.CharField(blank=True, max_length=100, verbose_name="service's order id"),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='community_id',
            field=models.CharField(max_length=100, verbose_name='community id'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='merchant_reference',
            field=models.CharField(blank=True, max_length=200, verbose_name='merchant reference'),
        ),
        migrations.AlterField(
            model_name='transaction',
            name='status',
            field=models.CharField(choices=[('NEW', 'new (not yet accepted by the service)'), ('PENDING', 'pending'), ('SUCCESSFUL', 'successful'), ('FAILED', 'failed'), ('REJECTED', 'rejected by the service'), ('ABANDONED', 'abandoned (start outcome unknown)')], default='NEW', max_length=16, verbose_name='status'),
        ),
        migrations.AddIndex(
            model_name='apicall',
            index=models.Index(fields=['operation'], name='paycollect_call_operation'),
        ),
        migrations.AddIndex(
            model_name='apicall',
            index=models.Index(fields=['community_id'], name='paycollect_call_community'),
        ),
        migrations.AddIndex(
            model_name='apicall',
            index=models.Index(fields=['error_class'], name='paycollect_call_error_class'),
        ),
        migrations.AddIndex(
            model_name='apicall',
            index=models.Index(fields=['task_id'], name='paycollect_call_task_id'),
        ),
        migrations.AddIndex(
            model_name='directorder',
            index=models.Index(fields=['community_id'], name='paycollect_order_community'),
        ),
        migrations.AddIndex(
            model_name='directorder',
            index=models.Index(fields=['state'], name='paycollect_order_state'),
        ),
        migrations.AddIndex(
            model_name='directorder',
            index=models.Index(fields=['customer_email'], name='paycollect_order_email'),
        ),
        migrations.AddIndex(
            model_name='directorder',
            index=models.Index(fields=['payment_id'], name='paycollect_order_payment_id'),
        ),
        migrations.AddIndex(
            model_name='directorder',
            index=models.Index(fields=['merchant_reference'], name='paycollect_order_reference'),
        ),
        migrations.AddIndex(
            model_name='receivedcallback',
            index=models.Index(fields=['state'], name='paycollect_callback_state'),
        ),
        migrations.AddIndex(
            model_name='receivedcallback',
            index=models.Index(fields=['transaction_uuid'], name='paycollect_callback_txn_uuid'),
        ),
        migrations.AddIndex(
            model_name='recurringseries',
            index=models.Index(fields=['community_id'], name='paycollect_series_community'),
        ),
        migrations.AddIndex(
            model_name='refund',
            index=models.Index(fields=['state'], name='paycollect_refund_state'),
        ),
        migrations.AddIndex(
            model_name='statisticssnapshot',
            index=models.Index(fields=['community_id'], name='paycollect_stats_community'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(fields=['community_id'], name='paycollect_txn_community'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(fields=['status'], name='paycollect_txn_status'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(fields=['customer_email'], name='paycollect_txn_email'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(fields=['merchant_reference'], name='paycollect_txn_reference'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(fields=['parent_uuid'], name='paycollect_txn_parent_uuid'),
        ),
        migrations.AddConstraint(
            model_name='fetchmark',
            constraint=models.UniqueConstraint(fields=('uuid',), name='paycollect_fetchmark_uuid'),
        ),
        migrations.AddConstraint(
            model_name='receivedcallback',
            constraint=models.UniqueConstraint(fields=('dedupe_key',), name='paycollect_callback_dedupe_key'),
        ),
        migrations.AddConstraint(
            model_name='transaction',
            constraint=models.UniqueConstraint(fields=('uuid',), name='paycollect_txn_uuid'),
        ),
        migrations.CreateModel(
            name='HousekeepingRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('job', models.CharField(choices=[('sweep', 'callback sweep'), ('reconciliation', 'reconciliation')], max_length=32, verbose_name='job')),
                ('last_run_at', models.DateTimeField(blank=True, null=True, verbose_name='last ran at')),
                ('watched_since', models.DateTimeField(default=django.utils.timezone.now, verbose_name='watched since')),
            ],
            options={
                'verbose_name': 'housekeeping run',
                'verbose_name_plural': 'housekeeping runs',
                'constraints': [models.UniqueConstraint(fields=('job',), name='paycollect_housekeepingrun_job')],
            },
        ),
        migrations.RunPython(watch_from_now, migrations.RunPython.noop),
    ]
