"""unified's own environment, read by a command the model runs through each agent binary: one host process a
backend, its runs against the backend's fake model server (tests/e2e/host_environ.py)."""

from __future__ import annotations

import sys

import pytest

from tests.e2e.host_environ import check_host_environ

pytestmark = pytest.mark.e2e


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/<pid>/environ and PR_SET_DUMPABLE are Linux's")
@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("gemini-cli", marks=pytest.mark.gemini_cli),
        pytest.param("claude-code", marks=pytest.mark.claude_code),
        "codex",
    ],
)
def test_a_command_cannot_read_unified_s_own_environ(backend: str) -> None:
    """SUCCEEDED before: unified's process, the binary's parent, started with three provider keys in its
    environment and running as a user that is not root, was dumpable: the command's `/proc/<unified's pid>/environ`
    sent the model every 8-character piece of each key (33, 58 and 65 of them). Now unified is made undumpable
    before the binary starts (`hide_host_environment`): Permission denied, and the binary still runs. Opted out,
    the environ is readable as before (tests/e2e/host_environ.py)."""
    check_host_environ(backend)  # the host is a process of its own
