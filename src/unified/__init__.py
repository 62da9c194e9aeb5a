"""unified: one typed event stream over many agent backends.

    import anyio
    from unified import ExecuteParams, execute

    async def main() -> None:
        async with execute(ExecuteParams(prompt="Fix the failing test", backend="auto")) as events:
            async for event in events:
                print(event.type)

    anyio.run(main)

The public modules (docs/api.md says what each promises): `unified` (this one: the run, its
parameters, the errors), `unified.events` (the protocol), `unified.types` (parameter types),
`unified.errors`, `unified.sessions`, `unified.backends` (the backend contract), `unified.tools`
(the local tool runtime), `unified.capabilities` (the matrix) and `unified.testing` (the test kit).
Everything else is private. Backends load only when a run needs them.
"""

from unified._version import __version__

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing alone costs more than the rest of this module
if TYPE_CHECKING:
    from typing import Any

    from unified._adapters.claude_code._options import ClaudeCodeOptions
    from unified._adapters.codex._options import CodexOptions
    from unified._adapters.gemini_cli._options import GeminiCliOptions
    from unified._adapters.generate_content._options import GenerateContentOptions
    from unified._adapters.interactions._options import InteractionsOptions
    from unified._execute import EventStream, execute, execute_sync
    from unified._internal.api_options import FileSearchTool, FunctionCalling, GoogleMapsTool, LatLng
    from unified._sessions.postgres import PostgresSessionStore
    from unified._sessions.records import SessionInfo, SessionStore, StoredSession
    from unified._sessions.stores import FileSessionStore, MemorySessionStore
    from unified.errors import (
        AmbiguousSession,
        AuthError,
        BackendError,
        BackendUnavailable,
        ConfigurationError,
        CorruptSession,
        ProtocolViolation,
        RateLimited,
        RoutingError,
        RunStopped,
        SessionError,
        SessionInUse,
        SessionNotFound,
        SessionStoreUnavailable,
        UnifiedError,
        UnsupportedSessionFormat,
    )
    from unified.events import PROTOCOL_VERSION, UnifiedEvent, Usage, UserInputRequest, UserInputResponse
    from unified.types import (
        ApprovalMode,
        BackendOptions,
        ExecuteParams,
        HttpMcpServer,
        ImageInput,
        McpServer,
        SseMcpServer,
        StdioMcpServer,
        ThinkingConfig,
    )

_ERRORS = (
    "AmbiguousSession AuthError BackendError BackendUnavailable ConfigurationError CorruptSession ProtocolViolation "
    "RateLimited RoutingError RunStopped SessionError SessionInUse SessionNotFound SessionStoreUnavailable "
    "UnifiedError UnsupportedSessionFormat"
)
_TYPES = (
    "ApprovalMode BackendOptions ExecuteParams HttpMcpServer ImageInput McpServer SseMcpServer StdioMcpServer "
    "ThinkingConfig"
)

_LAZY = {
    # the errors: plain exceptions (no pydantic)
    **dict.fromkeys(_ERRORS.split(), "unified.errors"),
    # the protocol and the parameter types (pydantic): not needed until a value is built or read
    **dict.fromkeys(
        ("PROTOCOL_VERSION", "UnifiedEvent", "Usage", "UserInputRequest", "UserInputResponse"), "unified.events"
    ),
    **dict.fromkeys(_TYPES.split(), "unified.types"),
    **dict.fromkeys(("SessionInfo", "SessionStore", "StoredSession"), "unified._sessions.records"),
    # the run machinery (anyio, the stream guard)
    "EventStream": "unified._execute",
    "execute": "unified._execute",
    "execute_sync": "unified._execute",
    # the stores need anyio and platformdirs; psycopg loads when a PostgreSQL store is made
    "FileSessionStore": "unified._sessions.stores",
    "MemorySessionStore": "unified._sessions.stores",
    "PostgresSessionStore": "unified._sessions.postgres",
    # each backend's typed `backend_options` (and the API backends' tool settings)
    "ClaudeCodeOptions": "unified._adapters.claude_code._options",
    "CodexOptions": "unified._adapters.codex._options",
    "GeminiCliOptions": "unified._adapters.gemini_cli._options",
    "GenerateContentOptions": "unified._adapters.generate_content._options",
    "InteractionsOptions": "unified._adapters.interactions._options",
    "FileSearchTool": "unified._internal.api_options",
    "FunctionCalling": "unified._internal.api_options",
    "GoogleMapsTool": "unified._internal.api_options",
    "LatLng": "unified._internal.api_options",
}
"""Every public name, loaded on first use: `import unified` imports nothing else (not even pydantic)."""

_SUBMODULES = frozenset({"backends", "capabilities", "errors", "events", "sessions", "testing", "tools", "types"})
"""The public modules, reachable as attributes (`unified.events`) as if the package had imported them."""


def __getattr__(name: str) -> "Any":
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"unified.{name}")
    else:
        raise AttributeError(f"module 'unified' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})


__all__ = [
    "PROTOCOL_VERSION",
    "AmbiguousSession",
    "ApprovalMode",
    "AuthError",
    "BackendError",
    "BackendOptions",
    "BackendUnavailable",
    "ClaudeCodeOptions",
    "CodexOptions",
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
    "RunStopped",
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
