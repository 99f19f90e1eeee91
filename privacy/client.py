"""Simulated residents' devices, for the demo, the tests and the benchmarks.

Portals use the installable package ``consultation_client`` (``clients/python/``: only
``requests``, the operating system's randomness). This module is the server side's
vectorised twin: it distorts a whole simulated population in a few array operations with
the engine's own functions (:func:`privacy.mechanisms.distort_codes` and the noise models),
from an explicit, seedable ``numpy.random.Generator``, so simulations are reproducible and
use exactly the code the estimators assume. :class:`PortalClient` (retries, bulk batches) is
re-exported from the package. The REST contract is the OpenAPI schema at ``/api/schema/``.

No Django import here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from consultation_client import ClientError, PortalClient, fetch_scheme
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms import CONTINUOUS, DISCRETE, distort_codes, noise_model
from privacy.mechanisms.grid import grid_noise

__all__ = [
    "ClientError",
    "PortalClient",
    "distort_answers",
    "distort_table",
    "fetch_scheme",
    "table_responses",
]

# Discrete mechanisms the client samples from the published channel, and those whose
# answer is sent as it is (negative_manual: the resident's own "not me" choice).
CHANNEL_MECHANISMS = frozenset(m.name for m in DISCRETE.values() if m.client == "channel")
AS_IS_MECHANISMS = frozenset(m.name for m in DISCRETE.values() if m.client == "as_is")
DISCRETE_TYPES = frozenset({"binary", "nominal", "ordinal"})

Scheme = Mapping[str, Any]


# --- distortion -----------------------------------------------------------------------


def _questions(scheme: Scheme) -> dict[str, Mapping[str, Any]]:
    questions = scheme.get("questions") if isinstance(scheme, Mapping) else None
    if not isinstance(questions, list):
        raise ValueError("not a published scheme: 'questions' is missing")
    return {q["key"]: q for q in questions}


def _fail(question: Mapping[str, Any], message: str) -> ValueError:
    return ValueError(f"question {question.get('key')!r}: {message}")


def _distort_discrete(
    question: Mapping[str, Any], column: NDArray[Any], rng: np.random.Generator
) -> NDArray[np.str_]:
    categories = list(question.get("categories") or [])
    if len(categories) < 2:
        raise _fail(question, "a discrete question needs at least two categories")
    name = question["mechanism"]["name"]
    if name not in CHANNEL_MECHANISMS | AS_IS_MECHANISMS:
        raise _fail(question, f"unknown mechanism {name!r} for a {question['type']} question")
    # Labels only: codes would be ambiguous for labels such as "1".."5".
    if column.dtype.kind not in "UO":
        raise _fail(
            question, f"answers must be category labels (strings), got dtype {column.dtype}"
        )
    labels, inverse = np.unique(column, return_inverse=True)
    position = {label: code for code, label in enumerate(categories)}
    unknown = [label for label in labels.tolist() if label not in position]
    if unknown:
        raise _fail(question, f"unknown categories {unknown[:5]!r}; expected one of {categories!r}")
    # One dictionary look-up per distinct label, then a gather: no loop over residents.
    codes = np.asarray([position[label] for label in labels.tolist()], dtype=np.intp)[inverse]
    names = np.asarray(categories)
    if name in AS_IS_MECHANISMS:
        return names[codes]
    channel = question.get("channel")
    if channel is None or np.shape(channel) != (len(categories), len(categories)):
        raise _fail(
            question, f"the scheme must carry a {len(categories)}x{len(categories)} channel"
        )
    try:
        return names[distort_codes(codes, channel, rng)]
    except ValueError as exc:
        raise _fail(question, str(exc)) from None


def _noise(question: Mapping[str, Any]) -> Any:
    params = {k: v for k, v in question["mechanism"].items() if k != "name"}
    name = question["mechanism"]["name"]
    mechanism = CONTINUOUS.get(name)
    if mechanism is not None and "low" in mechanism.model_params:
        params["low"], params["high"] = _range(question)
    try:
        model = noise_model(name, **params)
        grid = question.get("grid")
        if grid:  # a survey created under the reporting grid: its discrete law
            return grid_noise(model, float(grid["origin"]), float(grid["resolution"]))
        return model
    except ValueError as exc:
        raise _fail(question, str(exc)) from None


def _range(question: Mapping[str, Any]) -> tuple[float, float]:
    bounds = question.get("range")
    if not (isinstance(bounds, list | tuple) and len(bounds) == 2):
        raise _fail(question, f"needs a range [low, high], got {bounds!r}")
    return float(bounds[0]), float(bounds[1])


def _distort_continuous(
    question: Mapping[str, Any], column: NDArray[Any], rng: np.random.Generator
) -> NDArray[np.float64]:
    model = _noise(question)
    if column.dtype.kind not in "iuf":
        raise _fail(question, f"answers must be numbers, got dtype {column.dtype}")
    values = column.astype(np.float64)
    if not np.all(np.isfinite(values)):
        raise _fail(question, "answers must be finite numbers")
    if question.get("range") is not None:
        low, high = _range(question)
        outside = (values < low) | (values > high)
        if np.any(outside):
            raise _fail(
                question, f"answer {values[outside][0]!r} is outside the range [{low}, {high}]"
            )
    return np.asarray(model.distort(values, rng), dtype=np.float64)


def distort_table(
    scheme: Scheme, columns: Mapping[str, ArrayLike], rng: np.random.Generator
) -> dict[str, NDArray[Any]]:
    """Distort the true answers of many residents at once, as their devices would.

    Parameters
    ----------
    scheme : mapping
        A published scheme (``GET /api/v1/surveys/{id}/scheme/``).
    columns : mapping of str to array_like of shape (n,)
        True answers by question key, one entry per resident: category labels for
        discrete questions, numbers for continuous ones. For ``negative_manual``
        questions the column holds the residents' own chosen negative categories.
    rng : numpy.random.Generator
        Source of randomness; the same seed gives the same table.

    Returns
    -------
    dict of str to ndarray of shape (n,)
        Labels (discrete) or floats (continuous) to send, by question key.

    Raises
    ------
    ValueError
        Unknown question key, columns of different lengths or not 1-D, an unknown
        category, a non-finite or out-of-range number, an unknown mechanism, or a
        discrete scheme entry without its channel.
    """
    questions = _questions(scheme)
    arrays = {key: np.asarray(column) for key, column in columns.items()}
    lengths = {array.shape for array in arrays.values()}
    if len(lengths) > 1 or any(len(shape) != 1 for shape in lengths):
        raise ValueError(f"columns must be 1-D and of equal length, got shapes {sorted(lengths)}")
    distorted: dict[str, NDArray[Any]] = {}
    for key, column in arrays.items():
        question = questions.get(key)
        if question is None:
            raise ValueError(f"unknown question {key!r} for survey {scheme.get('survey')}")
        if question.get("type") == "continuous":
            distorted[key] = _distort_continuous(question, column, rng)
        elif question.get("type") in DISCRETE_TYPES:
            distorted[key] = _distort_discrete(question, column, rng)
        else:
            raise _fail(question, f"unknown question type {question.get('type')!r}")
    return distorted


def distort_answers(
    scheme: Scheme, answers: Mapping[str, Any], rng: np.random.Generator
) -> dict[str, str | float]:
    """Distort one resident's answers ``{question key: true answer}``.

    The same as :func:`distort_table` with one row; returns plain ``str``/``float``
    values ready for :meth:`PortalClient.submit`. Unlike the browser library this
    does not memoise: a portal backend that lets a resident answer again must keep the
    first distorted answers itself (permanent randomisation).
    """
    for key, value in answers.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float | np.generic):
            raise ValueError(
                f"answer to {key!r} must be a category label or a number, got {value!r}"
            )
    table = distort_table(scheme, {key: [value] for key, value in answers.items()}, rng)
    return {key: column[0].item() for key, column in table.items()}


def table_responses(
    participants: ArrayLike, distorted: Mapping[str, ArrayLike]
) -> list[dict[str, Any]]:
    """Turn a distorted table into response objects for :meth:`PortalClient.submit_bulk`."""
    references = np.asarray(participants).tolist()
    columns = {key: np.asarray(column).tolist() for key, column in distorted.items()}
    if any(len(column) != len(references) for column in columns.values()):
        raise ValueError("every column needs one answer per participant")
    return [
        {"participant": reference, "answers": {key: column[row] for key, column in columns.items()}}
        for row, reference in enumerate(references)
    ]
