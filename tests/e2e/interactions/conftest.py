"""Runs of the interactions backend through `unified.execute`, the real SDK and real HTTP to FakeGemini."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.interactions.interactions_harness import MODEL, Params
from unified.testing._fake_gemini import FakeGemini
from unified.types import ExecuteParams


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with FakeGemini() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    return root


@pytest.fixture
def params(fake: FakeGemini, workspace: Path) -> Params:
    """ExecuteParams for the interactions backend against `fake`; keyword arguments override."""

    def make(prompt: str = "hello", **fields: Any) -> ExecuteParams:
        options: dict[str, object] = {
            "api_key": "test-key",
            "base_url": fake.base_url,
            "retry_delay_scale": 0.01,
            "poll_interval_s": 0.01,
            **fields.pop("backend_options", {}),
        }
        fields.setdefault("model", MODEL)
        return ExecuteParams(prompt=prompt, backend="interactions", cwd=workspace, backend_options=options, **fields)

    return make
