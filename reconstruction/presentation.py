"""How a report reads: charts, plain-language privacy sentences, warnings, languages.

:func:`render_report_html` turns a report document (``reconstruction.reports.build_report``,
stored as the report's JSON result) into the HTML page, in any of the site's languages, so
the same stored numbers can be read in English, German or Polish (``?lang=`` or
``Accept-Language`` on the download). Charts are SVG drawn by matplotlib with the legend
outside the plotting area and category labels written horizontally.
"""

from __future__ import annotations

import io
import math
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from core.i18n import supported_language
from core.messages import translate_notes
from privacy.mechanisms import report_sentence
from reconstruction import transitions
from reconstruction.report_reading import band_chart_svg, band_rows, summary_sentence

# Inches; the report page is 60rem (960 px at 96 dpi) wide.
CHART_WIDTH = 8.0
NAIVE_COLOUR = "#a0aec0"
ESTIMATE_COLOUR = "#2b6cb0"


def section_labels(section: dict[str, Any], language: str | None = None) -> list[str]:
    """Category labels in ``language`` where the question has them, else the wire values;
    intervals of a continuous question as ``[a, b)``."""
    reconstructed = section["reconstructed"]
    if "categories" not in reconstructed:
        return [f"[{a:g}, {b:g})" for a, b in reconstructed["intervals"]]
    categories = [str(c) for c in reconstructed["categories"]]
    translated = (section.get("translations") or {}).get(language or "", {})
    labels = translated.get("labels") if isinstance(translated, dict) else None
    if isinstance(labels, list) and len(labels) == len(categories):
        return [str(label) for label in labels]
    return categories


def section_text(section: dict[str, Any], language: str | None = None) -> str:
    translated = (section.get("translations") or {}).get(language or "", {})
    if isinstance(translated, dict) and translated.get("text"):
        return str(translated["text"])
    return str(section.get("text") or "")


def privacy_sentence(section: dict[str, Any]) -> str:
    """One sentence a resident or a councillor understands: what the device did to the
    answer, and how much one reported answer can reveal (local differential privacy, seed
    document 000_1b7f9a8e281301b4.txt, section 2; epsilon as published in the scheme)."""
    found = report_sentence(section["mechanism"])
    if found is None:
        what = _("Each answer was distorted on the resident's device before it was sent.")
    else:
        template, params = found
        what = _(template) % params if params else _(template)
    eps = section.get("epsilon")
    if eps is None:
        if section["type"] == "continuous":
            return what
        return (
            what
            + " "
            + _(
                "A reported answer can rule some true answers out, so this protection is not a "
                "bounded privacy level; it hides which of the remaining answers is true."
            )
        )
    ratio = math.exp(float(eps))
    return (
        what
        + " "
        + _(
            "Whatever a resident answered, seeing their reported answer makes one true answer "
            "at most %(ratio)s times as likely as another (privacy level ε = %(epsilon)s; "
            "smaller is more private)."
        )
        % {"ratio": f"{ratio:.3g}", "epsilon": f"{float(eps):.3f}"}
    )


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def draw_chart(section: dict[str, Any], labels: list[str]) -> Any:
    """The matplotlib figure of one question: naive and reconstructed counts with 95%
    intervals. Many or long labels give horizontal bars, so every label reads level."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    reconstructed = section["reconstructed"]
    estimate = np.array([_number(c) for c in reconstructed["counts"]])
    naive = np.array([_number(c) for c in section["naive"]["counts"]])
    ci = np.array(
        [
            [math.nan, math.nan] if p is None else [_number(v) for v in p]
            for p in reconstructed["ci95"]
        ]
    ).reshape(len(labels), 2)
    errors = np.nan_to_num(np.clip(np.vstack([estimate - ci[:, 0], ci[:, 1] - estimate]), 0, None))
    horizontal = len(labels) > 8 or max((len(label) for label in labels), default=0) > 10
    height = 0.32 * len(labels) + 1.4 if horizontal else 3.4
    figure = Figure(figsize=(CHART_WIDTH, height))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    position = np.arange(len(labels))
    width = 0.4
    # An analysis result has no naive counts: then only the estimates are drawn.
    has_naive = not bool(np.all(np.isnan(naive)))
    naive_label = _("distorted answers, counted as if true")
    estimate_label = _("reconstructed estimate (95%% interval)") % {}
    if horizontal:
        if has_naive:
            axes.barh(position - width / 2, naive, width, color=NAIVE_COLOUR, label=naive_label)
        axes.barh(
            position + width / 2,
            estimate,
            width,
            xerr=errors,
            capsize=2,
            color=ESTIMATE_COLOUR,
            label=estimate_label,
        )
        axes.set_yticks(position, labels, fontsize=9)
        axes.invert_yaxis()
        axes.set_xlabel(_("participants"), fontsize=9)
    else:
        if has_naive:
            axes.bar(position - width / 2, naive, width, color=NAIVE_COLOUR, label=naive_label)
        axes.bar(
            position + width / 2,
            estimate,
            width,
            yerr=errors,
            capsize=2,
            color=ESTIMATE_COLOUR,
            label=estimate_label,
        )
        axes.set_xticks(position, labels, fontsize=9)
        axes.set_ylabel(_("participants"), fontsize=9)
    axes.spines[["top", "right"]].set_visible(False)
    # The legend sits above the plotting area, so it can never cover a bar.
    figure.legend(loc="upper center", ncol=2, frameon=False, fontsize=9, bbox_to_anchor=(0.5, 1.0))
    figure.tight_layout(rect=(0, 0, 1, 1 - 0.45 / height))
    return figure


def chart_svg(section: dict[str, Any], labels: list[str]) -> str:
    """The chart as an inline SVG element (text kept as text, scaled to the page)."""
    import matplotlib

    figure = draw_chart(section, labels)
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "report"}):
        figure.savefig(buffer, format="svg")
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :]


def wide_interval(row: dict[str, Any]) -> bool:
    """An interval wider than the estimate itself: the number is rough."""
    ci, estimate = row.get("ci"), row.get("estimate")
    if row.get("suppressed") or ci is None or estimate is None or None in ci:
        return False
    return float(ci[1]) - float(ci[0]) > abs(float(estimate))


def report_sections(
    document: dict[str, Any], *, charts: bool = True, language: str | None = None
) -> list[dict[str, Any]]:
    """The sections as the HTML template shows them: rows, chart, privacy sentence and
    warnings, labels in ``language``."""
    views = []
    for section in document["questions"]:
        view = dict(section)
        view["display_text"] = section_text(section, language)
        view["privacy"] = privacy_sentence(section)
        if section["published"]:
            labels = section_labels(section, language)
            reconstructed = section["reconstructed"]
            view["notes"] = translate_notes(reconstructed.get("notes"))
            rows = [
                {
                    "label": label,
                    "naive": section["naive"]["counts"][i],
                    "naive_small": section["naive"]["below_threshold"][i],
                    "estimate": reconstructed["counts"][i],
                    "ci": reconstructed["ci95"][i],
                    "suppressed": reconstructed["suppressed"][i],
                }
                for i, label in enumerate(labels)
            ]
            bands = reconstructed.get("bands")
            if bands:  # a continuous question reads in bands (the lattice: the export)
                rows = band_rows(bands)
            view["banded"] = bool(bands)
            view["summary"] = summary_sentence(section, labels)
            for row in rows:
                row["wide"] = wide_interval(row)
            view["rows"] = rows
            wide = sum(row["wide"] for row in rows)
            view["warning"] = (
                ngettext(
                    "Warning: for %(count)d row the 95%% interval is wider than the estimate "
                    "itself; treat that number as rough.",
                    "Warning: for %(count)d rows the 95%% interval is wider than the estimate "
                    "itself; treat those numbers as rough.",
                    wide,
                )
                % {"count": wide}
                if wide
                else ""
            )
            chart = band_chart_svg(section) if bands and charts else ""
            view["chart"] = (
                mark_safe(chart or chart_svg(section, labels)) if charts else ""
            )  # matplotlib's own SVG
        views.append(view)
    return views


def language_of(requested: str | None) -> str:
    """A supported language code for ``?lang=`` or Accept-Language (core/i18n.py)."""
    return supported_language(requested)


def change_sections(document: dict[str, Any], *, charts: bool = True) -> list[dict[str, Any]]:
    """The report's changes (issue 29) as the template shows them, in the active language."""
    return [
        {**view, "chart": mark_safe(view["chart"])}  # matplotlib's own SVG
        for view in transitions.report_views(document, charts=charts)
    ]


def render_report_html(
    document: dict[str, Any], *, language: str | None = None, charts: bool = True
) -> SafeString:
    """The report page in ``language`` (the site's default when None)."""
    code = language or str(settings.LANGUAGE_CODE)
    with translation.override(code):
        return render_to_string(
            "reconstruction/report.html",
            {
                "report": document,
                "sections": report_sections(document, charts=charts, language=code),
                "changes": change_sections(document, charts=charts),
                "language": code,
            },
        )


def report_renderings(document: dict[str, Any], languages: Any) -> dict[str, str]:
    """The report's HTML in each of ``languages`` other than the default (rendered when
    the report finishes, so a download in them renders nothing)."""
    supported = {code for code, _name in settings.LANGUAGES}
    wanted = [str(code) for code in (languages or []) if code in supported]
    return {
        code: str(render_report_html(document, language=code))
        for code in dict.fromkeys(wanted)
        if code != settings.LANGUAGE_CODE
    }


def result_summary(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The headline numbers of an analysis result, in words for the admin's result page."""
    rows: list[tuple[str, str]] = []
    if transitions.is_change(result):
        return transitions.summary_rows(result)
    if "estimate" in result:
        estimate = result.get("estimate")
        rows.append((_("estimate"), "—" if estimate is None else f"{float(estimate):,.2f}"))
        ci = result.get("ci95")
        if isinstance(ci, list) and len(ci) == 2 and None not in ci:
            interval = _("%(low)s to %(high)s") % {
                "low": f"{float(ci[0]):,.2f}",
                "high": f"{float(ci[1]):,.2f}",
            }
            rows.append((_("95%% interval") % {}, interval))
    labels = {
        "population": _("population"),
        "group_size": _("group size"),
        "method": _("method"),
        "iterations": _("iterations"),
        "converged": _("converged"),
        "suppressed": _("suppressed"),
    }
    for name, label in labels.items():
        if name in result and not isinstance(result[name], list | dict):
            value = result[name]
            shown = (_("yes") if value else _("no")) if isinstance(value, bool) else str(value)
            rows.append((label, shown))
    return rows


def result_chart_svg(result: dict[str, Any]) -> str:
    """A chart of an analysis result: bars with 95% intervals for a distribution, the
    estimate with its interval for a count or a mean; empty when there is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if transitions.is_change(result):
        return transitions.transition_chart_svg(result)
    if "counts" in result and ("categories" in result or "intervals" in result):
        from reconstruction.result_view import band_label

        labels = (
            [str(c) for c in result["categories"]]
            if "categories" in result
            else [band_label(a, b) for a, b in result["intervals"]]
        )
        section = {
            "reconstructed": {"counts": result["counts"], "ci95": result.get("ci95") or []},
            "naive": {"counts": [None] * len(labels)},
        }
        if len(section["reconstructed"]["ci95"]) != len(labels):
            section["reconstructed"]["ci95"] = [None] * len(labels)
        figure = draw_chart(section, labels)
    elif result.get("estimate") is not None:
        figure = Figure(figsize=(CHART_WIDTH, 1.6))
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        estimate = float(result["estimate"])
        ci = result.get("ci95") or [estimate, estimate]
        axes.errorbar(
            [estimate], [0], xerr=[[estimate - float(ci[0])], [float(ci[1]) - estimate]],
            fmt="o", color=ESTIMATE_COLOUR, capsize=6,
        )  # fmt: skip
        axes.set_yticks([])
        axes.spines[["top", "right", "left"]].set_visible(False)
        axes.set_xlabel(_("estimate with its 95%% interval") % {}, fontsize=9)
        figure.tight_layout()
    else:
        return ""
    from matplotlib.ticker import FuncFormatter

    from core.i18n import number

    # Tick labels in the reader's number format (1.000 in German).
    for axes in figure.axes:
        for axis in (axes.xaxis, axes.yaxis):
            if axis.get_major_locator().__class__.__name__ != "FixedLocator":
                axis.set_major_formatter(FuncFormatter(lambda value, _position: number(value)))
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "result"}):
        figure.savefig(buffer, format="svg")
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :]


# --------------------------------------------------------------------------- panels


def condition_words(condition: dict[str, Any]) -> str:
    """A stored condition (``{"attribute", "op", "value"}``) in signs any reader knows:
    ``sex: F, M``, ``age ≤ 40``, ``age: 18 up to 65``, numbers in the reader's format; not
    the API's ``age <= 40.0`` or ``sex in [F, M]``."""
    from core.i18n import number
    from reconstruction.result_view import band_label

    attribute, op, value = condition.get("attribute"), condition.get("op"), condition.get("value")
    if op == "in" and isinstance(value, list):
        return f"{attribute}: {', '.join(str(v) for v in value)}"
    if op == "between" and isinstance(value, list) and len(value) == 2:
        return f"{attribute}: {band_label(float(value[0]), float(value[1]))}"
    sign = {"gt": ">", "lte": "≤"}.get(str(op), str(op))
    shown = number(float(value)) if isinstance(value, int | float) else str(value)
    return f"{attribute} {sign} {shown}"


def quota_words(index: int, quota: dict[str, Any]) -> str:
    """A panel's quota as the form numbers it, with its conditions: "Quota 1: sex: F"."""
    name = _("Quota %(n)s") % {"n": index + 1}
    where = quota.get("where")
    if not isinstance(where, list) or not where:
        return name
    return f"{name}: {' · '.join(condition_words(c) for c in where)}"


def panel_quota_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """A panel's quotas against the expected true counts, for the report table (numbers
    in the reader's format)."""
    from core.i18n import number

    rows = []
    for index, quota in enumerate(result.get("quotas") or []):
        ci = quota.get("ci95") or [None, None]
        expected = float(quota["expected"])
        rows.append(
            {
                "label": quota_words(index, quota),
                "band": _("%(low)s to %(high)s") % {"low": quota["min"], "high": quota["max"]},
                "expected": number(expected, 1),
                "ci95": "—"
                if None in ci
                else _("%(low)s to %(high)s")
                % {"low": number(float(ci[0]), 1), "high": number(float(ci[1]), 1)},
                "within": quota["min"] - 1e-6 <= expected <= quota["max"] + 1e-6,
                # max_outside's level this quota was held to (None: plain bands).
                "outside_level": _outside_level(quota.get("outside_level")),
            }
        )
    return rows


def _outside_level(level: Any) -> str | None:
    """A quota's ``outside_level`` for the report: the seats, or ``None`` (null: the
    plain band, without ``max_outside`` or when its ladder ran out for this quota)."""
    if level is None:
        return None
    return f"{float(level):g}"


def panel_probabilities(attachment: str) -> list[float]:
    """The selection probabilities of a panel's candidates, from its CSV attachment
    (none when they are withheld: quotas on exact answers that cross in a small group)."""
    import csv

    reader = csv.DictReader(io.StringIO(attachment))
    return [float(row["selection_probability"]) for row in reader if row["selection_probability"]]


def panel_chart_svg(result: dict[str, Any], probabilities: list[float]) -> str:
    """Two charts of a panel: the lowest, median and highest selection probability of the
    candidates against the fair share (panel size / candidates), as bars on a percent axis
    in the reader's number format; and each quota's band against the expected true count
    of the drawn panel with its 95% interval."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    from core.i18n import number

    quotas = result.get("quotas") or []
    rows = 2 if quotas else 1
    height = 2.4 + (0.45 * len(quotas) + 1.2 if quotas else 0)
    figure = Figure(figsize=(CHART_WIDTH, height))
    FigureCanvasAgg(figure)
    ratios = [2.4, 0.45 * len(quotas) + 1.2] if quotas else [1]
    grid = figure.add_gridspec(rows, 1, height_ratios=ratios)
    axes = figure.add_subplot(grid[0])
    values = np.asarray(probabilities, dtype=np.float64)
    percent = FuncFormatter(lambda value, _position: f"{number(100 * value)} %")
    if values.size:
        share = len(result.get("participants") or []) / values.size
        names = [_("lowest"), _("median"), _("highest")]
        figures = [float(values.min()), float(np.median(values)), float(values.max())]
        position = np.arange(len(names))
        axes.barh(position, figures, color=ESTIMATE_COLOUR, height=0.55)
        for i, value in enumerate(figures):
            axes.text(value, i, f"  {number(100 * value)} %", va="center", fontsize=9)
        axes.axvline(share, color="#c05621", linestyle="--", linewidth=1.5,
                     label=_("fair share: %(share)s (panel size / candidates)")
                     % {"share": f"{number(100 * share)} %"})  # fmt: skip
        axes.set_yticks(position, names, fontsize=9)
        axes.invert_yaxis()
        axes.set_xlim(0, max([*figures, share]) * 1.3 or 1)
        axes.legend(frameon=False, fontsize=8, loc="lower right")
    axes.xaxis.set_major_formatter(percent)
    axes.set_xlabel(_("chance of being selected"), fontsize=9)
    axes.spines[["top", "right"]].set_visible(False)
    if quotas:
        bands = figure.add_subplot(grid[1])
        position = np.arange(len(quotas))
        for i, quota in enumerate(quotas):
            bands.plot(
                [quota["min"], quota["max"]], [i, i], color=NAIVE_COLOUR, linewidth=8,
                solid_capstyle="butt", label=_("quota band") if i == 0 else None,
            )  # fmt: skip
            expected = float(quota["expected"])
            ci = quota.get("ci95") or [expected, expected]
            low = expected if ci[0] is None else float(ci[0])
            high = expected if ci[1] is None else float(ci[1])
            bands.errorbar(
                [expected], [i], xerr=[[expected - low], [high - expected]], fmt="o",
                color=ESTIMATE_COLOUR, capsize=4,
                label=_("expected true count (95%% interval)") % {} if i == 0 else None,
            )  # fmt: skip
        bands.set_yticks(position, [quota_words(i, q) for i, q in enumerate(quotas)], fontsize=8)
        bands.invert_yaxis()
        bands.set_xlabel(_("panel members"), fontsize=9)
        bands.spines[["top", "right"]].set_visible(False)
        bands.legend(frameon=False, fontsize=8, loc="lower right")
    figure.tight_layout()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "panel"}):
        figure.savefig(buffer, format="svg")
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :]


def panel_caveat() -> str:
    """The privacy caveat of every panel report."""
    return (
        _(
            "Candidates' answers were distorted on their own devices before they were sent, so "
            "nobody's true category is known, not even to the organisers. The quotas therefore "
            "hold for the expected true counts (sums of posterior probabilities); the realised "
            "numbers of women, young people and so on in the panel may differ, within the 95%% "
            "intervals shown. Candidates with the same reported answers have the same selection "
            "probability."
        )
        % {}
    )
