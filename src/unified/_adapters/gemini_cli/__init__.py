"""The Gemini CLI backend: drives the `gemini` binary over ACP (stream-json as the fallback)."""

from __future__ import annotations

from unified._adapters.gemini_cli._adapter import GeminiCliBackend
from unified._adapters.gemini_cli._pool import AcpPool, default_pool
from unified._adapters.gemini_cli._sessions import GeminiSessionLocator, GeminiSessions, create_session_locator
from unified._adapters.gemini_cli._transport import PINNED_VERSION
from unified._internal.gemini_install import user_install_prefix, user_installed_binary
from unified.backends import Backend
from unified.types import ExecuteParams


def create_backend(params: ExecuteParams) -> Backend:
    return GeminiCliBackend(params)


__all__ = [
    "PINNED_VERSION",
    "AcpPool",
    "GeminiCliBackend",
    "GeminiSessionLocator",
    "GeminiSessions",
    "create_backend",
    "create_session_locator",
    "default_pool",
    "user_install_prefix",
    "user_installed_binary",
]
