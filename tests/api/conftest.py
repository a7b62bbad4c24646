"""Fixtures of the REST API tests: the API mounted, its payable hook set, users of every kind, and a client
signed in as each (Django sessions, as a single-page checkout on the same site uses)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.cache import cache
from rest_framework.test import APIClient

RESOLVER = "tests.api.payables.resolve"


@pytest.fixture(autouse=True)
def api_mounted(settings: Any) -> Any:
    settings.ROOT_URLCONF = "tests.api.urls"
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "PAYABLE_RESOLVER": RESOLVER}
    cache.clear()  # the throttles' counts
    yield
    cache.clear()


@pytest.fixture
def api_in_process(paycollect_in_process: Any, settings: Any) -> Any:
    """The API against the sandbox served in this process (the middle tier; see tests/conftest.py)."""
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "PAYABLE_RESOLVER": RESOLVER}
    return paycollect_in_process


@pytest.fixture
def users(django_user_model: Any) -> dict[str, Any]:
    # No password (force_login needs none): hashing one per user would cost a third of a second each.
    def make(name: str, *, staff: bool = False, perms: tuple[str, ...] = ()) -> Any:
        user = django_user_model.objects.create_user(
            name, f"{name}@example.com", None, first_name=name.title(), last_name="Tester", is_staff=staff
        )
        for codename in perms:
            user.user_permissions.add(
                Permission.objects.get(content_type__app_label="paycollect", codename=codename)
            )
        return user

    return {
        "owner": make("owner"),
        "other": make("other"),
        "staff": make("staff", staff=True),
        "refunder": make("refunder", staff=True, perms=("refund_transaction",)),
        "capturer": make("capturer", staff=True, perms=("capture_transaction",)),
        "canceller": make("canceller", staff=True, perms=("cancel_recurringseries",)),
        "orderer": make("orderer", staff=True, perms=("add_directorder", "view_directorder")),
        # Holding every permission without being staff is not enough for the staff endpoints.
        "not_staff": make(
            "not_staff",
            perms=("refund_transaction", "capture_transaction", "cancel_recurringseries", "add_directorder"),
        ),
    }


@pytest.fixture
def as_user(users: dict[str, Any]) -> Any:
    """``as_user("owner")``: an APIClient signed in (a Django session) as that user; None: anonymous."""

    def client(name: str | None) -> APIClient:
        api = APIClient()
        if name is not None:
            api.force_login(users[name])
        return api

    return client
