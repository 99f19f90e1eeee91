"""The lottery: rounding the optimal distribution to ``m`` panels and drawing one.

Pure module: numpy only.

Flanigan, Kehne and Procaccia, "Fair sortition made transparent" (NeurIPS 2021): the
distribution over panels is rounded to a uniform lottery over ``m`` panels
(:func:`_lottery`, largest remainders) so that the draw can be shown in public; the seed
draws one of them, then the seats of each type among its members (:func:`draw_panel`),
then the reserves. :func:`guarantee_statement` is the plain statement published with
every panel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from privacy.mechanisms.messages import Message, Note, gettext_noop


def _lottery(weights: NDArray[np.float64], m: int) -> NDArray[np.int64]:
    """Round panel weights to multiples of ``1/m`` (largest remainders; sum exactly m)."""
    scaled = np.maximum(weights, 0.0) * m / max(float(weights.sum()), 1e-300)
    counts = np.floor(scaled).astype(np.int64)
    short = m - int(counts.sum())
    if short > 0:
        order = np.argsort(-(scaled - counts), kind="stable")
        counts[order[:short]] += 1
    return counts


def guarantee_statement(
    size: int, n_quotas: int, *, eligibility: bool, max_outside: float | None = None
) -> Note:
    """The plain statement returned with every panel (``max_outside``: the bound kept).

    A :class:`Note`: its English text, carrying its template and parameters so that the
    service layer shows it in the reader's language. The optional sentences (tightened
    bands, uncertain eligibility) are messages of their own, joined to the statement by
    one ``"%(statement)s %(addition)s"`` template each, so translators see whole sentences.
    """
    statement = Message(
        gettext_noop(
            "The panel of %(size)s was drawn by a published lottery over panels that all meet "
            "the %(quotas)s quota(s) in expectation: answers were distorted on residents' "
            "devices, so nobody's true category is known. For every quota, the expected "
            "number of members truly in the category (the sum of their posterior "
            "probabilities) lies within its band; the realised number may fall outside it, "
            "and the 95%% interval shows by how much it plausibly varies. Every candidate's "
            "selection probability is published; candidates with the same reported answers "
            "have the same probability."
        ),
        {"size": int(size), "quotas": int(n_quotas)},
    )
    additions: list[Message] = []
    if max_outside is not None and n_quotas:
        additions.append(
            Message(
                gettext_noop(
                    "The bands were also tightened so that, in every panel of the lottery, the "
                    "realised number of each quota is expected to fall outside its band by at "
                    "most %(max_outside)s seat(s), where the answers allow it (notes name any "
                    "quota where they did not)."
                ),
                {"max_outside": f"{max_outside:g}"},
            )
        )
    if eligibility:
        additions.append(
            Message(
                gettext_noop(
                    "Eligibility is also only known in probability: the expected number of "
                    "members who truly meet it is reported beside the panel."
                )
            )
        )
    for addition in additions:
        statement = Message(
            gettext_noop("%(statement)s %(addition)s"),
            {"statement": statement, "addition": addition},
        )
    return Note(statement.template, **statement.params)


@dataclass(frozen=True)
class _Draw:
    """The lottery and what the seed drew from it.

    ``support`` holds the seats per type of every distinct panel of the lottery and
    ``weights`` their probabilities (multiples of ``1 / lottery_size``);
    ``type_probability`` each type's per-member selection probability; ``draw`` the
    panel drawn; ``panel`` and ``reserves`` positions in the candidates' order.
    """

    support: NDArray[np.int64]
    weights: NDArray[np.float64]
    type_probability: NDArray[np.float64]
    draw: int
    panel: NDArray[np.intp]
    reserves: NDArray[np.intp]


def _draw_panel(
    weights: NDArray[np.float64],
    columns: Sequence[NDArray[np.int64]],
    sizes: NDArray[np.float64],
    type_of: NDArray[np.intp],
    lottery_size: int,
    reserves: int,
    generator: np.random.Generator,
) -> _Draw:
    """The lottery stage: round to ``lottery_size`` panels, draw one, fill its seats.

    The draw picks one of the ``m`` panels, then the seats of each type go to members
    drawn uniformly without replacement, then the reserves, each among the remaining
    candidates with probability proportional to their selection probability.
    """
    counts = _lottery(weights, int(lottery_size))
    used = np.flatnonzero(counts)
    support = np.asarray(columns, dtype=np.int64)[used]
    lottery_weights = counts[used] / float(lottery_size)
    type_probability = lottery_weights @ (support / sizes)

    draw = int(generator.integers(lottery_size))
    chosen = support[int(np.searchsorted(np.cumsum(counts[used]), draw, side="right"))]
    order = np.argsort(type_of, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes.astype(np.int64))])
    picked: list[NDArray[np.intp]] = []
    for t in np.flatnonzero(chosen):
        members = order[starts[t] : starts[t + 1]]
        picked.append(generator.choice(members, size=int(chosen[t]), replace=False))
    panel_local = np.sort(np.concatenate(picked)).astype(np.intp)

    remaining = np.ones(type_of.size, dtype=bool)
    remaining[panel_local] = False
    reserve_local: list[int] = []
    for _ in range(int(reserves)):
        weight = np.where(remaining, type_probability[type_of], 0.0)
        if weight.sum() <= 0:
            weight = remaining.astype(np.float64)
        pick = int(generator.choice(type_of.size, p=weight / weight.sum()))
        reserve_local.append(pick)
        remaining[pick] = False
    return _Draw(
        support,
        lottery_weights,
        type_probability,
        draw,
        panel_local,
        np.asarray(reserve_local, dtype=np.intp),
    )
