"""An Arabic admin laid out for right to left, in its markup (tests/browser/test_arabic_admin_layout.py
measures it in Chromium): the dashboard's charts mirrored, their row labels and the value axis's labels on the
other side of the bars from where a left-to-right chart draws them, and every code block (JSON, a callback's
body, a traceback) ``<pre dir="ltr">``, aligned to its left by the app's admin stylesheet."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib import admin
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation

import django_paycollect
from django_paycollect import reporting
from django_paycollect.admin import charts
from django_paycollect.admin.common import code_block, pretty_json
from django_paycollect.models import ApiCall, ReceivedCallback, Transaction

ROWS = [charts.Row("ناجحة", Decimal(10), "10"), charts.Row("قيد الانتظار", Decimal(4), "4")]


def day(n: int, collected: str, refunded: str = "0") -> reporting.Day:
    return reporting.Day(
        dt.date(2026, 3, n),
        reporting.Tally(1, Decimal(collected)),
        reporting.Tally(1 if Decimal(refunded) else 0, Decimal(refunded)),
        reporting.Tally(),
    )


DAYS = [day(1, "100"), day(2, "200", "50"), day(3, "0")]


# --- the charts -------------------------------------------------------------------------------------------


def test_a_bars_chart_is_mirrored_right_to_left_its_labels_right_of_its_bars():
    with translation.override("en"):
        ltr = charts.bars_chart("c", "t", "d", "n", ROWS)
    with translation.override("ar"):
        rtl = charts.bars_chart("c", "t", "d", "n", ROWS)
    assert (ltr.direction, rtl.direction) == ("ltr", "rtl")
    # Left to right: each row's label (anchored at its end) left of the axis, its value after the bar's end.
    for bar, label, value in zip(ltr.bars, ltr.labels, ltr.values, strict=True):
        assert label.x < bar.x == ltr.axis_x
        assert value.x > bar.x + bar.width
    # Right to left: the same, mirrored. A text's end is its left edge there, so a label anchored at its end
    # right of the axis reads from the right edge towards the bars, never over them.
    for bar, label, value in zip(rtl.bars, rtl.labels, rtl.values, strict=True):
        assert label.x > bar.x + bar.width == rtl.axis_x
        assert value.x < bar.x
    assert [bar.width for bar in rtl.bars] == [bar.width for bar in ltr.bars]
    assert [label.x for label in rtl.labels] == [ltr.width - label.x for label in ltr.labels]


def test_the_daily_chart_is_mirrored_right_to_left_its_value_axis_on_the_right():
    with translation.override("en"):
        ltr = charts.daily_chart(DAYS, "EGP")
    with translation.override("ar"):
        rtl = charts.daily_chart(DAYS, "EGP")
    assert ltr.axis_x == ltr.plot_x1 < ltr.plot_x2
    assert ltr.tick_label_x < ltr.plot_x1  # anchored at its end, left of the plot
    assert rtl.axis_x == rtl.plot_x2 > rtl.plot_x1
    assert rtl.tick_label_x > rtl.plot_x2  # anchored at its end (its left edge), right of the plot
    assert rtl.y_axis_label_x > rtl.plot_x2
    for bar in rtl.bars:
        assert rtl.plot_x1 <= bar.x
        assert bar.x + bar.width <= rtl.plot_x2
    # The first day on the right, as an Arabic reader starts; each day's bar under its label.
    collected = [bar for bar in rtl.bars if bar.kind == "collected"]  # the 1st and the 2nd day's
    assert collected[0].x > collected[1].x
    assert [label.x for label in rtl.x_labels] == sorted((label.x for label in rtl.x_labels), reverse=True)
    assert abs(collected[0].x + collected[0].width / 2 - rtl.x_labels[0].x) <= Decimal("0.2")


@pytest.mark.parametrize("template", ["daily", "bars"])
def test_the_svg_carries_the_direction_its_layout_was_made_for(template):
    with translation.override("ar"):
        chart = (
            charts.daily_chart(DAYS, "EGP")
            if template == "daily"
            else charts.bars_chart("c", "t", "d", "n", ROWS)
        )
        svg = render_to_string(f"admin/paycollect/charts/{template}.svg", {"chart": chart})
    assert 'direction="rtl"' in svg
    assert 'preserveAspectRatio="xMaxYMin meet"' in svg
    assert f'x1="{chart.axis_x}" x2="{chart.axis_x}"' in svg
    with translation.override("en"):
        chart = (
            charts.daily_chart(DAYS, "EGP")
            if template == "daily"
            else charts.bars_chart("c", "t", "d", "n", ROWS)
        )
        svg = render_to_string(f"admin/paycollect/charts/{template}.svg", {"chart": chart})
    assert 'direction="ltr"' in svg
    assert f'x1="{chart.left}" x2="{chart.left}"' in svg  # as before: the value axis on the left


# --- code blocks ------------------------------------------------------------------------------------------

PRE = re.compile(r"<pre\b[^>]*>")


def test_code_blocks_are_left_to_right():
    assert str(code_block("Traceback (most recent call last):")) == (
        '<pre dir="ltr">Traceback (most recent call last):</pre>'
    )
    assert str(pretty_json({"amount": "150.00"})).startswith('<pre dir="ltr">{\n  &quot;amount&quot;')
    assert str(pretty_json({})) == "—"
    css = (Path(django_paycollect.__file__).parent / "static" / "paycollect" / "admin.css").read_text()
    assert 'html[dir="rtl"] pre[dir="ltr"] {\n  text-align: left;' in css


@pytest.mark.django_db
def test_every_code_block_of_the_arabic_admin_s_change_pages_is_left_to_right(admin_client, settings):
    settings.LANGUAGE_CODE = "ar"
    paid = Transaction.objects.create(
        uuid="3f1c2a9e-8b7d-4c6e-9f00-0123456789ab",
        total_amount=Decimal("150.00"),
        raw={"status": "SUCCESSFUL", "customer_name": "منى علي"},
        custom_fields=[{"field_label": "العضوية", "field_value": "m-1"}],
    )
    ReceivedCallback.objects.create(
        state=ReceivedCallback.FAILED,
        headers={"Content-Type": "application/json"},
        body='{"transaction_uuid": "3f1c2a9e-8b7d-4c6e-9f00-0123456789ab"}',
        traceback='Traceback (most recent call last):\n  File "x.py", line 1\nValueError: "بيانات"',
    )
    ReceivedCallback.objects.create(state=ReceivedCallback.INVALID, body="not json {")
    ApiCall.objects.create(
        operation="pay", method="POST", path="/api/pay", request_body={"amount": "150.00"}, data={"a": 1}
    )
    seen = 0
    for model in (Transaction, ReceivedCallback, ApiCall):
        assert admin.site.is_registered(model)
        for obj in model.objects.all():
            page = admin_client.get(
                reverse(f"admin:paycollect_{model._meta.model_name}_change", args=[obj.pk])
            ).content.decode()
            assert 'dir="rtl"' in page
            blocks = PRE.findall(page)
            assert blocks, (model, obj.pk)
            assert all(block == '<pre dir="ltr">' for block in blocks), blocks
            seen += len(blocks)
    assert paid.pk
    assert seen >= 9
