"""Probes `unified` runs on its own (`doctor`, the adapter's version check) leave the user's home alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from unified._adapters.gemini_cli import GEMINI_CLI
from unified._binary.install import probe_version

pytestmark = pytest.mark.e2e  # runs real subprocesses

PINNED = Path(__file__).parents[2] / ".gemini-cli" / "node_modules" / ".bin" / "gemini"


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _pinned_binary() -> Path:
    binary = Path(os.environ.get("UNIFIED_GEMINI_BIN") or PINNED)
    if not binary.exists():
        pytest.fail(f"the pinned gemini binary is not at {binary}: run .ci/install-gemini-cli.sh (scripts/test does)")
    return binary


@pytest.mark.e2e
@pytest.mark.gemini_cli
def test_doctor_with_the_real_gemini_never_writes_into_home(isolated_home: Path) -> None:
    binary = _pinned_binary()
    before = _tree(isolated_home)
    done = subprocess.run(
        [sys.executable, "-m", "unified._cli", "doctor", "--json"],
        env={**os.environ, "UNIFIED_GEMINI_BIN": str(binary)},
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,  # a hang guard only
        check=False,
    )
    [report] = [json.loads(line) for line in done.stdout.splitlines()]  # one JSON line
    assert report["gemini"]["version"], done.stderr
    assert _tree(isolated_home) == before


def test_the_adapter_version_probe_runs_in_a_throwaway_home(isolated_home: Path, tmp_path: Path) -> None:
    """A binary outside an npm package is asked for its version; like the CLI, this one writes into its home."""
    binary = tmp_path / "bin" / "gemini"
    binary.parent.mkdir()
    binary.write_text('#!/bin/sh\nmkdir -p "$HOME/.gemini" && touch "$HOME/.gemini/projects.json.tmp"\necho 0.61.0\n')
    binary.chmod(0o755)
    before = _tree(isolated_home)
    assert probe_version(GEMINI_CLI, binary, dict(os.environ)) == (0, 61, 0)
    assert _tree(isolated_home) == before


def test_the_adapter_version_probe_gets_no_credentials(isolated_home: Path, tmp_path: Path) -> None:
    """`gemini --version` needs no key: the probe's environment carries none of the CLI's credentials
    (`BinarySpec.credential_env`) nor any other secret (docs/cli.md), while the rest of the caller's
    environment still reaches it."""
    binary = tmp_path / "bin" / "gemini"
    binary.parent.mkdir()
    binary.write_text(
        "#!/bin/sh\n"
        'if [ -n "$GEMINI_API_KEY$GOOGLE_API_KEY$GOOGLE_APPLICATION_CREDENTIALS$OPENAI_API_KEY" ]; then '
        'echo "keyed 9.9.9"; '
        'elif [ "$PROBE_MARK" != here ]; then echo "bare 8.8.8"; else echo 0.61.0; fi\n'
    )
    binary.chmod(0o755)
    env = {
        **os.environ,
        "GEMINI_API_KEY": "AIza-probe-key",
        "GOOGLE_API_KEY": "google-probe-key",
        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "adc.json"),
        "OPENAI_API_KEY": "sk-proj-another-providers-key-0123456789",  # any secret, not only the CLI's
        "PROBE_MARK": "here",
    }
    assert probe_version(GEMINI_CLI, binary, env) == (0, 61, 0)
