"""generate-content history <-> the portable `Conversation`: `contents` as the Gemini API keeps them.

The stored state holds `contents` as the SDK dumps them (snake_case keys, bytes as base64). A
model call without an id (Gemini 2.5 gives none) gets one when exported (`gc-<turn>-<part>`), and
its response, matched by position and name in the next user turn, names it; on the way back only
ids the model made are sent. Crossing rules (docs/conversations.md): signatures are kept for Google
turns and dropped from others' (the text stays); a function call another provider's model made gets
the sentinel Gemini documents for calls it did not make, so Gemini 3 accepts the history; a server
tool of another provider is told as text, since Gemini cannot replay it.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

from unified._internal.gemini_parts import response_of_result, result_of_response
from unified._internal.images import GEMINI_INLINE_TYPES, image_note, taken
from unified.conversations import (
    Conversation,
    ImagePart,
    ModelPart,
    ModelTurn,
    Origin,
    ServerToolCallPart,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UserPart,
    UserTurn,
    signature_for,
)
from unified.events import Usage

__all__ = ["UNSIGNED_CALL", "contents_from_conversation", "conversation_from_contents"]

UNSIGNED_CALL = "skip_thought_signature_validator"
"""What Gemini takes as the thought signature of a function call it did not make (history carried
over from another model): without one, Gemini 3 answers such history with HTTP 400."""

_GENERATED_ID = "gc-{turn}-{part}"


def conversation_from_contents(
    contents: Iterable[Mapping[str, Any]],
    *,
    model: str | None,
    origin: Origin | None = None,
    usage: Mapping[int, Usage] | None = None,
) -> Conversation:
    """The stored `contents` as a Conversation; `usage` maps a content's index to its turn's usage."""
    turns: list[UserTurn | ModelTurn] = []
    open_calls: list[ToolCallPart] = []
    for index, content in enumerate(contents):
        parts = [_snake(part) for part in content.get("parts") or []]
        if content.get("role") == "model":
            model_parts: list[ModelPart] = []
            open_calls = []
            for number, part in enumerate(parts):
                model_parts += _model_parts(part, index, number, open_calls)
            turns.append(ModelTurn(parts=model_parts, provider="google", model=model, usage=(usage or {}).get(index)))
        else:
            user_parts: list[UserPart] = []
            for part in parts:
                user_parts += _user_parts(part, open_calls)
            turns.append(UserTurn(parts=user_parts))
    return Conversation(origin=origin, turns=turns)


_SNAKE = {
    "functionCall": "function_call",
    "functionResponse": "function_response",
    "inlineData": "inline_data",
    "thoughtSignature": "thought_signature",
    "executableCode": "executable_code",
    "codeExecutionResult": "code_execution_result",
    "toolCall": "tool_call",
    "toolResponse": "tool_response",
    "mimeType": "mime_type",
    "toolType": "tool_type",
}
"""The REST API's camelCase names of the part fields read here, as the SDK dumps them."""
_WITH_FIELDS = frozenset({"inline_data", "tool_call", "tool_response"})
"""Parts whose own fields are named here too (a call's `args` and a response's `response` are the model's data)."""


def _snake(part: Any) -> Any:
    """`part` as the SDK dumps it when another tool stored it as the REST API writes it (`inlineData`,
    `functionCall`, `thoughtSignature`): such parts were no part unified knew, and export left them out
    without a word (the image, the calls, the signatures), while a resume sent them (the SDK reads both)."""
    if not isinstance(part, Mapping) or not any(key in _SNAKE for key in part):
        return part
    snake = {_SNAKE.get(key, key): value for key, value in part.items()}
    for key in _WITH_FIELDS & snake.keys():
        if isinstance(snake[key], Mapping):
            snake[key] = {_SNAKE.get(field, field): value for field, value in snake[key].items()}
    return snake


def _model_parts(part: Mapping[str, Any], turn: int, number: int, open_calls: list[ToolCallPart]) -> list[ModelPart]:
    signature = part.get("thought_signature")
    if "function_call" in part:
        call = part["function_call"]
        found = ToolCallPart(
            id=str(call.get("id") or _GENERATED_ID.format(turn=turn, part=number)),
            name=str(call.get("name") or ""),
            arguments=dict(call.get("args") or {}),
            signature=signature,
        )
        open_calls.append(found)
        return [found]
    if "text" in part:
        if part.get("thought"):
            return [ThinkingPart(text=part["text"], signature=signature)]
        return [TextPart(text=part["text"], signature=signature)]
    if signature is not None:  # a signature on a part of its own
        return [ThinkingPart(signature=signature)]
    if "inline_data" in part:
        blob = part["inline_data"]
        return [ImagePart(mime_type=blob.get("mime_type", "application/octet-stream"), data=blob.get("data", ""))]
    if "executable_code" in part:
        code = part["executable_code"]
        return [ServerToolCallPart(id=f"code-{turn}-{number}", name="code_execution", arguments=dict(code))]
    if "code_execution_result" in part:
        result = part["code_execution_result"]
        return [
            ServerToolResultPart(
                call_id=f"code-{turn}-{number - 1}",
                name="code_execution",
                output=str(result.get("output") or ""),
                data={"outcome": result.get("outcome")},
            )
        ]
    if "tool_call" in part:
        call = part["tool_call"]
        name = str(call.get("tool_type") or "server_tool").lower()
        return [ServerToolCallPart(id=str(call.get("id") or f"tool-{turn}-{number}"), name=name, arguments=dict(call))]
    if "tool_response" in part:
        response = part["tool_response"]
        name = str(response.get("tool_type") or "server_tool").lower()
        return [
            ServerToolResultPart(
                call_id=str(response.get("id") or f"tool-{turn}-{number}"), name=name, data=dict(response)
            )
        ]
    return []


def _user_parts(part: Mapping[str, Any], open_calls: list[ToolCallPart]) -> list[UserPart]:
    if "function_response" in part:
        response = part["function_response"]
        name = str(response.get("name") or "")
        call_id = response.get("id")
        if call_id is None:  # Gemini 2.5: the first open call of that name
            match = next((c for c in open_calls if c.name == name), None)
            call_id = match.id if match is not None else name
        open_calls[:] = [c for c in open_calls if c.id != call_id]
        return [result_of_response(str(call_id), name, response.get("response") or {})]
    if "text" in part:
        return [TextPart(text=part["text"])]
    if "inline_data" in part:
        blob = part["inline_data"]
        return [ImagePart(mime_type=blob.get("mime_type", "application/octet-stream"), data=blob.get("data", ""))]
    return []


def contents_from_conversation(conversation: Conversation) -> list[dict[str, Any]]:
    """The Conversation as `contents` for a Gemini request, in the stored (SDK dump) shape: each function
    response in the turn after its call, names as Gemini takes them (`Conversation.for_provider`)."""
    conversation = conversation.for_provider("google")
    contents: list[dict[str, Any]] = []
    made_ids: set[str] = set()
    for turn in conversation.turns:
        if isinstance(turn, ModelTurn):
            parts = [p for part in turn.parts for p in _gemini_model_parts(turn, part, made_ids)]
            if parts and contents and contents[-1]["role"] == "model":  # turns of two providers in a row: one
                contents[-1]["parts"].extend(parts)  # content (a call turn follows a user or response turn)
            elif parts:
                contents.append({"role": "model", "parts": parts})
        else:
            parts = [p for part in turn.parts for p in _gemini_user_parts(part, made_ids)]
            if parts:
                contents.append({"role": "user", "parts": parts})
    return contents


def _gemini_model_parts(turn: ModelTurn, part: ModelPart, made_ids: set[str]) -> list[dict[str, Any]]:
    if isinstance(part, ToolCallPart):
        call: dict[str, Any] = {"name": part.name, "args": part.arguments}
        if not part.id.startswith("gc-"):  # an id the model made (ours mean "the model gave none")
            call["id"] = part.id
            made_ids.add(part.id)
        signature = signature_for(turn, part, "google") if turn.provider == "google" else UNSIGNED_CALL
        return [{"function_call": call, **({"thought_signature": signature} if signature else {})}]
    if isinstance(part, ThinkingPart):
        signature = signature_for(turn, part, "google")
        if not part.text and signature is None:
            return []
        out: dict[str, Any] = {"text": part.text, "thought": True}
        if signature is not None:
            out["thought_signature"] = signature
        return [out]
    if isinstance(part, TextPart):
        text: dict[str, Any] = {"text": part.text}
        signature = signature_for(turn, part, "google")
        if signature is not None:
            text["thought_signature"] = signature
        return [text]
    if isinstance(part, ImagePart):
        return [{"inline_data": {"mime_type": part.mime_type, "data": _b64(part.data)}}]
    if turn.provider == "google" and part.name == "code_execution":
        if isinstance(part, ServerToolCallPart):
            return [{"executable_code": dict(part.arguments)}]
        return [{"code_execution_result": {"outcome": _outcome(part.data), "output": part.output}}]
    return [{"text": part.as_text()}]


def _gemini_user_parts(part: UserPart, made_ids: set[str]) -> list[dict[str, Any]]:
    if isinstance(part, ToolResultPart):
        response: dict[str, Any] = {"name": part.name, "response": response_of_result(part)}
        if part.call_id in made_ids:
            response["id"] = part.call_id
        return [{"function_response": response}]
    if isinstance(part, ImagePart) and not taken(part, GEMINI_INLINE_TYPES):  # the API refused the whole request
        return [{"text": image_note(part, "Gemini")}]
    if isinstance(part, ImagePart):
        return [{"inline_data": {"mime_type": part.mime_type, "data": _b64(part.data)}}]
    return [{"text": part.text}]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _outcome(data: object) -> str:
    return str(data.get("outcome") or "OUTCOME_OK") if isinstance(data, dict) else "OUTCOME_OK"
