"""The analysis kinds by name: each is one module of :mod:`reconstruction.kinds`.

Everything that needs to know about a kind reads its module's ``KIND`` through this
mapping: the request serializer (kinds, method names, which fields a kind takes), the
API's OpenAPI text, the request path and the worker (:mod:`reconstruction.pipeline`),
the cost model, the query audit, the admin. Adding a kind is one new module in
``reconstruction/kinds/`` and its line below (``AnalysisJob.kind`` is checked against
this mapping, not a list in the database, so no migration is needed).
"""

from __future__ import annotations

from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message
from reconstruction.analysis import AnalysisInputError
from reconstruction.kinds import change, count, distribution, mean, panel, sample
from reconstruction.kinds.base import AnalysisKind

KINDS: dict[str, AnalysisKind] = {
    module.KIND.name: module.KIND for module in (count, mean, distribution, sample, panel, change)
}


def register(kind: AnalysisKind) -> AnalysisKind:
    """Add (or replace) a kind; returns it so it can be used as a value."""
    KINDS[kind.name] = kind
    return kind


def get(name: str) -> AnalysisKind:
    try:
        return KINDS[name]
    except KeyError:
        raise AnalysisInputError(
            {
                "kind": Message(
                    gettext_noop("unknown kind %(kind)s; choose one of %(choices)s"),
                    {"kind": repr(name), "choices": ", ".join(KINDS)},
                )
            }
        ) from None


def kind_choices() -> list[str]:
    """The registered kind names (the OpenAPI ``AnalysisKindEnum``, read when used)."""
    return list(KINDS)


def all_methods() -> tuple[str, ...]:
    """Every method name of every kind, each once (the serializer's choices)."""
    return tuple(dict.fromkeys(m for kind in KINDS.values() for m in kind.methods))


def methods_description() -> str:
    """The methods of each kind for the API documentation."""
    parts = []
    for kind in KINDS.values():
        names = ", ".join(
            f"`{m}`" + (" (default)" if m == kind.default_method else "") for m in kind.methods
        )
        parts.append(f"{kind.name}: {names}")
    return "; ".join(parts) + "."


__all__ = [
    "KINDS",
    "AnalysisKind",
    "all_methods",
    "get",
    "kind_choices",
    "methods_description",
    "register",
]


METHOD_HELP: dict[str, str] = {
    "joint": gettext_noop(
        "fits the questions of the condition together from the distorted answers"
    ),
    "figure3": gettext_noop(
        "gives each resident their most likely true answers, then counts (fast, can be biased)"
    ),
    "naive": gettext_noop("takes the distorted answers as true (for comparison only: biased)"),
    "unbiased": gettext_noop("corrects the average of the distorted numbers for the noise"),
    "overall": gettext_noop("the average of everybody's distorted numbers, corrected"),
    "em_as": gettext_noop("expectation-maximisation, stopped when the estimate settles"),
    "eq": gettext_noop("solves the channel's equations directly (can give negative counts)"),
    "nstops": gettext_noop("NStoPS, for the uniform negative survey"),
    "nstops_i": gettext_noop("NStoPS-I, for negative surveys"),
    "nstops_ii": gettext_noop("NStoPS-II, for the uniform negative survey"),
    "mle": gettext_noop("maximum likelihood, for negative surveys"),
    "em": gettext_noop("expectation-maximisation over intervals of the range"),
    "as": gettext_noop("Agrawal-Srikant reconstruction over intervals of the range"),
    "posterior": gettext_noop("draws by each resident's posterior probability of the condition"),
}
"""One line per method name for people choosing one (the admin's analysis form); a
method missing here is shown by its name."""
