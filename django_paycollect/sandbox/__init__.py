"""A faithful, stateful local implementation of the Payment Collection Service (development and tests only).

Mount it in a project with ``path("sandbox/", include("django_paycollect.sandbox.urls"))`` or run it on its
own with ``python -m django_paycollect.sandbox``. See ``docs/sandbox.md``.

Importing this package imports nothing from Django: the pytest plugin and the runner rely on that.
"""

LIVE_DEPLOYMENT_ENV = "PAYCOLLECT_DEPLOYMENT"


def live_deployment_reason() -> str | None:
    """Why this process must not run the sandbox, or None when it may.

    The sandbox accepts any card, fakes money movements and exposes a control API, so it must never serve a
    live deployment. The environment variable is read here (not through Django settings) so that the
    standalone runner can refuse before Django is even configured.
    """
    import os

    value = os.environ.get(LIVE_DEPLOYMENT_ENV, "").strip().lower()
    if value == "live":
        return f"{LIVE_DEPLOYMENT_ENV}=live: the sandbox refuses to run in a live deployment."
    return None
