"""The demo's deliberation step (issue 29): a panel answers an "after" survey.

Every resident answers a "before" survey ("Should the school be built on site A?",
against / unsure / for, randomised response keeping 70%); a panel is drawn by lottery
from the candidates (the ``panel`` kind); its members deliberate and answer the same
question in an "after" survey, their true answers moving by a known transition table;
the ``change`` kind, restricted to the panel, reconstructs the (before, after) table from
both distorted answers, and the demo prints the truth beside the reconstruction.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from privacy.client import PortalClient, distort_table, table_responses
from reconstruction.algorithms.simulation import SEXES
from surveys.services import survey_create, survey_open

SUPPORT = ("against", "unsure", "for")
QUESTION = {
    "key": "support",
    "text": "Should the new school be built on site A?",
    "type": "nominal",
    "categories": list(SUPPORT),
    "mechanism": {"name": "randomised_response", "retain": 0.7},
}
BEFORE_SHARES = np.array([0.45, 0.25, 0.30])
# Row: the answer before; column: after. Deliberation moves the unsure and some of those
# against toward "for"; a few move the other way.
MOVES = np.array([[0.70, 0.12, 0.18], [0.15, 0.45, 0.40], [0.04, 0.06, 0.90]])
PANEL_SHARE = 0.1


class Demo(Protocol):
    """What the step uses of the demo command."""

    def step(self, message: str) -> None: ...

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...

    def analyse(self, body: dict[str, Any]) -> dict[str, Any] | None: ...

    stdout: Any


def _survey(organisation: Any, consultation: Any, title: str) -> Any:
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="opinion",
        title=title,
        questions=[QUESTION],
        actor="demo",
    )
    return survey_open(survey=survey, actor="demo")


def _send(ingest: PortalClient, survey: Any, refs: np.ndarray, codes: np.ndarray, rng: Any) -> None:
    sent = distort_table(ingest.scheme(survey.pk), {"support": np.array(SUPPORT)[codes]}, rng)
    responses = table_responses(refs, sent)
    for start in range(0, len(responses), 2000):
        ingest.submit_bulk(survey.pk, responses[start : start + 2000])


def deliberation(
    demo: Demo,
    *,
    organisation: Any,
    consultation: Any,
    profile_id: int,
    participants: np.ndarray,
    pool: Any,
    ingest: PortalClient,
    rng: np.random.Generator,
) -> None:
    """Run the step and print true against reconstructed transitions and net shifts."""
    n = len(participants)
    demo.step("Deliberation: every resident answers the 'before' survey on site A")
    before_survey = _survey(organisation, consultation, "Site A, before deliberation")
    after_survey = _survey(organisation, consultation, "Site A, after deliberation")
    before = rng.choice(3, size=n, p=BEFORE_SHARES)
    _send(ingest, before_survey, participants, before, rng)

    size = int(n * PANEL_SHARE)
    women = int(np.sum(pool.sex == SEXES.index("F")))
    share = women / n
    demo.step(f"Deliberation: a panel of {size} drawn by lottery, women {share:.0%} +- 2 seats")
    panel = demo.analyse(
        {
            "survey": profile_id,
            "kind": "panel",
            "size": size,
            "seed": 29,
            "quotas": [
                {
                    "where": [{"attribute": "sex", "op": "in", "value": ["F"]}],
                    "min": max(0, round(share * size) - 2),
                    "max": round(share * size) + 2,
                }
            ],
        }
    )
    if panel is None:
        return
    panel_id = int(str(panel["probabilities_url"]).split("/")[-2])
    members = np.array([int(ref.split("-")[1]) for ref in panel["participants"]])

    demo.step(f"Deliberation: the {len(members)} members answer the 'after' survey")
    true_before = before[members]
    true_after = np.empty_like(true_before)
    for code in range(3):  # each member moves by the known transition row of their answer
        rows = np.flatnonzero(true_before == code)
        true_after[rows] = rng.choice(3, size=rows.size, p=MOVES[code])
    _send(ingest, after_survey, participants[members], true_after, rng)

    demo.step("Analysis: how the panel's opinions changed (kind change, panel filter)")
    result = demo.analyse(
        {
            "survey": before_survey.pk,
            "kind": "change",
            "after": after_survey.pk,
            "attribute": "support",
            "panel": panel_id,
        }
    )
    if result is None:
        return
    truth = np.bincount(true_before * 3 + true_after, minlength=9).reshape(3, 3)
    _print(demo, truth, result)


def _print(demo: Demo, truth: np.ndarray, result: dict[str, Any]) -> None:
    out = demo.stdout
    out.write("")
    out.write(
        f"Deliberation: {result['paired']} panel members answered both surveys "
        f"({result['before_only']} only before, {result['after_only']} only after)"
    )
    header = f"{'before -> after':<24} {'true':>8} {'reconstructed':>14} {'95% interval':>22}"
    out.write(header)
    out.write("-" * len(header))
    for i, before in enumerate(SUPPORT):
        for j, after in enumerate(SUPPORT):
            value, ci = result["transitions"][i][j], result["transitions_ci95"][i][j]
            shown = "not published" if value is None else f"{value:.1f}"
            interval = "" if value is None else f"[{ci[0]:.1f}, {ci[1]:.1f}]"
            out.write(f"{before + ' -> ' + after:<24} {truth[i, j]:>8d} {shown:>14} {interval:>22}")
    paired = truth.sum()
    net = truth.sum(axis=0) / paired - truth.sum(axis=1) / paired
    out.write("")
    header = f"{'net shift (points)':<24} {'true':>8} {'reconstructed':>14} {'95% interval':>22}"
    out.write(header)
    out.write("-" * len(header))
    for i, category in enumerate(SUPPORT):
        value, ci = result["net_change"][i], result["net_change_ci95"][i]
        shown = "not published" if value is None else f"{100 * value:+.1f}"
        interval = "" if value is None else f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
        out.write(f"{'toward ' + category:<24} {100 * net[i]:>+8.1f} {shown:>14} {interval:>22}")
    for note in result.get("notes") or []:
        out.write(f"  note: {note}")
    out.write("")
