"""The `python test` blocks of docs/testing.md run as written, so the consumer examples never rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testing.md"
_BLOCK = re.compile(r"^```python test\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)


def examples() -> list[tuple[int, str]]:
    """(line number, code) of each runnable block."""
    text = DOC.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 2, m["code"]) for m in _BLOCK.finditer(text)]


def test_the_doc_has_runnable_examples() -> None:
    assert len(examples()) >= 3


@pytest.mark.parametrize(("line", "code"), examples(), ids=[f"line-{line}" for line, _ in examples()])
@pytest.mark.e2e  # runs a real subprocess
def test_example_runs(line: int, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # examples name repository paths such as cassettes/...
    exec(compile(code, f"{DOC}:{line}", "exec"), {"__name__": f"docs_testing_line_{line}"})
