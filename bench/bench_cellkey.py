"""The cell-key perturbation of exact attributes (issue 26): its accuracy cost, and the
measurement behind the decision to leave mixed (exact and distorted) conditions alone.

Run: ``python bench/bench_cellkey.py`` (every part) or name some: ``accuracy``, ``mixed``,
``scale`` (``CELLKEY_SCALE_N`` sets the scale part's size, default 10^6).

``accuracy``: Adult-like pools (``simulate_candidates``: district, sex, children, age and
income, correlated) of n = 1,000 and 30,000 with every attribute exact. Each pool gets
fresh record keys; every cell of district x sex x children (20 cells) and every district
(5) is published as the cell-key method publishes it. Printed: the perturbation's mean
(bias, target |mean| < 0.05 over all cells), its variance (the table's 1.2), the largest
change (target <= 2), the mean absolute relative error of a cell, and the same for the
mean age of a district's cell (perturbed in proportion). Baseline, measured in the same
run: the half-width of the 95% interval of the same cells' counts when sex is collected
with randomised response (retain 0.75) instead, i.e. what distortion costs.

``mixed``: the issue's three-box tracker on its 440 residents (district and tenure exact;
the two owners of C answer "Y"), with the yes/no item *distorted* (randomised response,
retain 0.8): ``count(C) + count(N) - count(item=N and district in {C, N})``, the first
two perturbed, the third a mixed joint count, over many distortion draws. Printed: the
spread of what the tracker recovers and how often it recovers the hidden 2 to within
one half, against the same tracker with the item exact and all three counts perturbed.

``scale``: what the key sum costs in the database (issue 26 left it unmeasured). A
survey of 4 exact questions (district, tenure, item, whole-year age) with 10^6
responses on durable PostgreSQL (tests/servers.py), loaded with COPY (record keys
drawn as the product draws them), then ``VACUUM ANALYZE`` so both forms meet the same
steady tables. Each SQL aggregate the exact analyses run is timed with the key sum
(what the product runs) and without it (the count before issue 26: the baseline),
median of 7 alternating runs after one warm-up of each: a count of two exact conditions,
a count with a continuous threshold, and an exact distribution's cells (``GROUP BY``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Table, finish_all
from privacy.mechanisms import cellkey, randomised_response
from privacy.mechanisms.distortion import distort_codes
from reconstruction.algorithms.queries import Condition, DiscreteAttribute, count_joint
from reconstruction.algorithms.simulation import simulate_candidates

POOLS = 200


def _keys(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, cellkey.KEY_MODULUS, size=n, dtype=np.int64)


def accuracy(table: Table) -> None:
    rng = np.random.default_rng(26)
    for n in (1_000, 30_000):
        changes: list[int] = []
        relative: list[float] = []
        mean_relative: list[float] = []
        sizes: list[int] = []
        for _ in range(POOLS):
            pool = simulate_candidates(n, rng=rng)
            keys = _keys(n, rng)
            cell = pool.district * 4 + pool.sex * 2 + pool.children
            groups = [cell == c for c in range(20)] + [pool.district == d for d in range(5)]
            for members in groups:
                count = int(members.sum())
                if count < 5:
                    continue  # suppressed, never published
                key_sum = int(keys[members].sum())
                change = cellkey.perturbation(count, key_sum)
                changes.append(change)
                relative.append(abs(change) / count)
                sizes.append(count)
                true_mean = float(pool.age[members].mean())
                moved = cellkey.perturbed_mean(true_mean, count, key_sum)
                mean_relative.append(abs(moved - true_mean) / true_mean)
        values = np.asarray(changes, dtype=np.float64)
        table.add(
            f"n={n:,}: perturbation mean over {values.size:,} cells",
            float(values.mean()),
            baseline="0 (the table's)",
            target="|mean| < 0.05",
            ok=abs(values.mean()) < 0.05,
        )
        table.add(
            f"n={n:,}: perturbation variance",
            float(values.var()),
            baseline=f"{cellkey.VARIANCE:.2f} (the table's)",
            target="within 0.15",
            ok=abs(values.var() - cellkey.VARIANCE) < 0.15,
        )
        table.add(
            f"n={n:,}: largest change",
            float(np.abs(values).max()),
            target="<= 2",
            ok=np.abs(values).max() <= 2,
        )
        table.add(
            f"n={n:,}: mean |relative error| of a cell count "
            f"(median cell {int(np.median(sizes)):,})",
            f"{100 * float(np.mean(relative)):.3f}%",
            baseline=_distortion_baseline(n, rng),
        )
        table.add(
            f"n={n:,}: mean |relative error| of a cell's mean age",
            f"{100 * float(np.mean(mean_relative)):.3f}%",
        )


def _distortion_baseline(n: int, rng: np.random.Generator) -> str:
    """Median half-width of the 95% interval, relative to the cell, of the same cells'
    joint counts with sex under randomised response (retain 0.75): one pool."""
    pool = simulate_candidates(n, rng=rng)
    channel = randomised_response(2, 0.75)
    exact2, exact5 = np.eye(2), np.eye(5)
    table = {
        "district": DiscreteAttribute(pool.district, exact5),
        "sex": DiscreteAttribute(distort_codes(pool.sex, channel, rng=rng), channel),
        "children": DiscreteAttribute(pool.children, exact2),
    }
    widths = []
    for district in range(5):
        for sex in range(2):
            where = [
                Condition("district", "in", {district}),
                Condition("sex", "in", {sex}),
                Condition("children", "in", {0}),
            ]
            truth = int(
                np.sum((pool.district == district) & (pool.sex == sex) & (pool.children == 0))
            )
            result = count_joint(table, where, n_boot=100, rng=rng)
            low, high = result.ci95
            widths.append((high - low) / 2 / max(truth, 1))
    return f"{100 * float(np.median(widths)):.1f}% (95% half-width, sex RR 0.75)"


def _issue_pool() -> tuple[np.ndarray, np.ndarray]:
    """District and item of the issue's 440 residents (tests/guard/exact_attacks.py)."""
    district = np.array([4] * 38 + [0] * 99 + [1 + i % 3 for i in range(301)] + [4, 4])
    item = np.array([1] * 38 + [1] * 99 + [i % 2 for i in range(301)] + [0, 0])  # 0 = Y
    return district, item


def mixed(table: Table) -> None:
    rng = np.random.default_rng(2026)
    district, item = _issue_pool()
    n = district.size
    channel = randomised_response(2, 0.8)
    draws = 200
    recovered_mixed = []
    recovered_exact = []
    for _ in range(draws):
        keys = _keys(n, rng)

        def published(members: np.ndarray, keys: np.ndarray = keys) -> int:
            return cellkey.perturbed_count(int(members.sum()), int(keys[members].sum()))

        c = published(district == 4)
        north = published(district == 0)
        both = np.isin(district, [0, 4])
        recovered_exact.append(c + north - published(both & (item == 1)))
        reported = distort_codes(item, channel, rng=rng)
        attributes = {
            "district": DiscreteAttribute(district, np.eye(5)),
            "item": DiscreteAttribute(reported, channel),
        }
        where = [Condition("item", "in", {1}), Condition("district", "in", {0, 4})]
        estimate = count_joint(attributes, where, ci=False).estimate
        recovered_mixed.append(c + north - float(estimate))
    exact_values = np.asarray(recovered_exact, dtype=np.float64)
    mixed_values = np.asarray(recovered_mixed, dtype=np.float64)
    table.add(
        "all exact, all perturbed: sd of the tracker's value (truth 2)",
        float(exact_values.std()),
        baseline=f"{np.sqrt(3 * cellkey.VARIANCE):.2f} (3 perturbations)",
    )
    table.add(
        "all exact, all perturbed: draws that give 2",
        f"{100 * float(np.mean(np.abs(exact_values - 2) < 0.5)):.1f}%",
        baseline="the attacker cannot tell which",
    )
    table.add(
        "item distorted (RR 0.8), third count mixed: sd of the tracker's value",
        float(mixed_values.std()),
        baseline="the perturbation's sd above",
        target="> 2x the perturbation's",
        ok=mixed_values.std() > 2 * exact_values.std(),
    )
    table.add(
        "item distorted (RR 0.8), third count mixed: draws within 0.5 of 2",
        f"{100 * float(np.mean(np.abs(mixed_values - 2) < 0.5)):.1f}%",
    )
    table.note(
        f"{draws} draws. Decision: a mixed condition is not perturbed by the key; its "
        "distortion already spreads the tracker's value wider than the key would (the "
        "target row), and the audit judges it on its (wide) interval."
    )


SCALE_QUESTIONS: list[dict[str, object]] = [
    {
        "key": "district",
        "type": "nominal",
        "categories": list("NSEWC"),
        "mechanism": {"name": "none"},
    },
    {
        "key": "tenure",
        "type": "binary",
        "categories": ["own", "rent"],
        "mechanism": {"name": "none"},
    },
    {"key": "item", "type": "binary", "categories": ["Y", "N"], "mechanism": {"name": "none"}},
    {
        "key": "age",
        "type": "continuous",
        "range": [16, 100],
        "step": 1,
        "mechanism": {"name": "none"},
    },
]


def _scale_load(n: int, rng: np.random.Generator) -> int:
    """A survey of :data:`SCALE_QUESTIONS` with ``n`` responses, loaded with COPY."""
    import psycopg
    from django.db import connection

    from consultations.services import consultation_create, organisation_create
    from surveys.ingest import answers_copy_binary, this_hour
    from surveys.models import Answer, Participant, Question, Response
    from surveys.services import survey_create, survey_open

    organisation = organisation_create(slug="cellkey", name="Cell key")
    consultation = consultation_create(organisation=organisation, title="Register")
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="profile",
        title="Register",
        questions=SCALE_QUESTIONS,
        actor="bench",
    )
    survey = survey_open(survey=survey, actor="bench")
    questions = {q.key: q for q in Question.objects.filter(survey=survey)}
    hour = this_hour().isoformat()
    connection.ensure_connection()
    raw = connection.connection
    chunk = 100_000
    for first in range(0, n, chunk):
        size = min(chunk, n - first)
        ids = np.arange(first + 1, first + size + 1)
        keys = cellkey.new_record_keys(size)
        columns = {
            "district": rng.choice(5, size=size, p=[0.2, 0.3, 0.2, 0.2, 0.1]),
            "tenure": rng.choice(2, size=size, p=[0.55, 0.45]),
            "item": rng.choice(2, size=size),
            "age": rng.integers(16, 100, size=size).astype(np.float64),
        }
        response, question, code, value, n_categories = [], [], [], [], []
        for key, column in columns.items():
            q = questions[key]
            response.append(ids)
            question.append(np.full(size, q.pk, dtype=np.int64))
            if q.is_discrete:
                code.append(column.astype(np.int64))
                value.append(np.zeros(size))
                n_categories.append(np.full(size, int(q.n_categories), dtype=np.int64))
            else:
                code.append(np.full(size, -1, dtype=np.int64))
                value.append(column)
                n_categories.append(np.zeros(size, dtype=np.int64))
        answers = answers_copy_binary(
            *(np.concatenate(part) for part in (response, question, code, value, n_categories))
        )
        with raw.transaction(), psycopg.Cursor(raw) as cursor:
            with cursor.copy(
                f"COPY {Participant._meta.db_table} (id, consultation_id, reference) FROM STDIN"
            ) as copy:
                copy.write("".join(f"{i}\t{consultation.pk}\tp{i}\n" for i in ids.tolist()))
            with cursor.copy(
                f"COPY {Response._meta.db_table} (id, survey_id, participant_id, submitted_at, "
                "withdrawal_token_hash, record_key) FROM STDIN"
            ) as copy:
                copy.write(
                    "".join(
                        f"{i}\t{survey.pk}\t{i}\t{hour}\t\t{k}\n"
                        for i, k in zip(ids.tolist(), keys, strict=True)
                    )
                )
            with cursor.copy(
                f"COPY {Answer._meta.db_table} "
                "(response_id, question_id, code, value, n_categories) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.write(answers)
    with psycopg.Cursor(raw) as cursor:
        for model in (Participant, Response):
            table = model._meta.db_table
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT MAX(id) FROM {table}))"
            )
    raw.autocommit = True
    with psycopg.Cursor(raw) as cursor:
        cursor.execute("VACUUM ANALYZE")
    return int(survey.pk)


def _median_seconds(runs: dict[str, object], repeat: int = 7) -> dict[str, float]:
    """Median seconds of each callable, alternating between them (one warm-up each)."""
    import time

    times: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run()  # type: ignore[operator]
    for _ in range(repeat):
        for name, run in runs.items():
            began = time.perf_counter()
            run()  # type: ignore[operator]
            times[name].append(time.perf_counter() - began)
    return {name: float(np.median(values)) for name, values in times.items()}


def _plain_cells(survey: object, where: list[tuple[object, str, object]], target: object) -> list:
    """The exact distribution's ``GROUP BY`` of :func:`condition_key_cells` without the key
    sum (the baseline: the same query before issue 26)."""
    from django.db import connection

    from surveys.condition_counts import _where_clauses
    from surveys.joins import _aliases, _joins

    named = [w[0] for w in where] + [target]
    joins, params = _joins(survey, named)  # type: ignore[arg-type]
    aliases = _aliases(named)  # type: ignore[arg-type]
    clauses, values = _where_clauses(aliases, where)  # type: ignore[arg-type]
    code = f"{aliases[target.pk]}.code"  # type: ignore[attr-defined]
    sql = f"SELECT {code}, COUNT(*) {joins}" + "".join(f" AND {c}" for c in clauses) + " GROUP BY 1"
    with connection.cursor() as cursor:
        cursor.execute(sql, params + values)
        return cursor.fetchall()


def _explain(run: object) -> None:
    """Print PostgreSQL's plan of the (last) query ``run`` makes, as it ran."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        run()  # type: ignore[operator]
    sql = captured.captured_queries[-1]["sql"]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        print("\n".join(row[0] for row in cursor.fetchall()), flush=True)


def _with_key_index(runs: dict[str, object]) -> dict[str, float]:
    """The keyed runs again with a covering index of the responses' keys, when the schema
    has none (the experiment behind the choice; empty when the product has it)."""
    from django.db import connection

    from surveys.models import Response

    table = Response._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_indexes WHERE tablename = %s AND indexdef LIKE %s",
            [table, "%record_key%"],
        )
        if cursor.fetchone() is not None:
            return {}
        cursor.execute(f"CREATE INDEX bench_response_key ON {table} (id) INCLUDE (record_key)")
        cursor.execute(f"VACUUM ANALYZE {table}")
    return _median_seconds(runs)


def scale(table: Table) -> None:
    import os
    import subprocess

    from tests.servers import running_services

    n = int(os.environ.get("CELLKEY_SCALE_N", "1000000"))
    repo = Path(__file__).resolve().parents[1]
    with running_services(durable=True) as env:
        os.environ.update(env)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
            cwd=repo,
            env=os.environ.copy(),
            check=True,
        )
        import django

        django.setup()
        from surveys import condition_counts
        from surveys.models import Question, Survey

        survey = Survey.objects.get(pk=_scale_load(n, np.random.default_rng(7)))
        q = {question.key: question for question in Question.objects.filter(survey=survey)}
        two = [(q["district"], "in", {4}), (q["tenure"], "in", {0})]
        threshold = [(q["district"], "in", {4}), (q["age"], "lte", 30.0)]

        def count(where: list[tuple[Question, str, object]], keys: bool) -> object:
            return lambda: condition_counts.condition_moments(survey, [], where, keys=keys)

        cells = [(q["district"], "in", {4})]

        measured = _median_seconds(
            {
                "two keyed": count(two, True),
                "two plain": count(two, False),
                "age keyed": count(threshold, True),
                "age plain": count(threshold, False),
                "cells keyed": lambda: condition_counts.condition_key_cells(
                    survey, [], cells, q["item"]
                ),
                "cells plain": lambda: _plain_cells(survey, cells, q["item"]),
            }
        )
        _explain(count(threshold, True))
        indexed = _with_key_index(
            {
                "two": count(two, True),
                "age": count(threshold, True),
                "cells": lambda: condition_counts.condition_key_cells(survey, [], cells, q["item"]),
            }
        )
    for name, label in (
        ("two", "count of district = C and tenure = own"),
        ("age", "count of district = C and age <= 30"),
        ("cells", "distribution of item within district = C (cells)"),
    ):
        keyed, plain = measured[f"{name} keyed"], measured[f"{name} plain"]
        table.add(
            f"n={n:,}: {label}, with the key sum",
            f"{keyed:.3f} s ({100 * (keyed / plain - 1):+.0f}%)",
            baseline=f"{plain:.3f} s without the key",
            target="<= +20%",
            ok=keyed <= 1.2 * plain,
        )
        if name in indexed:
            table.add(
                f"n={n:,}: {label}, with the key sum and an index (id) INCLUDE (record_key)",
                f"{indexed[name]:.3f} s ({100 * (indexed[name] / plain - 1):+.0f}%)",
                baseline=f"{plain:.3f} s without the key",
            )
    table.note(
        "PostgreSQL, durable, after VACUUM ANALYZE; median of 7 alternating runs of the "
        "SQL aggregate alone (surveys/condition_counts.py), in this process. The "
        "distribution's baseline is the same GROUP BY without the key sum."
    )


PARTS = {"accuracy": accuracy, "mixed": mixed, "scale": scale}


def main(argv: list[str]) -> int:
    names = argv or list(PARTS)
    tables = []
    for name in names:
        table = Table(f"cell-key perturbation: {name}")
        PARTS[name](table)
        tables.append(table)
    return finish_all(tables)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
