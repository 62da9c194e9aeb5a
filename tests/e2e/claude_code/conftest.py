"""Runs of the real pinned `claude` binary, offline, against FakeAnthropic on 127.0.0.1.

Every test gets the isolated HOME and XDG tree of tests/conftest.py (so the backend's CLI home,
`<XDG_DATA_HOME>/unified/claude-code/home`, is the test's own), no Anthropic credentials from the
shell, and a workspace. Nothing reads or writes a real ~/.claude.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import LOCAL_BINARY

_ANTHROPIC_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.claude_code)
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def claude_setup(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = os.environ.get("UNIFIED_CLAUDE_BIN") or str(LOCAL_BINARY)
    if not Path(binary).exists():
        pytest.fail(f"the pinned claude binary is not at {binary}: run .ci/install-claude-code.sh (scripts/test does)")
    monkeypatch.setenv("UNIFIED_CLAUDE_BIN", binary)
    for name in _ANTHROPIC_ENV:
        monkeypatch.delenv(name, raising=False)
    return isolated_home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "notes.txt").write_text("alpha\nbeta\n")
    return path


@pytest.fixture(params=["asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Each real-binary run costs a cold start (0.9 s of CPU, measured): asyncio only, unless a test
    parametrizes `anyio_backend` itself to cover trio too where the loop's own I/O is what is tested (a
    permission asked and answered, a cancel that leaves no process); a plain run on trio is the spare handed
    across loops (test_claude_code_spares.py). A run that only drives the binary is not run twice."""
    return str(request.param)
