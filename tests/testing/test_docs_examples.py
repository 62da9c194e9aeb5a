"""The `python test` blocks of the docs run as written, so the examples never rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from unified import backends as registry

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "docs" / "testing.md", ROOT / "docs" / "backends" / "README.md")
_BLOCK = re.compile(r"^```python test\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)


def examples() -> list[tuple[Path, int, str]]:
    """(doc, line number, code) of each runnable block."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        found += [(doc, text.count("\n", 0, m.start()) + 2, m["code"]) for m in _BLOCK.finditer(text)]
    return found


def test_the_docs_have_runnable_examples() -> None:
    per_doc = {doc: sum(1 for d, _, _ in examples() if d == doc) for doc in DOCS}
    assert per_doc[DOCS[0]] >= 3
    assert per_doc[DOCS[1]] >= 1


@pytest.mark.parametrize(
    ("doc", "line", "code"),
    examples(),
    ids=[f"{doc.relative_to(ROOT / 'docs')}:{line}" for doc, line, _ in examples()],
)
@pytest.mark.e2e  # the testing.md examples run real subprocesses
def test_example_runs(doc: Path, line: int, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # examples name repository paths such as cassettes/...
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))  # an example may register one
    exec(compile(code, f"{doc}:{line}", "exec"), {"__name__": f"docs_example_line_{line}"})
