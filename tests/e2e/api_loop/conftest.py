"""Fixtures of the shared agent loop tests: FakeGemini and a workspace, from the generate-content harness, and
each test run on both API backends."""

from pathlib import Path

import pytest

from tests.e2e.generate_content.gc_harness import Harness, harness
from unified.testing._fake_gemini import FakeGemini

__all__ = ["backend", "fake", "harness", "workspace"]

BACKENDS = ["generate-content", "interactions"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def fake(harness: Harness) -> FakeGemini:
    return harness.server


@pytest.fixture
def workspace(harness: Harness) -> Path:
    (harness.workspace / "notes.txt").write_text("alpha\n", encoding="utf-8")
    return harness.workspace
