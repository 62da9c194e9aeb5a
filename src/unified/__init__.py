"""unified: one typed event stream over Google agent backends.

    from unified import ExecuteParams, execute

    async with execute(ExecuteParams(prompt="Fix the failing test", backend="auto")) as events:
        async for event in events:
            print(event.type)

The backends (the Gemini CLI over ACP, the generateContent API, the Interactions API) load only
when a run needs them. `unified.events` is the protocol; `unified.testing` holds the fake server
and the scripted backend for offline tests.
"""

from typing import TYPE_CHECKING, Any

from unified._errors import (
    AmbiguousSession,
    AuthError,
    BackendError,
    BackendUnavailable,
    ConfigurationError,
    CorruptSession,
    ProtocolViolation,
    RateLimited,
    RoutingError,
    SessionError,
    SessionInUse,
    SessionNotFound,
    SessionStoreUnavailable,
    UnifiedError,
    UnsupportedSessionFormat,
)
from unified.events import PROTOCOL_VERSION, UnifiedEvent, Usage, UserInputRequest, UserInputResponse
from unified.sessions import SessionInfo, SessionStore, StoredSession
from unified.types import (
    ApprovalMode,
    BackendChoice,
    BackendOptions,
    ExecuteParams,
    HttpMcpServer,
    ImageInput,
    McpServer,
    SseMcpServer,
    StdioMcpServer,
    ThinkingConfig,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from unified._internal.api_settings import FileSearchTool, FunctionCalling, GoogleMapsTool, LatLng
    from unified._internal.postgres_store import PostgresSessionStore
    from unified._internal.session_store import FileSessionStore, MemorySessionStore
    from unified.adapters.gemini_cli._options import GeminiCliOptions
    from unified.adapters.generate_content._options import GenerateContentOptions
    from unified.adapters.interactions._options import InteractionsOptions
    from unified.query import EventStream, execute, execute_sync

_RUNTIME = {"EventStream", "execute", "execute_sync"}
"""Loaded on first use: the run machinery (anyio, the stream guard) is not needed to read events or types."""
_STORES = {"FileSessionStore", "MemorySessionStore"}
"""Loaded on first use, like the run machinery (they need anyio and platformdirs)."""
_OPTIONS = {
    "GeminiCliOptions": "unified.adapters.gemini_cli._options",
    "GenerateContentOptions": "unified.adapters.generate_content._options",
    "InteractionsOptions": "unified.adapters.interactions._options",
    "FileSearchTool": "unified._internal.api_settings",
    "FunctionCalling": "unified._internal.api_settings",
    "GoogleMapsTool": "unified._internal.api_settings",
    "LatLng": "unified._internal.api_settings",
}
"""Each backend's typed `backend_options` (and the API backends' tool settings), loaded on first use."""


def __getattr__(name: str) -> Any:
    if name in _RUNTIME:
        from unified import query

        return getattr(query, name)
    if name in _STORES:
        from unified._internal import session_store

        return getattr(session_store, name)
    if name == "PostgresSessionStore":  # psycopg is imported when a store is created, not here
        from unified._internal import postgres_store

        return postgres_store.PostgresSessionStore
    if name in _OPTIONS:
        import importlib

        return getattr(importlib.import_module(_OPTIONS[name]), name)
    raise AttributeError(f"module 'unified' has no attribute {name!r}")


__all__ = [
    "PROTOCOL_VERSION",
    "AmbiguousSession",
    "ApprovalMode",
    "AuthError",
    "BackendChoice",
    "BackendError",
    "BackendOptions",
    "BackendUnavailable",
    "ConfigurationError",
    "CorruptSession",
    "EventStream",
    "ExecuteParams",
    "FileSearchTool",
    "FileSessionStore",
    "FunctionCalling",
    "GeminiCliOptions",
    "GenerateContentOptions",
    "GoogleMapsTool",
    "HttpMcpServer",
    "ImageInput",
    "InteractionsOptions",
    "LatLng",
    "McpServer",
    "MemorySessionStore",
    "PostgresSessionStore",
    "ProtocolViolation",
    "RateLimited",
    "RoutingError",
    "SessionError",
    "SessionInUse",
    "SessionInfo",
    "SessionNotFound",
    "SessionStore",
    "SessionStoreUnavailable",
    "SseMcpServer",
    "StdioMcpServer",
    "StoredSession",
    "ThinkingConfig",
    "UnifiedError",
    "UnifiedEvent",
    "UnsupportedSessionFormat",
    "Usage",
    "UserInputRequest",
    "UserInputResponse",
    "__version__",
    "execute",
    "execute_sync",
]
