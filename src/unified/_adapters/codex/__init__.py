"""The codex backend: drives the real `codex` binary (npm `@openai/codex`) over `codex app-server`."""

from __future__ import annotations

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
]


def create_backend(params: ExecuteParams) -> Backend:
    return CodexBackend(params)
