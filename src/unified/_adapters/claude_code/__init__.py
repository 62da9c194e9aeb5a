"""The Claude Code backend: drives the `claude` binary over stream-json and its control protocol."""

from __future__ import annotations

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
]


def create_backend(params: ExecuteParams) -> Backend:
    return ClaudeCodeBackend(params)
