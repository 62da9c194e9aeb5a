"""Caller-facing parameter types: what an orchestrator passes to `execute()`.

Kept apart from the event protocol (what comes back) and free of any backend SDK, so that
`import unified` stays light and every layer can share the same vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from unified._files import current_directory, expand_user, read_regular
from unified._redaction import REDACTED, redact_mapping
from unified._sessions.records import SessionStore
from unified._text import nearest
from unified._urls import url_problem
from unified.conversations import Conversation
from unified.events import ERROR_CODES, UserInputRequest, UserInputResponse

__all__ = [
    "FAILOVER_CODES",
    "ApprovalMode",
    "BackendName",
    "BackendOptions",
    "ExecuteParams",
    "Fallback",
    "HttpMcpServer",
    "ImageInput",
    "ImageMime",
    "McpServer",
    "SseMcpServer",
    "StdioMcpServer",
    "ThinkingConfig",
    "UserInputHandler",
]

FAILOVER_CODES: tuple[str, ...] = ("rate_limited", "auth_error", "backend_unavailable")
"""The errors that move a run to its next `fallback` backend unless `failover_on` says otherwise."""

BackendName = Literal["gemini-cli", "generate-content", "interactions", "claude-code", "codex"]
"""The backends that ship with `unified` (`unified.backends.built_in_backends()`). `ExecuteParams.backend`
also takes `"auto"`, the test kit's `"scripted"` and any backend registered through `unified.backends`."""

ApprovalMode = Literal["default", "auto_edit", "yolo", "plan"]
"""How tool calls that change things are approved.

default: read-only tools run, writes and shell ask the user (deny when nobody can answer);
auto_edit: file edits run, shell asks; yolo: everything runs; plan: read-only, writes and shell are denied.
"""

UserInputHandler = Callable[[UserInputRequest], Awaitable[UserInputResponse]]
"""Answers a `user_input_request` (a permission prompt, an `ask_user` question, an MCP elicitation)."""


_ReprArgs = Iterable[tuple[str | None, Any]]
"""What pydantic's `__repr_args__` yields: (field name, value) pairs."""


def _no_flag(value: object) -> object:
    """A bool is refused where a number goes: `max_turns=True` ran one turn and `idle_timeout_s=True` timed out after
    a second of silence (pydantic reads True as 1), where the caller meant a flag of its own (`max_turns=args.quick`)
    (bad input round 24). A number in a string is taken still: it is a number."""
    if isinstance(value, bool):
        raise ValueError(f"{value} is a flag (a bool), not a number: give the number itself")
    return value


def _a_number(value: object) -> object:
    """`_no_flag`, and NaN refused as what it is: pydantic checks a bound before finiteness, so `total_timeout_s=nan`
    (or `"nan"`) was "Input should be greater than 0", as if a number had been given (bad input round 26)."""
    value = _no_flag(value)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value  # pydantic says it is no number
    else:
        number = value if isinstance(value, float) else 0.0
    if math.isnan(number):
        raise ValueError("NaN is not a number: give a number of seconds, or None for no limit where one is allowed")
    return value


_Count = Annotated[int, BeforeValidator(_no_flag)]
_Seconds = Annotated[float, BeforeValidator(_a_number)]

_MCP_TIMEOUT = "Longest wait for one answer of the server, in seconds."
"""Finite and above 0 (the field's bounds): NaN or infinity failed a codex run's start with an untyped ValueError
from deep inside (its config takes whole seconds), and 0 or less timed out every call at once."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    def __repr_args__(self) -> _ReprArgs:  # headers and env may hold tokens: never in a repr or a log line
        return [
            (
                name,
                {key: REDACTED for key in value}  # every header value is a secret (`given_secrets`)
                if name == "headers" and isinstance(value, dict)
                else redact_mapping(value)
                if isinstance(value, (dict, str))  # a string: a URL's password or query credential
                else value,
            )
            for name, value in super().__repr_args__()
        ]


class BackendOptions(BaseModel):
    """Base of each backend's typed options (`GeminiCliOptions`, `GenerateContentOptions`,
    `InteractionsOptions`, all exported by `unified`): an unknown key or a wrong type is a
    `ConfigurationError` before the run starts, the same on every backend."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, defer_build=True)

    def __repr_args__(self) -> _ReprArgs:  # an api_key must not reach a repr or a log line
        shown = redact_mapping(dict(super().__repr_args__()))
        return list(shown.items()) if isinstance(shown, dict) else []


def _named_server(name: str) -> str:
    """A server's name is the middle of its tools' names (`mcp__<name>__<tool>`): an empty one was taken, and its
    tools offered as `mcp____<tool>`, which no rule or excluded_tools entry of the caller's names (round 24)."""
    if not name.strip():
        raise ValueError("an MCP server's name is empty: give it a name (its tools are offered as mcp__<name>__<tool>)")
    return name


_ServerName = Annotated[str, AfterValidator(_named_server)]


def _exec_problem(server: StdioMcpServer) -> str | None:
    """Why `server`'s command, arguments or environment cannot be given to a program, or None: the start failed
    with Python's own "ValueError: embedded null byte" or "illegal environment variable name", naming neither the
    server's field nor what to do (round 24). No value is quoted: an env value may be a secret."""
    if not server.command.strip():
        return "its command is empty: name the program to start"
    if "\0" in server.command or any("\0" in arg for arg in server.args):
        return "its command or one of its args holds a NUL byte, which no program's arguments can"
    for name, value in server.env.items():
        if not name or "=" in name or "\0" in name:
            return "its env has a variable name no environment can hold (empty, or with '=' or a NUL byte)"
        if "\0" in value:
            return f"the value of its env variable {name!r} holds a NUL byte, which no environment can"
    return None


class StdioMcpServer(_Frozen):
    """An MCP server started as a subprocess speaking JSON-RPC on stdio."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, hide_input_in_errors=True)
    """Its input not in an error: its env may hold a token (`_can_start` refuses it whole)."""

    type: Literal["stdio"] = "stdio"
    name: _ServerName = Field(description="The server's name: its tools are offered as `<name>__<tool>`.")
    command: str = Field(description="The program to start.")
    args: tuple[str, ...] = Field(default=(), description="Its arguments.")
    env: dict[str, str] = Field(default_factory=dict, description="Variables added to its environment.")
    cwd: Path | None = Field(default=None, description="Where it starts (None: the run's `cwd`).")
    timeout_s: _Seconds = Field(default=30.0, gt=0, allow_inf_nan=False, description=_MCP_TIMEOUT)

    @model_validator(mode="after")
    def _can_start(self) -> StdioMcpServer:
        problem = _exec_problem(self)
        if problem is not None:
            raise ValueError(f"MCP server {self.name!r}: {problem}")
        return self


class _UrlMcpServer(_Frozen):
    """An MCP server reached at a URL: the URL is checked as the server is described (`unified._urls.url_problem`,
    the check of a base URL too). A bad port, no host or another scheme failed at the first connection with the HTTP
    client's own words ("InvalidURL: Invalid port", an OverflowError), or not at all inside an agent binary."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, hide_input_in_errors=True)
    """Its input not in an error: it holds the URL's password or key, and the headers."""

    @model_validator(mode="after")
    def _url_fits(self) -> _UrlMcpServer:
        url: str = getattr(self, "url")  # noqa: B009  # each subclass's own field, described there
        problem = url_problem(url)
        if problem is not None:
            raise ValueError(  # the URL itself not repeated: a token may stand where its port or host goes
                f"MCP server {getattr(self, 'name')!r}: its url cannot be used: {problem}; "  # noqa: B009
                "give the server's full http:// or https:// URL, e.g. http://localhost:8080/mcp"
            )
        return self


class HttpMcpServer(_UrlMcpServer):
    """An MCP server reached over streamable HTTP."""

    type: Literal["http"] = "http"
    name: _ServerName = Field(description="The server's name: its tools are offered as `<name>__<tool>`.")
    url: str = Field(description="The server's streamable HTTP endpoint.")
    headers: dict[str, str] = Field(default_factory=dict, description="Sent with every request (never logged).")
    timeout_s: _Seconds = Field(default=30.0, gt=0, allow_inf_nan=False, description=_MCP_TIMEOUT)


class SseMcpServer(_UrlMcpServer):
    """An MCP server reached over the older HTTP+SSE transport."""

    type: Literal["sse"] = "sse"
    name: _ServerName = Field(description="The server's name: its tools are offered as `<name>__<tool>`.")
    url: str = Field(description="The server's SSE endpoint.")
    headers: dict[str, str] = Field(default_factory=dict, description="Sent with every request (never logged).")
    timeout_s: _Seconds = Field(default=30.0, gt=0, allow_inf_nan=False, description=_MCP_TIMEOUT)


McpServer = Annotated[StdioMcpServer | HttpMcpServer | SseMcpServer, Field(discriminator="type")]


class ThinkingConfig(_Frozen):
    """How much the model may think, and whether thought summaries come back.

    Gemini 2.5 models take a token `budget` (-1 = dynamic, 0 = off where the model allows it);
    Gemini 3 models and the Interactions API take a `level`. Give one; a backend that cannot
    honour the one given says so with a `warning` event.
    """

    budget: _Count | None = Field(
        default=None, ge=-1, description="Thinking tokens (Gemini 2.5): -1 dynamic, 0 off where the model allows it."
    )
    level: Literal["minimal", "low", "medium", "high"] | None = Field(
        default=None, description="Thinking level (Gemini 3, the Interactions API)."
    )
    include_thoughts: bool = Field(default=True, description="Whether thought summaries come back as `thinking`.")

    @model_validator(mode="after")
    def _one_of(self) -> ThinkingConfig:
        if self.budget is not None and self.level is not None:
            raise ValueError("give either a thinking budget or a thinking level, not both")
        return self


ImageMime = Literal["image/png", "image/jpeg", "image/webp", "image/gif"]


class ImageInput(_Frozen):
    """An image attached to the prompt, as bytes with its MIME type."""

    mime_type: ImageMime = Field(description="The image's type (`from_path` reads it from the first bytes).")
    data: bytes = Field(description="The image file's bytes.")

    @classmethod
    def from_path(cls, path: str | Path) -> ImageInput:
        """Read an image file, detecting its type from its first bytes, not its name. A FIFO or a device at
        `path` (or a link to one) is refused with `unified._files.NotRegularFile` (an OSError), never waited on
        or read without end."""
        data = read_regular(path)
        mime = image_type(data)
        if mime is None:
            raise ValueError(f"{path} is not a PNG, JPEG, GIF or WebP image")
        return cls(mime_type=mime, data=data)


_SIGNATURES: tuple[tuple[bytes, ImageMime], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_type(data: bytes) -> ImageMime | None:
    """The image type `data` starts with (its signature), or None when it is none of the four."""
    for magic, mime in _SIGNATURES:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


class Fallback(_Frozen):
    """A backend to fail over to, with the model and options it runs with (`ExecuteParams.fallback`)."""

    backend: str
    model: str | None = None
    backend_options: dict[str, object] | BackendOptions = Field(default_factory=dict)


def _named_directory(value: object) -> object:
    """An empty name is no directory: `Path("")` is `.`, so `cwd=""` (a script's unset variable, `--cwd "$DIR"`) ran
    the agent, its writes and its shell in the process's own directory, unasked. Refused where it is given."""
    if value == "":
        raise ValueError("the directory's name is empty: name a directory, or leave it out for the current one")
    return value


def _home_expanded(path: Path) -> Path:
    """`~` and `~user` as a shell reads them: `cwd="~/work"` passed the existence check (which expanded it) but ran
    the API backends' tools, and filed the session, under a directory named `~` in the process's own directory; an
    unknown user's `~nobody/x` raised a bare RuntimeError out of the run (bad input round 23)."""
    try:
        return expand_user(path)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


_Directory = Annotated[Path, BeforeValidator(_named_directory), AfterValidator(_home_expanded)]


def _error_code(value: object) -> object:
    """A `failover_on` entry that is no error code (`rate_limit`, `429`) is refused: no run ever ends with it, so
    the run it was meant to move on never did, and nothing said why (round 20)."""
    if isinstance(value, str) and value not in ERROR_CODES:
        near = nearest(value, sorted(ERROR_CODES))
        guess = f"did you mean {near!r}? " if near else ""
        raise ValueError(
            f"{value!r} is no error code, so no run would ever fail over on it; {guess}"
            f"the codes are unified.events.ErrorCode (docs/protocol.md, Codes)"
        )
    return value


_ErrorCodeName = Annotated[str, BeforeValidator(_error_code)]


class ExecuteParams(BaseModel):
    """Everything one run needs: a `prompt` (or, with `retry`, none), the rest optional.

    An option the chosen backend cannot honour produces a `warning` event before
    `session_started` (or an `error` when ignoring it would change what the run does).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, defer_build=True, hide_input_in_errors=True)

    prompt: str = Field(
        default="",
        description="What the agent should do. Not blank, unless `images` are given or `retry` is set (then empty).",
    )
    images: tuple[ImageInput, ...] = Field(
        default=(),
        description="Images sent with the prompt (`ImageInput.from_path`); a backend without `image_input` says "
        "so in a `warning`.",
    )
    backend: str = Field(
        default="auto",
        min_length=1,
        description='"auto" (routing picks one), a built-in backend (`BackendName`), "scripted" (the test kit\'s) '
        "or a backend registered through `unified.backends`; an unknown name ends the run with a "
        "`configuration_error` listing the known ones.",
    )
    model: str | None = Field(
        default=None, description="The model, e.g. `gemini-2.5-flash`; None: the backend's default (docs/backends/)."
    )
    cwd: _Directory = Field(
        default_factory=current_directory,
        description="The agent's working directory: where its tools run and its session is filed. Must exist.",
    )
    resume: str | None = Field(default=None, description="A session's short id, unique prefix or full id.")
    history: Conversation | None = Field(
        default=None,
        description="A conversation to continue (`unified.sessions.export(ref)`, or your own): the run is a new "
        "session on this backend that starts from it, and its record names where it came from. Not with `resume`.",
    )
    fallback: tuple[str | Fallback, ...] = Field(
        default=(),
        description="Backends to go on on, in order, when the backend gives out with an error of `failover_on`: "
        "the run continues with the conversation so far, in the same stream (a `failover` event says so). A "
        "name alone keeps `model` only for a backend of the same provider and sends no `backend_options`; "
        "a `Fallback` gives them. An unknown backend name ends the run with a `configuration_error` before it starts; "
        "one that is the backend itself (of its model and options) or is named twice is refused "
        "(`ConfigurationError`); with `auto`, one that is the backend auto chose (with `resume`, the backend that "
        "owns the session) is left out, said in a `warning`.",
    )
    failover_on: tuple[_ErrorCodeName, ...] = Field(
        default=FAILOVER_CODES,
        description="The error codes that move the run to the next `fallback` backend (after the backend's own "
        "retries): by default a rate limit or exhausted quota, refused credentials, an unavailable backend. Each "
        "must be an `ErrorCode` (docs/protocol.md, Codes): another string is refused, as no run would end with it.",
    )
    retry: bool = Field(
        default=False,
        description="Answer the last user turn of `resume` (or `history`) again instead of adding a prompt: "
        "for a turn that failed. `prompt` must then be empty.",
    )
    approval_mode: ApprovalMode = Field(
        default="default",
        description="How tool calls that change things are approved: `default` (reads run; writes and shell ask "
        "`on_user_input`, denied when nobody can answer), `auto_edit` (edits run too), `yolo` (everything runs), "
        "`plan` (read-only: writes and shell are denied).",
    )
    thinking: ThinkingConfig | None = Field(
        default=None, description="How much the model may think, and whether thoughts come back; None: the backend's."
    )
    mcp_servers: tuple[McpServer, ...] = Field(
        default=(), description="MCP servers whose tools the agent may call (stdio, HTTP or SSE)."
    )
    excluded_tools: tuple[str, ...] = Field(default=(), description="Tools the agent must not be offered, by name.")
    include_directories: tuple[_Directory, ...] = Field(
        default=(), description="More directories the agent may work in, besides `cwd`."
    )
    max_turns: _Count | None = Field(
        default=None,
        ge=1,
        description="Stop after this many model turns (`result.status` `max_turns`); None: no limit.",
    )
    idle_timeout_s: _Seconds | None = Field(
        default=180.0,
        gt=0,
        allow_inf_nan=False,
        description="Longest silence between events while the backend is expected to speak (time inside a "
        "local tool call or waiting for the user does not count); None turns the check off (infinity is refused: "
        "None says it).",
    )
    total_timeout_s: _Seconds | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="Longest the whole run may take (then `error` `total_timeout`); None: no limit (infinity is "
        "refused: None says it).",
    )
    on_user_input: UserInputHandler | None = Field(
        default=None,
        description="Answers permission prompts and questions: an async function from `UserInputRequest` to "
        "`UserInputResponse`. None: nobody answers (a call that needs an answer is denied).",
    )
    user_input_timeout_s: _Seconds = Field(
        default=300.0,
        gt=0,
        allow_inf_nan=False,
        description="Longest one answer of `on_user_input` may take; then it counts as none (infinity is refused: a "
        "handler that never answers would hold the run for good).",
    )
    system_instruction: str | None = Field(
        default=None, description="Replaces the backend's system prompt (the gemini CLI's whole one); None: its own."
    )
    include_native: bool = Field(default=False, description="Keep each raw backend event in `native`.")
    session_store: SessionStore | None = Field(
        default=None,
        description="Where the API backends keep sessions (None: the files under UNIFIED_DATA_DIR or the "
        "user data dir); see docs/sessions.md.",
    )
    backend_options: dict[str, object] | BackendOptions = Field(
        default_factory=dict,
        description="Backend-specific settings: the backend's typed options (e.g. `GenerateContentOptions`) "
        "or a dict of the same keys; documented per backend.",
    )

    def __repr_args__(self) -> _ReprArgs:  # an api_key in backend_options must not reach a repr or a log line
        return [
            (name, redact_mapping(value) if name == "backend_options" else value)
            for name, value in super().__repr_args__()
        ]

    def backend_options_dict(self) -> dict[str, object]:
        """`backend_options` as a plain mapping, whichever form the caller gave."""
        options = self.backend_options
        return dict(options) if isinstance(options, dict) else options.model_dump(exclude_unset=True)
