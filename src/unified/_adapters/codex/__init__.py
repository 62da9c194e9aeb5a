"""The codex backend: drives the real `codex` binary (npm `@openai/codex`) over `codex app-server`."""

from __future__ import annotations

from pathlib import Path

from unified._adapters.codex._backend import CodexBackend
from unified._adapters.codex._launch import CODEX, PINNED_VERSION
from unified._adapters.codex._pool import CodexPool
from unified._adapters.codex._sessions import CodexSessionLocator, create_session_locator
from unified.backends import Backend
from unified.types import ExecuteParams

__all__ = [
    "CODEX",
    "PINNED_VERSION",
    "CodexBackend",
    "CodexPool",
    "CodexSessionLocator",
    "create_backend",
    "create_session_locator",
    "user_installed_binary",
]


def create_backend(params: ExecuteParams) -> Backend:
    return CodexBackend(params)


def user_installed_binary() -> Path | None:
    """The `codex` that `unified install codex` installed, if it is there (`unified doctor` asks)."""
    return CODEX.user_installed()
