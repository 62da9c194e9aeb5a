"""interactions history <-> the portable `Conversation`: the steps an interaction takes as input.

Whatever the store mode, a session keeps its steps (`state["steps"]`: user input, thoughts, model
output, function calls and results, server tool steps), so a session exports offline, even after
the server forgot its interactions. A conversation from elsewhere becomes the steps of the new
session's first interaction; the server holds them from then on (or, with `store=false`, they are
resent each turn). Crossing rules (docs/conversations.md): a thought's signature is kept for Google
turns, dropped from others' (the summary stays); another provider's server tool is told as text.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

from unified._internal.images import GEMINI_IMAGE_TYPES, image_note, taken
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

__all__ = ["conversation_from_steps", "model_turn_count", "steps_from_conversation"]

_USER_STEPS = frozenset({"user_input", "function_result"})


def model_turn_count(steps: Iterable[Mapping[str, Any]]) -> int:
    """How many model turns `conversation_from_steps` makes of `steps` (a model turn begins at a model step that
    follows a user's, or none), counted without building them: the session's turns are numbered after every model
    turn of a run (`_turns.InteractionsTurns`), and building the whole conversation each time cost 6.7 ms a turn at
    100 turns, growing with every one."""
    count, after_user = 0, True
    for step in steps:
        user = str(step.get("type") or "") in _USER_STEPS
        count += not user and after_user
        after_user = user
    return count


def conversation_from_steps(
    steps: Iterable[Mapping[str, Any]],
    *,
    model: str | None,
    origin: Origin | None = None,
    usage: Mapping[int, Usage] | None = None,
) -> Conversation:
    """Stored steps as a Conversation; `usage` maps a model turn's number (0, 1, ...) to its usage."""
    turns: list[UserTurn | ModelTurn] = []
    for step in steps:
        kind = str(step.get("type") or "")
        user = kind in _USER_STEPS
        if not turns or isinstance(turns[-1], UserTurn) != user:
            if user:
                turns.append(UserTurn(parts=[]))
            else:
                number = sum(isinstance(t, ModelTurn) for t in turns)
                turns.append(ModelTurn(parts=[], provider="google", model=model, usage=(usage or {}).get(number)))
        last = turns[-1]
        if isinstance(last, UserTurn):
            last.parts.extend(_user_parts(step))
        else:
            last.parts.extend(_model_parts(step))
    return Conversation(origin=origin, turns=turns)


def _content_parts(content: Iterable[Mapping[str, Any]]) -> list[TextPart | ImagePart]:
    parts: list[TextPart | ImagePart] = []
    for item in content:
        if item.get("type") == "text":
            parts.append(TextPart(text=str(item.get("text") or "")))
        elif item.get("type") == "image" and item.get("data"):
            parts.append(ImagePart(mime_type=str(item.get("mime_type") or "image/png"), data=item["data"]))
    return parts


def _user_parts(step: Mapping[str, Any]) -> list[UserPart]:
    if step.get("type") == "function_result":
        result = step.get("result")
        failed = bool(step.get("is_error"))
        if isinstance(result, Mapping) and ("output" in result or "error" in result):
            result = result.get("error") if failed and "error" in result else result.get("output", result)
        return [ToolResultPart.of(str(step.get("call_id") or ""), str(step.get("name") or ""), result, is_error=failed)]
    return list(_content_parts(step.get("content") or []))


def _model_parts(step: Mapping[str, Any]) -> list[ModelPart]:
    kind = str(step.get("type") or "")
    if kind == "thought":
        summary = "".join(str(s.get("text") or "") for s in step.get("summary") or [] if isinstance(s, Mapping))
        return [ThinkingPart(text=summary, signature=step.get("signature"))]
    if kind == "model_output":
        return list(_content_parts(step.get("content") or []))
    if kind == "function_call":
        return [
            ToolCallPart(
                id=str(step.get("id") or ""),
                name=str(step.get("name") or ""),
                arguments=dict(step.get("arguments") or {}),
            )
        ]
    if kind.endswith("_call"):
        name = kind.removesuffix("_call")
        arguments = {k: v for k, v in step.items() if k not in ("type", "id")}
        return [ServerToolCallPart(id=str(step.get("id") or ""), name=name, arguments=arguments)]
    if kind.endswith("_result"):
        name = kind.removesuffix("_result")
        result = step.get("result")
        return [
            ServerToolResultPart(
                call_id=str(step.get("call_id") or ""),
                name=name,
                output=result if isinstance(result, str) else "",
                data=None if isinstance(result, str) else result,
            )
        ]
    return []


def steps_from_conversation(conversation: Conversation) -> list[dict[str, Any]]:
    """The Conversation as input steps of an interaction, in the stored shape: each function result right
    after its call, names as Gemini takes them (`Conversation.for_provider`)."""
    conversation = conversation.for_provider("google")
    steps: list[dict[str, Any]] = []
    for turn in conversation.turns:
        if isinstance(turn, UserTurn):
            steps += _user_steps(turn.parts)
        else:
            steps += _steps_of_model_turn(turn)
    return steps


def _user_steps(parts: Iterable[UserPart]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, ToolResultPart):
            if content:
                steps.append({"type": "user_input", "content": content})
                content = []
            steps.append(_function_result(part))
        else:
            content.append(_content_item(part))
    if content:
        steps.append({"type": "user_input", "content": content})
    return steps


def _steps_of_model_turn(turn: ModelTurn) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    output: list[dict[str, Any]] = []
    for part in turn.parts:
        if isinstance(part, (TextPart, ImagePart)):
            output.append(_content_item(part))
            continue
        if output:
            steps.append({"type": "model_output", "content": output})
            output = []
        steps.extend(_model_steps(turn, part))
    if output:
        steps.append({"type": "model_output", "content": output})
    return steps


def _content_item(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if not taken(part, GEMINI_IMAGE_TYPES):  # the API refused the whole request
        return {"type": "text", "text": image_note(part, "Gemini")}
    return {"type": "image", "data": base64.b64encode(part.data).decode("ascii"), "mime_type": part.mime_type}


def _function_result(part: ToolResultPart) -> dict[str, Any]:
    step: dict[str, Any] = {
        "type": "function_result",
        "call_id": part.call_id,
        "name": part.name,
        "result": {"error" if part.is_error else "output": part.value()},
    }
    if part.is_error:
        step["is_error"] = True
    return step


def _model_steps(turn: ModelTurn, part: ModelPart) -> list[dict[str, Any]]:
    if isinstance(part, ThinkingPart):
        signature = signature_for(turn, part, "google")
        if not part.text and signature is None:
            return []
        step: dict[str, Any] = {
            "type": "thought",
            "summary": [{"type": "text", "text": part.text}] if part.text else [],
        }
        if signature is not None:
            step["signature"] = signature
        return [step]
    if isinstance(part, ToolCallPart):
        return [{"type": "function_call", "id": part.id, "name": part.name, "arguments": part.arguments}]
    if turn.provider == "google" and isinstance(part, ServerToolCallPart):
        return [{"type": f"{part.name}_call", "id": part.id, **part.arguments}]
    if turn.provider == "google" and isinstance(part, ServerToolResultPart):
        return [{"type": f"{part.name}_result", "call_id": part.call_id, "result": part.data or part.output}]
    if isinstance(part, ServerToolCallPart | ServerToolResultPart):
        return [{"type": "model_output", "content": [{"type": "text", "text": part.as_text()}]}]
    return []
