# The app's tables, as of its first release (the development migrations folded into this one).

import django.db.models.deletion
import django.db.models.functions.text
import django.utils.timezone
import django_paycollect.models.fields
from decimal import Decimal
from django.conf import settings
from django.db import migrations, models


def watch_from_now(apps, schema_editor):
    # A job that never runs is noticed: late once its intervals have passed since the tables were made.
    HousekeepingRun = apps.get_model("paycollect", "HousekeepingRun")
    now = django.utils.timezone.now()
    for job in ("sweep", "reconciliation"):
        HousekeepingRun.objects.using(schema_editor.connection.alias).get_or_create(
            job=job, defaults={"watched_since": now}
        )


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
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
        migrations.CreateModel(
            name='Community',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('community_id', models.CharField(max_length=100, unique=True, verbose_name='community id')),
                ('name', models.CharField(blank=True, max_length=200, verbose_name='name')),
                ('api_key_encrypted', models.TextField(blank=True, editable=False, verbose_name='encrypted API key')),
                ('api_key_last4', models.CharField(blank=True, editable=False, max_length=4, verbose_name='end of the API key')),
                ('basic_credentials_encrypted', models.TextField(blank=True, editable=False, verbose_name='encrypted basic credentials')),
                ('basic_credentials_last4', models.CharField(blank=True, editable=False, max_length=4, verbose_name='end of the basic credentials')),
                ('variable_amount_id', models.PositiveIntegerField(blank=True, null=True, verbose_name='default variable_amount_id')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
            ],
            options={
                'verbose_name': 'community',
                'verbose_name_plural': 'communities',
                'ordering': ['name', 'community_id'],
            },
        ),
        migrations.CreateModel(
            name='DirectOrder',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('community_id', models.CharField(max_length=100, verbose_name='community id')),
                ('state', models.CharField(choices=[('new', 'new'), ('created', 'created on the service'), ('rejected', 'rejected by the service'), ('unknown', 'creation outcome unknown')], default='new', max_length=10, verbose_name='state')),
                ('name', models.CharField(max_length=200, verbose_name='order name')),
                ('amount', models.DecimalField(decimal_places=2, max_digits=14, verbose_name='amount')),
                ('currency', models.CharField(default='EGP', max_length=3, verbose_name='currency')),
                ('discount_amount', models.DecimalField(blank=True, decimal_places=2, max_digits=14, null=True, verbose_name='discount')),
                ('discount_currency', models.CharField(blank=True, max_length=3, verbose_name='discount currency')),
                ('vat_percentage', models.DecimalField(blank=True, decimal_places=2, max_digits=5, null=True, verbose_name='VAT percentage')),
                ('payment_methods', models.JSONField(default=list, verbose_name='payment methods')),
                ('customer_name', models.CharField(max_length=200, verbose_name='customer name')),
                ('customer_email', models.EmailField(max_length=254, verbose_name='customer e-mail')),
                ('customer_mobile', models.CharField(max_length=32, verbose_name='customer mobile')),
                ('customer_title', models.CharField(blank=True, max_length=100, verbose_name='customer title')),
                ('address', models.CharField(blank=True, max_length=300, verbose_name='billing address')),
                ('order_description', models.TextField(blank=True, verbose_name='order description')),
                ('custom_fields', models.JSONField(blank=True, default=list, verbose_name='custom field definitions')),
                ('tags', models.JSONField(blank=True, default=list, verbose_name='tags')),
                ('allow_recurring_payments', models.BooleanField(default=False, verbose_name='recurring order')),
                ('expiry_date', models.DateField(blank=True, null=True, verbose_name='recurring until')),
                ('minimum_days_between_payments', models.PositiveIntegerField(blank=True, null=True, verbose_name='minimum days between payments')),
                ('send_by_email', models.BooleanField(default=False, verbose_name='link sent by e-mail')),
                ('cc_email', models.EmailField(blank=True, max_length=254, verbose_name='CC e-mail')),
                ('send_by_sms', models.BooleanField(default=False, verbose_name='link sent by SMS')),
                ('redirect_url', models.URLField(blank=True, max_length=2000, verbose_name='redirect URL')),
                ('callback_url', models.URLField(blank=True, max_length=2000, verbose_name='callback URL')),
                ('paid', models.BooleanField(default=False, verbose_name='first payment marked paid')),
                ('payment_id', models.CharField(blank=True, max_length=100, verbose_name="service's order id")),
                ('payment_link', models.URLField(blank=True, max_length=2000, verbose_name='payment link')),
                ('service_message', models.TextField(blank=True, verbose_name="service's message")),
                ('merchant_reference', models.CharField(blank=True, max_length=200, verbose_name='merchant reference')),
                ('raw', models.JSONField(blank=True, null=True, verbose_name="service's answer")),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='created at')),
                ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL, verbose_name='created by')),
            ],
            options={
                'verbose_name': 'direct order',
                'verbose_name_plural': 'direct orders',
                'ordering': ['-created_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='FetchMark',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('uuid', django_paycollect.models.fields.CanonicalUuidField(max_length=64, verbose_name='transaction uuid')),
                ('claimed_at', models.DateTimeField(blank=True, null=True, verbose_name='last fetch claimed at')),
                ('not_found_at', models.DateTimeField(blank=True, null=True, verbose_name='not found by the fetch sent at')),
            ],
            options={
                'verbose_name': 'fetch mark',
                'verbose_name_plural': 'fetch marks',
                'constraints': [models.UniqueConstraint(fields=('uuid',), name='paycollect_fetchmark_uuid')],
            },
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
        migrations.CreateModel(
            name='RecurringSeries',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('parent_uuid', django_paycollect.models.fields.CanonicalUuidField(max_length=64, unique=True, verbose_name='parent transaction uuid')),
                ('community_id', models.CharField(max_length=100, verbose_name='community id')),
                ('expiry_date', models.DateField(blank=True, null=True, verbose_name='recurring until')),
                ('minimum_days_between_payments', models.PositiveIntegerField(blank=True, null=True, verbose_name='minimum days between payments')),
                ('active', models.BooleanField(db_index=True, default=True, verbose_name='active')),
                ('recurring_count', models.PositiveIntegerField(default=0, verbose_name='renewals charged')),
                ('cancel_state', models.CharField(blank=True, choices=[('', 'not cancelled'), ('pending', 'cancellation pending'), ('cancelled', 'cancelled'), ('failed', 'cancellation failed'), ('unknown', 'cancellation outcome unknown')], default='', max_length=10, verbose_name='cancellation')),
                ('cancelled_at', models.DateTimeField(blank=True, null=True, verbose_name='cancelled at')),
                ('raw', models.JSONField(blank=True, null=True, verbose_name='as the service last said')),
                ('last_synced_at', models.DateTimeField(blank=True, null=True, verbose_name='last synced at')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='created at')),
                ('cancelled_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL, verbose_name='cancelled by')),
            ],
            options={
                'verbose_name': 'recurring series',
                'verbose_name_plural': 'recurring series',
                'ordering': ['-created_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='StatisticsSnapshot',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('community_id', models.CharField(max_length=100, verbose_name='community id')),
                ('taken_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='taken at')),
                ('balance', models.DecimalField(decimal_places=2, max_digits=14, null=True, verbose_name='balance')),
                ('total_settled', models.DecimalField(decimal_places=2, max_digits=14, null=True, verbose_name='total settled')),
                ('total_number_of_transactions', models.BigIntegerField(null=True, verbose_name='number of transactions')),
                ('total_collected_transactions', models.DecimalField(decimal_places=2, max_digits=14, null=True, verbose_name='total collected')),
                ('weekly_collected_transactions', models.DecimalField(decimal_places=2, max_digits=14, null=True, verbose_name='collected this week')),
                ('raw', models.JSONField(null=True, verbose_name='as the service answered')),
            ],
            options={
                'verbose_name': 'statistics snapshot',
                'verbose_name_plural': 'statistics snapshots',
                'ordering': ['-taken_at', '-pk'],
                'indexes': [models.Index(fields=['community_id'], name='paycollect_stats_community')],
            },
        ),
        migrations.CreateModel(
            name='Transaction',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('uuid', django_paycollect.models.fields.CanonicalUuidField(blank=True, max_length=64, null=True, verbose_name='transaction uuid')),
                ('service_id', models.BigIntegerField(blank=True, db_index=True, null=True, verbose_name="service's transaction id")),
                ('community_id', models.CharField(max_length=100, verbose_name='community id')),
                ('status', models.CharField(choices=[('NEW', 'new (not yet accepted by the service)'), ('PENDING', 'pending'), ('SUCCESSFUL', 'successful'), ('FAILED', 'failed'), ('REJECTED', 'rejected by the service'), ('ABANDONED', 'abandoned (start outcome unknown)')], default='NEW', max_length=16, verbose_name='status')),
                ('service_status', models.CharField(blank=True, max_length=64, verbose_name='status reported by the service')),
                ('status_unrecognised', models.BooleanField(default=False, verbose_name='unrecognised status')),
                ('total_amount', models.DecimalField(decimal_places=2, max_digits=14, verbose_name='total amount')),
                ('original_amount', models.DecimalField(blank=True, decimal_places=2, max_digits=14, null=True, verbose_name='amount without fees')),
                ('currency', models.CharField(default='EGP', max_length=3, verbose_name='currency')),
                ('total_amount_piasters', models.BigIntegerField(blank=True, null=True, verbose_name='total amount in piasters')),
                ('payment_for', models.CharField(blank=True, max_length=40, verbose_name='payment for')),
                ('member_id', models.CharField(blank=True, max_length=100, verbose_name='member id')),
                ('custom_fields', models.JSONField(blank=True, default=list, verbose_name='custom fields')),
                ('variable_amount_id', models.PositiveIntegerField(blank=True, null=True, verbose_name='variable amount id')),
                ('pay_using', models.CharField(blank=True, max_length=40, verbose_name='payment method')),
                ('promocode_id', models.PositiveIntegerField(blank=True, null=True, verbose_name='promocode id')),
                ('iframe_url', models.URLField(blank=True, max_length=2000, verbose_name='payment page URL')),
                ('bill_reference', models.CharField(blank=True, max_length=64, verbose_name='kiosk bill reference')),
                ('kiosk_message', models.TextField(blank=True, verbose_name='kiosk message')),
                ('customer_name', models.CharField(blank=True, max_length=200, verbose_name='customer name')),
                ('customer_email', models.EmailField(blank=True, max_length=254, verbose_name='customer e-mail')),
                ('customer_phone', models.CharField(blank=True, max_length=32, verbose_name='customer phone')),
                ('merchant_reference', models.CharField(blank=True, max_length=200, verbose_name='merchant reference')),
                ('object_id', models.CharField(blank=True, max_length=64, verbose_name='merchant object id')),
                ('capture_state', models.CharField(blank=True, choices=[('', 'not captured'), ('pending', 'capture pending'), ('captured', 'captured'), ('failed', 'capture failed'), ('unknown', 'capture outcome unknown')], default='', max_length=10, verbose_name='capture')),
                ('captured_amount', models.DecimalField(decimal_places=2, default=Decimal('0.00'), max_digits=14, verbose_name='captured amount')),
                ('captured_at', models.DateTimeField(blank=True, null=True, verbose_name='captured at')),
                ('refunded_amount', models.DecimalField(decimal_places=2, default=Decimal('0.00'), max_digits=14, verbose_name='refunded amount')),
                ('outcome_unknown', models.BooleanField(db_index=True, default=False, verbose_name='outcome unknown')),
                ('amount_mismatch', models.BooleanField(default=False, verbose_name='amount mismatch')),
                ('last_error', models.TextField(blank=True, verbose_name='last error')),
                ('raw', models.JSONField(blank=True, null=True, verbose_name='last fetched object')),
                ('last_synced_at', models.DateTimeField(blank=True, null=True, verbose_name='last synced at')),
                ('fetch_sent_at', models.DateTimeField(blank=True, null=True, verbose_name='last fetch sent at')),
                ('parent_uuid', django_paycollect.models.fields.CanonicalUuidField(blank=True, max_length=64, verbose_name='parent transaction uuid')),
                ('transaction_order', models.IntegerField(blank=True, null=True, verbose_name='order within the series')),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='created at')),
                ('succeeded_at', models.DateTimeField(blank=True, null=True, verbose_name='successful since')),
                ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                ('captured_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='captured by')),
                ('content_type', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='contenttypes.contenttype', verbose_name='merchant object type')),
                ('direct_order', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='transactions', to='paycollect.directorder', verbose_name='direct order')),
                ('owner', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='paycollect_transactions', to=settings.AUTH_USER_MODEL, verbose_name='owner')),
                ('series', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='charges', to='paycollect.recurringseries', verbose_name='recurring series')),
            ],
            options={
                'verbose_name': 'transaction',
                'verbose_name_plural': 'transactions',
                'ordering': ['-created_at', '-pk'],
                'permissions': [('capture_transaction', 'Can capture transactions'), ('refund_transaction', 'Can refund transactions'), ('cancel_recurringseries', 'Can cancel recurring series'), ('sync_transaction', 'Can sync transactions from the service'), ('export_transaction', 'Can export transactions, refunds and renewals')],
            },
        ),
        migrations.CreateModel(
            name='Refund',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('amount', models.DecimalField(decimal_places=2, max_digits=14, verbose_name='amount')),
                ('state', models.CharField(choices=[('pending', 'pending'), ('succeeded', 'succeeded'), ('failed', 'failed'), ('unknown', 'outcome unknown')], default='pending', max_length=10, verbose_name='state')),
                ('service_message', models.TextField(blank=True, verbose_name="service's message")),
                ('error', models.TextField(blank=True, verbose_name='error')),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='created at')),
                ('completed_at', models.DateTimeField(blank=True, null=True, verbose_name='completed at')),
                ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL, verbose_name='requested by')),
                ('transaction', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='refunds', to='paycollect.transaction', verbose_name='transaction')),
            ],
            options={
                'verbose_name': 'refund',
                'verbose_name_plural': 'refunds',
                'ordering': ['-created_at', '-pk'],
            },
        ),
        migrations.AddField(
            model_name='recurringseries',
            name='parent_transaction',
            field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='series_as_parent', to='paycollect.transaction', verbose_name='parent transaction'),
        ),
        migrations.CreateModel(
            name='ReceivedCallback',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('received_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='received at')),
                ('state', models.CharField(choices=[('received', 'received (not queued)'), ('queued', 'queued for verification'), ('processed', 'verified and applied'), ('failed', 'verification failed'), ('duplicate', 'duplicate delivery'), ('invalid', 'invalid')], default='received', max_length=10, verbose_name='state')),
                ('token_index', models.PositiveSmallIntegerField(blank=True, null=True, verbose_name='token')),
                ('remote_addr', models.GenericIPAddressField(blank=True, null=True, verbose_name="sender's address")),
                ('headers', models.JSONField(blank=True, default=dict, verbose_name='headers')),
                ('body', models.TextField(blank=True, verbose_name='body')),
                ('invalid_reason', models.TextField(blank=True, verbose_name='why it is invalid')),
                ('transaction_uuid', django_paycollect.models.fields.CanonicalUuidField(blank=True, max_length=64, verbose_name='transaction uuid')),
                ('claimed_status', models.CharField(blank=True, max_length=64, verbose_name='claimed status')),
                ('payment_id', models.CharField(blank=True, max_length=100, verbose_name='payment id')),
                ('merchant_id', models.CharField(blank=True, max_length=100, verbose_name='merchant id')),
                ('member_id', models.CharField(blank=True, max_length=100, verbose_name='member id')),
                ('total_amount', models.DecimalField(blank=True, decimal_places=2, max_digits=14, null=True, verbose_name='total amount')),
                ('total_amount_piasters', models.BigIntegerField(blank=True, null=True, verbose_name='total amount in piasters')),
                ('is_sub_payment', models.BooleanField(blank=True, null=True, verbose_name='renewal charge')),
                ('parent_transaction', django_paycollect.models.fields.CanonicalUuidField(blank=True, max_length=64, verbose_name='parent transaction uuid')),
                ('message', models.TextField(blank=True, verbose_name='message')),
                ('custom_fields', models.JSONField(blank=True, default=dict, verbose_name='custom fields')),
                ('hint_errors', models.JSONField(blank=True, default=dict, verbose_name='malformed hints')),
                ('dedupe_key', models.CharField(blank=True, max_length=200, null=True, verbose_name='duplicates key')),
                ('attempts', models.PositiveSmallIntegerField(default=0, verbose_name='attempts')),
                ('task_id', models.CharField(blank=True, max_length=255, verbose_name='Celery task id')),
                ('queued_at', models.DateTimeField(blank=True, null=True, verbose_name='verification asked at')),
                ('next_attempt_at', models.DateTimeField(blank=True, null=True, verbose_name='next attempt due at')),
                ('processed_at', models.DateTimeField(blank=True, null=True, verbose_name='processed at')),
                ('outcome', models.TextField(blank=True, verbose_name='processing result')),
                ('error', models.TextField(blank=True, verbose_name='error')),
                ('traceback', models.TextField(blank=True, verbose_name='traceback')),
                ('duplicate_of', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='paycollect.receivedcallback', verbose_name='duplicate of')),
                ('transaction', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='callbacks', to='paycollect.transaction', verbose_name='transaction')),
            ],
            options={
                'verbose_name': 'received callback',
                'verbose_name_plural': 'received callbacks',
                'ordering': ['-received_at', '-pk'],
                'permissions': [('reprocess_receivedcallback', 'Can reprocess received callbacks')],
            },
        ),
        migrations.CreateModel(
            name='ApiCall',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('operation', models.CharField(max_length=32, verbose_name='operation')),
                ('community_id', models.CharField(blank=True, max_length=100, verbose_name='community id')),
                ('method', models.CharField(max_length=8, verbose_name='HTTP method')),
                ('path', models.CharField(max_length=500, verbose_name='path')),
                ('request_body', models.JSONField(blank=True, null=True, verbose_name='request body')),
                ('sent', models.BooleanField(default=True, verbose_name='sent')),
                ('http_status', models.PositiveSmallIntegerField(blank=True, null=True, verbose_name='HTTP status')),
                ('code', models.IntegerField(blank=True, null=True, verbose_name='envelope status.code')),
                ('message', models.TextField(blank=True, verbose_name="service's message")),
                ('errors', models.JSONField(blank=True, default=list, verbose_name='errors')),
                ('data', models.JSONField(blank=True, null=True, verbose_name='data')),
                ('count', models.IntegerField(blank=True, null=True, verbose_name='count')),
                ('next', models.TextField(blank=True, verbose_name='next page')),
                ('previous', models.TextField(blank=True, verbose_name='previous page')),
                ('error_class', models.CharField(blank=True, max_length=64, verbose_name='error class')),
                ('error_message', models.TextField(blank=True, verbose_name='error message')),
                ('body_excerpt', models.TextField(blank=True, verbose_name="answer's excerpt")),
                ('outcome_unknown', models.BooleanField(default=False, verbose_name='outcome unknown')),
                ('duration_ms', models.PositiveIntegerField(blank=True, null=True, verbose_name='duration (ms)')),
                ('attempts', models.PositiveSmallIntegerField(default=0, verbose_name='attempts')),
                ('task_id', models.CharField(blank=True, max_length=255, verbose_name='Celery task id')),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='called at')),
                ('direct_order', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_calls', to='paycollect.directorder', verbose_name='direct order')),
                ('series', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_calls', to='paycollect.recurringseries', verbose_name='recurring series')),
                ('refund', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_calls', to='paycollect.refund', verbose_name='refund')),
                ('transaction', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_calls', to='paycollect.transaction', verbose_name='transaction')),
            ],
            options={
                'verbose_name': 'API call',
                'verbose_name_plural': 'API calls',
                'ordering': ['-created_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='TransactionStatusChange',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('from_status', models.CharField(choices=[('NEW', 'new (not yet accepted by the service)'), ('PENDING', 'pending'), ('SUCCESSFUL', 'successful'), ('FAILED', 'failed'), ('REJECTED', 'rejected by the service'), ('ABANDONED', 'abandoned (start outcome unknown)')], max_length=16, verbose_name='from status')),
                ('to_status', models.CharField(choices=[('NEW', 'new (not yet accepted by the service)'), ('PENDING', 'pending'), ('SUCCESSFUL', 'successful'), ('FAILED', 'failed'), ('REJECTED', 'rejected by the service'), ('ABANDONED', 'abandoned (start outcome unknown)')], max_length=16, verbose_name='to status')),
                ('service_status', models.CharField(blank=True, max_length=64, verbose_name='status reported by the service')),
                ('source', models.CharField(choices=[('pay', 'pay'), ('sync', 'sync'), ('callback', 'callback'), ('return', "customer's return"), ('admin', 'admin'), ('reconcile', 'reconciliation')], max_length=32, verbose_name='caused by')),
                ('at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='at')),
                ('transaction', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='status_changes', to='paycollect.transaction', verbose_name='transaction')),
            ],
            options={
                'verbose_name': 'status change',
                'verbose_name_plural': 'status changes',
                'ordering': ['at', 'pk'],
            },
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
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(fields=['status', 'created_at'], name='paycollect_txn_status_created'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(condition=models.Q(('amount_mismatch', True)), fields=['amount_mismatch'], name='paycollect_txn_mismatch'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(condition=models.Q(('status_unrecognised', True)), fields=['status_unrecognised'], name='paycollect_txn_unrecognised'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(condition=models.Q(('capture_state', ''), _negated=True), fields=['capture_state'], name='paycollect_txn_capture'),
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
            index=models.Index(condition=models.Q(('status', 'PENDING'), models.Q(('status', 'NEW'), ('uuid__isnull', False)), _connector='OR'), fields=['community_id', 'created_at'], name='paycollect_txn_open'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(condition=models.Q(('uuid__isnull', False)), fields=['community_id'], name='paycollect_txn_report_known'),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(fields=['total_amount', 'id'], name='paycollect_txn_amount_sort'),
        ),
        migrations.AddConstraint(
            model_name='transaction',
            constraint=models.UniqueConstraint(condition=models.Q(('status__in', ['NEW', 'PENDING']), models.Q(('merchant_reference', ''), _negated=True)), fields=('community_id', 'merchant_reference'), name='paycollect_one_open_payment_per_reference'),
        ),
        migrations.AddConstraint(
            model_name='transaction',
            constraint=models.CheckConstraint(condition=models.Q(('refunded_amount__lte', models.F('total_amount'))), name='paycollect_refunds_within_amount'),
        ),
        migrations.AddConstraint(
            model_name='transaction',
            constraint=models.UniqueConstraint(django.db.models.functions.text.Lower(django.db.models.functions.text.Replace('uuid', models.Value('-'), models.Value(''))), name='paycollect_txn_one_row_per_uuid'),
        ),
        migrations.AddConstraint(
            model_name='transaction',
            constraint=models.UniqueConstraint(fields=('uuid',), name='paycollect_txn_uuid'),
        ),
        migrations.AddIndex(
            model_name='refund',
            index=models.Index(fields=['state'], name='paycollect_refund_state'),
        ),
        migrations.AddIndex(
            model_name='refund',
            index=models.Index(fields=['state', 'completed_at'], name='paycollect_refund_report'),
        ),
        migrations.AddIndex(
            model_name='recurringseries',
            index=models.Index(fields=['community_id'], name='paycollect_series_community'),
        ),
        migrations.AddIndex(
            model_name='recurringseries',
            index=models.Index(fields=['created_at'], name='paycollect_series_created'),
        ),
        migrations.AddConstraint(
            model_name='recurringseries',
            constraint=models.UniqueConstraint(django.db.models.functions.text.Lower(django.db.models.functions.text.Replace('parent_uuid', models.Value('-'), models.Value(''))), name='paycollect_series_one_row_per_parent'),
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
            model_name='receivedcallback',
            index=models.Index(fields=['received_at', 'state', 'processed_at'], name='paycollect_callback_report'),
        ),
        migrations.AddIndex(
            model_name='receivedcallback',
            index=models.Index(fields=['payment_id'], name='paycollect_callback_payment'),
        ),
        migrations.AddIndex(
            model_name='receivedcallback',
            index=models.Index(fields=['task_id'], name='paycollect_callback_task'),
        ),
        migrations.AddConstraint(
            model_name='receivedcallback',
            constraint=models.UniqueConstraint(fields=('dedupe_key',), name='paycollect_callback_dedupe_key'),
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
            model_name='apicall',
            index=models.Index(condition=models.Q(('outcome_unknown', True)), fields=['outcome_unknown'], name='paycollect_call_unknown'),
        ),
        migrations.RunPython(watch_from_now, migrations.RunPython.noop),
    ]
