"""Scripts for FakeGemini: the ordered model turns a fake server plays, plus the faults it injects.

A script is data, so the same scenario can be written in Python, YAML or JSON, and the Gemini CLI's own
``--fake-responses`` recordings load as scripts unchanged (one :class:`RecordedTurn` per JSONL line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from unified._exports import publish
from unified._text import first_problem

__all__ = [
    "ApiMethod",
    "CodeExecutionCall",
    "CodeExecutionResult",
    "Fault",
    "FaultKind",
    "FunctionCall",
    "FunctionCallStep",
    "GoogleSearchCall",
    "GoogleSearchResult",
    "InteractionStatus",
    "InteractionTurn",
    "ModelTurn",
    "RecordedTurn",
    "ResponsesTurn",
    "Script",
    "ServerStep",
    "ServerTool",
    "Step",
    "TextStep",
    "Thought",
    "ThoughtStep",
    "Turn",
    "Usage",
]

ApiMethod = Literal["generateContentStream", "generateContent", "countTokens", "embedContent", "interactions"]
"""What a turn can answer: the CLI's method names for the generateContent family, ``interactions`` for
``POST /interactions`` (create)."""

FaultKind = Literal[
    "rate_limit",
    "quota_exceeded",
    "server_error",
    "overloaded",
    "unavailable",
    "bad_request",
    "unauthenticated",
    "permission_denied",
    "not_found",
    "mid_stream_error",
    "cut_stream",
    "stall",
    "no_headers",
    "empty_stream",
    "no_finish",
    "garbled_event",
]

InteractionStatus = Literal[
    "in_progress",
    "requires_action",
    "completed",
    "failed",
    "cancelled",
    "incomplete",
    "budget_exceeded",
    "queued",
    "idle",
    "requires_continuation",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_STREAM_FAULTS = frozenset({"mid_stream_error", "cut_stream", "stall", "empty_stream", "no_finish", "garbled_event"})
"""The faults that answer 200 and spoil the stream (the others answer an HTTP error, or nothing)."""


class Fault(_Model):
    """One injected failure.

    HTTP faults (``rate_limit`` 429 with RetryInfo + QuotaFailure, ``quota_exceeded`` 429 for a spent
    quota or billing limit (OpenAI's ``insufficient_quota``), ``server_error`` 500, ``unavailable``
    503, ``overloaded`` (FakeAnthropic: 529 ``overloaded_error``; FakeGemini: 503), ``bad_request`` 400,
    ``unauthenticated`` 401, ``permission_denied`` 403, ``not_found`` 404; ``message`` replaces the
    default text, e.g. "API key not valid...") answer instead of the turn and leave it queued, so a
    retry gets the real answer. Stream faults deliver ``after`` chunks (or interaction events;
    FakeAnthropic: SSE events) of the turn and then fail: ``mid_stream_error``
    sends an error chunk (an ``error`` event for interactions), ``cut_stream`` drops the connection
    without the final chunk. Stream faults consume the turn; a cut interaction stays resumable.
    Silence and incomplete answers: ``no_headers`` reads the request and never answers (like an HTTP
    fault it leaves the turn queued); ``stall`` sends the headers and ``after`` chunks, then nothing;
    both hang until the server stops. ``empty_stream`` answers 200 with a stream of no chunks;
    ``no_finish`` streams the turn without its ``finishReason`` (generateContent) or without the
    events that end the interaction (interactions, whose stored resource still ends normally).
    ``garbled_event`` sends event ``after`` with its JSON cut in half (truncated JSON, as a broken proxy
    or a server bug leaves it), then the rest of the stream as usual.
    """

    kind: FaultKind
    after: int = Field(default=1, ge=0)
    retry_delay: str = "15s"
    message: str | None = None
    carries: FaultKind | None = None
    """For `mid_stream_error`: the HTTP fault whose error the chunk (or `error` event) carries, e.g.
    `rate_limit` for a quota error met in the middle of a stream; default `server_error`."""
    retry_after: str | None = None
    """For an HTTP fault (FakeGemini): the answer's `Retry-After` header as sent (delta-seconds, an HTTP date, or
    anything else a proxy may write), and a `rate_limit` body then without RetryInfo: a gateway's or proxy's 429 or
    503 says its wait only in the header."""

    @property
    def is_http(self) -> bool:
        return self.kind not in _STREAM_FAULTS


class Usage(_Model):
    """Token counts, rendered as ``usageMetadata`` (generateContent) or ``usage`` (interactions). Each is 0 or more:
    a negative one, which no API sends, was served as written (bad input round 26), and the run under test counted
    its usage as estimated without a word of the script's mistake."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    thinking_tokens: int = Field(default=0, ge=0)
    cached_tokens: int = Field(default=0, ge=0)
    tool_use_tokens: int = Field(default=0, ge=0)
    cache_creation_tokens: int = Field(default=0, ge=0)
    """Prompt tokens written to the cache (Anthropic's ``cache_creation_input_tokens``; part of
    ``input_tokens``, like ``cached_tokens``); FakeGemini does not send them."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.thinking_tokens + self.tool_use_tokens


class _TurnBase(_Model):
    fault: Fault | None = None
    chunk_delay: float = Field(
        default=0.0,
        ge=0.0,
        allow_inf_nan=False,
        description="Seconds to sleep before each chunk/event (finite: `.inf` slept for good, bad input round 26; a "
        "stream that never goes on is the `stall` fault).",
    )


class RecordedTurn(_TurnBase):
    """One line of a ``--fake-responses`` file, served verbatim (``response`` is camelCase REST JSON)."""

    kind: Literal["recorded"] = "recorded"
    method: Literal["generateContentStream", "generateContent", "countTokens", "embedContent"]
    response: list[dict[str, Any]] | dict[str, Any]

    def serves(self, method: ApiMethod) -> bool:
        return method == self.method


class Thought(_Model):
    """A thought summary part; ``signature`` is the raw signature text, sent base64-encoded like the API."""

    text: str
    signature: str | None = None


class FunctionCall(_Model):
    """A call the model makes; a `name` with `*` is a glob matched against the request's declared functions
    (`mcp_*_ask_user`: a tool named by a client per run), sent as written when it matches none or several."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    signature: str | None = None


BuiltinToolName = Literal["google_search", "google_maps", "url_context", "file_search", "code_execution"]


class ServerTool(_Model):
    """A Google built-in tool's call and result inside a ModelTurn, rendered for whichever API asks.

    generateContent: ``code_execution`` as ``executableCode`` / ``codeExecutionResult`` parts (code in
    ``arguments["code"]``, ``response`` = ``{"outcome", "output"}``); the other tools as ``toolCall`` /
    ``toolResponse`` parts (``args`` = ``arguments``, ``response``), sent, as the API does, only when
    the request set ``toolConfig.includeServerSideToolInvocations``. ``signature`` goes on the call
    part as its ``thoughtSignature``. Interactions API: a ``<tool>_call`` step (``arguments``) and a
    ``<tool>_result`` step whose ``result`` is ``interaction_result`` (none sent when None; for
    code_execution, the response's output), both carrying ``signature``.
    """

    tool: BuiltinToolName
    id: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    response: dict[str, Any] = Field(default_factory=dict)
    interaction_result: Any = None
    signature: str | None = None


class ModelTurn(_TurnBase):
    """A model answer described by meaning, rendered for whichever API asks.

    Streamed as: one chunk per thought, one per server tool (``server_tools``), ``text`` split into
    ``text_chunks`` chunks, then all function calls in one chunk (parallel calls); the last chunk
    carries ``finishReason``, usage and ``grounding`` (``groundingMetadata`` as REST JSON, sent
    verbatim; generateContent only). The Interactions API cites sources in text ``annotations``
    (``file_citation``, ``place_citation``, ``url_citation``; Interactions only). Served to
    generateContent (merged), streamGenerateContent, or the Interactions API (as thought /
    server tool / model_output / function_call steps) unless ``method`` pins one.
    """

    kind: Literal["model"] = "model"
    method: Literal["generateContentStream", "generateContent", "interactions"] | None = None
    thoughts: list[Thought] = Field(default_factory=list)
    text: str = ""
    text_chunks: int = Field(default=1, ge=1)
    text_signature: str | None = None
    function_calls: list[FunctionCall] = Field(default_factory=list)
    server_tools: list[ServerTool] = Field(default_factory=list)
    grounding: dict[str, Any] | None = None
    annotations: list[dict[str, Any]] = Field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str = "STOP"
    subagent: bool | None = None
    """FakeAnthropic only: ``True`` answers only a subagent's request (it carries Claude Code's
    ``x-claude-code-agent-id`` header), ``False`` only the main agent's, ``None`` either. A background
    subagent's requests interleave with the main agent's, so a script routes them by this."""

    def serves(self, method: ApiMethod) -> bool:
        if self.method is not None:
            return method == self.method
        return method in ("generateContentStream", "generateContent", "interactions")


class _StepBase(_Model):
    usage: Usage | None = Field(default=None, description="Sent as this step's step.stop usage.")


class TextStep(_StepBase):
    """Model output; ``annotations`` (citations) follow the text as one ``text_annotation_delta``."""

    type: Literal["model_output"] = "model_output"
    text: str
    chunks: int = Field(default=1, ge=1)
    annotations: list[dict[str, Any]] = Field(default_factory=list)


class ImageStep(_StepBase):
    """An image the model generates: a ``model_output`` step whose one delta is the image (``data``, base64,
    and ``mime_type``), as image-generating models stream it."""

    type: Literal["image_output"] = "image_output"
    data: str
    mime_type: str = "image/png"


class ThoughtStep(_StepBase):
    """A thought step: each summary is one ``thought_summary`` delta, then a ``thought_signature`` one."""

    type: Literal["thought"] = "thought"
    summary: list[str] = Field(default_factory=list)
    signature: str | None = None


class FunctionCallStep(_StepBase):
    """A function call; ``arguments_delta`` streams the JSON arguments as deltas instead of in step.start."""

    type: Literal["function_call"] = "function_call"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    arguments_delta: bool = False


class _ServerStepBase(_StepBase):
    signature: str | None = Field(default=None, description="Sent base64-encoded as the step's `signature`.")


class GoogleSearchCall(_ServerStepBase):
    """An Interactions `google_search_call` step: the model searched Google for `queries`."""

    type: Literal["google_search_call"] = "google_search_call"
    id: str
    queries: list[str] = Field(default_factory=list)


class GoogleSearchResult(_ServerStepBase):
    """An Interactions `google_search_result` step answering the call `call_id`."""

    type: Literal["google_search_result"] = "google_search_result"
    call_id: str
    search_suggestions: str = ""


class CodeExecutionCall(_ServerStepBase):
    """An Interactions `code_execution_call` step: the model ran `code` on Google's side."""

    type: Literal["code_execution_call"] = "code_execution_call"
    id: str
    code: str
    language: str = "python"


class CodeExecutionResult(_ServerStepBase):
    """An Interactions `code_execution_result` step: what the call `call_id` printed."""

    type: Literal["code_execution_result"] = "code_execution_result"
    call_id: str
    result: str
    is_error: bool = False


class ServerStep(_ServerStepBase):
    """Any other step, sent verbatim in step.start (``data`` must hold the wire fields except ``type``)."""

    type: Literal[
        "url_context_call",
        "url_context_result",
        "file_search_call",
        "file_search_result",
        "google_maps_call",
        "google_maps_result",
        "mcp_server_tool_call",
        "mcp_server_tool_result",
    ]
    data: dict[str, Any] = Field(default_factory=dict)


Step = Annotated[
    TextStep
    | ImageStep
    | ThoughtStep
    | FunctionCallStep
    | GoogleSearchCall
    | GoogleSearchResult
    | CodeExecutionCall
    | CodeExecutionResult
    | ServerStep,
    Field(discriminator="type"),
]


class InteractionTurn(_TurnBase):
    """One interaction the server creates on ``POST /interactions``.

    ``status`` defaults to ``requires_action`` when a function_call step is present, else ``completed``.
    A ``background=true`` create answers ``queued``; each GET then advances the status, through
    ``background_polls`` ``in_progress`` answers, to the final one.

    ``dialect="legacy"`` streams the same steps in the deprecated event dialect that real servers may
    still send (google-genai hands those over as ``UnknownInteractionSSEEvent``): ``interaction.start``,
    per step ``content.start`` (only the block's type; a text block is ``text``), ``content.delta``
    (text pieces, thought summaries and signature; a function call or server tool step whole, in one
    delta), ``content.stop``, then ``interaction.complete``; no ``interaction.status_update`` events.
    """

    kind: Literal["interaction"] = "interaction"
    steps: list[Step] = Field(default_factory=list)
    status: InteractionStatus | None = None
    usage: Usage | None = None
    id: str | None = None
    background_polls: int = Field(default=1, ge=0)
    dialect: Literal["current", "legacy"] = "current"

    def serves(self, method: ApiMethod) -> bool:
        return method == "interactions"

    @property
    def final_status(self) -> InteractionStatus:
        if self.status is not None:
            return self.status
        has_call = any(isinstance(step, FunctionCallStep) for step in self.steps)
        return "requires_action" if has_call else "completed"


class ResponsesTurn(_TurnBase):
    """One OpenAI Responses API answer served verbatim: its server-sent events as recorded (``FakeOpenAI``
    only; a Codex cassette replays these). Each event is a JSON object with its ``type``."""

    kind: Literal["responses"] = "responses"
    events: list[dict[str, Any]] = Field(default_factory=list)

    def serves(self, method: ApiMethod) -> bool:
        return False  # not a Gemini API answer


Turn = Annotated[RecordedTurn | ModelTurn | InteractionTurn | ResponsesTurn, Field(discriminator="kind")]


def _played(line: Any) -> Any:
    """The keys of a recorded line that the CLI plays (``method``, ``response``)."""
    return {k: v for k, v in line.items() if k in ("method", "response")} if isinstance(line, dict) else line


class Script(_Model):
    """The turns a FakeGemini plays, in order.

    ``order="per_method"`` (default; the CLI's ``--fake-responses-non-strict``): a request takes the
    first unplayed turn that serves its method, so interleaved recordings play through a client that
    makes only some of the calls. ``order="global"`` (the CLI's strict ``--fake-responses``): a request
    must match the next unplayed turn, else the server answers an error. ``request_faults`` injects a
    fault at a 0-based request index, counting every request the server receives.
    """

    turns: list[Turn] = Field(default_factory=list)
    order: Literal["per_method", "global"] = "per_method"
    request_faults: dict[int, Fault] = Field(default_factory=dict)

    @classmethod
    def from_fake_responses(cls, source: str | Path, **options: Any) -> Script:
        """Load the Gemini CLI's ``--fake-responses`` JSONL (a path, or the text itself).

        A line's other keys (older CLIs also recorded the ``request``) are ignored, as the CLI's own
        loader ignores them. A file's byte order mark is read past, as `from_file`'s.
        """
        text = source.read_text(encoding="utf-8-sig") if isinstance(source, Path) else source
        turns: list[RecordedTurn] = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                turns.append(RecordedTurn.model_validate(_played(json.loads(line))))
            except json.JSONDecodeError as exc:  # its own words said "line 1" of every line
                raise ValueError(f"line {number}, column {exc.colno}: not JSON ({exc.msg})") from exc
            except ValueError as exc:  # pydantic's: no line at all
                raise ValueError(f"line {number}: {first_problem(exc)}") from exc
        return cls.model_validate({"turns": turns, **options})

    @classmethod
    def from_file(cls, path: str | Path) -> Script:
        """Load by suffix: ``.responses``/``.jsonl`` as CLI recordings, ``.json``, ``.yaml``/``.yml``.

        YAML needs PyYAML, imported only here so the fake server itself does not depend on it. A byte order mark
        (an editor's on Windows) is read past in each, as a replayed transcript's is: a `.json` script saved with
        one was refused as "Invalid JSON: expected value at line 1 column 1" where its YAML twin played (round 24).
        """
        path = Path(path)
        if path.suffix in (".responses", ".jsonl"):
            return cls.from_fake_responses(path)
        text = path.read_text(encoding="utf-8-sig")
        if path.suffix in (".yaml", ".yml"):
            from unified.testing._yaml import load_yaml

            return cls.model_validate(load_yaml(text, "a YAML script"))
        return cls.model_validate_json(text)


publish(
    "unified.testing",
    [
        "CodeExecutionCall",
        "CodeExecutionResult",
        "Fault",
        "FunctionCall",
        "FunctionCallStep",
        "GoogleSearchCall",
        "GoogleSearchResult",
        "ImageStep",
        "InteractionTurn",
        "ModelTurn",
        "RecordedTurn",
        "ResponsesTurn",
        "Script",
        "ServerStep",
        "ServerTool",
        "TextStep",
        "Thought",
        "ThoughtStep",
        "Usage",
    ],
    globals(),
)
