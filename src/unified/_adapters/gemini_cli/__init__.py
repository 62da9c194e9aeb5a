"""The Gemini CLI backend: drives the `gemini` binary over ACP (stream-json as the fallback)."""

from __future__ import annotations

from unified._adapters.gemini_cli._acp import AcpPool, default_pool
from unified._adapters.gemini_cli._backend import GeminiCliBackend
from unified._adapters.gemini_cli._launch import GEMINI_CLI, PINNED_VERSION
from unified._adapters.gemini_cli._sessions import GeminiSessionLocator, create_session_locator
from unified.backends import Backend
from unified.types import ExecuteParams

__all__ = [
    "GEMINI_CLI",
    "PINNED_VERSION",
    "AcpPool",
    "GeminiCliBackend",
    "GeminiSessionLocator",
    "create_backend",
    "create_session_locator",
    "default_pool",
]


def create_backend(params: ExecuteParams) -> Backend:
    return GeminiCliBackend(params)
