"""Run every benchmark, print the table, write bench/results.json (and, for a full run, the README table).

./scripts/bench            # full sizes (under 6 minutes on 2 cores); rewrites the table in bench/README.md
./scripts/bench --quick    # tiny sizes: checks the harness works (the test suite runs this)
./scripts/bench startup    # only the named benchmarks
"""

from __future__ import annotations

import argparse
import importlib
import time
from pathlib import Path

from bench.harness import Outcome, load_average, render_header, render_table, write_report

BENCHMARKS = ["translate", "sdk_overhead", "cli_overhead", "agent_binaries", "sessions", "startup", "concurrency"]
README = Path(__file__).parent / "README.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"
"""The README's latest-results section lies between these markers; a full run replaces it."""


def update_readme(readme: Path, text: str) -> None:
    document = readme.read_text()
    head, _, rest = document.partition(START)
    _, _, tail = rest.partition(END)
    readme.write_text(f"{head}{START}\n{text}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(BENCHMARKS)})")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check the harness")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results.json")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    started = time.perf_counter()
    load_at_start = load_average()
    outcomes: list[Outcome] = []
    for name in args.names or BENCHMARKS:
        module = importlib.import_module(f"bench.bench_{name}")
        print(f"running {name} ...", flush=True)
        began = time.perf_counter()
        try:
            outcomes.append(module.run(args.quick))
            print(f"  {name}: {time.perf_counter() - began:.1f} s", flush=True)
        except Exception as exc:  # one broken backend must not hide every other figure
            failed = Outcome(name)
            failed.ratio("completed", 0.0, "runs to the end", False)
            failed.notes.append(f"failed: {type(exc).__name__}: {exc}")
            outcomes.append(failed)
    seconds = time.perf_counter() - started
    report = write_report(outcomes, args.output, quick=args.quick, seconds=seconds, load_at_start=load_at_start)
    text = f"{render_header(report)}\n\n{render_table(outcomes)}"
    if not args.quick and not args.names and START in README.read_text():
        update_readme(README, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
