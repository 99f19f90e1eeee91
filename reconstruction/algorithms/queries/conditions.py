"""The table of distorted attributes, their specifications, and conditions on them.

Pure module: numpy only.

A table maps attribute names to :class:`DiscreteAttribute` (reported codes and the
channel ``C[i, j] = Pr(reported j | true i)``) or :class:`ContinuousAttribute` (reported
values, noise model, declared range, optional lattice ``step``). A specification
(:class:`DiscreteSpec`, :class:`ContinuousSpec`) is an attribute without its data, which
is all the cell model (:mod:`.cells`) needs. A condition is a conjunction of
:class:`Condition` subconditions ``c_i`` (001_28af1923c784b480.txt, Section IV-A1):
``in`` a set of categories, ``gt``, ``lte`` or ``between`` thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms import (
    NoiseModel,
    validate_stochastic,
)
from privacy.mechanisms.messages import InputError, Message, gettext_noop
from reconstruction.algorithms.continuous import lattice_points

Op = Literal["in", "gt", "lte", "between"]

_DISCRETE_OPS = frozenset({"in"})

_CONTINUOUS_OPS = frozenset({"gt", "lte", "between"})


@dataclass(frozen=True)
class DiscreteAttribute:
    """Reported codes of a binary, nominal or ordinal attribute and its channel.

    Attributes
    ----------
    codes : ndarray of intp, shape (n,)
        Reported categories ``0..k-1``.
    channel : ndarray of shape (k, k)
        ``C[i, j] = Pr(reported j | true i)`` (rows sum to 1).
    """

    codes: NDArray[np.intp]
    channel: NDArray[np.float64]

    def __post_init__(self) -> None:
        matrix = validate_stochastic(self.channel)
        codes = np.asarray(self.codes)
        if codes.ndim != 1:
            raise ValueError(f"codes must be 1-D, got shape {codes.shape}")
        if codes.size and not np.issubdtype(codes.dtype, np.integer):
            raise ValueError("codes must be integers")
        if codes.size and (codes.min() < 0 or codes.max() >= matrix.shape[1]):
            raise ValueError(f"codes must lie in 0..{matrix.shape[1] - 1}")
        object.__setattr__(self, "codes", codes.astype(np.intp, copy=False))
        object.__setattr__(self, "channel", matrix)

    @property
    def k(self) -> int:
        """Number of true categories."""
        return int(self.channel.shape[0])

    @property
    def n(self) -> int:
        return int(self.codes.shape[0])


@dataclass(frozen=True)
class ContinuousAttribute:
    """Reported values of a continuous attribute, its noise model and declared range.

    Attributes
    ----------
    values : ndarray of float64, shape (n,)
        Reported (distorted) values.
    noise : NoiseModel
        The mechanism (``privacy.mechanisms.AdditiveUniform`` etc.).
    low, high : float
        The declared range of the true values.
    step : float, optional
        The true values lie on the lattice ``low, low + step, ..., high`` (1 for whole
        years); the engine then models them there exactly (point masses) and applies
        thresholds on the lattice (:func:`~.continuous.lattice_cells`).
    """

    values: NDArray[np.float64]
    noise: NoiseModel
    low: float
    high: float
    step: float | None = None

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError(f"values must be 1-D, got shape {values.shape}")
        if not np.all(np.isfinite(values)):
            raise ValueError("values must be finite numbers")
        low, high = float(self.low), float(self.high)
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"the declared range needs low < high, got [{self.low}, {self.high}]")
        if not isinstance(self.noise, NoiseModel):
            raise ValueError("noise must be a privacy.mechanisms noise model")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        if self.step is not None:
            lattice_points(low, high, self.step)  # validates the step against the range
            object.__setattr__(self, "step", float(self.step))

    @property
    def n(self) -> int:
        return int(self.values.shape[0])


Attribute = DiscreteAttribute | ContinuousAttribute


@dataclass(frozen=True)
class Condition:
    """One subcondition ``c_i`` on one attribute (001, Section IV-A1).

    Attributes
    ----------
    attribute : str
        Name of the attribute in the table.
    op : {"in", "gt", "lte", "between"}
        ``in``: the code is in ``value`` (discrete attributes); ``gt``: ``v > t``;
        ``lte``: ``v <= t``; ``between``: ``t1 <= v < t2`` with ``value = (t1, t2)``.
    value : set of int, float, or (float, float)
        Stored as a frozenset, a float or a tuple.
    """

    attribute: str
    op: Op
    value: AbstractSet[int] | Sequence[float] | float

    def __post_init__(self) -> None:
        if not isinstance(self.attribute, str) or not self.attribute:
            raise InputError(gettext_noop("condition attribute must be a non-empty name"))
        if self.op == "in":
            raw = self.value
            if isinstance(raw, (str, bytes)) or not isinstance(raw, (Sequence, set, frozenset)):
                raise InputError(
                    gettext_noop("'in' on %(attribute)s needs a set of category codes"),
                    attribute=repr(self.attribute),
                )
            codes = set()
            for item in raw:
                if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
                    raise InputError(
                        gettext_noop(
                            "'in' on %(attribute)s needs integer category codes, got %(item)s"
                        ),
                        attribute=repr(self.attribute),
                        item=repr(item),
                    )
                codes.add(int(item))
            if not codes:
                raise InputError(
                    gettext_noop("'in' on %(attribute)s has an empty set of categories"),
                    attribute=repr(self.attribute),
                )
            object.__setattr__(self, "value", frozenset(codes))
        elif self.op in ("gt", "lte"):
            what = Message(
                gettext_noop("%(op)s threshold on %(attribute)s"),
                {"op": self.op, "attribute": repr(self.attribute)},
            )
            threshold = _number(self.value, what)
            object.__setattr__(self, "value", threshold)
        elif self.op == "between":
            raw_pair = self.value
            if not isinstance(raw_pair, (Sequence, np.ndarray)) or len(raw_pair) != 2:
                raise InputError(
                    gettext_noop("'between' on %(attribute)s needs two thresholds [t1, t2)"),
                    attribute=repr(self.attribute),
                )
            named = {"attribute": repr(self.attribute)}
            t1 = _number(
                raw_pair[0],
                Message(gettext_noop("between lower threshold on %(attribute)s"), named),
            )
            t2 = _number(
                raw_pair[1],
                Message(gettext_noop("between upper threshold on %(attribute)s"), named),
            )
            if not t1 < t2:
                raise InputError(
                    gettext_noop(
                        "contradictory condition: between [%(t1)s, %(t2)s) on %(attribute)s "
                        "is empty (need t1 < t2)"
                    ),
                    t1=t1,
                    t2=t2,
                    attribute=repr(self.attribute),
                )
            object.__setattr__(self, "value", (t1, t2))
        else:
            raise InputError(
                gettext_noop("unknown op %(op)s on %(attribute)s; use in, gt, lte or between"),
                op=repr(self.op),
                attribute=repr(self.attribute),
            )

    @property
    def thresholds(self) -> tuple[float, ...]:
        if self.op in ("gt", "lte"):
            return (cast(float, self.value),)
        if self.op == "between":
            return cast(tuple[float, float], self.value)
        return ()


def _number(value: object, what: Message) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(
            gettext_noop("%(what)s must be a number, got %(value)s"), what=what, value=repr(value)
        )
    number = float(value)
    if not math.isfinite(number):
        raise InputError(
            gettext_noop("%(what)s must be finite, got %(value)s"), what=what, value=repr(value)
        )
    return number


def _continuous_mask(
    values: NDArray[np.float64], conditions: Sequence[Condition]
) -> NDArray[np.bool_]:
    mask = np.ones(values.shape, dtype=bool)
    for cond in conditions:
        if cond.op == "gt":
            mask &= values > cast(float, cond.value)
        elif cond.op == "lte":
            mask &= values <= cast(float, cond.value)
        else:
            t1, t2 = cast(tuple[float, float], cond.value)
            mask &= (values >= t1) & (values < t2)
    return mask


def _discrete_set(conditions: Sequence[Condition]) -> frozenset[int]:
    allowed: frozenset[int] | None = None
    for cond in conditions:
        codes = cast(frozenset[int], cond.value)
        allowed = codes if allowed is None else allowed & codes
    assert allowed is not None
    return allowed


def satisfies(values: Mapping[str, ArrayLike], where: Sequence[Condition]) -> NDArray[np.bool_]:
    """Which rows meet a conjunctive condition, evaluated on the given values as they are.

    On true values this is the truth of a simulation; on reported values it is the naive
    answer that ignores the distortion (001, Section IV-A1: "Based on Table II without
    taking into account the distortion ...").

    Parameters
    ----------
    values : mapping of name -> array of shape (n,)
        Codes for discrete attributes, numbers for continuous ones.
    where : sequence of Condition

    Returns
    -------
    ndarray of bool, shape (n,)
    """
    if not where:
        raise ValueError("empty condition: give at least one subcondition")
    mask: NDArray[np.bool_] | None = None
    for cond in where:
        if cond.attribute not in values:
            raise ValueError(f"unknown attribute {cond.attribute!r} in condition")
        column = np.asarray(values[cond.attribute])
        if cond.op == "in":
            part = np.isin(column, np.fromiter(cast(frozenset[int], cond.value), dtype=np.intp))
        else:
            part = _continuous_mask(column.astype(np.float64), [cond])
        if mask is None:
            mask = part
        elif part.shape != mask.shape:
            raise ValueError("the attributes have different numbers of rows")
        else:
            mask = mask & part
    assert mask is not None
    return mask


def table_size(table: Mapping[str, Attribute]) -> int:
    """Number of rows of a table (every attribute must have the same number, at least 1).

    Raises
    ------
    ValueError
        An empty table, no rows, or attributes of different lengths.
    """
    if not table:
        raise ValueError("the table has no attributes")
    sizes = {name: attr.n for name, attr in table.items()}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"mismatched lengths: the attributes have different row counts {sizes}")
    n = next(iter(sizes.values()))
    if n == 0:
        raise ValueError("the table has no rows")
    return n


def _group(
    table: Mapping[str, Attribute], where: Sequence[Condition]
) -> dict[str, list[Condition]]:
    """Validate a conjunction against the table and group it by attribute (first-seen order)."""
    groups: dict[str, list[Condition]] = {}
    for cond in where:
        if not isinstance(cond, Condition):
            raise ValueError(f"conditions must be Condition objects, got {cond!r}")
        attr = table.get(cond.attribute)
        if attr is None:
            raise ValueError(f"unknown attribute {cond.attribute!r}; known: {sorted(table)}")
        if isinstance(attr, DiscreteAttribute):
            if cond.op not in _DISCRETE_OPS:
                raise ValueError(
                    f"op {cond.op!r} is not defined for the discrete attribute "
                    f"{cond.attribute!r}; use 'in'"
                )
            bad = sorted(c for c in cast(frozenset[int], cond.value) if not 0 <= c < attr.k)
            if bad:
                raise ValueError(
                    f"categories {bad} of {cond.attribute!r} are outside 0..{attr.k - 1}"
                )
        elif cond.op not in _CONTINUOUS_OPS:
            raise ValueError(
                f"op {cond.op!r} is not defined for the continuous attribute "
                f"{cond.attribute!r}; use gt, lte or between"
            )
        groups.setdefault(cond.attribute, []).append(cond)
    for name, conds in groups.items():
        attr = table[name]
        if isinstance(attr, DiscreteAttribute):
            if not _discrete_set(conds):
                raise ValueError(f"contradictory condition on {name!r}: no category meets all")
        else:
            lower, upper, closed_upper = -math.inf, math.inf, False
            for cond in conds:
                if cond.op == "gt":
                    lower = max(lower, cast(float, cond.value))
                elif cond.op == "lte":
                    if cast(float, cond.value) < upper:
                        upper, closed_upper = cast(float, cond.value), True
                else:
                    t1, t2 = cast(tuple[float, float], cond.value)
                    lower = max(lower, t1)
                    if t2 <= upper:
                        upper, closed_upper = t2, False
            if (
                lower >= upper
                or lower >= attr.high
                or (upper < attr.low or (upper == attr.low and not closed_upper))
            ):
                raise ValueError(
                    f"contradictory condition on {name!r}: no value in the declared range "
                    f"[{attr.low}, {attr.high}] meets all of its subconditions"
                )
    return groups


def _check_options(n_boot: int, max_iter: int) -> None:
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2, got {n_boot}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")


def condition_cuts(conditions: Sequence[Condition]) -> list[tuple[float, bool]]:
    """The thresholds of a continuous attribute's conditions, each with its side.

    ``True`` (closed below) for ``lte`` and ``gt``: a value equal to the threshold is
    below the cut; ``False`` for ``between``'s ``[t1, t2)``. It matters only on a lattice
    (:func:`~.continuous.axis_model`).
    """
    return [(t, cond.op != "between") for cond in conditions for t in cond.thresholds]


def condition_label(cond: Condition) -> str:
    if cond.op == "in":
        return f"{cond.attribute} in {sorted(cast(frozenset[int], cond.value))}"
    if cond.op == "between":
        t1, t2 = cast(tuple[float, float], cond.value)
        return f"{cond.attribute} between [{t1:g}, {t2:g})"
    symbol = "<=" if cond.op == "lte" else ">"
    return f"{cond.attribute} {symbol} {cast(float, cond.value):g}"


@dataclass(frozen=True)
class DiscreteSpec:
    """A discrete attribute without its data: the channel ``C[i, j] = Pr(j | i)``."""

    channel: NDArray[np.float64]

    def __post_init__(self) -> None:
        object.__setattr__(self, "channel", validate_stochastic(self.channel))

    @property
    def k(self) -> int:
        return int(self.channel.shape[0])


@dataclass(frozen=True)
class ContinuousSpec:
    """A continuous attribute without its data: noise model and declared range."""

    noise: NoiseModel
    low: float
    high: float
    step: float | None = None

    def __post_init__(self) -> None:
        low, high = float(self.low), float(self.high)
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"the declared range needs low < high, got [{self.low}, {self.high}]")
        if not isinstance(self.noise, NoiseModel):
            raise ValueError("noise must be a privacy.mechanisms noise model")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)


Spec = DiscreteSpec | ContinuousSpec


def spec_of(attribute: Attribute) -> Spec:
    """The specification of an array attribute (its data left out)."""
    if isinstance(attribute, DiscreteAttribute):
        return DiscreteSpec(attribute.channel)
    return ContinuousSpec(attribute.noise, attribute.low, attribute.high, attribute.step)


def _as_attributes(specs: Mapping[str, Spec]) -> dict[str, Attribute]:
    table: dict[str, Attribute] = {}
    for name, spec in specs.items():
        if isinstance(spec, DiscreteSpec):
            table[name] = DiscreteAttribute(np.zeros(0, dtype=np.intp), spec.channel)
        else:
            table[name] = ContinuousAttribute(
                np.zeros(0), spec.noise, spec.low, spec.high, step=spec.step
            )
    return table
