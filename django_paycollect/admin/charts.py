"""Charts drawn on the server as inline SVG (docs/admin.md says what they show, and how right to left).

This module computes the geometry (exact Decimals, rounded to a tenth of a pixel); the templates under
``admin/paycollect/charts/`` draw it, in the admin's CSS colours (dark mode and print follow). Right to left
the geometry is computed left to right and then mirrored (:meth:`_Frame.mirror`); the ``<svg>`` carries the
direction it was laid out for, so each text's anchor (``start``, ``end``) keeps it on its side of the bars.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_CEILING, Decimal

from django.utils.formats import date_format, number_format
from django.utils.translation import get_language_bidi
from django.utils.translation import gettext as _

from ..amounts import signed_for_language
from ..reporting import Day

_TENTH = Decimal("0.1")
#: Steps between grid lines: 1, 2 or 5 times a power of ten.
_NICE = (Decimal(1), Decimal(2), Decimal(5), Decimal(10))


def _px(value: Decimal) -> Decimal:
    return value.quantize(_TENTH)


def nice_step(span: Decimal, lines: int = 4) -> Decimal:
    """The grid step (1, 2 or 5 times a power of ten) that divides ``span`` into at most ``lines`` parts."""
    if span <= 0:
        return Decimal(1)
    rough = span / lines
    power = Decimal(10) ** rough.adjusted()
    return next(nice * power for nice in _NICE if nice * power >= rough)  # 10 x power is always enough


def _steps_to(value: Decimal, step: Decimal) -> int:
    return int((value / step).to_integral_value(rounding=ROUND_CEILING))


def number_text(
    value: Decimal | int, places: int | None = None, *, plus: bool = False, grouping: bool = False
) -> str:
    """``value`` written the way the active language writes numbers: Django's number format (the language's,
    or the project's ``FORMAT_MODULE_PATH``; thousands grouped as ``USE_THOUSAND_SEPARATOR`` says, or always
    with ``grouping``), with ``places`` decimals (as it comes: None), ``+`` before a positive one with
    ``plus``, and the sign placed as that language places it. The dashboard's charts and figures write every
    number this way."""
    text = number_format(value, decimal_pos=places, use_l10n=True, force_grouping=grouping)
    if plus and value > 0:
        text = f"+{text}"
    return signed_for_language(text)


def _amount_text(value: Decimal, places: int = 2) -> str:
    # Written as the app writes amounts in every language (amounts.amount_text), never localized: a chart's
    # 1.280,49 (Arabic, German) would read as another number beside the page's 1280.49.
    return signed_for_language(format(value.quantize(Decimal(1).scaleb(-places)), "f"))


@dataclass(frozen=True)
class Tick:
    y: Decimal
    label: str


@dataclass(frozen=True)
class Bar:
    x: Decimal
    y: Decimal
    width: Decimal
    height: Decimal
    kind: str
    #: The bar's tooltip, e.g. "21 Nov: collected 120.00 EGP (3)".
    title: str


@dataclass(frozen=True)
class Label:
    x: Decimal
    y: Decimal
    text: str


class _Frame:
    """Where a chart's plot area and axis label are, from its size and margins (given left to right: the
    value axis on the left) and its direction: right to left, every x is mirrored."""

    width: int
    height: int
    left: int
    right: int
    bottom: int
    rtl: bool
    bars: list[Bar]

    def _x(self, x: int | Decimal) -> Decimal:
        """An x of the left-to-right layout, where this chart draws it."""
        return Decimal(self.width) - x if self.rtl else Decimal(x)

    @property
    def direction(self) -> str:
        return "rtl" if self.rtl else "ltr"

    @property
    def aspect(self) -> str:
        """The ``preserveAspectRatio``: the chart against its start side, as the page's text is."""
        return "xMaxYMin meet" if self.rtl else "xMinYMin meet"

    @property
    def plot_right(self) -> int:
        return self.width - self.right

    @property
    def plot_bottom(self) -> int:
        return self.height - self.bottom

    @property
    def axis_x(self) -> Decimal:
        """The value axis (the bars' base in a bars chart)."""
        return self._x(self.left)

    @property
    def plot_x1(self) -> Decimal:
        return min(self._x(self.left), self._x(self.plot_right))

    @property
    def plot_x2(self) -> Decimal:
        return max(self._x(self.left), self._x(self.plot_right))

    @property
    def axis_label_x(self) -> Decimal:
        return self._x((self.left + self.plot_right) // 2)

    @property
    def axis_label_y(self) -> int:
        return self.height - 8

    def mirror(self, *labels: list[Label]) -> None:
        """Right to left: the bars and ``labels``, laid out left to right, mirrored."""
        if not self.rtl:
            return
        width = Decimal(self.width)
        self.bars[:] = [replace(bar, x=width - bar.x - bar.width) for bar in self.bars]
        for group in labels:
            group[:] = [replace(label, x=width - label.x) for label in group]


@dataclass
class DailyChart(_Frame):
    """Collected (above the axis) and refunded (below it) per day."""

    dom_id: str
    title: str
    description: str
    y_axis_label: str
    x_axis_label: str
    width: int = 760
    height: int = 280
    left: int = 76
    right: int = 12
    top: int = 14
    bottom: int = 52
    zero_y: Decimal = Decimal(0)
    ticks: list[Tick] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    x_labels: list[Label] = field(default_factory=list)
    empty: bool = False
    empty_text: str = ""
    rtl: bool = False

    @property
    def tick_label_x(self) -> Decimal:
        """The value axis's labels, anchored at their end (the side of the axis) outside the plot."""
        return self._x(self.left - 6)

    @property
    def empty_x(self) -> Decimal:
        return self._x(self.left + 20)

    @property
    def y_axis_label_x(self) -> Decimal:
        return self._x(14)

    @property
    def y_axis_label_y(self) -> int:
        return (self.top + self.plot_bottom) // 2


def daily_chart(days: Sequence[Day], currency: str, dom_id: str = "paycollect-chart-daily") -> DailyChart:
    collected = sum((day.collected.amount for day in days), Decimal(0))
    refunded = sum((day.refunded.amount for day in days), Decimal(0))
    chart = DailyChart(
        dom_id=dom_id,
        title=_("Collected and refunded per day"),
        description=_(
            "Bars above the axis: amount collected each day; below it: amount refunded. "
            "From %(first)s to %(last)s: collected %(collected)s %(currency)s, refunded %(refunded)s "
            "%(currency)s. The table below gives every day's figures."
        )
        % {
            "first": date_format(days[0].date) if days else "",
            "last": date_format(days[-1].date) if days else "",
            "collected": _amount_text(collected),
            "refunded": _amount_text(refunded),
            "currency": currency,
        },
        y_axis_label=_("Amount (%(currency)s)") % {"currency": currency},
        x_axis_label=_("Day"),
        rtl=get_language_bidi(),
    )
    top_value = max((day.collected.amount for day in days), default=Decimal(0))
    bottom_value = max((day.refunded.amount for day in days), default=Decimal(0))
    chart.empty = not (top_value or bottom_value)
    chart.empty_text = _("Nothing collected or refunded in this period.")
    step = nice_step(top_value + bottom_value)
    up = _steps_to(top_value, step) if top_value else (0 if bottom_value else 1)
    down = _steps_to(bottom_value, step)
    unit = Decimal(chart.plot_bottom - chart.top) / (up + down)  # pixels per step
    chart.zero_y = _px(chart.top + unit * up)
    places = max(0, -step.normalize().as_tuple().exponent)  # type: ignore[operator]
    for n in range(-down, up + 1):
        chart.ticks.append(Tick(_px(chart.zero_y - unit * n), _amount_text(step * n, places)))

    count = max(len(days), 1)
    slot = Decimal(chart.plot_right - chart.left) / count
    width = _px(slot * Decimal("0.7"))
    scale = unit / step
    label_every = max(1, math.ceil(count / 8))
    for index, day in enumerate(days):
        x = chart.left + slot * index + (slot - width) / 2
        when = date_format(day.date, "j M")
        # Collected grows up from the axis, refunded down from it.
        for kind, figure, tooltip in (
            ("collected", day.collected, _("%(day)s: collected %(amount)s %(currency)s (%(count)s)")),
            ("refunded", day.refunded, _("%(day)s: refunded %(amount)s %(currency)s (%(count)s)")),
        ):
            if figure.amount:
                height = _px(figure.amount * scale)
                y = chart.zero_y - height if kind == "collected" else chart.zero_y
                amount = _amount_text(figure.amount)
                title = tooltip % {"day": when, "amount": amount, "currency": currency, "count": figure.count}
                chart.bars.append(Bar(_px(x), y, width, height, kind, title))
        if index % label_every == 0:
            label_y = Decimal(chart.plot_bottom + 18)
            chart.x_labels.append(Label(_px(chart.left + slot * index + slot / 2), label_y, when))
    chart.mirror(chart.x_labels)
    return chart


@dataclass(frozen=True)
class Row:
    label: str
    value: Decimal
    #: The value as shown at the end of its bar.
    text: str
    kind: str = ""


@dataclass
class BarsChart(_Frame):
    """Horizontal bars, one per row, each labelled and followed by its value."""

    dom_id: str
    title: str
    description: str
    value_axis_label: str
    rows: list[Row]
    width: int = 560
    #: Set from the number of rows by bars_chart().
    height: int = 0
    row_height: int = 26
    left: int = 200
    right: int = 90
    top: int = 8
    bottom: int = 30
    bars: list[Bar] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    values: list[Label] = field(default_factory=list)
    rtl: bool = False


def bars_chart(
    dom_id: str, title: str, description: str, value_axis_label: str, rows: list[Row]
) -> BarsChart:
    chart = BarsChart(dom_id, title, description, value_axis_label, rows, rtl=get_language_bidi())
    chart.height = chart.top + chart.row_height * len(rows) + chart.bottom
    largest = max((row.value for row in rows), default=Decimal(0))
    room = Decimal(chart.plot_right - chart.left)
    bar_height = Decimal(chart.row_height) * Decimal("0.65")
    for index, row in enumerate(rows):
        top = Decimal(chart.top + chart.row_height * index)
        middle = top + Decimal(chart.row_height) / 2
        length = _px(room * row.value / largest) if largest else Decimal(0)
        if length:
            y, title = _px(middle - bar_height / 2), f"{row.label}: {row.text}"
            chart.bars.append(Bar(Decimal(chart.left), y, length, _px(bar_height), row.kind, title))
        chart.labels.append(Label(Decimal(chart.left - 8), _px(middle + 4), row.label))
        chart.values.append(Label(_px(chart.left + length + 6), _px(middle + 4), row.text))
    chart.mirror(chart.labels, chart.values)
    return chart
