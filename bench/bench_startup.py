"""Start-up: `import unified` and `unified --help`, against `python -c pass` in the same run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from bench.harness import Figure, Outcome, alternate


def _command(args: list[str]) -> object:
    return subprocess.run(args, check=True, capture_output=True)


def run(quick: bool) -> Outcome:
    runs = 3 if quick else 15
    outcome = Outcome("startup")
    python = sys.executable
    base = [python, "-c", "pass"]
    imported, baseline = alternate(lambda: _command([python, "-c", "import unified"]), lambda: _command(base), runs)
    outcome.figures += [Figure("python -c pass", "s", baseline), Figure("import unified", "s", imported)]
    added_ms = (outcome.figures[1].median - outcome.figures[0].median) * 1000
    outcome.ratio("import unified, ms added", added_ms, "< 150 ms", added_ms < 150)
    cli = shutil.which("unified", path=str(Path(python).parent))
    if cli:
        helped, baseline2 = alternate(lambda: _command([cli, "--help"]), lambda: _command(base), runs)
        outcome.figures += [
            Figure("python -c pass (2)", "s", baseline2),
            Figure("unified --help", "s", helped),
        ]
        help_ms = (outcome.figures[3].median - outcome.figures[2].median) * 1000
        outcome.ratio("unified --help, ms added", help_ms, "informational", True)
    return outcome
