"""Pytest fixture for FakeGemini; enable with ``pytest_plugins = ["unified.testing.pytest_plugin"]``.

Kept out of ``fake_gemini`` so importing the server never imports pytest.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from unified.testing._fake_gemini import FakeGemini

__all__ = ["fake_gemini"]


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A running FakeGemini with an empty script: add turns with ``fake_gemini.add(...)``."""
    with FakeGemini() as server:
        yield server
