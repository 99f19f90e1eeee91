"""An analysis result in plain words for the admin's result page (issue 32 item 3).

Rounded numbers in the active language's format, each with its 95% interval, one
sentence of what they say and what the interval means; the raw request and result only
as "technical details". Read by ``reconstruction/admin.py``; shapes, not kind names,
decide the wording (a count publishes ``population``, a mean ``group_size``, a
distribution ``counts``), so a new kind with its own result shape still shows its raw
figures in the summary table.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.i18n import number
from reconstruction import transitions
from reconstruction.kinds.base import AnalysisKind
from reconstruction.registry import METHOD_HELP

STATUS_LABELS = {
    "queued": gettext_lazy("queued"),
    "running": gettext_lazy("running"),
    "succeeded": gettext_lazy("finished"),
    "failed": gettext_lazy("failed"),
    "refused": gettext_lazy("refused"),
}


def footnoted(message: Any) -> tuple[str, str]:
    """A message's plain sentences and its closing parenthesised figures apart, e.g. a
    cost refusal's "... Ask for fewer quotas. (Figures: ...)", so a page shows the figures
    as a footnote; ``(message, "")`` when it does not end with such a sentence."""
    text = str(message).strip()
    if not text.endswith(")"):
        return text, ""
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[index], 0)
        if depth == 0:
            head = text[:index].rstrip()
            if head.endswith((".", "!", "?")):
                return head, text[index:]
            return text, ""
    return text, ""


def status_label(status: str) -> str:
    return str(STATUS_LABELS.get(status, status))


def kind_label(kind: AnalysisKind | None, name: str) -> str:
    if kind is None or not kind.label:
        return name
    label = _(kind.label)
    return label[:1].upper() + label[1:]


def places_for(interval: Any, estimate: float) -> int:
    """Decimals that show what is known: two significant digits of the interval's
    half-width (whole numbers for counts of people above ten)."""
    if isinstance(interval, (list, tuple)) and len(interval) == 2 and None not in interval:
        half = abs(float(interval[1]) - float(interval[0])) / 2
        if half > 0:
            return max(0, 1 - math.floor(math.log10(half)))
    return 0 if abs(estimate) >= 10 else 2


def rounded(value: Any, places: int) -> str:
    return "—" if value is None else number(float(value), places)


def interval_text(interval: Any, places: int) -> str:
    if not (isinstance(interval, (list, tuple)) and len(interval) == 2) or None in interval:
        return "—"
    return _("%(low)s to %(high)s") % {
        "low": rounded(interval[0], places),
        "high": rounded(interval[1], places),
    }


def headline(result: dict[str, Any]) -> str:
    """One sentence of what the result says, or '' for a shape this page does not know."""
    if transitions.is_change(result):  # its own sentences are in its summary rows
        return ""
    if result.get("suppressed") is True:
        return _(
            "This result is withheld: the group it describes is too small to publish "
            "without risking that someone is recognised."
        )
    estimate = result.get("estimate")
    if estimate is None:
        members = result.get("participants")
        if isinstance(members, list) and "quotas" not in result:  # a sample (panels: own page)
            return _(
                "A random sample of %(size)s residents, drawn with seed %(seed)s: %(members)s."
            ) % {
                "size": number(len(members), 0),
                "seed": result.get("seed", "—"),
                "members": ", ".join(str(m) for m in members),
            }
        return ""
    ci = result.get("ci95")
    if "population" in result:
        places = 0
        return _(
            "About %(estimate)s of the %(population)s residents who answered meet the "
            "conditions (95%% interval: %(interval)s)."
        ) % {
            "estimate": rounded(estimate, places),
            "population": number(int(result["population"]), 0),
            "interval": interval_text(ci, places),
        }
    places = places_for(ci, float(estimate))
    sentence = _("The average is about %(estimate)s (95%% interval: %(interval)s)") % {
        "estimate": rounded(estimate, places),
        "interval": interval_text(ci, places),
    }
    if result.get("group_size") is not None:
        sentence += _(", among about %(group)s residents.") % {
            "group": rounded(result["group_size"], 0)
        }
    else:
        sentence += "."
    return sentence


def band_label(low: float, high: float) -> str:
    """A band of a number question, as the table and the chart read it: "16 up to 19.2"."""
    return _("%(low)s up to %(high)s") % {"low": number(low), "high": number(high)}


def category_rows(result: dict[str, Any]) -> list[dict[str, str]]:
    """A distribution's rows: label, estimated count, share and interval (rounded)."""
    counts = result.get("counts")
    if not isinstance(counts, list) or transitions.is_change(result):
        return []
    if isinstance(result.get("categories"), list):
        labels = [str(c) for c in result["categories"]]
    elif isinstance(result.get("intervals"), list):
        labels = [band_label(a, b) for a, b in result["intervals"]]
    else:
        return []
    ci95 = result.get("ci95") if isinstance(result.get("ci95"), list) else []
    shares = result.get("proportions") if isinstance(result.get("proportions"), list) else []
    suppressed = result.get("suppressed") if isinstance(result.get("suppressed"), list) else []
    rows = []
    for i, label in enumerate(labels):
        hidden = i < len(suppressed) and bool(suppressed[i])
        count = counts[i] if i < len(counts) else None
        share = shares[i] if i < len(shares) else None
        rows.append(
            {
                "label": label,
                "estimate": _("withheld (too few)") if hidden else rounded(count, 0),
                "share": "—" if hidden or share is None else f"{number(100 * share, 0)} %",
                "interval": "—" if hidden else interval_text(ci95[i] if i < len(ci95) else None, 0),
            }
        )
    return rows


def summary_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The result's figures, labelled and rounded (the summary table)."""
    if transitions.is_change(result):
        return transitions.summary_rows(result)
    rows: list[tuple[str, str]] = []
    if "estimate" in result:
        estimate = result.get("estimate")
        ci = result.get("ci95")
        places = 0 if "population" in result else places_for(ci, float(estimate or 0))
        rows.append((_("estimate"), rounded(estimate, places)))
        rows.append((_("95%% interval") % {}, interval_text(ci, places)))
    labels = {
        "population": _("residents who answered"),
        "group_size": _("group size"),
        "n": _("residents who answered"),
        "method": _("method"),
        "iterations": _("iterations"),
        "converged": _("converged"),
    }
    for name, label in labels.items():
        value = result.get(name)
        if value is None or isinstance(value, (list, dict)):
            continue
        if isinstance(value, bool):
            shown = _("yes") if value else _("no")
        elif isinstance(value, (int, float)):
            shown = rounded(value, 0)
        elif name == "method" and str(value) in METHOD_HELP:
            # The paper's name with what it does ("em" alone said nothing).
            shown = f"{value}: {_(METHOD_HELP[str(value)])}"
        else:
            shown = str(value)
        rows.append((label, shown))
    return rows


def interval_meaning() -> str:
    return (
        _(
            "What the interval means: every answer was distorted on the resident's device, so "
            "the true number is not known exactly. With 95%% confidence it lies within the "
            "interval, which accounts for that distortion as well as for chance."
        )
        % {}
    )


def technical(spec: Any, result: Any) -> dict[str, str]:
    return {
        "request": json.dumps(spec, indent=2, ensure_ascii=False, sort_keys=True),
        "result": json.dumps(result, indent=2, ensure_ascii=False, sort_keys=True),
    }
