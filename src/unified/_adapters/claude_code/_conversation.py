"""Claude Code session files <-> the portable `Conversation`. Pure.

Export: the main conversation's `user` / `assistant` lines in file order; the lines of one model
message (one per content block, the same `message.id`) make one model turn (its usage is the
message's, which the file keeps whole); consecutive user lines make one user turn; the CLI's own
notes (system reminders, interruption markers) and sidechains (subagents) are left out. Thinking
keeps its text and signature (`provider="anthropic"`); a `redacted_thinking` block is a thinking
part with no text whose signature is `redacted_thinking:<data>`.

Continue (`ExecuteParams.history`): the conversation becomes a session file the CLI resumes, in
its own format (compact JSON, a `parentUuid` chain, the `sessionId`): written into the backend's
home, then `--resume`d, so every earlier turn reaches the model as Anthropic message blocks,
never as a prompt of prose. What Claude cannot read follows the rules of docs/conversations.md:
a signature is kept only on Anthropic's turns (`signature_for`); Claude's API refuses a thinking
block without Anthropic's signature, so another provider's thought keeps its text as a text block
marked `[thinking]`; a server-side tool of another provider is told as text; an image the model
made is named as text.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from unified._adapters.claude_code._launch import PINNED_VERSION
from unified._adapters.claude_code._session_files import prompt_text
from unified._adapters.claude_code._translate import as_object, tool_result_text, usage_from_anthropic
from unified._internal.images import image_note, taken
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

__all__ = ["REDACTED_PREFIX", "conversation_from_lines", "lines_from_conversation", "message_content"]

REDACTED_PREFIX = "redacted_thinking:"


def _user_parts(content: object, names: Mapping[str, str]) -> list[UserPart]:
    if isinstance(content, str):
        text = prompt_text(content)
        return [TextPart(text=text)] if text else []
    parts: list[UserPart] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text = block["text"]
            # an empty block is none (`_run.literal_content` ends a prompt starting with `/` with one)
            if not text or text.startswith("<system-reminder>") or text.startswith("[Request interrupted by user"):
                continue
            parts.append(TextPart(text=text))
        elif kind == "image":
            source = block.get("source")
            if isinstance(source, Mapping) and isinstance(source.get("data"), str):
                try:
                    data = base64.b64decode(source["data"], validate=True)
                except ValueError:
                    continue
                parts.append(ImagePart(mime_type=str(source.get("media_type") or "image/png"), data=data))
        elif kind == "tool_result" and isinstance(block.get("tool_use_id"), str):
            call_id = block["tool_use_id"]
            output, _ = tool_result_text(block.get("content"))
            parts.append(
                ToolResultPart(
                    call_id=call_id,
                    name=names.get(call_id, ""),
                    output=output or "",
                    is_error=block.get("is_error") is True,
                )
            )
    return parts


def _model_parts(content: object, names: dict[str, str]) -> list[ModelPart]:
    parts: list[ModelPart] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
            parts.append(TextPart(text=block["text"]))
        elif kind == "thinking":
            signature = block.get("signature") if isinstance(block.get("signature"), str) else None
            parts.append(ThinkingPart(text=str(block.get("thinking") or ""), signature=signature or None))
        elif kind == "redacted_thinking" and isinstance(block.get("data"), str):
            parts.append(ThinkingPart(text="", signature=REDACTED_PREFIX + block["data"]))
        elif kind == "tool_use" and isinstance(block.get("id"), str):
            names[block["id"]] = str(block.get("name"))
            parts.append(
                ToolCallPart(id=block["id"], name=str(block.get("name")), arguments=as_object(block.get("input")))
            )
        elif kind == "server_tool_use" and isinstance(block.get("id"), str):
            parts.append(
                ServerToolCallPart(id=block["id"], name=str(block.get("name")), arguments=as_object(block.get("input")))
            )
        elif isinstance(kind, str) and kind.endswith("_tool_result") and isinstance(block.get("tool_use_id"), str):
            parts.append(
                ServerToolResultPart(
                    call_id=block["tool_use_id"],
                    name=kind.removesuffix("_tool_result"),
                    output=json.dumps(block.get("content"), ensure_ascii=False, default=str),
                    data=block.get("content"),
                )
            )
    return parts


def conversation_from_lines(lines: Iterable[Mapping[str, Any]], *, origin: Origin | None) -> Conversation:
    """The main conversation of a session file's lines (see the module docstring)."""
    turns: list[UserTurn | ModelTurn] = []
    names: dict[str, str] = {}
    current_message: object = None
    for line in lines:
        if line.get("isSidechain") or line.get("isMeta"):
            continue
        message = line.get("message")
        if not isinstance(message, Mapping):
            continue
        if line.get("type") == "assistant":
            if message.get("model") == "<synthetic>":
                continue  # the CLI's own note in the model's place (an error, an interruption)
            parts = _model_parts(message.get("content"), names)
            message_id = message.get("id")
            last = turns[-1] if turns else None
            if isinstance(last, ModelTurn) and message_id is not None and message_id == current_message:
                last.parts.extend(parts)
                last.usage = usage_from_anthropic(message.get("usage")) if message.get("usage") else last.usage
                continue
            current_message = message_id
            model = message.get("model") if isinstance(message.get("model"), str) else None
            usage = usage_from_anthropic(message.get("usage")) if message.get("usage") else None
            turns.append(ModelTurn(parts=parts, provider="anthropic", model=model, usage=usage))
        elif line.get("type") == "user":
            current_message = None
            user_parts = _user_parts(message.get("content"), names)
            if not user_parts:
                continue
            last = turns[-1] if turns else None
            if isinstance(last, UserTurn):
                last.parts.extend(user_parts)
            else:
                turns.append(UserTurn(parts=user_parts))
    return Conversation(origin=origin, turns=[t for t in turns if t.parts])


# --- the way back: a conversation as a session file ----------------------------------------------------


def _user_content(turn: UserTurn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in turn.parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart) and not taken(part):  # the API refused the whole request
            blocks.append({"type": "text", "text": image_note(part, "Anthropic")})
        elif isinstance(part, ImagePart):
            data = base64.b64encode(part.data).decode()
            media_type = part.mime_type.lower()
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        else:
            blocks.append(
                {"type": "tool_result", "tool_use_id": part.call_id, "content": part.output, "is_error": part.is_error}
            )
    return blocks


def message_content(turn: ModelTurn) -> list[dict[str, Any]]:
    """A model turn as Anthropic content blocks, under the crossing rules (module docstring)."""
    blocks: list[dict[str, Any]] = []
    for part in turn.parts:
        if isinstance(part, ThinkingPart):
            signature = signature_for(turn, part, "anthropic")
            if signature is not None and signature.startswith(REDACTED_PREFIX):
                blocks.append({"type": "redacted_thinking", "data": signature.removeprefix(REDACTED_PREFIX)})
            elif signature is not None:
                blocks.append({"type": "thinking", "thinking": part.text, "signature": signature})
            elif part.text:
                blocks.append({"type": "text", "text": f"[thinking] {part.text}"})
        elif isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCallPart):
            blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": dict(part.arguments)})
        elif isinstance(part, ServerToolCallPart):
            arguments = json.dumps(part.arguments, ensure_ascii=False, sort_keys=True)
            blocks.append({"type": "text", "text": f"[server tool {part.name} was called with {arguments}]"})
        elif isinstance(part, ServerToolResultPart):
            blocks.append({"type": "text", "text": f"[server tool {part.name} returned: {part.output}]"})
        else:
            blocks.append({"type": "text", "text": f"[an image ({part.mime_type}, {len(part.data)} bytes)]"})
    return blocks


def _wire_usage(usage: Usage | None) -> dict[str, int]:
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    return {
        "input_tokens": max(0, usage.input_tokens - usage.cached_tokens - usage.cache_creation_tokens),
        "cache_read_input_tokens": usage.cached_tokens,
        "cache_creation_input_tokens": usage.cache_creation_tokens,
        "output_tokens": usage.output_tokens + usage.thinking_tokens,
    }


def lines_from_conversation(
    conversation: Conversation, *, session_id: str, cwd: str, model: str | None, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Session-file lines the CLI resumes: each turn one line, chained by `parentUuid`; results right after
    their calls, ids and names as Anthropic takes them (`Conversation.for_provider`)."""
    conversation = conversation.for_provider("anthropic")
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    common = {
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session_id,
        "version": PINNED_VERSION,
    }
    for number, turn in enumerate(conversation.turns):
        line_id = str(uuid.uuid4())
        if isinstance(turn, UserTurn):
            content = _user_content(turn)
            if not content:
                continue
            line: dict[str, Any] = {
                "parentUuid": parent,
                **common,
                "type": "user",
                "message": {"role": "user", "content": content},
                "uuid": line_id,
                "timestamp": stamp,
            }
        else:
            content = message_content(turn)
            if not content:
                continue
            has_call = any(block["type"] == "tool_use" for block in content)
            usage = turn.usage
            line = {
                "parentUuid": parent,
                **common,
                "type": "assistant",
                "message": {
                    "id": f"msg_unified_{session_id[:8]}_{number}",
                    "type": "message",
                    "role": "assistant",
                    "model": (turn.model if turn.provider == "anthropic" else None) or model or "claude",
                    "content": content,
                    "stop_reason": "tool_use" if has_call else "end_turn",
                    "stop_sequence": None,
                    "usage": _wire_usage(usage),
                },
                "uuid": line_id,
                "timestamp": stamp,
            }
        lines.append(line)
        parent = line_id
    return lines
