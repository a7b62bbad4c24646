"""The club site with ``LANGUAGE_CODE = "ar"`` in Chromium: every page a customer sees on the demo's flows
reads in Arabic, right to left, with amounts, phone numbers and ids kept readable.

The browser asks for French, which the site does not offer, so the site's LANGUAGE_CODE decides, for the
site, the payment app's pages and the mounted sandbox alike (its answers to the app too: the service's
refusals reach the customer in Arabic). On every page the rendered text is searched for the English of the
four catalogues (the app's, the sandbox's, the example project's and its JavaScript's) and for any run of
English words.
Screenshots of the Arabic pages go to the documentation (``*-ar.png``).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest

from tests.catalogues import msgids, pieces_of

from .flows import join, login, status_of, unique_email
from .support import MEMBER_PASSWORD, MEMBER_USERNAME, ROOT, ClubSite, needs_browser, screenshot

try:
    from playwright.sync_api import expect
except ImportError:  # the tests are skipped (needs_browser), or fail where the browser is required
    expect = None  # type: ignore[assignment]

pytestmark = [pytest.mark.browser, needs_browser]

LOCALES = [
    ROOT / "django_paycollect" / "locale",
    ROOT / "django_paycollect" / "sandbox" / "locale",
    ROOT / "example_project" / "clubsite" / "members" / "locale",
]
#: Their catalogues, as .po files: an entry left untranslated (so missing from the .mo) is looked for too.
CATALOGUES = [po for locale in LOCALES for po in sorted(locale.glob("ar/LC_MESSAGES/*.po"))]
#: Three English words in a row (letters, apostrophes and hyphens; digits, codes and e-mail addresses are
#: not words): an English sentence, or a piece of one, whatever its origin.
ENGLISH_RUN = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*(?:[ \t]+[A-Za-z][A-Za-z'\u2019-]*){2,}")

NAME = "منى علي"
PHONE = "+201001234567"


@cache
def english_fragments() -> frozenset[str]:
    """The English of every catalogue entry, cut at its placeholders and tags: the pieces of two words or
    more that a page shows as they are when a string is not translated."""
    assert len(CATALOGUES) == 4, CATALOGUES
    return frozenset(
        piece
        for path in CATALOGUES
        for msgid in msgids(path)
        for piece in pieces_of(msgid)
        if " " in piece and len(piece) >= 8
    )


def assert_reads_in_arabic(page: Any) -> None:
    """The page is Arabic and right to left, and no English of a catalogue nor any English sentence shows."""
    assert page.get_attribute("html", "lang") == "ar", page.url
    assert page.get_attribute("html", "dir") == "rtl", page.url
    text = f"{page.title()}\n{page.inner_text('body')}"
    untranslated = sorted(fragment for fragment in english_fragments() if fragment in text)
    english = ENGLISH_RUN.findall(text)
    assert not untranslated, f"{page.url}: untranslated {untranslated}\n{text}"
    assert not english, f"{page.url}: English {english}\n{text}"


def assert_isolated_left_to_right(page: Any, selector: str) -> None:
    """The element keeps its own left-to-right order inside the right-to-left page (a <bdi dir="ltr">)."""
    direction = page.eval_on_selector(selector, "element => getComputedStyle(element).direction")
    bidi = page.eval_on_selector(selector, "element => getComputedStyle(element).unicodeBidi")
    assert (direction, bidi) == ("ltr", "isolate"), selector


def test_join_errors_the_service_s_refusal_the_hosted_page_and_the_waiting_page_in_arabic(
    page_fr: Any, site_ar: ClubSite
) -> None:
    page, site = page_fr, site_ar
    email = unique_email("arabic")
    page.goto(f"{site.url}/")
    assert_reads_in_arabic(page)

    # The join form's field errors, from the payment app's rules, in Arabic.
    page.goto(f"{site.url}/join/")
    assert_reads_in_arabic(page)
    page.fill("#id_name", "منى")
    page.fill("#id_email", email)
    page.fill("#id_phone_number", "+2010012345678901")
    page.click("#join-form button[type=submit]")
    form = page.locator("#join-form")
    expect(form).to_contain_text("أدخل الاسم الأول واسم العائلة، بينهما مسافة.")
    expect(form).to_contain_text("هذا الرقم أطول من اللازم: 15 رقمًا على الأكثر بعد علامة +")
    assert page.get_attribute("#id_phone_number", "dir") == "ltr"  # the + stays before the country code
    assert page.get_attribute("#id_name", "dir") == "auto"
    assert_reads_in_arabic(page)
    screenshot(page, "demo-join-errors-ar", docs=True)

    # A number the app's rules accept but the service refuses: its refusal reaches the member in Arabic.
    join(page, site, email=email, name=NAME, phone="+2010012")
    assert_reads_in_arabic(page)
    page.click("#pay-button")
    expect(page.locator("#details-form")).to_contain_text("رمز الدولة")
    assert_reads_in_arabic(page)
    page.fill("#id_phone_number", PHONE)
    page.click("#details-form button[type=submit]")
    page.wait_for_url(re.compile(r"/memberships/[0-9a-f-]+/$"))
    assert_reads_in_arabic(page)

    # The hosted payment page, right to left: labels on the right, amounts on the left, each amount whole.
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/sandbox/pay/"))
    assert_reads_in_arabic(page)
    label = page.locator("#summary tr.total td").first.bounding_box()
    amount = page.locator("#total").bounding_box()
    assert label["x"] > amount["x"] + amount["width"] - 1
    assert_isolated_left_to_right(page, "#total bdi")
    expect(page.locator("#total")).to_have_text(re.compile(r"^\d+\.\d\d EGP$"))
    screenshot(page, "sandbox-payment-page-ar", docs=True)

    # Back before the service has confirmed: the waiting page, in Arabic.
    site.control.fault("fetch_transaction", "status", status=500, times=1)
    site.control.next_callbacks("delay", delay_seconds=1.5)
    page.click("button.pay")
    page.wait_for_url(re.compile(r"/payments/return/"))
    expect(page.locator("#paycollect-waiting h1")).to_have_text("جارٍ تأكيد دفعتك…")
    assert_reads_in_arabic(page)
    screenshot(page, "waiting-page-ar", docs=True)

    page.wait_for_url(re.compile(r"/payment/thanks/"), timeout=30_000)
    assert status_of(page) == "paid"
    expect(page.locator("#paid-message")).to_contain_text(f"مرحبًا بك في النادي، {NAME}!")
    assert_reads_in_arabic(page)
    page.click("#membership-link")
    expect(page.locator("#status-changes")).to_contain_text("قيد الانتظار ← ناجحة (إشعار)")
    assert_isolated_left_to_right(page, "#payer bdi[dir=ltr]")
    assert_reads_in_arabic(page)
    screenshot(page, "demo-status-ar", docs=True)


def test_a_declined_card_a_kiosk_bill_and_an_invoice_link_in_arabic(page_fr: Any, site_ar: ClubSite) -> None:
    page, site = page_fr, site_ar

    # A declined card: the failure page.
    join(page, site, email=unique_email("arabic-declined"), name=NAME, billing="monthly")
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/sandbox/pay/"))
    expect(page.locator("#summary")).to_contain_text("كل 30 يومًا أو أكثر")
    assert_reads_in_arabic(page)
    page.click("button.decline")
    page.wait_for_url(re.compile(r"/payment/failed/"))
    expect(page.locator("#result-title")).to_have_text("لم تكتمل دفعتك")
    assert_reads_in_arabic(page)

    # Cash at a kiosk: the bill reference, and the service's message, in Arabic.
    join(page, site, email=unique_email("arabic-kiosk"), name=NAME, plan="junior", pay_using="kiosk")
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/memberships/[0-9a-f-]+/$"))
    expect(page.locator("#bill-reference")).to_have_text(re.compile(r"^\d{10}$"))
    expect(page.locator("#membership-status")).to_contain_text("الرقم المرجعي للفاتورة")
    assert_reads_in_arabic(page)
    page.goto(f"{site.url}/")
    assert_reads_in_arabic(page)

    # An invoice's payment link, as the customer opens it: the sandbox's direct order page.
    login(page, site, next_path="/invoices/new/")
    page.fill("#id_name", "اشتراك المسبح، فصل الربيع")
    page.fill("#id_amount", "500.00")
    page.fill("#id_customer_name", "عمر حسن")
    page.fill("#id_customer_email", unique_email("arabic-invoice"))
    page.fill("#id_customer_mobile", "+201112223334")
    page.fill("#id_field_0_label", "مقاس القميص")
    page.select_option("#id_field_0_type", "DROPDOWNLIST")
    page.fill("#id_field_0_choices", "S, M, L")
    page.click("#invoice-form button[type=submit]")
    page.wait_for_url(re.compile(r"/invoices/\d+/$"))
    link = page.get_attribute("#payment-link", "href")
    assert link
    page.context.clear_cookies()  # the customer, not the staff member
    page.goto(link)
    assert_reads_in_arabic(page)
    page.get_by_label("مقاس القميص").select_option("M")
    page.check("input[name=pay_using][value=card]")
    page.click("button.pay")
    page.wait_for_url(re.compile(r"/payment/thanks/"), timeout=30_000)
    assert_reads_in_arabic(page)


def test_the_language_switch_changes_the_pages_and_their_direction(page: Any, site: ClubSite) -> None:
    page.goto(f"{site.url}/join/")
    assert page.get_attribute("html", "dir") == "ltr"
    expect(page.locator("h1")).to_have_text("Become a member")

    page.click("#language-switch button[value=ar]")
    page.wait_for_url(f"{site.url}/join/")
    expect(page.locator("h1")).to_have_text("انضم إلى النادي")
    assert page.get_attribute("html", "dir") == "rtl"
    expect(page.locator("#language-switch button[value=ar]")).to_have_attribute("aria-current", "true")

    page.click("#language-switch button[value=en]")
    page.wait_for_url(f"{site.url}/join/")
    expect(page.locator("h1")).to_have_text("Become a member")
    assert page.get_attribute("html", "dir") == "ltr"


def test_the_single_page_checkout_and_its_sign_in_page_in_arabic(page_fr: Any, site_ar: ClubSite) -> None:
    page, site = page_fr, site_ar
    page.goto(f"{site.url}/checkout/")
    page.wait_for_url(re.compile(r"/accounts/login/"))
    expect(page.locator("h1")).to_have_text("تسجيل الدخول")
    assert_reads_in_arabic(page)
    # A wrong password: refused in Arabic.
    page.fill("#id_username", MEMBER_USERNAME)
    page.fill("#id_password", "not-the-password")
    page.click("#login-form button[type=submit]")
    expect(page.locator("#login-form .errorlist")).to_be_visible()
    assert_reads_in_arabic(page)
    page.fill("#id_password", MEMBER_PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{site.url}/checkout/")
    expect(page.locator("#checkout")).to_have_attribute("data-ready", "true")

    # The price, the fees and the total from the API, their words from the JavaScript's catalogue, each
    # amount whole and left to right.
    page.check("input[name=plan][value=family]")
    page.check("input[name=billing][value=yearly]")
    expect(page.locator("[data-quote=total]")).to_have_text(re.compile(r"^الإجمالي: \d+\.\d\d EGP$"))
    expect(page.locator("[data-quote=price]")).to_have_text("السعر: 2500.00 EGP")
    assert_isolated_left_to_right(page, "[data-quote=total] bdi")
    assert_reads_in_arabic(page)

    # The API's field error for the phone number, by its field, in Arabic.
    page.fill("#phone_number", "0100 123 4567")
    page.click("#start")
    errors = page.locator('[data-errors-for="billing_data.phone_number"]')
    expect(errors).to_contain_text("ابدأ بعلامة + ثم رمز الدولة")
    assert page.get_attribute("#phone_number", "dir") == "ltr"
    assert_reads_in_arabic(page)
    screenshot(page, "api-checkout-field-error-ar", docs=True)

    # Started: waiting for the payment, the service's hosted page in Arabic, then paid.
    page.fill("#phone_number", PHONE)
    page.click("#start")
    state = page.locator("#payment-state")
    expect(state).to_have_attribute("data-state", "open")
    expect(state).to_have_text("في انتظار دفعتك")
    assert_reads_in_arabic(page)
    with page.expect_popup() as opened:
        page.click("#open-payment")
    hosted = opened.value
    hosted.wait_for_url(re.compile(r"/sandbox/pay/"))
    assert_reads_in_arabic(hosted)
    hosted.click("button.pay")
    expect(state).to_have_attribute("data-state", "paid", timeout=30_000)
    hosted.close()
    expect(state).to_have_text("مدفوعة")
    expect(page.locator("#paid")).to_have_text("شكرًا لك: عضويتك مدفوعة.")
    assert_reads_in_arabic(page)
    screenshot(page, "api-checkout-paid-ar", docs=True)

    # Cash at a kiosk: refused for a monthly plan (renewals are charged to a card), in Arabic; then the
    # bill reference of a yearly one, said in Arabic, the number kept whole.
    page.check("input[name=plan][value=junior]")
    page.check("input[name=billing][value=monthly]")
    page.check("input[name=pay_using][value=kiosk]")
    page.click("#start")
    expect(page.locator("#problem")).to_contain_text("اختر card")
    assert_reads_in_arabic(page)
    page.check("input[name=billing][value=yearly]")
    page.click("#start")
    expect(page.locator("#bill-reference bdi")).to_have_text(re.compile(r"^\d{10}$"))
    expect(page.locator("#bill-reference")).to_contain_text("الرقم المرجعي للفاتورة")
    assert_isolated_left_to_right(page, "#bill-reference bdi")
    assert_reads_in_arabic(page)


def test_the_unconfirmed_waiting_page_and_the_sandbox_s_unknown_links_in_arabic(
    page_fr: Any, site_ar: ClubSite
) -> None:
    page, site = page_fr, site_ar
    unknown = "0b0b0b0b-1111-4222-8333-444455556666"
    # Back from the service, and still not confirmed after every check: never "failed", in Arabic.
    page.goto(f"{site.url}/payments/return/?transaction_uuid={unknown}&wait=100")
    expect(page.locator("#paycollect-unconfirmed h1")).to_have_text("لم نتمكن من تأكيد هذه الدفعة بعد")
    assert_reads_in_arabic(page)
    # A return URL cut short, and the site's failure page without a failed payment: the same, in Arabic.
    page.goto(f"{site.url}/payments/return/")
    expect(page.locator("#paycollect-unconfirmed")).to_contain_text("يُرجى عدم الدفع مرة أخرى")
    assert_reads_in_arabic(page)
    page.goto(f"{site.url}/payment/failed/?transaction_uuid={unknown}")
    expect(page.locator("#result-title")).to_have_text("لم نتمكن من تأكيد هذه الدفعة بعد")
    assert_reads_in_arabic(page)
    # A payment link or an order link that the service does not know.
    page.goto(f"{site.url}/sandbox/pay/{unknown}/")
    assert_reads_in_arabic(page)
    page.goto(f"{site.url}/sandbox/orders/no-such-order/")
    assert_reads_in_arabic(page)


def test_the_admin_in_arabic(page_fr: Any, site_ar: ClubSite) -> None:
    # A payment started, then the merchant's view of it: the app's admin, right to left. (The app's every
    # admin page is checked for English in tests/app/test_admin_arabic.py; Django's own admin may lack a few
    # Arabic words of its newest versions.)
    page, site = page_fr, site_ar
    join(page, site, email=unique_email("arabic-admin"), name=NAME)
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/sandbox/pay/"))
    login(page, site, next_path="/admin/paycollect/transaction/")
    assert page.get_attribute("html", "dir") == "rtl"
    expect(page.locator("#result_list")).to_contain_text("قيد الانتظار")
    expect(page.locator("#result_list thead")).to_contain_text("المعرّف الفريد (uuid) للمعاملة")
    # A reference or an e-mail address reads whole in its right-to-left cell (paycollect/admin.css).
    bidi = page.eval_on_selector(
        "#result_list td.field-customer_email", "cell => getComputedStyle(cell).unicodeBidi"
    )
    assert bidi == "plaintext"
    screenshot(page, "admin-transactions-ar", docs=True)


def test_the_service_s_english_refusals_and_kiosk_instruction_reach_an_arabic_visitor_in_arabic(
    page: Any, site: ClubSite
) -> None:
    """The site's LANGUAGE_CODE is English, and so are the service's answers (the mounted sandbox answers the
    app in English, as the service does); the visitor chose Arabic. An expired promocode, a phone the service
    refuses and the kiosk instruction must reach the visitor in Arabic, each problem once, on its field."""
    page.goto(f"{site.url}/join/")
    page.click("#language-switch button[value=ar]")
    page.wait_for_url(f"{site.url}/join/")
    assert_reads_in_arabic(page)

    # An expired promocode: the service's "Promocode expired on ..." becomes the app's words, once.
    page.fill("#id_name", NAME)
    page.fill("#id_email", unique_email("arabic-english-service"))
    page.fill("#id_phone_number", PHONE)
    page.fill("#id_promocode", "EXPIRED20")
    page.click("#join-form button[type=submit]")
    promocode_errors = page.locator("#id_promocode_error li")
    expect(promocode_errors).to_have_text(["هذا الرمز الترويجي غير معروف أو لم يعد صالحًا."])
    assert_reads_in_arabic(page)

    # The phone the promocode is checked against, refused by the service: on the phone's field, not the
    # promocode's, in the app's words.
    page.fill("#id_phone_number", "+2010012")
    page.fill("#id_promocode", "SAVE10")
    page.click("#join-form button[type=submit]")
    phone_errors = page.locator("#id_phone_number_error li")
    expect(phone_errors).to_have_count(1)
    expect(phone_errors).to_contain_text("لم تقبل خدمة الدفع رقم الهاتف المحمول هذا")
    expect(page.locator("#id_promocode_error")).to_have_count(0)
    assert_reads_in_arabic(page)

    # The same number without a promocode: refused by the service when paying, told on the details page.
    join(page, site, email=unique_email("arabic-english-service"), name=NAME, phone="+2010012")
    page.click("#pay-button")
    phone_errors = page.locator("#id_phone_number_error li")
    expect(phone_errors).to_have_count(1)
    expect(phone_errors).to_contain_text("رمز الدولة")
    assert_reads_in_arabic(page)
    screenshot(page, "demo-details-refused-by-the-service-ar")

    # Cash at a kiosk: the instruction is the app's, rebuilt from the bill's fields in Arabic; the service's
    # English sentence is not shown to the customer.
    join(page, site, email=unique_email("arabic-english-kiosk"), name=NAME, plan="junior", pay_using="kiosk")
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/memberships/[0-9a-f-]+/$"))
    expect(page.locator("#bill-reference")).to_have_text(re.compile(r"^\d{10}$"))
    expect(page.locator("#membership-status")).to_contain_text("الرقم المرجعي للفاتورة")
    assert_reads_in_arabic(page)
