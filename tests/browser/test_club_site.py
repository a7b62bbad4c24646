"""The club site (example_project) in Chromium: what a member and the staff do, end to end.

Everything goes through real pages: the site's checkout, the sandbox's hosted payment page and direct
order page, the payment app's return and waiting pages, the callback over HTTP from the sandbox's
delivery thread, and the admin's refund page. Screenshots are kept in test-artifacts/browser/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests

from .flows import join, login, money, paid_membership, status_of, unique_email
from .support import ClubSite, needs_browser, screenshot, start_club_site

try:
    from playwright.sync_api import expect
except ImportError:  # the tests are skipped (needs_browser), or fail where the browser is required
    expect = None  # type: ignore[assignment]

pytestmark = [pytest.mark.browser, needs_browser]

# Sandbox fees (docs/sandbox.md): card 2.5 % + 2.00, kiosk 2 % + 5.00.
CARD_FEE = (Decimal("0.025"), Decimal("2.00"))
KIOSK_FEE = (Decimal("0.02"), Decimal("5.00"))


def with_fees(amount: Decimal, fee: tuple[Decimal, Decimal]) -> Decimal:
    return (amount + amount * fee[0] + fee[1]).quantize(Decimal("0.01"))


def test_card_checkout_through_the_hosted_page_back_to_a_paid_status_page(page: Any, site: ClubSite) -> None:
    join(page, site, email=unique_email("card"), plan="family", promocode="save10")
    # Review: price, the promocode's discount (validated by the service), fees from prepare amount.
    expected_total = with_fees(Decimal("2500.00") - Decimal("250.00"), CARD_FEE)
    expect(page.locator("#discount")).to_have_text("-250.00 EGP")
    assert money(page.inner_text("#fees")) == expected_total - Decimal("2250.00")
    assert money(page.inner_text("#total")) == expected_total
    assert status_of(page) == "new"
    screenshot(page, "demo-checkout", docs=True)

    # A double click never charges twice: both submissions lead to the same payment page.
    token = page.get_attribute("#pay-form input[name=csrfmiddlewaretoken]", "value")
    action = page.get_attribute("#pay-form", "action")
    first, second = (
        page.request.post(f"{site.url}{action}", form={"csrfmiddlewaretoken": token}, max_redirects=0)
        for _ in range(2)
    )
    assert first.status == second.status == 302
    assert first.headers["location"] == second.headers["location"]
    assert "/sandbox/pay/" in first.headers["location"]

    page.goto(first.headers["location"])
    expect(page.locator("#total")).to_have_text(f"{expected_total} EGP")
    screenshot(page, "sandbox-payment-page", docs=True)
    page.click("button.pay")

    # The payment app's return view fetched the transaction and sent us to the success URL.
    page.wait_for_url(re.compile(r"/payment/thanks/\?transaction_uuid="))
    expect(page.locator("#result-title")).to_have_text("Thank you for your payment")
    assert status_of(page) == "paid"
    expect(page.locator("#paid-message")).to_contain_text("Welcome to the club, Mona Ali!")

    page.click("text=Your membership page")
    assert status_of(page) == "paid"
    expect(page.locator("#payment-history")).to_contain_text(f"{expected_total} EGP")
    expect(page.locator("#payment-history")).not_to_contain_text("attempts")  # one payment only
    screenshot(page, "demo-status", docs=True)


def test_declined_payment_shows_the_failure_page_and_can_be_paid_again(page: Any, site: ClubSite) -> None:
    join(page, site, email=unique_email("declined"), billing="monthly")
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/sandbox/pay/"))
    expect(page.locator("#summary")).to_contain_text("every 30 days")  # the monthly recurring option
    first_uuid = page.inner_text("#transaction-uuid")
    page.click("button.decline")

    page.wait_for_url(re.compile(r"/payment/failed/\?transaction_uuid="))
    expect(page.locator("#result-title")).to_have_text("Your payment was not completed")
    assert status_of(page) == "failed"
    expect(page.locator("#failed-message")).to_be_visible()
    screenshot(page, "demo-declined")

    # Trying again starts a new payment for the same membership (the failed one is closed).
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/sandbox/pay/"))
    assert page.inner_text("#transaction-uuid") != first_uuid
    page.click("button.pay")
    page.wait_for_url(re.compile(r"/payment/thanks/"))
    assert status_of(page) == "paid"
    expect(page.locator("#payment-history")).to_contain_text("2 attempts")


def test_a_return_that_cannot_be_read_never_says_the_payment_failed(page: Any, site: ClubSite) -> None:
    uuid = paid_membership(page, site, email=unique_email("cut"))

    # The return URL cut short after a real payment: no parameters, or half of the uuid. The payment app
    # shows its neutral page (no redirect), never the failure page.
    for query in ("", f"?transaction_uuid={uuid[:20]}"):
        page.goto(f"{site.url}/payments/return/{query}")
        unconfirmed = page.locator("#paycollect-unconfirmed")
        expect(unconfirmed.locator("h1")).to_have_text("We could not confirm this payment yet")
        expect(unconfirmed).to_contain_text("please do not pay again")
        expect(unconfirmed).to_contain_text("look for its receipt in your e-mail")
        expect(unconfirmed).to_be_visible()
        assert page.url == f"{site.url}/payments/return/{query}"
        expect(page.locator("body")).not_to_contain_text("charged")
    screenshot(page, "return-unconfirmed")

    # The same payment's uuid in braces, or as a URN: read as the uuid it is, so back to the thanks page.
    for spelling in ("{" + uuid + "}", f"urn:uuid:{uuid.upper()}"):
        page.goto(f"{site.url}/payments/return/?transaction_uuid={quote(spelling)}")
        page.wait_for_url(f"{site.url}/payment/thanks/?transaction_uuid={uuid}")
        expect(page.locator("#result-title")).to_have_text("Thank you for your payment")
        assert status_of(page) == "paid"

    # The site's failure page opened for a payment that did not fail, or for none: not confirmed, never
    # "nothing was charged".
    for query in (f"?transaction_uuid={uuid}", ""):
        page.goto(f"{site.url}/payment/failed/{query}")
        expect(page.locator("#result-title")).to_have_text("We could not confirm this payment yet")
        expect(page.locator("#unconfirmed")).to_contain_text("please do not pay again")
        expect(page.locator("main")).not_to_contain_text("charged")


def test_direct_order_is_paid_through_its_link_with_custom_fields(page: Any, site: ClubSite) -> None:
    login(page, site, next_path="/invoices/new/")
    email = unique_email("invoice")
    page.fill("#id_name", "Tennis coaching, spring term")
    page.fill("#id_order_description", "Ten lessons with a club coach.")
    page.fill("#id_amount", "1000.00")
    page.fill("#id_discount_amount", "100.00")
    page.fill("#id_vat_percentage", "14")
    page.fill("#id_customer_title", "Mr.")
    page.fill("#id_customer_name", "Omar Hassan")
    page.fill("#id_customer_email", email)
    page.fill("#id_customer_mobile", "+201112223334")
    page.check("input[name=tags][value='3']")
    page.fill("#id_field_0_label", "Shirt size")
    page.select_option("#id_field_0_type", "DROPDOWNLIST")
    page.check("#id_field_0_required")
    page.fill("#id_field_0_choices", "S, M, L")
    page.fill("#id_field_1_label", "Racket rental")
    page.select_option("#id_field_1_type", "CHECKBOX")
    page.fill("#id_field_2_label", "Member number")
    page.select_option("#id_field_2_type", "NUMBER")
    screenshot(page, "demo-invoice-form", full_page=True)
    page.click("#invoice-form button[type=submit]")

    page.wait_for_url(re.compile(r"/invoices/\d+/$"))
    expect(page.locator("#invoice-summary")).to_contain_text("created on the service")
    expect(page.locator("#invoice-summary")).to_contain_text("#coaching")
    expect(page.locator("#invoice-state")).to_have_attribute("data-status", "waiting")
    link = page.get_attribute("#payment-link", "href")
    assert link
    assert "/sandbox/orders/" in link
    screenshot(page, "demo-invoice", docs=True)
    invoice_url = page.url

    # The notification the service sent: recorded in the sandbox's outbox, with the link.
    page.click("#outbox-link")
    expect(page.locator("body")).to_contain_text(email)
    expect(page.locator("body")).to_contain_text(link)
    screenshot(page, "sandbox-outbox")

    # The customer opens the link, answers the custom fields and pays.
    page.goto(link)
    # Total = (1000.00 - 100.00) + 14 % VAT.
    expect(page.locator("#total")).to_have_text("1026.00 EGP")
    page.get_by_label("Shirt size *").select_option("M")
    page.check("input[type=checkbox]")
    page.get_by_label("Member number").fill("1234")
    page.check("input[name=pay_using][value=card]")
    screenshot(page, "sandbox-order-page")
    page.click("button.pay")

    # Back through the payment app's return view (it may wait for the callback first).
    page.wait_for_url(re.compile(r"/payment/thanks/"), timeout=30_000)
    expect(page.locator("body")).to_contain_text("has been paid")

    page.goto(invoice_url)
    expect(page.locator("#invoice-state")).to_have_attribute("data-status", "paid")
    answers = page.locator("#invoice-payments .answers")
    expect(answers).to_contain_text("Shirt size: M")
    expect(answers).to_contain_text("Member number: 1234")
    expect(answers).to_contain_text("Racket rental: yes")
    expect(page.locator("#invoice-payments")).to_contain_text("1026.00 EGP")
    screenshot(page, "demo-invoice-paid")


def test_partial_refund_through_the_admin_intermediate_page(page: Any, site: ClubSite) -> None:
    uuid = paid_membership(page, site, email=unique_email("refund"), plan="junior")
    paid = with_fees(Decimal("600.00"), CARD_FEE)
    login(page, site)

    page.goto(f"{site.url}/admin/paycollect/transaction/")
    page.check(f"tr:has-text('{uuid}') input.action-select")
    page.select_option("select[name=action]", "refund")
    screenshot(page, "admin-transactions", docs=True)
    page.click("button[name=index]")

    page.wait_for_url(re.compile(r"/admin/paycollect/transaction/refund/\?ids="))
    amount = page.locator("input[name^=amount_]")
    assert money(amount.input_value()) == paid  # defaults to what is still refundable
    amount.fill("20.00")
    screenshot(page, "admin-refund", docs=True)
    page.click("input[type=submit][value='Refund through the service']")

    page.wait_for_url(re.compile(r"/admin/paycollect/transaction/(\?.*)?$"))
    expect(page.locator("ul.messagelist")).to_contain_text("Refund: 1 succeeded")
    page.get_by_role("link", name=uuid, exact=True).click()
    page.wait_for_url(re.compile(r"/admin/paycollect/transaction/\d+/change/"))
    expect(page.locator(".field-refunded_amount_shown")).to_contain_text("20.00")
    expect(page.locator(".field-refundable_now")).to_contain_text(f"{paid - Decimal('20.00')} EGP")

    # The service agrees: 20.00 refunded.
    assert Decimal(str(site.control.transaction(uuid)["sandbox"]["refunded_amount"])) == Decimal("20.00")


def test_waiting_page_resolves_when_the_delayed_callback_arrives(page: Any, site: ClubSite) -> None:
    join(page, site, email=unique_email("waiting"))
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/sandbox/pay/"))
    uuid = page.inner_text("#transaction-uuid")

    # The customer is back before the service has told us: the return's fetch fails once, and the
    # callback comes 1.5 s after the payment.
    site.control.fault("fetch_transaction", "status", status=500, times=1)
    site.control.next_callbacks("delay", delay_seconds=1.5)
    page.click("button.pay")

    page.wait_for_url(re.compile(r"/payments/return/"))
    expect(page.locator("#paycollect-waiting")).to_be_visible()
    expect(page.locator("#paycollect-waiting h1")).to_contain_text("Confirming your payment")
    screenshot(page, "waiting-page", docs=True)

    # The page polls the status endpoint and goes on by itself once the callback is verified.
    page.wait_for_url(re.compile(r"/payment/thanks/"), timeout=30_000)
    assert status_of(page) == "paid"
    expect(page.locator("#status-changes")).to_contain_text("pending → successful (callback)")
    delivered = site.control.wait_for_callbacks(transaction_uuid=uuid, count=1)
    assert delivered
    assert delivered[0]["status"] == "DELIVERED"


def test_kiosk_status_page_updates_without_reload_when_the_callback_arrives(
    page: Any, site: ClubSite
) -> None:
    join(page, site, email=unique_email("kiosk"), plan="junior", pay_using="kiosk")
    assert money(page.inner_text("#total")) == with_fees(Decimal("600.00"), KIOSK_FEE)
    page.click("#pay-button")

    page.wait_for_url(re.compile(r"/memberships/[0-9a-f-]+/$"))
    assert status_of(page) == "pending"
    expect(page.locator("#bill-reference")).to_have_text(re.compile(r"^\d{10}$"))
    screenshot(page, "demo-kiosk", docs=True)
    page.evaluate("window.__sameDocument = true")
    uuid = page.inner_text("#payment-history code")

    # The member pays at a kiosk; the service calls back a second later.
    site.control.next_callbacks("delay", delay_seconds=1)
    site.control.complete(uuid, "SUCCESSFUL")

    expect(page.locator("#membership-state")).to_have_attribute("data-status", "paid", timeout=20_000)
    assert page.evaluate("window.__sameDocument") is True  # updated in place, not reloaded
    expect(page.locator("#status-changes")).to_contain_text("pending → successful (callback)")
    expect(page.locator("#simulate-kiosk")).to_have_count(0)


def test_status_page_refreshes_itself_without_javascript(page_without_script: Any, site: ClubSite) -> None:
    page = page_without_script
    join(page, site, email=unique_email("noscript"), pay_using="kiosk")
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/memberships/[0-9a-f-]+/$"))
    assert status_of(page) == "pending"
    uuid = page.inner_text("#payment-history code")

    site.control.complete(uuid, "SUCCESSFUL")
    # <noscript><meta http-equiv="refresh"> reloads the page until the status is final.
    expect(page.locator("#membership-state")).to_have_attribute("data-status", "paid", timeout=20_000)


def test_the_pages_need_no_external_resource(site: ClubSite) -> None:
    """The demo works offline: no CSS framework, font or script from elsewhere."""
    for path in ("/", "/join/"):
        html = requests.get(f"{site.url}{path}", timeout=10).text
        assert not re.search(r"""(src|href)=["']https?://(?!127\.0\.0\.1)""", html), path


def test_the_join_form_checks_the_details_first_and_a_refused_pay_lets_the_member_correct_them(
    page: Any, site: ClubSite
) -> None:
    email = unique_email("details")
    page.goto(f"{site.url}/join/")
    page.fill("#id_name", "Mona")
    page.fill("#id_email", email)
    page.fill("#id_phone_number", "+2010012345678901")
    page.click("#join-form button[type=submit]")

    # Refused on the form, in the customer's words, with the payment app's rules: nothing was created.
    assert page.url == f"{site.url}/join/"
    form = page.locator("#join-form")
    expect(form).to_contain_text("Enter a first and a last name, separated by a space.")
    expect(form).to_contain_text("This number is too long: at most 15 digits after the +")
    expect(page.locator("#join-form")).not_to_contain_text("billing_data")
    screenshot(page, "demo-join-errors", docs=True)
    page.goto(f"{site.url}/")
    expect(page.locator("body")).not_to_contain_text(email)

    # A number the app's rules accept (7 digits after +) but the service refuses (it wants 10 to 15).
    join(page, site, email=email, phone="+2010012")
    membership_url = page.url
    page.click("#pay-button")
    expect(page.locator("#details-form")).to_be_visible()
    expect(page.locator("ul.messages")).to_contain_text("did not accept these details")
    expect(page.locator("#details-form")).to_contain_text("country code")
    expect(page.locator("#details-form")).not_to_contain_text("billing_data")
    assert page.input_value("#id_phone_number") == "+2010012"
    screenshot(page, "demo-details-correction")

    page.fill("#id_phone_number", "+20 100 123 4567")
    page.click("#details-form button[type=submit]")
    page.wait_for_url(membership_url)
    expect(page.locator("#payer")).to_contain_text("+201001234567")
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/sandbox/pay/"))
    page.click("button.pay")
    page.wait_for_url(re.compile(r"/payment/thanks/"))
    assert status_of(page) == "paid"

    # One membership for this customer, whatever the tries: none left behind unpaid.
    page.goto(f"{site.url}/")
    expect(page.locator("table tr", has_text="Mona Ali")).to_have_count(1)


def test_cancelling_a_recurring_series_in_the_admin_asks_for_confirmation(page: Any, site: ClubSite) -> None:
    join(page, site, email=unique_email("monthly"), billing="monthly")
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/sandbox/pay/"))
    uuid = page.inner_text("#transaction-uuid")
    page.click("button.pay")
    page.wait_for_url(re.compile(r"/payment/thanks/"))
    login(page, site, next_path="/admin/paycollect/recurringseries/")

    page.check(f"tr:has-text('{uuid}') input.action-select")
    page.select_option("select[name=action]", "cancel")
    page.click("button[name=index]")

    # Like Django's delete confirmation: the series, what stops, what stays; nothing sent yet.
    expect(page.locator("h1")).to_have_text("Cancel recurring series")
    expect(page.locator("#series-to-cancel")).to_contain_text(uuid)
    expect(page.locator("#series-to-cancel")).to_contain_text("every 30 days or more")
    expect(page.locator("#what-stops")).to_contain_text("Stops: every future renewal charge")
    expect(page.locator("#what-stops")).to_contain_text("Stays: the charges already made")
    screenshot(page, "admin-cancel-confirmation", docs=True)
    assert site.control.transaction(uuid)["transaction"]["recurring"]["active"] is True

    # "No, take me back" changes nothing; confirming cancels at the service.
    page.click("a.cancel-link")
    page.wait_for_url(re.compile(r"/admin/paycollect/recurringseries/"))
    assert site.control.transaction(uuid)["transaction"]["recurring"]["active"] is True
    page.check(f"tr:has-text('{uuid}') input.action-select")
    page.select_option("select[name=action]", "cancel")
    page.click("button[name=index]")
    page.click("#confirm-cancel")
    page.wait_for_url(re.compile(r"/admin/paycollect/recurringseries/(\?.*)?$"))
    expect(page.locator("ul.messagelist")).to_contain_text("Cancel recurring: 1 succeeded")
    assert site.control.transaction(uuid)["transaction"]["recurring"]["active"] is False


def test_the_join_form_shows_each_refusal_of_the_service_once_on_its_field(page: Any, site: ClubSite) -> None:
    page.goto(f"{site.url}/join/")
    page.fill("#id_name", "Mona Ali")
    page.fill("#id_email", unique_email("refusals"))
    page.fill("#id_phone_number", "+201001234567")
    page.fill("#id_promocode", "EXPIRED20")
    page.click("#join-form button[type=submit]")
    # One message, the app's: not its own then the service's "Promocode expired on ..." after it.
    promocode_errors = page.locator("#id_promocode_error li")
    expect(promocode_errors).to_have_text(["This promocode is unknown or no longer valid."])
    expect(page.locator("#join-form")).not_to_contain_text("expired on")

    # The promocode is checked for the payer's phone, which the service refuses: the phone's field says so.
    page.fill("#id_phone_number", "+2010012")
    page.fill("#id_promocode", "SAVE10")
    page.click("#join-form button[type=submit]")
    phone_errors = page.locator("#id_phone_number_error li")
    expect(phone_errors).to_have_text(
        [
            "The payment service did not accept this mobile number: check it, with + and the country code "
            "(for example +201001234567)."
        ]
    )
    expect(page.locator("#id_promocode_error")).to_have_count(0)
    expect(page.locator("#join-form .errorlist li")).to_have_count(1)


@pytest.fixture
def own_site(browser_available: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClubSite]:
    """A club site of its own: moving its sandbox's clock renews every monthly membership it holds."""
    workdir = Path(tmp_path_factory.mktemp("clubsite-clock"))
    started = start_club_site(workdir, log_path=workdir / "server.log")
    yield started
    started.stop()


def test_the_demo_moves_the_sandbox_clock_and_the_renewal_shows(page: Any, own_site: ClubSite) -> None:
    site = own_site
    join(page, site, email=unique_email("clock"), billing="monthly")
    expect(page.locator("#move-clock")).to_have_count(0)  # not before it is paid
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/sandbox/pay/"))
    page.click("button.pay")
    page.wait_for_url(re.compile(r"/payment/thanks/"))
    page.click("#membership-link")
    assert status_of(page) == "paid"
    expect(page.locator("#renewals")).to_have_count(0)

    # The service charges a renewal by itself when it falls due: the sandbox, when its clock passes the date.
    expect(page.locator("#sandbox-clock")).to_contain_text("every 30 days")
    page.click("#move-clock")
    expect(page.locator("ul.messages")).to_contain_text("the service charged 1 renewal of this membership")
    # Its callback reaches the site, which renews the membership; the page shows it without a reload.
    expect(page.locator("#renewals")).to_have_text("Renewed once.", timeout=30_000)
    expect(page.locator("#renewing")).to_have_count(0)
    screenshot(page, "demo-renewal")

    page.click("#move-clock")
    expect(page.locator("#renewals")).to_have_text("Renewed 2 times.", timeout=30_000)
