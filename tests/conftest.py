"""Shared test setup: every async test runs on asyncio and trio; no test sees a real home."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# No test may probe the GCE metadata server (a non-loopback address) while looking for Vertex AI
# credentials; google-auth reads this once, when it is first imported.
os.environ["NO_GCE_CHECK"] = "true"

_AUTH_ENV = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "CODE_ASSIST_ENDPOINT",
    "GEMINI_MODEL",
)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway HOME, GEMINI_CLI_HOME and XDG tree, and no auth from the developer's shell."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    for name in _AUTH_ENV:
        monkeypatch.delenv(name, raising=False)
    return home
