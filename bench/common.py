"""Shared helpers for the benchmarks in bench/: timing, the results table, the exit status.

Every figure a benchmark prints is measured in the same run; a baseline is either measured
in the same run (another implementation, a numpy primitive, the previous method) or it is
a fixed target, and the table says which. Usage::

    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.common import Table, median_time

    table = Table("em_as on 10^7 codes")
    ours = median_time(lambda: em_as(counts, channel, ci=False))
    base = median_time(lambda: np.bincount(codes))
    table.add("em_as estimate", ours, unit="s", baseline=base, baseline_name="np.bincount",
              target="<= 1.5x baseline", ok=ours <= 1.5 * base)
    table.add("bootstrap interval", t, unit="s", target="< 0.1 s", ok=t < 0.1)
    table.add("iterations", 12)                     # informative: no target, never fails
    sys.exit(table.finish())                        # prints, records, 1 if a target was missed

``finish`` prints the table and, when ``bench/run`` set ``BENCH_SUMMARY`` to a file path,
appends the rows to it as JSON lines so ``bench/run`` can print one summary table for every
benchmark at the end. Several tables may be printed; pass them all to ``finish_all``.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["Row", "Table", "finish_all", "median_time", "timings"]


def timings(function: Callable[[], object], repeat: int = 5, warmup: int = 1) -> list[float]:
    """Wall-clock seconds of ``repeat`` calls of ``function`` after ``warmup`` untimed calls."""
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


def median_time(function: Callable[[], object], repeat: int = 5, warmup: int = 1) -> float:
    """Median wall-clock seconds of ``repeat`` calls (after ``warmup`` untimed calls).

    Time our code and every peer with the same ``repeat`` and ``warmup`` so that a ratio
    compares like with like.
    """
    return statistics.median(timings(function, repeat=repeat, warmup=warmup))


def _format(value: object, unit: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}{' ' + unit if unit else ''}"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if unit == "%":
            return f"{value:.1%}"
        if unit == "s" and abs(value) < 1:
            return f"{value * 1e3:.1f} ms"
        magnitude = abs(value)
        text = f"{value:.3g}" if magnitude < 100 else f"{value:,.0f}"
        return f"{text}{' ' + unit if unit else ''}"
    return str(value)


@dataclass
class Row:
    """One line of a results table.

    ``ok`` is ``True``/``False`` when the row has a target and ``None`` when it is
    informative only. ``baseline`` is a figure measured in the same run (or ``None``).
    """

    name: str
    measured: object
    unit: str = ""
    baseline: object = None
    baseline_name: str = ""
    target: str = ""
    ok: bool | None = None

    def cells(self) -> list[str]:
        baseline = _format(self.baseline, self.unit)
        if self.baseline_name:
            baseline = f"{baseline} ({self.baseline_name})" if baseline else self.baseline_name
        verdict = "" if self.ok is None else ("pass" if self.ok else "MISSED")
        return [self.name, _format(self.measured, self.unit), baseline, self.target, verdict]


HEADER = ["measurement", "measured", "baseline (same run)", "target", "pass"]


def render(rows: Sequence[Sequence[str]], header: Sequence[str] = HEADER) -> str:
    """A Markdown table of ``rows`` under ``header``."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "| " + " | ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    for r in rows:
        lines.append(
            "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
        )
    return "\n".join(lines)


@dataclass
class Table:
    """A titled results table whose rows carry their own pass/fail verdicts."""

    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, name: str, measured: object, **kwargs: object) -> Row:
        """Add a row (keyword arguments as in :class:`Row`) and return it."""
        row = Row(name, measured, **kwargs)  # type: ignore[arg-type]
        self.rows.append(row)
        return row

    def note(self, text: str) -> None:
        """A line printed under the table (a setting, a caveat)."""
        self.notes.append(text)

    @property
    def missed(self) -> list[Row]:
        return [row for row in self.rows if row.ok is False]

    def print(self) -> None:
        print(f"\n## {self.title}")
        print(render([row.cells() for row in self.rows]))
        for text in self.notes:
            print(text)
        sys.stdout.flush()

    def finish(self) -> int:
        """Print, record for ``bench/run``'s summary and return the exit status."""
        return finish_all([self])


def finish_all(tables: Sequence[Table], *, printed: bool = False) -> int:
    """Print ``tables`` (unless ``printed``), record them, return 1 if a target was missed."""
    if not printed:
        for table in tables:
            table.print()
    summary = os.environ.get("BENCH_SUMMARY")
    if summary:
        script = os.path.basename(sys.argv[0])
        with open(summary, "a", encoding="utf-8") as handle:
            for table in tables:
                for row in table.rows:
                    if row.ok is None:
                        continue
                    cells = row.cells()
                    record = {
                        "script": script,
                        "measurement": row.name,
                        "measured": cells[1],
                        "baseline": cells[2],
                        "target": cells[3],
                        "pass": cells[4],
                    }
                    handle.write(json.dumps(record) + "\n")
    missed = [row for table in tables for row in table.missed]
    if missed:
        print(f"\n{len(missed)} target(s) missed: " + "; ".join(row.name for row in missed))
        return 1
    return 0


def print_summary(path: str) -> None:
    """Print the rows recorded in ``path`` (used by bench/run)."""
    rows = []
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                r = json.loads(line)
                rows.append(
                    [
                        r["script"],
                        r["measurement"],
                        r["measured"],
                        r["baseline"],
                        r["target"],
                        r["pass"],
                    ]
                )
    except FileNotFoundError:
        pass
    if rows:
        print(render(rows, ["script", *HEADER]))


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "summary":
    print_summary(sys.argv[2])
