"""How a change result reads (issue 29): the transition chart, the net shift in plain
words, and its table for the exports.

A ``change`` result (:mod:`reconstruction.kinds.change`) is recognised by its
``transitions``; the admin's result page, the survey report and the CSV/XLSX exports call
these functions for it. Sentences are in the active language (``translation.override``).
"""

from __future__ import annotations

import io
from typing import Any

from django.utils.translation import gettext as _

CHART_WIDTH = 6.0
HIDDEN_COLOUR = "#e2e8f0"


def is_change(result: Any) -> bool:
    return isinstance(result, dict) and isinstance(result.get("transitions"), list)


def _points(value: float) -> str:
    return f"{100.0 * value:+.1f}"


def net_shift_sentences(result: dict[str, Any]) -> list[str]:
    """One sentence per category: its net shift with the 95% interval, in words."""
    sentences = []
    categories = [str(c) for c in result.get("categories") or []]
    nets, intervals = result.get("net_change") or [], result.get("net_change_ci95") or []
    positive = result.get("shift_positive") or [None] * len(categories)
    for i, category in enumerate(categories):
        net = nets[i] if i < len(nets) else None
        low, high = (intervals[i] if i < len(intervals) else [None, None]) or [None, None]
        if net is None or low is None or high is None:
            sentences.append(
                _("%(category)s: not shown (disclosure control).") % {"category": category}
            )
            continue
        values = {
            "category": category,
            "net": _points(net),
            "size": f"{abs(100.0 * net):.1f}",
            "low": _points(low),
            "high": _points(high),
            "probability": f"{100.0 * float(positive[i] or 0.0):.0f}",
        }
        if low > 0:
            verdict = _(
                "%(category)s gained %(size)s percentage points (95%% interval %(low)s to "
                "%(high)s): a real shift toward it (probability of a gain %(probability)s%%)."
            )
        elif high < 0:
            verdict = _(
                "%(category)s lost %(size)s percentage points (95%% interval %(low)s to "
                "%(high)s): a real shift away from it (probability of a gain %(probability)s%%)."
            )
        else:
            verdict = _(
                "%(category)s changed by %(net)s percentage points (95%% interval %(low)s to "
                "%(high)s): the interval covers 0, so the data do not show a change "
                "(probability of a gain %(probability)s%%)."
            )
        sentences.append(verdict % values)
    return sentences


def summary_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The admin result page's headline rows of a change."""
    rows = [
        (_("paired residents"), str(result.get("paired"))),
        (_("answered only before"), str(result.get("before_only"))),
        (_("answered only after"), str(result.get("after_only"))),
    ]
    for sentence in net_shift_sentences(result):
        rows.append((_("net shift"), sentence))
    return rows


def transition_chart_svg(result: dict[str, Any], labels: list[str] | None = None) -> str:
    """A before/after heat map: rows the answer before, columns the answer after, each
    cell the estimated residents (hidden cells grey)."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    categories = labels or [str(c) for c in result.get("categories") or []]
    cells = result["transitions"]
    k = len(categories)
    values = np.array(
        [[np.nan if v is None else float(v) for v in row] for row in cells], dtype=float
    )
    figure = Figure(figsize=(CHART_WIDTH, 0.9 + 0.55 * k))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    masked = np.ma.masked_invalid(values)
    image = axes.imshow(masked, cmap="Blues", aspect="auto")
    image.cmap.set_bad(HIDDEN_COLOUR)
    top = float(np.nanmax(values)) if np.isfinite(values).any() else 1.0
    for i in range(k):
        for j in range(k):
            text = "—" if np.isnan(values[i, j]) else f"{values[i, j]:,.0f}"
            light = not np.isnan(values[i, j]) and values[i, j] > 0.6 * top
            axes.text(j, i, text, ha="center", va="center", fontsize=9,
                      color="white" if light else "#1a202c")  # fmt: skip
    axes.set_xticks(range(k), categories)
    axes.set_yticks(range(k), categories)
    axes.set_xlabel(_("answer after"), fontsize=9)
    axes.set_ylabel(_("answer before"), fontsize=9)
    axes.xaxis.set_label_position("top")
    axes.xaxis.tick_top()
    figure.tight_layout()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "change"}):
        figure.savefig(buffer, format="svg")
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :]


def table_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The change as a plain table: one row per (before, after) cell (``before`` and
    ``after`` name it), then per category (``category``) its share before and after and
    its net change, each with its 95% interval."""
    categories = [str(c) for c in result.get("categories") or []]
    rows: list[dict[str, Any]] = []

    def pair(values: Any, i: int) -> tuple[Any, Any]:
        item = (values or [])[i] if i < len(values or []) else None
        return (item[0], item[1]) if isinstance(item, list) and len(item) == 2 else (None, None)

    for i, before in enumerate(categories):
        for j, after in enumerate(categories):
            value = result["transitions"][i][j]
            low, high = pair(result.get("transitions_ci95", [[]] * len(categories))[i], j)
            rows.append({"quantity": "transition", "before": before, "after": after,
                         "category": None, "estimate": value, "ci95_low": low,
                         "ci95_high": high, "suppressed": value is None})  # fmt: skip
    # A share or a net change is one category's: named once, in its own column.
    for name in ("before", "after", "net_change"):
        for i, category in enumerate(categories):
            value = (result.get(name) or [None] * len(categories))[i]
            low, high = pair(result.get(f"{name}_ci95"), i)
            rows.append(
                {
                    "quantity": name,
                    "before": None,
                    "after": None,
                    "category": category,
                    "estimate": value,
                    "ci95_low": low,
                    "ci95_high": high,
                    "suppressed": value is None,
                }
            )
    return rows


def columns() -> dict[str, str]:
    return {
        "quantity": _(
            "transition: residents with this answer before and that answer after; before, "
            "after: the share of a category; net_change: its share after minus before"
        ),
        "before": _("the answer before (a category)"),
        "after": _("the answer after (a category)"),
        "category": _("the category whose share (before, after) or net change the row gives"),
    }


def report_views(document: dict[str, Any], *, charts: bool = True) -> list[dict[str, Any]]:
    """A report's changes as its HTML shows them: request, chart and sentences."""
    views = []
    for entry in document.get("changes") or []:
        result, request = entry.get("result") or {}, entry.get("request") or {}
        if not is_change(result):
            continue
        views.append(
            {
                "analysis": entry.get("analysis"),
                "attribute": request.get("attribute"),
                "after": request.get("after"),
                "paired": result.get("paired"),
                "before_only": result.get("before_only"),
                "after_only": result.get("after_only"),
                "sentences": net_shift_sentences(result),
                "chart": transition_chart_svg(result) if charts else "",
            }
        )
    return views
