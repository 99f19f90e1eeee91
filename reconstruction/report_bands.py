"""A report's bands of a continuous question, with disclosure control (issue 32, item 8).

The report page shows a continuous question in round bands whose intervals are useful
(:func:`reconstruction.algorithms.bands.choose_bands`); the single values or intervals the
engine reconstructed stay in the report's JSON and its export (the full lattice). Every
band is judged like any published cell (:mod:`reconstruction.disclosure`: primary and
complementary suppression on the bands' own intervals), and a band that holds hidden
cells of the lattice beside shown ones is hidden too unless their sum (derivable from the
band) is itself publishable or provably empty.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from privacy.mechanisms import cellkey
from reconstruction import disclosure
from reconstruction.algorithms.bands import Bands, choose_bands, sum_interval
from reconstruction.algorithms.continuous import IntervalReconstruction
from reconstruction.analysis import interval_json
from surveys.condition_counts import KeyedCells


def band_payload(
    result: IntervalReconstruction,
    *,
    low: float,
    high: float,
    step: float | None,
    min_cell: int,
    exact: bool,
    hidden_cells: Sequence[bool],
    keyed: KeyedCells | None = None,
) -> dict[str, Any]:
    """The bands of a continuous question's reconstruction as the report stores them.

    ``step``: the lattice step of the cells (a declared step, or 1 for whole numbers
    detected), ``None`` for intervals; the labels read "16-19" on a lattice, "[20, 25)"
    otherwise. ``exact``: answers collected undistorted (counts, not estimates).
    ``keyed``: the cells' true counts and key sums (a register, issue 26): each band is
    then a cell of its own, published with its cell key (its cells' key sums added) and
    judged on that; a band holding hidden cells beside shown ones is hidden (the band
    minus its shown cells would be their sum).
    """
    counts = np.asarray(result.counts, dtype=np.float64)
    replicates = None if exact else result.replicates
    bands = choose_bands(result.edges, counts, replicates, low=low, high=high)
    if keyed is not None:
        bands, hidden = _keyed_bands(bands, keyed, min_cell, np.asarray(hidden_cells, bool))
        total = float(cellkey.perturbed_count(keyed.total, keyed.total_key_sum))
    else:
        hidden = _hidden_bands(bands, replicates, counts, min_cell, np.asarray(hidden_cells, bool))
        total = float(counts.sum())
    return {
        "edges": [float(e) for e in bands.edges],
        "labels": band_labels(bands.edges, low=low, high=high, step=step),
        "width": bands.width,
        "counts": [None if h else float(c) for c, h in zip(bands.counts, hidden, strict=True)],
        "proportions": [
            None if h or not total else float(c) / total
            for c, h in zip(bands.counts, hidden, strict=True)
        ],
        "ci95": [
            None if h else interval_json(pair) for pair, h in zip(bands.ci95, hidden, strict=True)
        ],
        "suppressed": [bool(h) for h in hidden],
        "cells": [[int(f), int(t)] for f, t in zip(bands.first, bands.last, strict=True)],
    }


def _keyed_bands(
    bands: Bands, keyed: KeyedCells, min_cell: int, hidden_cells: np.ndarray[Any, Any]
) -> tuple[Bands, np.ndarray[Any, np.dtype[np.bool_]]]:
    published, mixed = [], []
    for first, last in zip(bands.first, bands.last, strict=True):
        inside = slice(int(first), int(last) + 1)
        count = int(keyed.counts[inside].sum())
        key_sum = sum(int(k) for k in keyed.key_sums[inside])
        published.append(float(cellkey.perturbed_count(count, key_sum)))
        held = hidden_cells[inside]
        mixed.append(bool(held.any() and not held.all()))
    bounds = np.array([cellkey.bounds(v) for v in published], dtype=np.float64).reshape(-1, 2)
    bounds[np.asarray(mixed, dtype=bool), 0] = -1.0  # hide it
    values = np.asarray(published, dtype=np.float64)
    ci95 = np.array([cellkey.bounds(float(v)) for v in values], dtype=np.float64).reshape(-1, 2)
    moved = dataclasses.replace(bands, counts=values, ci95=ci95)
    return moved, disclosure.hidden_cells(values, min_cell, bounds)


def _hidden_bands(
    bands: Bands,
    replicates: Any,
    counts: np.ndarray[Any, Any],
    min_cell: int,
    hidden_cells: np.ndarray[Any, Any],
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    bounds = np.array(bands.ci95, dtype=np.float64)
    for j, (first, last) in enumerate(zip(bands.first, bands.last, strict=True)):
        inside = np.arange(first, last + 1)
        hidden = inside[hidden_cells[inside]]
        if hidden.size == 0 or hidden.size == inside.size:
            continue
        # The band minus its shown cells gives the hidden cells' sum.
        pair = sum_interval(replicates, hidden, float(counts[hidden].sum()))
        if not (disclosure.publishable(pair, min_cell) or pair[1] < 0.5):
            bounds[j, 0] = min(bounds[j, 0], -1.0)  # not publishable: hide the band
    return disclosure.hidden_cells(bands.counts, min_cell, bounds)


def band_labels(
    edges: Sequence[float], *, low: float, high: float, step: float | None
) -> list[str]:
    """Labels of bands ``[edges[j], edges[j+1])`` clipped to the range: "16-19" on a
    lattice of ``step``, "[20, 25)" on intervals."""
    out = []
    for a, b in itertools.pairwise(edges):
        first, end = max(float(a), low), min(float(b), high)
        if step is not None:
            last = min(float(b) - step, high) if float(b) <= high else high
            out.append(f"{first:g}\N{EN DASH}{last:g}" if last > first else f"{first:g}")
        else:
            out.append(f"[{first:g}, {end:g})")
    return out
