"""How a report's question reads for a council (issue 32, item 8): one opening sentence
of what the data say and how sure, and a continuous question in bands drawn as a
distribution (the bands: :mod:`reconstruction.report_bands`; the full lattice stays in
the report's JSON and its export)."""

from __future__ import annotations

import io
import math
from typing import Any

from django.utils.formats import number_format
from django.utils.translation import gettext as _

from reconstruction.algorithms.bands import USEFUL

CHART_WIDTH = 8.0
ESTIMATE_COLOUR = "#2b6cb0"


def band_rows(bands: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of a continuous question's table: one per band."""
    return [
        {
            "label": label,
            "naive": None,
            "naive_small": False,
            "estimate": bands["counts"][j],
            "ci": bands["ci95"][j],
            "suppressed": bands["suppressed"][j],
            "share": bands["proportions"][j],
        }
        for j, label in enumerate(bands["labels"])
    ]


def _share(value: float) -> str:
    return number_format(100 * value, 0) + "%"


def _sure(count: float, ci: Any) -> str:
    half = (float(ci[1]) - float(ci[0])) / 2
    if half <= USEFUL * count:
        return _("a fairly precise figure")
    return _("a rough figure")


def summary_sentence(section: dict[str, Any], labels: list[str]) -> str:
    """One plain sentence: the most common answer (a discrete question) or the largest
    band per unit (a continuous one), its share of the participants with its 95% interval,
    and whether that is a fairly precise or a rough figure; in the active language."""
    reconstructed = section["reconstructed"]
    bands = reconstructed.get("bands")
    source = bands or reconstructed
    names = bands["labels"] if bands else labels
    counts, ci95 = source["counts"], source["ci95"]
    total = float(reconstructed.get("n") or sum(c or 0 for c in reconstructed["counts"]))
    shown = [j for j, c in enumerate(counts) if c is not None and ci95[j] is not None]
    if not shown or total <= 0:
        return _(
            "Every number of this question is too small or too uncertain to publish, so the "
            "data say nothing here that could be shown."
        )
    if bands:
        edges = bands["edges"]

        def density(j: int) -> float:
            return float(counts[j]) / max(float(edges[j + 1]) - float(edges[j]), 1e-12)

        top = max(shown, key=density)
        template = _(
            "The largest group is %(label)s: about %(share)s of the %(n)s participants "
            "(95%% interval %(low)s to %(high)s), %(sure)s."
        )
    else:
        top = max(shown, key=lambda j: float(counts[j]))
        template = _(
            "The most common answer is “%(label)s”: about %(share)s of the %(n)s "
            "participants (95%% interval %(low)s to %(high)s), %(sure)s."
        )
    count, (low, high) = float(counts[top]), ci95[top]
    return template % {
        "label": names[top],
        "share": _share(count / total),
        "n": number_format(round(total), 0, force_grouping=True),
        "low": _share(max(float(low), 0.0) / total),
        "high": _share(min(float(high), total) / total),
        "sure": _sure(count, (low, high)),
    }


def band_chart_svg(section: dict[str, Any]) -> str:
    """A continuous question's bands as a histogram: bars as wide as their bands, their
    height the participants per round width (so merged bands do not look taller), with
    the 95% intervals; suppressed bands are left empty."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    bands = section["reconstructed"]["bands"]
    edges = np.asarray(bands["edges"], dtype=float)
    width = float(bands["width"])
    spans = np.diff(edges)
    scale = width / spans
    counts = np.array([math.nan if c is None else float(c) for c in bands["counts"]])
    ci = np.array(
        [[math.nan, math.nan] if p is None else [float(v) for v in p] for p in bands["ci95"]]
    ).reshape(-1, 2)
    heights = counts * scale
    errors = np.nan_to_num(
        np.clip(np.vstack([counts - ci[:, 0], ci[:, 1] - counts]) * scale, 0, None)
    )
    figure = Figure(figsize=(CHART_WIDTH, 3.4))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.bar(
        edges[:-1],
        np.nan_to_num(heights),
        spans,
        align="edge",
        color=ESTIMATE_COLOUR,
        edgecolor="white",
        yerr=errors,
        ecolor="#1a202c",
        capsize=2,
        error_kw={"elinewidth": 1},
    )
    axes.set_xticks(edges, [f"{e:g}" for e in edges], fontsize=9)
    axes.set_ylabel(
        _("participants per %(width)s") % {"width": number_format(width, 0 if width >= 1 else 2)},
        fontsize=9,
    )
    axes.set_xlabel(
        _("%(key)s, in bands (reconstructed estimate, 95%% interval)") % {"key": section["key"]},
        fontsize=9,
    )
    axes.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "report"}):
        figure.savefig(buffer, format="svg")
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :]
