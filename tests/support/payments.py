"""What the app's tests pay with: the callback token the test settings trust, a customer's billing data, and
a payment completed at the sandbox."""

from __future__ import annotations

from typing import Any

from django_paycollect import services
from django_paycollect.models import Transaction

CALLBACK_TOKEN = "tests-callback-token-0123456789"
BILLING = {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}


def complete(sb: Any, txn: Transaction, outcome: str = "SUCCESSFUL") -> Transaction:
    """The customer pays (or is declined) at the service; then we learn it by fetching."""
    assert txn.uuid
    sb.control.complete(txn.uuid, outcome)
    return services.sync_transaction(txn)
