"""Sessions across backends: the records, the store protocol, the built-in stores, and lookup.

Each backend keeps its sessions its own way: the Gemini CLI in its chat files, the API backends
(generate-content, interactions) in a `SessionStore` (by default the `FileSessionStore` under the
user data dir, or the store `UNIFIED_SESSION_STORE_URL` names; pass another through
`ExecuteParams.session_store`). Each backend's `SessionLocator` presents them alike, and
`list_sessions`, `resolve`, `show` and `delete` search every backend, so a short id from
`unified sessions list` names exactly one session, or gives an error listing what there is.
See docs/sessions.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from unified._session_service import (
    SessionListing,
    delete,
    export,
    list_sessions,
    locator,
    resolve,
    session_backends,
    show,
)
from unified._sessions.records import (
    SHORT_ID_LENGTH,
    SessionInfo,
    SessionProblem,
    SessionStore,
    StoredSession,
    resolve_ref,
    short_id_of,
)

if TYPE_CHECKING:
    from unified._sessions.config import store_from_url
    from unified._sessions.postgres import PostgresSessionStore
    from unified._sessions.stores import FileSessionStore, MemorySessionStore

__all__ = [
    "SHORT_ID_LENGTH",
    "FileSessionStore",
    "MemorySessionStore",
    "PostgresSessionStore",
    "SessionInfo",
    "SessionListing",
    "SessionProblem",
    "SessionStore",
    "StoredSession",
    "delete",
    "export",
    "list_sessions",
    "locator",
    "resolve",
    "resolve_ref",
    "session_backends",
    "short_id_of",
    "show",
    "store_from_url",
]

_LAZY = {
    "FileSessionStore": "unified._sessions.stores",
    "MemorySessionStore": "unified._sessions.stores",
    "store_from_url": "unified._sessions.config",
    "PostgresSessionStore": "unified._sessions.postgres",  # psycopg itself loads when a store is made
}
"""Loaded on first use: the stores need anyio and platformdirs, reading records does not."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'unified.sessions' has no attribute {name!r}")
