"""The generate-content backend: the Gemini API's streamGenerateContent with unified's own agent loop.

Importing this package is cheap: google-genai is imported only when a run starts.
Mapping, quirks and options: docs/backends/generate-content.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from unified._adapters.generate_content._backend import GenerateContentBackend
from unified._adapters.generate_content._sessions import BACKEND, GenerateContentSessionLocator

if TYPE_CHECKING:
    from unified.sessions import SessionStore
    from unified.types import ExecuteParams


def create_backend(params: ExecuteParams) -> GenerateContentBackend:
    return GenerateContentBackend(params)


def create_session_locator(store: SessionStore | None = None) -> GenerateContentSessionLocator:
    return GenerateContentSessionLocator(store)


__all__ = [
    "BACKEND",
    "GenerateContentBackend",
    "GenerateContentSessionLocator",
    "create_backend",
    "create_session_locator",
]
