"""One descriptor per privacy mechanism: the only list of mechanisms in the code.

A :class:`Mechanism` says everything the rest of the platform needs to know about one
mechanism: its API ``name``, the question types it serves, its parameters, a short
``label``, the report's plain-language ``sentence`` (a translatable template and how to
fill it), how a client distorts with it (``client``), its ``channel`` (discrete) or noise
model (continuous), the noise variance the builder's preview uses, and its local
differential privacy level ε where one is published.

Read by ``surveys.models`` (the check constraint's lists), ``surveys.schemes``
(validation, channels, noise models, ε), ``surveys.preview`` (margins),
``reconstruction.presentation`` (the report's sentence) and ``privacy.client`` (the
simulated devices). A new mechanism is one new entry here.

Pure: numpy only (no Django); templates are marked with :func:`gettext_noop`, and the
service layer translates them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from privacy.mechanisms.channels import (
    custom_channel,
    manual_negative,
    negative_gaussian,
    negative_uniform,
    randomised_response,
)
from privacy.mechanisms.messages import InputError, gettext_noop
from privacy.mechanisms.noise import (
    AdditiveGaussian,
    AdditiveLaplace,
    AdditiveStaircase,
    AdditiveUniform,
    NoNoise,
    RetentionReplacement,
)

__all__ = [
    "CONTINUOUS",
    "DISCRETE",
    "PRESET_EPSILON",
    "Mechanism",
    "continuous_mechanism",
    "discrete_mechanism",
    "noise_model",
]

# A channel entry is 0 or at least this (issue 27: 5e-324 left a report running for ever).
MIN_CHANNEL_ENTRY = 1e-12
Family = Literal["discrete", "continuous"]
# How a client distorts an answer: sample row i of the published channel, send the answer
# as it is (no distortion, or the resident's own "not me" pick), or add noise.
ClientRule = Literal["channel", "as_is", "noise"]
Params = Mapping[str, Any]
NoiseModelType = (
    AdditiveUniform
    | AdditiveGaussian
    | AdditiveLaplace
    | AdditiveStaircase
    | RetentionReplacement
    | NoNoise
)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Mechanism:
    """What one mechanism is, for every layer that needs to know.

    Attributes
    ----------
    name : str
        The API name (``mechanism.name``).
    family : "discrete" or "continuous"
        The question types it serves (binary/nominal/ordinal, or continuous).
    params : tuple of str
        The parameters the API accepts, in order.
    label : str
        A short name for people (translatable template).
    sentence : str
        The report's plain-language sentence of what the device did (translatable
        ``%``-template); :meth:`sentence_params` fills it from the mechanism's JSON.
    client : "channel", "as_is" or "noise"
        How a client distorts: sample the published channel, send as given, add noise.
    negative : bool
        A negative survey (needs three or more categories).
    ordinal_only : bool
        Needs ordered categories.
    model_params : tuple of str
        The noise model's constructor parameters (continuous; ``low``/``high`` come from
        the question's range).
    rank : int
        Its place in the survey builder's list (most recommended first).
    param_labels : mapping of str to str
        A short label (translatable template) for each parameter the builder's "custom"
        privacy shows (a randomised response's full ``matrix`` is API-only).
    protection : str
        What protects the resident where ε says nothing or is not published (negative
        surveys, noise without a bounded ε): a translatable ``%``-template filled by
        :meth:`protection_params`; empty where ε or :attr:`sentence` says it.
    """

    name: str
    family: Family
    params: tuple[str, ...]
    label: str
    sentence: str
    client: ClientRule
    negative: bool = False
    ordinal_only: bool = False
    model: type | None = None
    model_params: tuple[str, ...] = ()
    rank: int = 100
    param_labels: Mapping[str, str] = field(default_factory=dict)
    protection: str = ""
    _fill: Callable[[Params], dict[str, str]] = field(default=lambda m: {}, repr=False)
    _presets: Callable[[float, int, tuple[float, float] | None], dict[str, float]] | None = field(
        default=None, repr=False
    )
    _protect: Callable[[Params, tuple[float, float] | None], dict[str, str]] = field(
        default=lambda m, value_range: {}, repr=False
    )
    _channel: Callable[[int, Params, Any], NDArray[np.float64]] | None = field(
        default=None, repr=False
    )
    _variance: Callable[[Params], float] | None = field(default=None, repr=False)

    @property
    def discrete(self) -> bool:
        return self.family == "discrete"

    @property
    def has_presets(self) -> bool:
        """Whether the builder offers "strong / balanced / light" for it."""
        return self._presets is not None

    def preset(
        self, level: str, k: int = 2, value_range: tuple[float, float] | None = None
    ) -> dict[str, float]:
        """The parameters of a builder preset (``strong``, ``balanced`` or ``light``: ε of
        :data:`PRESET_EPSILON`, or the noise of the same size where ε is not bounded) for a
        question of ``k`` categories or on ``value_range``; ``{}`` without presets."""
        if self._presets is None:
            return {}
        if level not in PRESET_EPSILON:
            raise InputError(
                gettext_noop("unknown privacy level %(level)s; choose one of %(levels)s"),
                level=repr(level),
                levels=", ".join(PRESET_EPSILON),
            )
        return self._presets(PRESET_EPSILON[level], max(2, int(k)), value_range)

    def protection_params(
        self, mechanism: Params, value_range: tuple[float, float] | None = None
    ) -> dict[str, str]:
        """The values of :attr:`protection`'s placeholders."""
        return self._protect(mechanism, value_range)

    def sentence_params(self, mechanism: Params) -> dict[str, str]:
        """The values of :attr:`sentence`'s placeholders for a mechanism's JSON."""
        return self._fill(mechanism)

    def channel(
        self, k: int, params: Params, pairs: NDArray[np.integer] | None = None
    ) -> NDArray[np.float64]:
        """The channel ``C[i, j] = Pr(reported j | true i)`` of a discrete mechanism over
        ``k`` categories (``pairs``: a ``negative_manual`` question's calibration codes)."""
        if self._channel is None:
            raise ValueError(f"{self.name} is not a discrete mechanism")
        return self._channel(k, params, pairs)

    def noise(self, value_range: tuple[float, float], params: Params) -> NoiseModelType:
        """The noise model of a continuous mechanism on ``value_range``."""
        if self.model is None:
            raise ValueError(f"{self.name} is not a continuous mechanism")
        given = dict(params)
        if "low" in self.model_params:
            given["low"], given["high"] = value_range
        return noise_model(self.name, **given)

    def noise_variance(self, params: Params) -> float | None:
        """Variance of the added noise (continuous, additive), for the builder's margins;
        ``None`` where the mechanism is not additive (retention replacement)."""
        if self._variance is None:
            return None
        return float(self._variance(params))

    def epsilon(
        self,
        params: Params,
        value_range: tuple[float, float],
        resolution: float | None = None,
    ) -> float | None:
        """Pure ε of local differential privacy of a continuous mechanism on its range, or
        ``None`` where it is unbounded (or not established).

        * ``additive_staircase`` whose sensitivity covers the range: its ``epsilon``.
        * On a reporting grid (``resolution``; issue 31), where reports are exact grid
          values:

          - ``additive_laplace``: ``(high - low) / scale``. A true value is rounded at
            random to one of the two grid points around it, both in ``0..N``, and discrete
            Laplace noise of ``t = scale / resolution`` steps changes by at most
            ``e^(1/t)`` per step, so any two true values' report laws differ by at most
            ``e^(N/t)``, ``N = (high - low) / resolution``.
          - ``retention_replacement``: ``ln(1 + retain * P / (1 - retain))`` with ``P``
            the range's grid points. A report ``m`` has probability at most ``retain +
            (1 - retain) / P`` (kept) and at least ``(1 - retain) / P`` (drawn).
            Unbounded at ``retain = 1``.

        * Unbounded: Gaussian noise (the discrete Gaussian is concentrated (zCDP) but has
          no pure ε: its likelihood ratio grows without bound in the tails), uniform noise
          (reports near one end are impossible from the other end), and every mechanism
          off the grid (floating-point noise leaks the true value in its last bits,
          Mironov 2012; legacy questions).
        """
        if self.model is AdditiveStaircase:
            noise = self.noise(value_range, params)
            assert isinstance(noise, AdditiveStaircase)
            return noise.local_epsilon(value_range[0], value_range[1])
        if resolution is None or not (math.isfinite(resolution) and resolution > 0):
            return None
        low, high = float(value_range[0]), float(value_range[1])
        if self.model is AdditiveLaplace:
            return (high - low) / float(params["scale"])
        if self.model is RetentionReplacement:
            retain = float(params["retain"])
            if not 0.0 < retain < 1.0:
                return None
            points = round((high - low) / resolution) + 1
            return math.log1p(retain * points / (1.0 - retain))
        return None


# --------------------------------------------------------------------------- channels


def _identity(k: int, params: Params, pairs: Any) -> NDArray[np.float64]:
    return np.eye(k)


def _randomised_response(k: int, params: Params, pairs: Any) -> NDArray[np.float64]:
    if ("retain" in params) == ("matrix" in params):
        raise InputError(
            gettext_noop("give either retain (a probability) or matrix (k x k), not both")
        )
    if "retain" in params:
        return randomised_response(k, params["retain"])
    matrix = params["matrix"]
    if not isinstance(matrix, list) or not all(
        isinstance(row, list) and all(_number(v) for v in row) for row in matrix
    ):
        raise InputError(gettext_noop("matrix must be a list of rows of numbers"))
    shape = (len(matrix), len(matrix[0]) if matrix else 0)
    if len(matrix) != k or any(len(row) != k for row in matrix):
        raise InputError(
            gettext_noop("matrix must be %(k)s x %(k)s (one row per category), got %(shape)s"),
            k=k,
            shape=shape,
        )
    tiny = [v for row in matrix for v in row if 0 < v < MIN_CHANNEL_ENTRY]
    if tiny:  # issue 27: such entries only break the engine's arithmetic
        raise InputError(
            gettext_noop("matrix entries must be 0 or at least %(limit)s, got %(value)s"),
            limit=f"{MIN_CHANNEL_ENTRY:g}",
            value=f"{tiny[0]:g}",
        )
    return custom_channel(matrix)


def _negative_gaussian(k: int, params: Params, pairs: Any) -> NDArray[np.float64]:
    if "sigma" not in params:
        raise InputError(gettext_noop("needs sigma (in category steps)"))
    return negative_gaussian(k, params["sigma"])


# --------------------------------------------------------------------------- sentences

_NOISE_SENTENCE = gettext_noop(
    "Each resident's device added random noise (typically ±%(size)s) to the number "
    "before sending it."
)


def _percent(mechanism: Params) -> dict[str, str]:
    return {"retain": f"{100 * float(mechanism['retain']):.0f}"}


def _staircase_std(mechanism: Params) -> float:
    return AdditiveStaircase(float(mechanism["epsilon"]), float(mechanism["sensitivity"])).std


# --------------------------------------------------------------------------- builder presets

PRESET_EPSILON: dict[str, float] = {"strong": 1.0, "balanced": 2.0, "light": 3.0}
"""The survey builder's plain-words privacy levels as ε of local differential privacy
(below 1 is strong, above 3 weak). A mechanism without a bounded ε gets noise of the same
size: its scale is the range's width divided by this number."""


def _width(value_range: tuple[float, float] | None) -> float:
    if value_range is None:
        raise InputError(gettext_noop("a continuous question needs its range for a preset"))
    return float(value_range[1]) - float(value_range[0])


def _rr_preset(eps: float, k: int, value_range: Any) -> dict[str, float]:
    # ε = ln(p (k - 1) / (1 - p)) for randomised response over k categories.
    return {"retain": round(math.exp(eps) / (math.exp(eps) + k - 1), 4)}


def _noise_size(eps: float, value_range: tuple[float, float] | None) -> float:
    return float(f"{_width(value_range) / eps:.3g}")


def _laplace_protection(mechanism: Params, value_range: Any) -> dict[str, str]:
    scale = float(mechanism["scale"])
    fill = {"size": f"{scale * math.sqrt(2):.3g}", "ratio": f"{math.exp(1.0):.3g}"}
    fill["distance"] = f"{scale:.3g}"
    fill["epsilon"] = "—" if value_range is None else f"{_width(value_range) / scale:.2f}"
    return fill


_NEGATIVE_PROTECTION = gettext_noop(
    "What protects the resident: the reported answer is one they did not give, so it "
    "only rules one answer out and never says which of the others is theirs. There is "
    "no bounded privacy level (ε) for a negative survey; the more categories, the "
    "better it hides."
)

_NONE_SENTENCE = gettext_noop(
    "Answers to this question were sent as given: they are not protected by "
    "distortion, so only publish them if they are not sensitive."
)
_NEGATIVE_SENTENCE = gettext_noop(
    "Each resident's device sent an answer that is not the resident's own, chosen "
    "at random among the others, so a reported answer only says what the resident "
    "is not."
)

DISCRETE: dict[str, Mechanism] = {
    m.name: m
    for m in (
        Mechanism(
            "none", "discrete", (), gettext_noop("No distortion"), _NONE_SENTENCE, "as_is",
            rank=90, _channel=_identity,
        ),
        Mechanism(
            "randomised_response",
            "discrete",
            ("retain", "matrix"),
            gettext_noop("Randomised response"),
            gettext_noop(
                "Each resident's device kept the true answer with probability %(retain)s%% "
                "and otherwise sent another answer chosen at random, so no single answer "
                "can be taken at face value."
            ),
            "channel",
            rank=0,
            param_labels={"retain": gettext_noop("Chance of keeping the true answer")},
            _fill=_percent,
            _channel=_randomised_response,
            _presets=_rr_preset,
        ),
        Mechanism(
            "negative_uniform", "discrete", (), gettext_noop("Negative survey (uniform)"),
            _NEGATIVE_SENTENCE, "channel", negative=True, rank=10,
            protection=_NEGATIVE_PROTECTION,
            _channel=lambda k, params, pairs: negative_uniform(k),
        ),
        Mechanism(
            "negative_gaussian", "discrete", ("sigma",),
            gettext_noop("Negative survey (Gaussian)"), _NEGATIVE_SENTENCE, "channel",
            negative=True, ordinal_only=True, _channel=_negative_gaussian, rank=20,
            param_labels={"sigma": gettext_noop("Spread (in category steps)")},
            protection=_NEGATIVE_PROTECTION,
            # A wider spread reaches further categories: more private.
            _presets=lambda eps, k, value_range: {"sigma": 2.0 / eps},
        ),
        Mechanism(
            "negative_manual",
            "discrete",
            (),
            gettext_noop("Negative survey (chosen by the resident)"),
            gettext_noop(
                "Each resident chose an answer that is not their own, so a reported answer only "
                "says what the resident is not."
            ),
            "as_is",
            negative=True,
            rank=30,
            protection=_NEGATIVE_PROTECTION,
            _channel=lambda k, params, pairs: manual_negative(k, pairs),
        ),
    )
}  # fmt: skip
# randomised_response with a full matrix says something else (see :func:`report_sentence`).
MATRIX_SENTENCE = gettext_noop(
    "Each resident's device replaced the true answer by a random one following "
    "a published table of probabilities, so no single answer can be taken at "
    "face value."
)

CONTINUOUS: dict[str, Mechanism] = {
    m.name: m
    for m in (
        Mechanism(
            "none", "continuous", (), gettext_noop("No distortion"), _NONE_SENTENCE, "as_is",
            model=NoNoise, rank=90,
        ),
        Mechanism(
            "additive_uniform",
            "continuous",
            ("half_width",),
            gettext_noop("Uniform noise"),
            gettext_noop(
                "Each resident's device added a random amount of up to ±%(size)s to the number "
                "before sending it."
            ),
            "noise",
            model=AdditiveUniform,
            model_params=("half_width",),
            rank=60,
            param_labels={"half_width": gettext_noop("Noise up to ± (in the answer's units)")},
            _presets=lambda eps, k, value_range: {"half_width": _noise_size(eps, value_range)},
            _fill=lambda m: {"size": f"{float(m['half_width']):g}"},
            _variance=lambda p: float(p["half_width"]) ** 2 / 3.0,
        ),
        Mechanism(
            "additive_gaussian", "continuous", ("sigma",), gettext_noop("Gaussian noise"),
            _NOISE_SENTENCE, "noise", model=AdditiveGaussian, model_params=("sigma",), rank=50,
            param_labels={"sigma": gettext_noop("Typical noise (standard deviation)")},
            _presets=lambda eps, k, value_range: {"sigma": _noise_size(eps, value_range)},
            _fill=lambda m: {"size": f"{float(m['sigma']):g}"},
            _variance=lambda p: float(p["sigma"]) ** 2,
        ),
        Mechanism(
            "additive_laplace", "continuous", ("scale",), gettext_noop("Laplace noise"),
            _NOISE_SENTENCE, "noise", model=AdditiveLaplace, model_params=("scale",), rank=40,
            param_labels={"scale": gettext_noop("Noise scale (in the answer's units)")},
            protection=gettext_noop(
                "What protects the resident: the number sent is the true one plus random "
                "noise of typically ±%(size)s. Seeing it makes two true values %(distance)s "
                "apart at most %(ratio)s times as likely as each other; over the whole range "
                "that is a privacy level of ε = %(epsilon)s."
            ),
            _presets=lambda eps, k, value_range: {"scale": _noise_size(eps, value_range)},
            _protect=_laplace_protection,
            _fill=lambda m: {"size": f"{float(m['scale']) * math.sqrt(2):.3g}"},
            _variance=lambda p: 2.0 * float(p["scale"]) ** 2,
        ),
        Mechanism(
            "additive_staircase", "continuous", ("epsilon", "sensitivity"),
            gettext_noop("Staircase noise"), _NOISE_SENTENCE, "noise",
            model=AdditiveStaircase, model_params=("epsilon", "sensitivity"), rank=45,
            param_labels={
                "epsilon": gettext_noop("Privacy level ε"),
                "sensitivity": gettext_noop("Distance protected (in the answer's units)"),
            },
            _presets=lambda eps, k, value_range: {
                "epsilon": eps, "sensitivity": _width(value_range)
            },
            _fill=lambda m: {"size": f"{_staircase_std(m):.3g}"},
            _variance=lambda p: _staircase_std(p) ** 2,
        ),
        Mechanism(
            "retention_replacement",
            "continuous",
            ("retain",),
            gettext_noop("Retention replacement"),
            gettext_noop(
                "Each resident's device kept the true number with probability %(retain)s%% and "
                "otherwise sent a number drawn at random from the whole range."
            ),
            "noise",
            model=RetentionReplacement,
            model_params=("retain", "low", "high"),
            rank=70,
            param_labels={"retain": gettext_noop("Chance of keeping the true number")},
            _presets=lambda eps, k, value_range: {"retain": round(eps / 4.0, 2)},
            _fill=_percent,
        ),
    )
}  # fmt: skip
NEGATIVE = tuple(name for name, m in DISCRETE.items() if m.negative)


def discrete_mechanism(name: str) -> Mechanism | None:
    return DISCRETE.get(name)


def continuous_mechanism(name: str) -> Mechanism | None:
    return CONTINUOUS.get(name)


def report_sentence(mechanism: Params) -> tuple[str, dict[str, str]] | None:
    """The report's sentence for a mechanism's JSON: (template, parameters), or ``None``
    for an unknown name."""
    name = mechanism.get("name")
    if name == "randomised_response" and "retain" not in mechanism:
        return MATRIX_SENTENCE, {}
    found = DISCRETE.get(name) or CONTINUOUS.get(name)  # type: ignore[arg-type]
    if found is None:
        return None
    return found.sentence, found.sentence_params(mechanism)


def noise_model(name: str, **params: float) -> NoiseModelType:
    """Build a noise model from its API name and parameters.

    Parameters
    ----------
    name : str
        ``none``, ``additive_uniform`` (``half_width``), ``additive_gaussian``
        (``sigma``), ``additive_laplace`` (``scale``), ``additive_staircase``
        (``epsilon``, ``sensitivity``; an extension of /work/shared/design/api.md, see
        :class:`AdditiveStaircase`) or ``retention_replacement`` (``retain``, ``low``,
        ``high``), as in /work/shared/design/api.md.
    **params
        The mechanism's parameters, exactly those listed.

    Raises
    ------
    ValueError
        Unknown name, missing or unexpected parameter, or an invalid value (the message
        names the parameter).
    """
    if name not in CONTINUOUS:
        raise InputError(
            gettext_noop("unknown noise model %(name)s; expected one of %(names)s"),
            name=repr(name),
            names=str(sorted(CONTINUOUS)),
        )
    mechanism = CONTINUOUS[name]
    expected = mechanism.model_params
    missing = [key for key in expected if key not in params]
    if missing:
        raise InputError(
            gettext_noop("%(name)s needs parameter(s) %(missing)s"), name=name, missing=str(missing)
        )
    unexpected = sorted(set(params) - set(expected))
    if unexpected:
        raise InputError(
            gettext_noop("%(name)s does not take parameter(s) %(unexpected)s"),
            name=name,
            unexpected=str(unexpected),
        )
    assert mechanism.model is not None
    model: NoiseModelType = mechanism.model(**{key: params[key] for key in expected})
    return model
