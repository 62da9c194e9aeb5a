"""The Claude Code backend: drives the `claude` binary over stream-json and its control protocol."""

from __future__ import annotations

from pathlib import Path

from unified._adapters.claude_code._backend import ClaudeCodeBackend
from unified._adapters.claude_code._launch import CLAUDE_CODE, PINNED_VERSION, default_home
from unified._adapters.claude_code._sessions import ClaudeSessionLocator, create_session_locator
from unified._adapters.claude_code._spares import ClaudeSparePool
from unified.backends import Backend
from unified.types import ExecuteParams

__all__ = [
    "CLAUDE_CODE",
    "PINNED_VERSION",
    "ClaudeCodeBackend",
    "ClaudeSessionLocator",
    "ClaudeSparePool",
    "create_backend",
    "create_session_locator",
    "default_home",
    "user_installed_binary",
]


def create_backend(params: ExecuteParams) -> Backend:
    return ClaudeCodeBackend(params)


def user_installed_binary() -> Path | None:
    """The `claude` that `unified install claude-code` installed, if it is there (`unified doctor` asks)."""
    return CLAUDE_CODE.user_installed()
