"""Every surface that takes an amount reads each spelling of tests/support/amounts.py as the table says: the
service layer's operations, their tasks, and the admin's refund page and direct order form (the REST API's
are in tests/api/test_amount_spellings.py; the management commands take no amount).

An accepted row must reach the service as the amount it reads (the sandbox's request journal); a refused row
is refused naming the field, with nothing stored and nothing sent. Each surface runs its rows in one test:
the table is one fact per surface, and a paid transaction is made once per surface, not once per row.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse

from django_paycollect import services, tasks
from django_paycollect.exceptions import NotFound, PaymentRefused, StateConflict
from django_paycollect.models import ApiCall, DirectOrder, Refund, Transaction
from tests.support.admin import BILLING, logged_in, staff, url
from tests.support.amounts import (
    MAX,
    OMITTED,
    SPELLINGS,
    Spelling,
    as_refund,
    disagreements,
)

pytestmark = pytest.mark.django_db(transaction=True)

ORDER = {
    "name": "Summer camp",
    "payment_methods": ["card"],
    "customer_name": "Mona Ali",
    "customer_email": "mona@example.com",
    "customer_mobile": "+201001234567",
}
_references = itertools.count()


@pytest.fixture
def paid(paycollect_in_process: Any, settings: Any) -> Transaction:
    """A 1000.00 payment, paid; then ``MAX_AMOUNT`` lowered to the table's, so every accepted row can be
    refunded from it."""
    txn = services.start_payment(amount=Decimal("1000.00"), billing_data=BILLING, merchant_reference="paid")
    paycollect_in_process.control.complete(txn.uuid, "SUCCESSFUL")
    txn = services.sync_transaction(txn)
    assert txn.status == Transaction.SUCCESSFUL
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_AMOUNT": MAX}
    return txn


def sent(sb: Any, operation: str, key: str) -> Decimal | None:
    """The amount the last ``operation`` request carried, or None when none was sent."""
    journal = sb.control.journal(operation)
    if not journal:
        return None
    value = journal[-1]["body"][key]
    return Decimal(str(value["amount"] if isinstance(value, dict) else value))


def surface(sb: Any, operation: str, key: str, call: Callable[[Any], Any], field: str = "amount") -> Any:
    """The outcome of ``call(given)`` as the table states it: the amount the service received, or the words of
    a refusal naming ``field`` that stored and sent nothing."""

    def outcome(given: Any) -> Decimal | str:
        before = (len(sb.control.journal(operation)), ApiCall.objects.count())
        try:
            call(given)
        except PaymentRefused as refusal:
            refused = refusal
        else:
            received = sent(sb, operation, key)
            assert received is not None
            return received
        assert not isinstance(refused, StateConflict), refused.message_dict
        assert (len(sb.control.journal(operation)), ApiCall.objects.count()) == before
        assert list(refused.message_dict) == [field], refused.message_dict
        return str(refused.message_dict[field][0])

    return outcome


def through_json(task: Any, **kwargs: Any) -> Any:
    """Apply ``task`` eagerly with its arguments through JSON, as a broker carries them."""
    return task.apply(kwargs=json.loads(json.dumps(kwargs)), task_id=f"t-{next(_references)}").get()


def given(spelling: Any) -> dict[str, Any]:
    return {} if spelling is OMITTED else {"amount": spelling}


def json_rows(rows: list[Spelling] = SPELLINGS) -> list[Spelling]:
    return [row for row in rows if row.json]


# --- the service layer ------------------------------------------------------------------------------------


def test_start_payment_reads_every_spelling_as_the_table_says(paid, paycollect_in_process):
    def call(amount: Any) -> Any:
        return services.start_payment(
            amount=amount, billing_data=BILLING, merchant_reference=f"r{next(_references)}"
        )

    assert disagreements(SPELLINGS, surface(paycollect_in_process, "pay", "amount", call)) == []


def test_prepare_amount_and_promocodes_read_every_spelling_as_the_table_says(paid, paycollect_in_process):
    def promocode(amount: Any) -> Any:
        try:
            return services.validate_promocode("SAVE10", amount=amount, phone_number=BILLING["phone_number"])
        except (PaymentRefused, NotFound) as refusal:
            if refusal.__cause__ is None:  # refused by our reading: the table's business
                raise
            return None  # refused by the service, which received the amount (the journal says which)

    sb = paycollect_in_process
    assert disagreements(SPELLINGS, surface(sb, "prepare_amount", "amount", services.prepare_amount)) == []
    assert disagreements(SPELLINGS, surface(sb, "validate_promocode", "amount", promocode)) == []


def test_refund_reads_every_spelling_as_the_table_says(paid, paycollect_in_process):
    rows = [as_refund(row) for row in SPELLINGS]
    outcome = surface(
        paycollect_in_process, "refund", "refund_amount", lambda amount: services.refund(paid, amount)
    )
    assert disagreements(rows, outcome) == []
    # Left out: all that is still refundable, the only way to ask for it.
    refunded = sum(Refund.objects.filter(transaction=paid).values_list("amount", flat=True), Decimal(0))
    assert services.refund(paid).amount == Decimal("1000.00") - refunded


def test_create_direct_order_reads_every_spelling_as_the_table_says(paid, paycollect_in_process):
    def call(amount: Any) -> Any:
        return services.create_direct_order(amount=amount, **ORDER)

    assert disagreements(SPELLINGS, surface(paycollect_in_process, "direct_order", "amount", call)) == []
    assert DirectOrder.objects.count() == sum(1 for row in SPELLINGS if row.reads is not None)


def test_optional_amounts_and_vat_read_the_same_grammar(paid, paycollect_in_process):
    """A discount, a VAT percentage and ``expected_refundable`` have bounds of their own; what the grammar
    refuses (a spelling, a type) they refuse with the same words."""
    sb, rows = paycollect_in_process, [row for row in SPELLINGS if row.grammar]

    def order(**amounts: Any) -> Any:
        return services.create_direct_order(amount="100.00", **amounts, **ORDER)

    for name in ("discount_amount", "vat_percentage"):
        outcome = surface(
            sb, "direct_order", name, lambda value, name=name: order(**{name: value}), field=name
        )
        assert disagreements(rows, outcome) == []
        assert order(**{name: None}).state == DirectOrder.CREATED  # None, the keyword's default: left out

    def expected(value: Any) -> Any:
        return services.refund(paid, "1.00", expected_refundable=value)

    outcome = surface(sb, "refund", "refund_amount", expected, field="expected_refundable")
    # A wrong expected_refundable is a conflict, not a refusal of the spelling: only the refused rows run.
    assert disagreements(rows, outcome) == []


# --- the tasks (their arguments through JSON, as a broker carries them) -------------------------------------


def test_the_tasks_read_every_spelling_as_the_table_says(paid, paycollect_in_process):
    sb, rows = paycollect_in_process, json_rows()

    def start(amount: Any) -> Any:
        reference = f"t{next(_references)}"
        return through_json(
            tasks.start_payment, amount=amount, billing_data=BILLING, merchant_reference=reference
        )

    def order(amount: Any) -> Any:
        return through_json(tasks.create_direct_order, amount=amount, **ORDER)

    assert disagreements(rows, surface(sb, "pay", "amount", start)) == []
    prepare = surface(
        sb, "prepare_amount", "amount", lambda amount: through_json(tasks.prepare_amount, amount=amount)
    )
    assert disagreements(rows, prepare) == []
    assert disagreements(rows, surface(sb, "direct_order", "amount", order)) == []
    refund = surface(
        sb,
        "refund",
        "refund_amount",
        lambda amount: through_json(tasks.refund, transaction_id=paid.pk, **given(amount)),
    )
    assert disagreements([as_refund(row) for row in rows], refund) == []
    left = Transaction.objects.with_refundable().get(pk=paid.pk).refundable_amount
    assert through_json(tasks.refund, transaction_id=paid.pk)["amount"] == str(left)  # left out: all


# --- the admin's forms ------------------------------------------------------------------------------------


def test_the_admin_refund_page_reads_every_spelling_as_the_table_says(
    paid, paycollect_in_process, client, django_user_model, atomic_requests
):
    logged_in(client, staff(django_user_model, "view_transaction", "refund_transaction"))
    page = f"{reverse('admin:paycollect_transaction_refund')}?ids={paid.pk}"

    def post(amount: Any) -> Any:
        paid.refresh_from_db()
        remainder = Transaction.objects.with_refundable().get(pk=paid.pk).refundable_amount
        form = {f"shown_{paid.pk}": str(remainder)}
        if amount is not None:  # a form cannot send a null: the box is missing
            form[f"amount_{paid.pk}"] = amount
        answer = client.post(page, form)
        if answer.status_code == 200:  # the page again, the error on the amount's box
            [message] = answer.context["form"].errors[f"amount_{paid.pk}"]
            raise PaymentRefused({"amount": [message]})
        assert answer.status_code == 302, answer.content

    rows = [as_refund(row) for row in SPELLINGS if row.text]
    assert disagreements(rows, surface(paycollect_in_process, "refund", "refund_amount", post)) == []


def test_the_admin_direct_order_form_reads_every_spelling_as_the_table_says(
    paid, paycollect_in_process, client, django_user_model, atomic_requests
):
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))
    form = {
        "community_id": paycollect_in_process.community_id,
        "name": "Summer camp",
        "currency": "EGP",
        "payment_methods": "Card",
        "customer_name": "Mona Ali",
        "customer_email": "mona@example.com",
        "customer_mobile": "+201001234567",
    }

    def post(field: str) -> Callable[[Any], Any]:
        def send(value: Any) -> None:
            data = {**form, "amount": "100.00"}
            data.pop(field, None)
            if value is not None:
                data[field] = value
            answer = client.post(url("directorder", "add"), data)
            if answer.status_code == 200:
                errors = answer.context["adminform"].form.errors
                assert list(errors) == [field], errors
                raise PaymentRefused({field: errors[field]})
            assert answer.status_code == 302

        return send

    rows = [row for row in SPELLINGS if row.text]
    assert disagreements(rows, surface(paycollect_in_process, "direct_order", "amount", post("amount"))) == []
    grammar = [row for row in rows if row.grammar]
    for name in ("discount_amount", "vat_percentage"):
        outcome = surface(paycollect_in_process, "direct_order", name, post(name), field=name)
        assert disagreements(grammar, outcome) == []
