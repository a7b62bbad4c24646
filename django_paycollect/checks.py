"""System checks, with stable ids (``paycollect.E001`` ...) that can be silenced one by one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.apps import AppConfig, apps
from django.conf import global_settings, settings
from django.core.checks import CheckMessage, Error, Info, Tags, Warning, register
from django.db import DatabaseError

from .amounts import MONEY_COLUMN_MAX
from .client.money import MoneyError, exact_decimal, to_piasters
from .conf import DEFAULTS, OWN_CHECKS, metrics_available, paycollect_settings, read_networks, shown
from .crypto import weakness
from .exceptions import PayCollectConfigurationError
from .secrecy import stored_credentials

LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]", "testserver"}


@register(Tags.compatibility)
def check_settings(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    unknown = paycollect_settings.unknown_keys()
    if unknown:
        messages.append(
            Error(
                f"PAYCOLLECT has unknown keys: {', '.join(unknown)}.",
                hint="See the settings reference for the keys and their defaults.",
                id="paycollect.E006",
            )
        )
    base_url = paycollect_settings.BASE_URL if paycollect_settings.problem("BASE_URL") is None else None
    for key, check_id in (("BASE_URL", "E001"), ("API_KEY", "E002"), ("COMMUNITY_ID", "E003")):
        if paycollect_settings.problem(key) is None and not getattr(paycollect_settings, key):
            messages.append(
                Error(
                    f"PAYCOLLECT['{key}'] is not set.",
                    hint="Set it in settings.PAYCOLLECT; the testing and live environments differ "
                    "only by BASE_URL and keys.",
                    id=f"paycollect.{check_id}",
                )
            )
    if base_url:
        parts = urlsplit(str(base_url))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            messages.append(Error("PAYCOLLECT['BASE_URL'] is not an http(s) URL.", id="paycollect.E007"))
        elif not settings.DEBUG:
            if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
                messages.append(
                    Error(
                        "PAYCOLLECT['BASE_URL'] is plain HTTP while DEBUG is off: "
                        "API keys would travel in clear.",
                        hint="Use the https:// address of the service.",
                        id="paycollect.E004",
                    )
                )
            sandbox_path = apps.is_installed("django_paycollect.sandbox") and "sandbox" in parts.path
            if parts.hostname in LOOPBACK_HOSTS or sandbox_path:
                messages.append(
                    Warning(
                        "PAYCOLLECT['BASE_URL'] points at a local sandbox while DEBUG is off.",
                        hint="Live deployments must point at the service; silence paycollect.W001 on a "
                        "staging site that really uses the sandbox.",
                        id="paycollect.W001",
                    )
                )
    tokens = paycollect_settings.texts("CALLBACK_TOKENS")
    if paycollect_settings.problem("CALLBACK_TOKENS") is not None:
        pass  # paycollect.E010
    elif not tokens:
        messages.append(
            Warning(
                "PAYCOLLECT['CALLBACK_TOKENS'] is empty: no callback URL can be accepted.",
                hint="Add a long random token; the callback URL is <mount>/callback/<token>/.",
                id="paycollect.W002",
            )
        )
    elif any(len(token) < 20 for token in tokens):
        messages.append(
            Warning(
                "A PAYCOLLECT['CALLBACK_TOKENS'] token is shorter than 20 characters and guessable.",
                id="paycollect.W003",
            )
        )
    messages += _check_trusted_proxies()
    messages += _check_max_amount()
    # Every key as the app reads it, by its kind (conf.reading); a secret's value is never shown.
    messages += [
        Error(
            f"PAYCOLLECT['{key}'] is {shown(key, paycollect_settings.raw(key))}: {problem}.",
            hint=f"Fix it, or remove it to use the default ({DEFAULTS[key]!r}).",
            id="paycollect.E010",
        )
        for key in DEFAULTS
        if key not in OWN_CHECKS and (problem := paycollect_settings.problem(key)) is not None
    ]
    messages += _check_encryption_keys()
    messages += _check_metrics()
    return messages


def _check_metrics() -> list[CheckMessage]:
    """A ``METRICS`` that is not None, True or False, or True without prometheus-client, would leave the
    metrics off while the site believes them on: the alerts would see nothing, and say nothing."""
    messages: list[CheckMessage] = []
    value = paycollect_settings.raw("METRICS")
    if paycollect_settings.problem("METRICS") is not None:
        messages.append(
            Error(
                f"PAYCOLLECT['METRICS'] is {value!r}: it must be None (on when prometheus-client is "
                "installed), True or False.",
                id="paycollect.E013",
            )
        )
    elif paycollect_settings.METRICS is True and not metrics_available():
        messages.append(
            Error(
                "PAYCOLLECT['METRICS'] is True but prometheus-client is not installed: no metrics are "
                "served.",
                hint="pip install 'django-paycollect[metrics]', or set METRICS to None or False.",
                id="paycollect.E014",
            )
        )
    raw = paycollect_settings.raw("METRICS_TOKENS")
    blank = isinstance(raw, (list, tuple)) and not all(raw)  # an empty token in a list: a lost variable?
    if paycollect_settings.problem("METRICS_TOKENS") is not None or blank:
        # The value is never shown: it holds secrets.
        messages.append(
            Error(
                "PAYCOLLECT['METRICS_TOKENS'] must be one non-empty text or a list of them.",
                id="paycollect.E015",
            )
        )
    elif any(len(token) < 20 for token in paycollect_settings.texts("METRICS_TOKENS")):
        messages.append(
            Warning(
                "A PAYCOLLECT['METRICS_TOKENS'] token is shorter than 20 characters and guessable.",
                hint="Use secrets.token_urlsafe(32).",
                id="paycollect.W008",
            )
        )
    return messages


@register(Tags.compatibility)
def check_callbacks_can_be_verified(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Callbacks are verified by a Celery task: an error when no Celery app was created in this process, so
    ``.delay()`` would go to Celery's fallback app, which reads no settings (eager mode needs no broker)."""
    if _task_runner() != "celery":
        return []  # Django's task framework runs them: check_task_runner's
    from celery import _state

    app = _state.get_current_app()
    if app.conf.task_always_eager or not _is_fallback_app(app):
        return []
    eager_hint = ""
    if getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False):
        eager_hint = " (settings.CELERY_TASK_ALWAYS_EAGER is True, but no Celery app reads Django settings)"
    return [
        Error(
            "Callbacks cannot be verified: no Celery app is loaded, so the verification tasks would go "
            f"to Celery's unconfigured default app{eager_hint}. Each callback would be answered 200 and "
            "stay unverified.",
            hint="Create the project's Celery app (app.config_from_object('django.conf:settings', "
            "namespace='CELERY')) and import it in the project package's __init__.py; see the quick "
            "start's Celery section.",
            id="paycollect.E009",
        )
    ]


@register(Tags.urls)
def check_api_payable_resolver(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """When the REST API is mounted, its payable hook must be set and importable: without it every
    payment the API is asked to start would be answered 503."""
    from django.urls import NoReverseMatch, reverse

    try:
        reverse("paycollect_api:payment-list")
    except NoReverseMatch:
        return []  # the API is not mounted: the hook is not needed
    from .api.payables import resolver

    try:
        resolver()
    except PayCollectConfigurationError as error:
        return [
            Error(
                str(error),
                hint="Set PAYCOLLECT['PAYABLE_RESOLVER'] to the dotted path of a function (request, "
                "reference) returning a django_paycollect.api.payables.Payable; see the REST API docs.",
                id="paycollect.E012",
            )
        ]
    return []


@register(Tags.compatibility)
def check_worker_keeps_sessions(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """A worker that opens a database session for every task, which costs more than the verification itself
    (``tasks.connections`` drops the unsound ones). SQLite opens a file, not a session; eager: no worker."""
    if _task_runner() != "celery":
        return []  # db_worker keeps its sessions by CONN_MAX_AGE, as a web process does
    from celery import _state
    from django.db import router

    from .models import ReceivedCallback

    app = _state.get_current_app()
    if app.conf.task_always_eager or _is_fallback_app(app):
        return []  # nothing runs in a worker (E009 covers the fallback app)
    alias = router.db_for_write(ReceivedCallback)
    database: dict[str, Any] = settings.DATABASES.get(alias, {})
    if "sqlite" in str(database.get("ENGINE", "")):
        return []
    missing = []
    options: dict[str, Any] = database.get("OPTIONS") or {}
    if database.get("CONN_MAX_AGE", 0) == 0 and not options.get("pool"):
        missing.append(f"DATABASES[{alias!r}] has CONN_MAX_AGE 0")
    if not app.conf.get("CELERY_DB_REUSE_MAX"):
        missing.append(
            "CELERY_DB_REUSE_MAX is not set, so Celery's Django fixup closes every database connection "
            "before and after each task, whatever CONN_MAX_AGE says"
        )
    if not missing:
        return []
    return [
        Warning(
            "The Celery worker opens a new database session for every task, so each callback's "
            f"verification also pays for a session: {'; '.join(missing)}.",
            hint="Set CONN_MAX_AGE = 60 on the database and CELERY_DB_REUSE_MAX = 1000 in the settings the "
            "worker reads (see the deployment docs: Keep database connections).",
            id="paycollect.W009",
        )
    ]


def _task_runner() -> str | None:
    try:
        return str(paycollect_settings.TASK_RUNNER)
    except PayCollectConfigurationError:
        return None  # paycollect.E010 says why


#: What the runner "django" needs, as a check's hint.
DJANGO_RUNNER_HINT = (
    'Install django-paycollect[tasks], add "django_tasks_db" to INSTALLED_APPS, set TASKS = {"default": '
    '{"BACKEND": "django_tasks_db.DatabaseBackend"}}, migrate, and run manage.py db_worker (see the docs\' '
    "settings reference: TASK_RUNNER)."
)


@register(Tags.compatibility)
def check_task_runner(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """With ``TASK_RUNNER`` "django", a task framework and a "default" backend that runs what it is given
    (E022); the immediate backend, which runs each job in its request with no retry, outside DEBUG only when
    the project says so (E023)."""
    if _task_runner() != "django":
        return []
    from .tasks import runners  # here: the tasks import the models

    problem: str | None = "no task framework is installed (Django 5.2 needs the django-tasks backport)"
    try:
        framework = runners.framework()
    except ImportError:
        framework = None
    if framework is not None:
        problem = _tasks_problem(framework, runners.DJANGO_BACKEND)
        if problem is None:
            return _immediate_outside_debug(framework, runners.DJANGO_BACKEND)
    return [
        Error(
            f'PAYCOLLECT["TASK_RUNNER"] is "django", but {problem}: callbacks would be answered 200 and '
            "never verified.",
            hint=DJANGO_RUNNER_HINT,
            id="paycollect.E022",
        )
    ]


def _tasks_problem(framework: Any, alias: str) -> str | None:
    configured = getattr(settings, "TASKS", None)
    if configured is not None and alias not in configured:
        return f'TASKS has no "{alias}" backend'
    try:
        backend = framework.task_backends[alias]
    except Exception as error:  # an unknown class, a bad option: the framework's own words
        return f'TASKS["{alias}"] cannot be loaded ({error})'
    if type(backend).__name__ == "DummyBackend":
        return f'TASKS["{alias}"] is the dummy backend, which keeps tasks and never runs them'
    return None


def _immediate_outside_debug(framework: Any, alias: str) -> list[CheckMessage]:
    if type(framework.task_backends[alias]).__name__ != "ImmediateBackend" or settings.DEBUG:
        return []
    if paycollect_settings.ALLOW_IMMEDIATE_TASKS:  # PAYCOLLECT is a dict: the caller read TASK_RUNNER
        return []
    configured, default = getattr(settings, "TASKS", None), getattr(global_settings, "TASKS", None)
    unset = " (TASKS is not set: Django's default)" if configured in (None, default) else ""
    return [
        Error(
            f'TASKS["{alias}"] is the immediate backend{unset}, which runs each task at once, in the request '
            "that enqueues it: a callback is verified while the service waits for its answer, and a "
            "verification that must wait (a retry, the service down) is left to the sweep.",
            hint="Use a backend with a worker (django_tasks_db.DatabaseBackend and manage.py db_worker), or "
            'set PAYCOLLECT["ALLOW_IMMEDIATE_TASKS"] = True if this site means it.',
            id="paycollect.E023",
        )
    ]


def _is_fallback_app(app: Any) -> bool:
    # Celery creates this app ("default", no fix-ups, never current) when a task is used in a
    # process where no app was created; a project's own app is current and has the Django fix-up.
    from celery import _state

    return app is _state.default_app and app.main == "default" and not app.fixups


@register(Tags.database)
def check_callbacks_left_unverified(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Stored callbacks that did not move on: stuck ones (the sweep should have queued them again) and
    failed ones (a person should look). A database check: ``check --database default``."""
    from .models import ReceivedCallback
    from .reporting.health import sweep_question
    from .services.callback_ledger import stuck_filter

    messages: list[CheckMessage] = []
    for alias in databases or []:
        try:
            stuck = ReceivedCallback.objects.using(alias).filter(stuck_filter()).count()
            failed = ReceivedCallback.objects.using(alias).filter(state=ReceivedCallback.FAILED).count()
        except DatabaseError:
            continue  # not migrated yet
        if stuck:
            messages.append(
                Warning(
                    f"{stuck} callback(s) in database {alias!r} are waiting for verification longer than "
                    "they should (received but not queued, or queued and overdue by "
                    "CALLBACK_REQUEUE_AFTER).",
                    hint=f"{sweep_question()} `manage.py paycollect_process_callbacks --stuck` verifies "
                    "them now; the admin's callback list filters them (waiting: stuck).",
                    id="paycollect.W005",
                )
            )
        if failed:
            messages.append(
                Warning(
                    f"{failed} callback(s) in database {alias!r} could not be verified (state failed).",
                    hint="See why in the admin (received callbacks, state: verification failed); after "
                    "fixing the cause, `manage.py paycollect_process_callbacks --failed` or the admin's "
                    "'Verify again' action. Forged ones (the service does not know the uuid) need nothing: "
                    "`paycollect_prune --include-unprocessed` deletes them once old.",
                    id="paycollect.W006",
                )
            )
    return messages


@register(Tags.database)
def check_housekeeping_runs(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """The sweep or reconciliation late, as ``reporting.housekeeping`` judges it (W007); a job that has never
    run is no stopped beat, only information (I001). A database check: ``check --database default``."""
    from django.db import router

    from .models import HousekeepingRun
    from .reporting import housekeeping, housekeeping_how_to_start, housekeeping_not_run_yet

    if router.db_for_read(HousekeepingRun) not in (databases or []):
        return []
    try:
        jobs = housekeeping()
    except DatabaseError:
        return []  # not migrated yet
    not_run = housekeeping_not_run_yet(jobs)
    messages: list[CheckMessage] = []
    if not_run is not None:
        messages.append(Info(not_run, hint=housekeeping_how_to_start(), id="paycollect.I001"))
    return messages + [
        Warning(
            job.warning(),
            hint=f"{housekeeping_how_to_start()} The admin's dashboard shows when each job last ran.",
            id="paycollect.W007",
        )
        for job in jobs
        if job.late
    ]


def _check_encryption_keys() -> list[CheckMessage]:
    """Keys too short or too repetitive to be keys (a few characters, a run of zero bytes): whoever holds the
    database could try them all. The key that encrypts: an error. An older one, kept to decrypt until
    ``paycollect_rotate_keys`` has run: a warning. The key derived from SECRET_KEY is Django's to check."""
    if paycollect_settings.problem("ENCRYPTION_KEYS") is not None:
        return []  # paycollect.E010
    messages: list[CheckMessage] = []
    for index, key in enumerate(paycollect_settings.ENCRYPTION_KEYS):
        if (problem := weakness(key)) is None:
            continue
        text = f"PAYCOLLECT['ENCRYPTION_KEYS'][{index}] is {problem}: "
        messages.append(
            Error(
                text + "the stored keys it encrypts could be decrypted by guessing it.",
                hint="Put a long random value first (secrets.token_urlsafe(32)), this one after it until "
                "`manage.py paycollect_rotate_keys` has encrypted the stored keys again.",
                id="paycollect.E016",
            )
            if index == 0
            else Warning(
                text + "stored keys still encrypted with it could be decrypted by guessing it.",
                hint="Run `manage.py paycollect_rotate_keys`, then remove it.",
                id="paycollect.W010",
            )
        )
    return messages


def _check_max_amount() -> list[CheckMessage]:
    value = paycollect_settings.MAX_AMOUNT
    try:
        limit = exact_decimal(value)
        to_piasters(limit)
    except MoneyError as exc:
        problem = f"is not an amount ({exc})"
    else:
        if limit <= 0:
            problem = "must be above zero"
        elif limit > MONEY_COLUMN_MAX:
            problem = f"is above {MONEY_COLUMN_MAX}, the most the amount columns hold"
        else:
            return []
    return [
        Error(
            f"PAYCOLLECT['MAX_AMOUNT'] {problem}.",
            hint='The largest amount accepted, a Decimal with at most two decimals: Decimal("1000000.00").',
            id="paycollect.E011",
        )
    ]


def _check_trusted_proxies() -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    for entry, network in read_networks(paycollect_settings.texts("TRUSTED_PROXIES")):
        if network is None:
            messages.append(
                Error(
                    f"PAYCOLLECT['TRUSTED_PROXIES'] entry {entry!r} is not an address or network.",
                    id="paycollect.E008",
                )
            )
        elif network.prefixlen == 0:
            messages.append(
                Warning(
                    f"PAYCOLLECT['TRUSTED_PROXIES'] entry {entry!r} trusts every address: "
                    "any client can choose the IP stored for its callbacks.",
                    hint="List only your own proxies' addresses.",
                    id="paycollect.W004",
                )
            )
    return messages


@register(Tags.database)
def check_stored_secrets(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Stored keys that no configured encryption key decrypts (keys rotated away too early); a database
    check, as Django's own: only when asked (``check --database``, ``migrate``)."""
    messages: list[CheckMessage] = []
    for alias in databases or []:
        try:
            rows = stored_credentials(alias)
        except DatabaseError:
            continue  # not migrated yet
        messages += [
            Error(
                f"A stored key of community {community_id} cannot be decrypted.",
                hint="Put the key it was encrypted with back into PAYCOLLECT['ENCRYPTION_KEYS'] "
                "(after the current one), or enter the key again in the admin.",
                id="paycollect.E005",
            )
            for community_id, texts in rows
            if texts is None
        ]
    return messages


@register(Tags.database, Tags.compatibility)
def check_one_database(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """The app's models, and the models they point to, on one database the app's statements are written for:
    otherwise a payment would be accepted by the service and then fail to be recorded (a lock taken outside
    its transaction, a relation refused), before any payment is sent rather than after."""
    from django.db import connections, router

    from .models import Transaction
    from .services.upserts import VENDORS

    alias = router.db_for_write(Transaction)
    messages: list[CheckMessage] = []
    connection = connections[alias]
    if connection.vendor not in VENDORS:
        messages.append(
            Error(
                f"The app's models are on a {connection.vendor} database ({alias!r}); the app supports "
                f"{' and '.join(VENDORS)}.",
                hint="Route the django_paycollect models to a PostgreSQL or SQLite database.",
                id="paycollect.E020",
            )
        )
    elsewhere: list[str] = []
    for model in apps.get_app_config("paycollect").get_models():
        related = [field.related_model for field in model._meta.get_fields() if field.is_relation]
        for other in (model, *[m for m in related if isinstance(m, type)]):
            other_alias = router.db_for_write(other)
            if other_alias != alias:
                elsewhere.append(f"{other._meta.label} on {other_alias!r}")
    if elsewhere:
        shown_models = ", ".join(sorted(set(elsewhere)))
        messages.append(
            Error(
                f"The project's database router writes Transaction to {alias!r} but {shown_models}: the app "
                "records a payment, its envelope and its status change in one commit, and links them by "
                "foreign keys, so they must be on one database.",
                hint=f"Route every django_paycollect model, and the models they point to (the user model, "
                f"content types), to {alias!r} in db_for_write.",
                id="paycollect.E021",
            )
        )
    return messages
