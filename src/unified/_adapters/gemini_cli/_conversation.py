"""gemini-cli history <-> the portable `Conversation`: the CLI's chat file, read and written.

Reading (export): the messages the CLI would load (`read_chat`: last record per id, checkpoints,
rewinds), without its `<session_context>` preamble. A `gemini` message is one model turn: its
thoughts (subject and description), its text, its tool calls; each call's result is taken from the
call's own `result` (the CLI also writes them again as a user message, which is skipped when it
repeats them). The chat file keeps no thought signatures, so none are exported.

Writing (continuing a conversation on gemini-cli): a chat file the CLI loads with `session/load`,
as its own would look: a header, then messages. Each tool call carries its result once, in the
call (no second user message of the same responses), so a resumed request answers each call once.
Another provider's signatures are dropped by the documented rule; server-side tools of another
provider are told as text, since the CLI cannot replay them.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from unified._adapters.gemini_cli._chat_records import usage_from_counts
from unified._internal.gemini_parts import response_of_result, result_of_response
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
)

__all__ = ["chat_records_from_conversation", "conversation_from_messages"]

_CONTEXT_PREFIX = "<session_context>"


def _result_part(response: Mapping[str, Any], name: str, call_id: str) -> ToolResultPart:
    return result_of_response(call_id, name, response.get("response") or {})


def conversation_from_messages(messages: list[dict[str, Any]], *, origin: Origin | None = None) -> Conversation:
    """The messages of a chat file (as `read_chat` gives them) as a Conversation."""
    turns: list[UserTurn | ModelTurn] = []
    answered: set[str] = set()
    for message in messages:
        kind = message.get("type")
        if kind == "gemini":
            model_parts: list[ModelPart] = []
            results: list[UserPart] = []
            for thought in message.get("thoughts") or []:
                text = "\n\n".join(str(thought.get(k)) for k in ("subject", "description") if thought.get(k))
                if text:
                    model_parts.append(ThinkingPart(text=text))
            content = message.get("content")
            if isinstance(content, str) and content:
                model_parts.append(TextPart(text=content))
            for call in message.get("toolCalls") or []:
                call_id = str(call.get("id") or "")
                model_parts.append(
                    ToolCallPart(id=call_id, name=str(call.get("name") or ""), arguments=dict(call.get("args") or {}))
                )
                for item in call.get("result") or []:
                    response = item.get("functionResponse") if isinstance(item, Mapping) else None
                    if isinstance(response, Mapping):
                        results.append(_result_part(response, str(call.get("name") or ""), call_id))
                        answered.add(call_id)
            usage = usage_from_counts(message["tokens"]) if message.get("tokens") else None
            last = turns[-1] if turns else None
            if isinstance(last, ModelTurn):  # the same response, recorded in pieces
                last.parts.extend(model_parts)
                if usage is not None:
                    last.usage = usage if last.usage is None else last.usage + usage
            elif model_parts or usage is not None:
                turns.append(ModelTurn(parts=model_parts, provider="google", model=message.get("model"), usage=usage))
            if results:
                turns.append(UserTurn(parts=results))
        elif kind == "user":
            user_parts = _user_parts(message.get("content"), answered)
            if user_parts:
                if turns and isinstance(turns[-1], UserTurn):
                    turns[-1].parts.extend(user_parts)
                else:
                    turns.append(UserTurn(parts=user_parts))
    return Conversation(origin=origin, turns=[t for t in turns if t.parts])


def _user_parts(content: object, answered: set[str]) -> list[UserPart]:
    items = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    parts: list[UserPart] = []
    for item in items:
        if isinstance(item, str):
            text: object = item
        elif isinstance(item, Mapping) and "functionResponse" in item:
            response = item["functionResponse"]
            call_id = str(response.get("id") or "")
            if call_id in answered:
                continue  # the CLI's second copy of a result its call already carries
            parts.append(_result_part(response, str(response.get("name") or ""), call_id))
            answered.add(call_id)
            continue
        elif isinstance(item, Mapping) and "inlineData" in item:
            blob = item["inlineData"]
            parts.append(ImagePart(mime_type=str(blob.get("mimeType") or "image/png"), data=blob.get("data") or ""))
            continue
        elif isinstance(item, Mapping):
            text = item.get("text")
        else:
            continue
        if isinstance(text, str) and text and not text.startswith(_CONTEXT_PREFIX):
            parts.append(TextPart(text=text))
    return parts


def chat_records_from_conversation(
    conversation: Conversation, *, session_id: str, project_root: Path, model: str, now: datetime | None = None
) -> list[dict[str, Any]]:
    """The chat file (header first) the CLI loads to continue `conversation` as session `session_id`."""
    stamp = (now or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    header = {
        "sessionId": session_id,
        "projectHash": hashlib.sha256(str(project_root).encode()).hexdigest(),
        "startTime": stamp,
        "lastUpdated": stamp,
        "kind": "main",
    }
    records: list[dict[str, Any]] = [header]
    results = {
        part.call_id: part
        for turn in conversation.turns
        if isinstance(turn, UserTurn)
        for part in turn.parts
        if isinstance(part, ToolResultPart)
    }
    for turn in conversation.turns:
        if isinstance(turn, UserTurn):
            content = [_user_item(p) for p in turn.parts if not isinstance(p, ToolResultPart)]
            if content:
                records.append({"id": uuid.uuid4().hex, "timestamp": stamp, "type": "user", "content": content})
            continue
        records.append(_gemini_message(turn, results, model, stamp))
    return records


def _user_item(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"text": part.text}
    return {"inlineData": {"mimeType": part.mime_type, "data": base64.b64encode(part.data).decode("ascii")}}


def _gemini_message(turn: ModelTurn, results: Mapping[str, ToolResultPart], model: str, stamp: str) -> dict[str, Any]:
    texts: list[str] = []
    thoughts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for part in turn.parts:
        if isinstance(part, ThinkingPart) and part.text:
            subject, _, description = part.text.partition("\n\n")
            thoughts.append({"subject": subject, "description": description, "timestamp": stamp})
        elif isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ToolCallPart):
            result = results.get(part.id)
            call: dict[str, Any] = {"id": part.id, "name": part.name, "args": part.arguments, "timestamp": stamp}
            if result is not None:
                response = {"id": part.id, "name": part.name, "response": response_of_result(result)}
                call["result"] = [{"functionResponse": response}]
                call["status"] = "error" if result.is_error else "success"
                call["resultDisplay"] = result.output
            else:
                call["status"] = "cancelled"
            calls.append(call)
        elif isinstance(part, ServerToolCallPart | ServerToolResultPart):
            texts.append(part.as_text())
    message: dict[str, Any] = {
        "id": uuid.uuid4().hex,
        "timestamp": stamp,
        "type": "gemini",
        "content": "".join(texts),
        "thoughts": thoughts,
        "model": turn.model if turn.provider == "google" and turn.model else model,
    }
    if calls:
        message["toolCalls"] = calls
    if turn.usage is not None:
        usage = turn.usage
        message["tokens"] = {
            "input": usage.input_tokens,
            "output": usage.output_tokens,
            "cached": usage.cached_tokens,
            "thoughts": usage.thinking_tokens,
            "tool": usage.tool_use_tokens,
            "total": usage.total_tokens,
        }
    return message
