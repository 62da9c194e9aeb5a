"""The generate-content turn client: one streamGenerateContent request per model turn.

The API keeps nothing between calls, so every request sends the whole history (`contents`, thought
signatures included), which the session's state holds. google-genai's automatic function calling
and continuation are off: the shared agent loop (`unified._agent_loop`) owns every request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
from google.genai import types

from unified._adapters.generate_content._client import generation_config
from unified._adapters.generate_content._conversation import contents_from_conversation, conversation_from_contents
from unified._adapters.generate_content._failures import failure_from_exception
from unified._adapters.generate_content._options import (
    DEFAULT_MODEL,
    GenerateContentOptions,
    plan_thinking,
    server_side_invocations,
)
from unified._adapters.generate_content._sessions import BACKEND
from unified._adapters.generate_content._stream import WireRequest, stream_chunks, text_content_json
from unified._adapters.generate_content._translate import GenerateContentTranslator
from unified._agent_loop import Declarations, Emit, TurnEnd
from unified._internal.genai_client import GenaiClient
from unified._internal.images import GEMINI_INLINE_TYPES, image_note, stored_not_taken, taken
from unified._internal.retry import Failure
from unified._text import json_type
from unified.backends import RunOutcome
from unified.conversations import Conversation, ImagePart, ModelTurn
from unified.errors import BackendError, ConfigurationError
from unified.events import Usage
from unified.sessions import StoredSession
from unified.tools import ToolCall, ToolOutcome
from unified.types import ExecuteParams

__all__ = ["GenerateContentTurns"]

_CANCELLED_CALL = "this call never ran: the previous run ended before it could"


async def _close(stream: AsyncIterator[Any]) -> None:
    """Close the SDK's stream generator now (releasing the HTTP response), not when it is collected."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True):
            await aclose()


def _dump(content: types.Content) -> dict[str, Any]:
    return content.model_dump(mode="json", exclude_none=True)


def _repair(contents: list[types.Content]) -> None:
    """A run that stopped between a model's calls and their answers left calls unanswered; the API
    would reject that history, so answer each with an error saying the call never ran."""
    if not contents or contents[-1].role != "model":
        return
    calls = [p.function_call for p in contents[-1].parts or [] if p.function_call is not None]
    if calls:
        contents.append(
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=c.id, name=c.name, response={"error": _CANCELLED_CALL}
                        )
                    )
                    for c in calls
                ],
            )
        )


def _paired(contents: list[types.Content]) -> bool:
    """Whether each model turn's function calls are answered by the very next turn, by their responses and no
    other, and no response stands anywhere else: the pairing the Gemini API checks (it counts consecutive contents
    of one role as one turn; a call its own turn answers is a server-side one). Every session this backend wrote
    is paired; a scan of the parts, without reading them further."""
    turns: list[tuple[str, list[types.Part]]] = []
    for content in contents:
        role = "model" if content.role == "model" else "user"
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(content.parts or [])
        else:
            turns.append((role, list(content.parts or [])))
    owed: list[tuple[str | None, str | None]] = []
    for role, parts in turns:
        calls = [(p.function_call.id, p.function_call.name) for p in parts if p.function_call is not None]
        answers = [(p.function_response.id, p.function_response.name) for p in parts if p.function_response is not None]
        if role == "model":
            if owed:
                return False
            owed = [call for call in calls if call[0] is None or call not in answers]
        else:
            if sorted(answers, key=repr) != sorted(owed, key=repr):
                return False
            owed = []
    return not owed


def _refused_media(contents: list[types.Content]) -> list[str]:
    """Each attachment of a user's content in `contents` of a type Gemini refuses (`image/svg+xml`: HTTP 400 on
    every turn of the session, as a session stored before the check holds it) made the text note a carried
    history gets (`_conversation`), in place; what the warning says of them, or nothing."""
    found: list[str] = []
    for number, content in enumerate(contents):
        if content.role == "model":
            continue
        for index, part in enumerate(content.parts or []):
            blob = part.inline_data
            if blob is None:
                continue
            image = ImagePart(mime_type=blob.mime_type or "application/octet-stream", data=blob.data or b"")
            if not taken(image, GEMINI_INLINE_TYPES):
                found.append(f"content {number}: {image.mime_type}")
                (content.parts or [])[index] = types.Part(text=image_note(image, "Gemini"))
    return stored_not_taken(found, "attachment(s)", "Gemini")


def _carried_usage(history: Conversation, contents: list[dict[str, Any]]) -> dict[str, Any]:
    """The usage of each model turn of a carried conversation, by the index of its content in the new session, so
    the record keeps it (docs/conversations.md: per-turn usage is kept, never counted again); none when the
    contents do not hold one model content per model turn (turns joined in writing them)."""
    carried = [turn.usage for turn in history.turns if isinstance(turn, ModelTurn)]
    models = [index for index, content in enumerate(contents) if content.get("role") == "model"]
    if len(carried) != len(models):
        return {}
    return {
        str(index): usage.model_dump(exclude_defaults=True)
        for index, usage in zip(models, carried, strict=True)
        if usage
    }


class GenerateContentTurns:
    """The `TurnClient` of the generate-content backend."""

    backend = BACKEND

    def __init__(self, params: ExecuteParams, options: GenerateContentOptions) -> None:
        self.params = params
        self.options = options
        self.model = params.model or DEFAULT_MODEL
        self._genai = GenaiClient(options)
        self.contents: list[types.Content] = []
        self._dumped: list[dict[str, Any]] = []
        """`contents` as the session stores them, one dump per content (the history only grows)."""
        self.config: types.GenerateContentConfig | None = None
        self.taken_ids: set[str] = set()
        self._model_call_ids: dict[str, str | None] = {}
        self._translator: GenerateContentTranslator | None = None
        self._turn = 0
        self._wire = WireRequest()
        self.history_notes: list[str] = []

    @property
    def connection(self) -> GenaiClient:
        return self._genai

    def for_subagent(self, params: ExecuteParams) -> GenerateContentTurns:
        return GenerateContentTurns(params, self.options)

    async def abandon(self) -> None:
        """Nothing runs server-side between requests."""

    def choose_model(self, stored: str | None) -> str:
        self.model = self.params.model or stored or DEFAULT_MODEL
        if self.params.model is None and stored is not None:  # the tools were checked without a model
            features = self.options.tool_features(functions=self.options.local_tools, invocations=True)
            self.options.check_tools(BACKEND, self.model, features)
        return self.model

    def prepare(self, session: StoredSession) -> None:
        stored = session.state.get("contents")
        if stored is None and self.params.history is not None:  # a new session continuing a conversation
            stored = contents_from_conversation(self.params.history)
            session.state["usage"] = _carried_usage(self.params.history, stored)
        if stored is not None and not isinstance(stored, list):  # else Python's "'int' object is not iterable"
            raise TypeError(f"its contents is {json_type(stored)}, not a list of contents")
        self.contents = [types.Content.model_validate(c) for c in stored or []]
        self.history_notes = _refused_media(self.contents)
        _repair(self.contents)
        if session.state.get("contents") is not None and not _paired(self.contents):  # a stored session, edited
            stored_session = conversation_from_contents([_dump(c) for c in self.contents], model=self.model)
            in_order = stored_session.stored_in_order()
            if in_order is not stored_session:
                self.contents = [types.Content.model_validate(c) for c in contents_from_conversation(in_order)]
        if self.params.retry:
            if not self.contents or self.contents[-1].role != "user":
                raise ConfigurationError(
                    "there is no failed turn to retry: the session's last turn was answered",
                    hint="send a new prompt instead of retrying",
                )
        else:
            parts = [types.Part(text=self.params.prompt)] if self.params.prompt else []
            parts += [
                types.Part(inline_data=types.Blob(mime_type=i.mime_type, data=i.data)) for i in self.params.images
            ]
            self.contents.append(types.Content(role="user", parts=parts))
        self._dumped = [text_content_json(c) or _dump(c) for c in self.contents]
        session.state["contents"] = list(self._dumped)

    def begin(self, session: StoredSession, declarations: Declarations) -> None:
        if self.options.function_calling is not None:  # the only check that reads the declarations one by one
            self.options.check_allowed_names(BACKEND, declarations.parsed())
        self.config = generation_config(
            self.options,
            system_instruction=self.params.system_instruction,
            declarations=declarations,
            thinking=plan_thinking(self.model, self.params.thinking),
            invocations=server_side_invocations(self.options, self.model, functions=bool(declarations)),
        )

    def classify(self, exc: BaseException) -> Failure | None:
        return failure_from_exception(exc, self.model, self.options.timeout_s)

    async def send(self, emit: Emit) -> TurnEnd:
        self._turn += 1
        turn = self._translator = GenerateContentTranslator(
            turn=self._turn, taken_ids=self.taken_ids, include_native=self.params.include_native
        )

        async def finish() -> None:
            """The stream's end (`stream_chunks` awaits it once the stream was read to its end): the turn's
            last events (its calls) go out before the connection is released."""
            for event in turn.finish():
                await emit(event)

        stream = stream_chunks(
            self._genai.client,
            model=self.model,
            contents=self.contents,
            config=self.config,
            wire=self._wire,
            on_end=finish,
        )
        try:
            async for chunk in stream:
                for event in turn.feed(chunk):
                    await emit(event)
        finally:
            await _close(stream)
        # An answer without `usageMetadata` (a proxy's, a stream cut before its last chunk) measured nothing: its 0
        # input tokens are flagged, as an answer's unread counts are (round 21: the run's usage read as measured).
        end = TurnEnd(usage=turn.usage or Usage.model_construct(estimated=True))
        end.malformed = turn.malformed
        if end.malformed is not None:
            return end
        if turn.truncated:
            end.error = BackendError(
                "the answer stream ended without a finishReason: the answer may be cut off",
                hint="run again; with a session, resume it",
                code="stream_incomplete",
                retryable=True,
            )
        elif turn.fatal is not None:
            end.outcome = RunOutcome(status="error", error=turn.fatal)
        elif turn.calls:
            for call in turn.calls:
                self._model_call_ids[call.tool_use_id] = call.call_id
            end.calls = [ToolCall(c.tool_use_id, c.name, c.args) for c in turn.calls]
        else:
            end.outcome = RunOutcome(status="success")
        return end

    def keep_turn(self, session: StoredSession, turn: TurnEnd) -> None:
        assert self._translator is not None
        if self._translator.parts:
            self._append(self._translator.content())
            usage = session.state.setdefault("usage", {})  # per model content, for export
            usage[str(len(self.contents) - 1)] = turn.usage.model_dump(exclude_defaults=True)
        session.state["contents"] = list(self._dumped)

    def _append(self, content: types.Content) -> None:
        self.contents.append(content)
        self._dumped.append(text_content_json(content) or _dump(content))

    def keep_tool_round(self, session: StoredSession, calls: list[ToolCall], outcomes: list[ToolOutcome]) -> None:
        """Function responses matched by the model's call id (none when the model gave none)."""
        parts = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=self._model_call_ids.get(c.id), name=c.name, response=o.response
                )
            )
            for c, o in zip(calls, outcomes, strict=True)
        ]
        parts += [
            types.Part(inline_data=types.Blob(mime_type=d.mime_type, data=d.data))
            for o in outcomes
            for d in o.inline_data
        ]
        self._append(types.Content(role="user", parts=parts))
        session.state["contents"] = list(self._dumped)
