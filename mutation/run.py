"""Mutation testing of the privacy-critical modules with mutmut (see mutation/modules.toml).

    python mutation/run.py --changed main     # modules whose source or tests differ from main
    python mutation/run.py --all              # every module (make test-slow)
    python mutation/run.py reconstruction/disclosure.py   # named modules
    python mutation/run.py --keep --survivors reconstruction/disclosure.py   # iterate: re-run
                                              # only last run's survivors, keep the cache

Each module runs in its own work directory, var/mutation/<module>/, that holds symlinks to the
project's packages and a pyproject.toml with a [tool.mutmut] section made from modules.toml,
so mutmut's stats run (which test calls which function) covers that module's tests only.
Mutants that survive and are not listed in mutation/equivalent.md count against the score:
killed / (mutants - equivalent). The run writes bench/results/mutation-YYYY-MM-DD.md (rows of
the same day are merged by module) and exits 1 if a module scores below --threshold (90%).
"""

from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "mutation"
WORK = ROOT / "var" / "mutation"
RESULTS = ROOT / "bench" / "results"
SMOKE = "privacy/mechanisms/disclosure.py"
CLASS_SEP = "ǁ"  # mutmut's separator in a method's mutant name
# Top-level entries that are not part of the Django project the tests import.
NOT_SOURCE = {"tests", "bench", "clients", "docs", "mutation", "var", "node_modules"}
EXTRA = ["locale", "manage.py"]  # copied beside the packages (translations, management)
KILLED = {"killed", "timeout", "caught by type check", "segfault"}


def settings() -> dict[str, list[str]]:
    return tomllib.loads((HERE / "modules.toml").read_text("utf-8")).get("settings", {})  # type: ignore[no-any-return]


def load_modules() -> dict[str, dict[str, list[str]]]:
    spec = tomllib.loads((HERE / "modules.toml").read_text("utf-8"))["modules"]
    modules: dict[str, dict[str, list[str]]] = {}
    for pattern, entry in spec.items():
        paths = sorted(
            str(p.relative_to(ROOT)) for p in ROOT.glob(pattern) if p.name != "__init__.py"
        ) or ([pattern] if (ROOT / pattern).exists() else [])
        for path in paths:
            modules[path] = {
                "tests": list(entry["tests"]),
                "functions": list(entry.get("functions", [])),
            }
    return modules


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def changed_files(base: str) -> set[str]:
    try:
        merge_base = git("merge-base", base, "HEAD")
    except subprocess.CalledProcessError:
        sys.exit(f"mutation: base ref {base!r} not found (set BASE=<ref>)")
    # Against the working tree: uncommitted edits count as changed too.
    return set(git("diff", "--name-only", merge_base).splitlines())


def is_changed(module: str, tests: list[str], files: set[str]) -> bool:
    if module in files:
        return True
    paths = [t.split("::", 1)[0] for t in tests]  # a test may be a node id (file::test)
    return any(f == t or f.startswith(t.rstrip("/") + "/") for t in paths for f in files)


def slug(module: str) -> str:
    return module.removesuffix(".py").replace("/", "__")


def packages() -> list[str]:
    return sorted(
        p.name
        for p in ROOT.iterdir()
        if p.is_dir() and (p / "__init__.py").exists() and p.name not in NOT_SOURCE
    )


def function_globs(module: str, functions: list[str]) -> list[str]:
    dotted = module.removesuffix(".py").replace("/", ".")
    globs = []
    for name in functions:
        if "." in name:
            cls, _, method = name.partition(".")
            globs.append(f"{dotted}.x{CLASS_SEP}{cls}{CLASS_SEP}{method}__mutmut_*")
        else:
            globs.append(f"{dotted}.x_{name}__mutmut_*")
    return globs


def prepare(module: str, entry: dict[str, list[str]], keep: bool) -> Path:
    work = WORK / slug(module)
    if work.exists() and not keep:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    sources = packages()
    for name in [*sources, "tests", *EXTRA]:
        link = work / name
        if not link.is_symlink() and (ROOT / name).exists():
            link.symlink_to(ROOT / name)
    mutants = work / "mutants"
    mutants.mkdir(exist_ok=True)
    shutil.copy2(HERE / "pytest_plugin.py", mutants / "mutation_db.py")
    # What tests read beside the code (clients/, docs/, README.md, ...): linked, not copied.
    skip = {*sources, "tests", *EXTRA, ".git", ".venv", "var", "pyproject.toml"}
    for item in ROOT.iterdir():
        link = mutants / item.name
        if item.name not in skip and not link.exists() and not link.is_symlink():
            link.symlink_to(item)
    if keep:
        # mutmut copies a package file only when its copy is missing: drop stale copies
        # (copy2 keeps mtimes) so that edited non-mutated code is seen.
        for package in sources:
            for copy in (mutants / package).rglob("*"):
                rel = copy.relative_to(mutants)
                if copy.is_dir() or str(rel) == module or copy.suffix in {".meta", ".spans"}:
                    continue
                source = ROOT / rel
                if not source.exists() or source.stat().st_mtime != copy.stat().st_mtime:
                    copy.unlink()
    config = {
        "source_paths": sources,
        "only_mutate": [module],
        "also_copy": EXTRA,
        "pytest_add_cli_args_test_selection": entry["tests"],
        "pytest_add_cli_args": [
            "-p",
            "no:cacheprovider",
            "-p",
            "mutation_db",
            "--reuse-db",
            "-m",
            "not integration and not slow and not browser",
        ],
        "use_git_change_detection": False,
        **settings(),
    }
    block = "\n[tool.mutmut]\n" + "".join(
        f"{key} = {json.dumps(value)}\n" for key, value in config.items()
    )
    (work / "pyproject.toml").write_text(
        (ROOT / "pyproject.toml").read_text("utf-8") + block, "utf-8"
    )
    return work


def collect(work: Path, module: str) -> dict[str, dict[str, str]]:
    """Status and diff of every mutant of ``module`` (run inside ``work``)."""
    os.chdir(work)
    from mutmut.configuration import reset_config
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    reset_config()
    data = SourceFileMutationData(path=module)
    data.load()
    out: dict[str, dict[str, str]] = {}
    for key, code in data.exit_code_by_key.items():
        status = status_by_exit_code[code]
        diff = "" if status in KILLED else get_diff_for_mutant(key, path=module)
        out[key] = {"status": status, "diff": diff}
    return out


def mutated_lines(diff: str) -> str:
    lines = [
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    return " / ".join(lines)


def load_equivalent() -> dict[str, tuple[str, str]]:
    """mutation/equivalent.md's table rows: mutant -> (mutated line, why)."""
    rows: dict[str, tuple[str, str]] = {}
    for line in (HERE / "equivalent.md").read_text("utf-8").splitlines():
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 3 and cells[0].startswith("`") and "__mutmut_" in cells[0]:
            rows[cells[0].strip("`")] = (cells[1].strip("`"), cells[2])
    return rows


def same_code(a: str, b: str) -> bool:
    return re.sub(r"\s+", "", a) == re.sub(r"\s+", "", b)


def score(
    module: str, entry: dict[str, list[str]], mutants: dict[str, dict[str, str]]
) -> dict[str, object]:
    globs = function_globs(module, entry["functions"])
    if globs:
        mutants = {k: v for k, v in mutants.items() if any(fnmatch.fnmatch(k, g) for g in globs)}
    equivalent = load_equivalent()
    killed = [k for k, v in mutants.items() if v["status"] in KILLED]
    unchecked = [k for k, v in mutants.items() if v["status"] == "not checked"]
    equal, survivors, stale = [], [], []
    for key, value in sorted(mutants.items()):
        if value["status"] in KILLED or key in unchecked:
            continue
        line = mutated_lines(value["diff"])
        if key in equivalent and same_code(equivalent[key][0], line):
            equal.append(key)
        else:
            if key in equivalent:
                stale.append(key)
            survivors.append({"name": key, "status": value["status"], "diff": value["diff"]})
    for key in equivalent:
        if key.startswith(module.removesuffix(".py").replace("/", ".") + ".") and (
            key not in mutants or mutants[key]["status"] in KILLED
        ):
            stale.append(key)
    # A mutant not run (an interrupted run, or --survivors after the code changed) is
    # counted against the score and named in the row.
    counted = len(mutants) - len(equal)
    return {
        "not_run": len(unchecked),
        "mutants": len(mutants),
        "killed": len(killed),
        "equivalent": len(equal),
        "survived": len(survivors),
        "score": round(100.0 * len(killed) / counted, 1) if counted else 100.0,
        "survivors": survivors,
        "stale_equivalents": sorted(set(stale)),
    }


def tool() -> str:
    """The mutation tool and its version, as each row of the results records it."""
    from importlib.metadata import version

    return f"mutmut {version('mutmut')}"


def machine() -> str:
    mem = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
    return f"{os.cpu_count()} CPUs, {int(mem) / 2**20:.0f} GiB RAM"


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def not_run(row: dict[str, object]) -> str:
    count = int(row.get("not_run") or 0)  # type: ignore[call-overload]
    return f" ({count} not run)" if count else ""


def write_results(rows: dict[str, dict[str, object]], threshold: float, run_info: str) -> Path:
    """Merge ``rows`` into today's results file, under a lock: runs of different modules
    may end at the same moment (niced runs do not queue for the machine)."""
    import fcntl

    WORK.mkdir(parents=True, exist_ok=True)
    with open(WORK / "results.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _write_results(rows, threshold, run_info)


def _write_results(rows: dict[str, dict[str, object]], threshold: float, run_info: str) -> Path:
    today = dt.datetime.now(dt.UTC).date().isoformat()
    path = RESULTS / f"mutation-{today}.md"
    merged: dict[str, dict[str, object]] = {}
    history: list[dict[str, object]] = []
    if path.exists():
        found = re.search(r"<!-- data\n(.*)\n-->", path.read_text("utf-8"), re.S)
        if found:
            data = json.loads(found.group(1))
            # {"rows": ..., "history": [...]}; the first files held the rows alone
            merged = data.get("rows", data) if "history" in data else data
            history = list(data.get("history", []))
    for module, row in rows.items():
        if module in merged and merged[module].get("at") != row.get("at"):
            # an earlier run of the module today: its figures stay, with their time
            old = {
                k: v
                for k, v in merged[module].items()
                if k not in {"survivors", "stale_equivalents"}
            }
            history.append({"module": module, **old})
    merged.update(rows)
    out = [
        f"# Mutation testing, {today} (UTC)",
        "",
        "Generated by `mutation/run.py` (`make test-mutation`, `make test-slow`); mutmut over the",
        "privacy-critical modules of `mutation/modules.toml`. Score = killed / (mutants -",
        "equivalent); equivalent mutants are listed with reasons in `mutation/equivalent.md`.",
        f"Threshold {threshold:.0f}%. Latest run: {run_info}, {tool()}, {machine()}.",
        "",
        "| module | mutants | killed | equivalent | survived | score | run (UTC) | minutes "
        "| load | tool |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | --- |",
    ]
    for module, row in sorted(merged.items()):
        flag = "" if float(row["score"]) >= threshold else " **below**"  # type: ignore[arg-type]
        out.append(
            f"| `{module}` | {row['mutants']} | {row['killed']} | {row['equivalent']} | "
            f"{row['survived']} | {row['score']}%{flag}{not_run(row)} | {row['at']} | "
            f"{row['minutes']} | "
            f"{row['load']} | {row.get('tool', '-')} |"
        )
    out += ["", "## Surviving mutants (not equivalent)", ""]
    any_survivor = False
    for module, row in sorted(merged.items()):
        survivors = row["survivors"]
        stale = row.get("stale_equivalents") or []
        if not survivors and not stale:
            continue
        any_survivor = True
        out += [f"### `{module}`", ""]
        for s in survivors:  # type: ignore[attr-defined]
            out += [f"- `{s['name']}` ({s['status']})", "", "```diff", s["diff"], "```", ""]
        if stale:
            out += [
                "Entries of equivalent.md that no longer match a surviving mutant (re-triage): "
                + ", ".join(f"`{k}`" for k in stale),  # type: ignore[attr-defined]
                "",
            ]
    if not any_survivor:
        out += ["None.", ""]
    if history:
        out += [
            "## Earlier runs today (superseded by the rows above)",
            "",
            "| module | mutants | killed | equivalent | survived | score | run (UTC) | minutes "
            "| load | tool |",
            "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | --- |",
        ]
        for row in sorted(history, key=lambda r: (str(r["module"]), str(r["at"]))):
            out.append(
                f"| `{row['module']}` | {row['mutants']} | {row['killed']} | "
                f"{row['equivalent']} | {row['survived']} | {row['score']}%{not_run(row)} | "
                f"{row['at']} | {row['minutes']} | {row['load']} | {row.get('tool', '-')} |"
            )
        out.append("")
    data = {"rows": merged, "history": history}
    out += ["<!-- data", json.dumps(data, indent=1, sort_keys=True), "-->", ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out), "utf-8")
    return path


def run_module(
    module: str, entry: dict[str, list[str]], args: argparse.Namespace
) -> dict[str, object]:
    work = prepare(module, entry, args.keep)
    names = function_globs(module, entry["functions"])
    if args.only:
        names = list(args.only)
    elif args.survivors:
        previous = collect_in_child(work, module)
        names = [k for k, v in previous.items() if v["status"] not in KILLED] or names
    # ``python -m mutmut``, not the venv's ``mutmut`` script: a shared venv's scripts keep
    # the interpreter path of whichever checkout installed them (a shebang that may be gone).
    command = [sys.executable, "-m", "mutmut", "run", "--max-children", str(args.jobs), *names]
    started, load_before = time.monotonic(), load()
    print(
        f"mutation: {module}: mutmut run in {work.relative_to(ROOT)} (load {load_before})",
        flush=True,
    )
    with open(work / "run.log", "w") as log:
        env = {
            **os.environ,
            "MUTATION_DB_DIR": str(work),
            "MUTATION_TEST_ORDER": os.pathsep.join(entry["tests"]),
        }
        done = subprocess.run(command, cwd=work, stdout=log, stderr=subprocess.STDOUT, env=env)
    minutes = round((time.monotonic() - started) / 60, 1)
    if done.returncode != 0:
        tail = (work / "run.log").read_text(errors="replace")[-3000:]
        print(tail)
        sys.exit(
            f"mutation: mutmut failed on {module} (exit {done.returncode}), log {work}/run.log"
        )
    row = score(module, entry, collect_in_child(work, module))
    row.update(
        at=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M"),
        minutes=minutes,
        load=f"{load_before} -> {load()}",
        tool=tool(),
        machine=machine(),
    )
    print(
        f"mutation: {module}: {row['killed']}/{row['mutants']} killed, {row['equivalent']} "
        f"equivalent, {row['survived']} survived: {row['score']}% ({minutes} min)",
        flush=True,
    )
    return row


def collect_in_child(work: Path, module: str) -> dict[str, dict[str, str]]:
    done = subprocess.run(
        [sys.executable, __file__, "--collect", str(work), module],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("modules", nargs="*", help="module paths of modules.toml")
    parser.add_argument("--changed", metavar="BASE", help="modules changed against BASE")
    parser.add_argument("--all", action="store_true", help="every module")
    parser.add_argument("--keep", action="store_true", help="keep the work dirs' cached results")
    parser.add_argument("--survivors", action="store_true", help="re-run last survivors only")
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="MUTANT",
        help="run these mutants (names or globs) of one module and print their status; "
        "writes no results (e.g. to check the equivalent entries of a module)",
    )
    parser.add_argument("--threshold", type=float, default=90.0)
    parser.add_argument(
        "--jobs", type=int, default=0, help="mutants run at once (default 0: one per CPU)"
    )
    parser.add_argument("--collect", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.collect:
        print(json.dumps(collect(Path(args.collect[0]), args.collect[1])))
        return 0
    if args.jobs <= 0:
        args.jobs = os.cpu_count() or 2
    modules = load_modules()
    if args.all:
        chosen = list(modules)
        run_info = "all modules"
    elif args.changed:
        files = changed_files(args.changed)
        chosen = [m for m, e in modules.items() if is_changed(m, e["tests"], files)]
        run_info = f"modules changed against {args.changed}"
        if not chosen:
            print(
                f"mutation: no critical module or its tests changed against {args.changed}; "
                f"smoke run on {SMOKE}"
            )
            chosen, run_info = [SMOKE], f"smoke run (nothing changed against {args.changed})"
    else:
        unknown = [m for m in args.modules if m not in modules]
        if unknown or not args.modules:
            parser.error(f"name modules of mutation/modules.toml: {sorted(modules)}")
        chosen, run_info = args.modules, "named modules"
    if args.only:
        if len(chosen) != 1:
            parser.error("--only needs exactly one module")
        run_module(chosen[0], modules[chosen[0]], args)
        statuses = collect_in_child(WORK / slug(chosen[0]), chosen[0])
        for name in sorted(statuses):
            if any(fnmatch.fnmatch(name, pattern) for pattern in args.only):
                print(f"{statuses[name]['status']:>12}  {name}")
        return 0
    rows = {m: run_module(m, modules[m], args) for m in chosen}
    path = write_results(
        rows, args.threshold, f"{run_info}, commit {git('rev-parse', '--short', 'HEAD')}"
    )
    print(f"mutation: results in {path.relative_to(ROOT)}")
    below = [m for m, r in rows.items() if float(r["score"]) < args.threshold]  # type: ignore[arg-type]
    for m in below:
        print(f"mutation: {m} scores {rows[m]['score']}% < {args.threshold}%", file=sys.stderr)
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
