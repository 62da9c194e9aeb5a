"""The Interactions API backend (`client.aio.interactions`): server-side conversation state,
server-side tools, resumable streams and background agents. See docs/backends/interactions.md.

Nothing here imports google-genai; the client does, when a run starts.
"""

from __future__ import annotations

from unified._adapters.interactions._backend import InteractionsBackend
from unified._adapters.interactions._sessions import InteractionsSessionLocator
from unified.sessions import SessionStore
from unified.types import ExecuteParams


def create_backend(params: ExecuteParams) -> InteractionsBackend:
    return InteractionsBackend(params)


def create_session_locator(store: SessionStore | None = None) -> InteractionsSessionLocator:
    return InteractionsSessionLocator(store)


__all__ = ["InteractionsBackend", "InteractionsSessionLocator", "create_backend", "create_session_locator"]
