"""Start-up: `import unified` and `unified --help`, against `python -c pass` in the same run.

For a target missed, `python -X importtime` says which modules the time goes to (own time, the
heaviest first, and which of them are ours).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from bench.harness import Figure, Outcome, alternate, spread


def _command(args: list[str]) -> object:
    return subprocess.run(args, check=True, capture_output=True)


def import_profile(code: str, top: int = 15) -> str:
    """The modules `code` imports, by own import time (median of 3 runs of `python -X importtime`)."""
    own: dict[str, list[int]] = {}
    total: list[int] = []
    for _ in range(3):
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], check=True, capture_output=True).stderr
        run_total = 0
        for line in err.decode().splitlines():
            if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
                continue
            self_us, _, name = line.removeprefix("import time:").split("|")
            own.setdefault(name.strip(), []).append(int(self_us))
            run_total += int(self_us)
        total.append(run_total)
    rows = sorted(((statistics.median(v), k) for k, v in own.items()), reverse=True)
    ours = sum(us for us, name in rows if name.startswith("unified"))
    whole = statistics.median(total) / 1000
    lines = [f"`{code}`: {whole:.0f} ms of imports, {ours / 1000:.0f} ms in unified's own modules"]
    lines += [f"{us / 1000:8.1f} ms  {name}" for us, name in rows[:top]]
    return "\n".join(lines)


def _added(outcome: Outcome, name: str, subject: list[float], baseline: list[float], target_ms: float) -> bool:
    """Median over paired runs of (subject - baseline), in ms, against `target_ms`."""
    low, added, high = spread([(s - b) * 1000 for s, b in zip(subject, baseline, strict=True)])
    met = added < target_ms
    outcome.ratio(name, added, f"< {target_ms:g} ms", met, low=low, high=high)
    return met


def run(quick: bool) -> Outcome:
    runs = 1 if quick else 10
    outcome = Outcome("startup")
    python = sys.executable
    base = [python, "-c", "pass"]
    imported, baseline = alternate(lambda: _command([python, "-c", "import unified"]), lambda: _command(base), runs)
    outcome.figures += [Figure("python -c pass", "s", baseline), Figure("import unified", "s", imported)]
    if not _added(outcome, "import unified, ms added", imported, baseline, 100) and not quick:
        outcome.profiles["import unified"] = import_profile("import unified")
    cli = shutil.which("unified", path=str(Path(python).parent))
    if cli:
        helped, baseline2 = alternate(lambda: _command([cli, "--help"]), lambda: _command(base), runs)
        outcome.figures += [Figure("python -c pass (2)", "s", baseline2), Figure("unified --help", "s", helped)]
        if not _added(outcome, "unified --help, ms added", helped, baseline2, 250) and not quick:
            outcome.profiles["unified --help"] = import_profile("import unified._cli.main")
    return outcome
