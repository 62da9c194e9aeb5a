"""The README's first example runs as the script it shows: saved to a file and run with `python`.

A newcomer copies it; here it runs in a fresh interpreter with `repo/` beside it, pointed at a
FakeGemini through the environment a gateway user would set (the example itself is unchanged).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from unified.testing import FakeGemini, ModelTurn

ROOT = Path(__file__).resolve().parents[2]


def first_example() -> str:
    match = re.search(r"^```python\n(?P<code>.*?)^```$", (ROOT / "README.md").read_text(encoding="utf-8"), re.S | re.M)
    assert match is not None, "the README has no python example"
    return match["code"]


@pytest.mark.e2e  # runs the example in a child Python
def test_the_readme_example_runs_as_a_script(tmp_path: Path, isolated_home: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(first_example(), encoding="utf-8")
    (tmp_path / "repo").mkdir()
    with FakeGemini([ModelTurn(text="test_login fails because the fixture is missing.")]) as server:
        done = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "GOOGLE_GEMINI_BASE_URL": server.base_url, "GEMINI_API_KEY": "fake-gemini-key"},
            timeout=HANG_GUARD_S,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    kinds = [line.split(" ", 1)[0] for line in done.stdout.splitlines()]
    assert kinds[0] == "session_started"
    assert kinds[-1] == "result"
    assert "status='success'" in done.stdout.splitlines()[-1]
