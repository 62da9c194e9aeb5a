"""Codex rollouts <-> the portable `Conversation`; a conversation continued or a turn retried as a rollout.

**Export.** A rollout's `response_item`s are exactly what went to and came from the model: user
messages (minus the context Codex adds: `<environment_context>`, developer messages), assistant
messages, reasoning (its summary text, its `encrypted_content` kept as the part's signature, provider
`openai`), function and custom tool calls (`apply_patch`'s patch text as `{"input": ...}`; an MCP
call's namespace folded into the name, `mcp__<server>__<tool>`) and their outputs. A model turn is a
run of model items; the `token_usage_record` that follows one gives its usage.

**Continue (`ExecuteParams.history`).** The conversation becomes the rollout of a new thread (a fresh
UUIDv7) in our CODEX_HOME, which Codex resumes like one of its own (VERIFIED on 0.171: the next
request carries the written items). Crossing rules (docs/conversations.md): a reasoning item keeps
its `encrypted_content` only if an OpenAI model made it (`signature_for`), else it goes with its
summary text alone; a server-side tool of another provider and a generated image are told as text. A model
turn's usage follows it as a `token_usage_record`, as Codex writes one per response: the export keeps it on its turn.

**Retry (`ExecuteParams.retry`).** The last user turn is answered again: for a stored session, the
rollout is cut just before the task of its last user message (the cut-off tail is kept under
`<CODEX_HOME>/unified-retry-backups/`) and that message becomes the turn's input; for a conversation,
its last user turn is left out of the written rollout and becomes the input. A stored session that ends
with tool results the model has not answered is resumed as it is, with `CONTINUE_PROMPT` as the input
(Codex takes a user's message, never a tool round to answer again; cutting back to the last user message
lost the round, and the model asked for its calls again); a conversation that does is continued that way
before it reaches the backend (`_execute`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import json
import os
import secrets
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from unified._adapters.codex import _rollouts
from unified._adapters.codex._launch import PINNED_VERSION
from unified._adapters.codex._options import BACKEND
from unified._adapters.codex._rollouts import (
    Rollout,
    Rollouts,
    codex_short_id,
    content_parts,
    rollout_usage,
    user_text,
)
from unified._adapters.codex._run import Opening
from unified._files import read_regular, write_atomically
from unified._internal.images import image_note, taken
from unified._text import json_type
from unified.conversations import (
    CONTINUE_PROMPT,
    Conversation,
    ImagePart,
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
from unified.errors import ConfigurationError, CorruptSession
from unified.events import JsonValue, Usage
from unified.types import ExecuteParams, ImageInput

__all__ = ["conversation_from_rollout", "open_history", "open_retry", "rollout_from_conversation", "uuid7"]

_MODEL_ITEMS = frozenset({"reasoning", "function_call", "custom_tool_call", "web_search_call"})
_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})


def uuid7(now_ms: int | None = None) -> str:
    """A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits, as Codex makes its thread ids."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= secrets.randbits(12) << 64
    value |= 0b10 << 62
    value |= secrets.randbits(62)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


# --- export -------------------------------------------------------------------------------------------


def _output_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(p.get("text")) for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return json.dumps(value)


def _image(url: object) -> ImagePart | None:
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        return None
    mime, data = url[5:].split(";base64,", 1)
    try:
        return ImagePart(mime_type=mime, data=base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return None


def _call_name(payload: dict[str, Any]) -> str:
    name = str(payload.get("name") or "")
    namespace = payload.get("namespace")
    if isinstance(namespace, str) and namespace.startswith("mcp__"):
        return f"{namespace}__{name}"
    return name


def _codex_usage(usage: Usage) -> dict[str, int]:
    """`usage` in the form of Codex's rollouts (`rollout_usage` reads it back): output with the reasoning."""
    output = usage.output_tokens + usage.thinking_tokens
    return {
        "input_tokens": usage.input_tokens,
        "cached_input_tokens": usage.cached_tokens,
        "cache_write_input_tokens": usage.cache_creation_tokens,
        "output_tokens": output,
        "reasoning_output_tokens": usage.thinking_tokens,
        "total_tokens": usage.input_tokens + output,
    }


def conversation_from_rollout(rollout: Rollout) -> Conversation:
    """A rollout's history as a Conversation (see the module docstring); `CorruptSession` naming the file, the
    line and the field when an item is not of the shape Codex writes (a rollout edited by hand or by an
    attacker), the file unchanged."""
    return _conversation_from_rollout(rollout)


class _Unfit(Exception):
    """A field of a rollout item of a type Codex never writes; its message names the field and the type found."""


def _corrupt(rollout: Rollout, line: int, what: str) -> CorruptSession:
    return CorruptSession(
        f"codex session {codex_short_id(rollout.thread_id)} holds an item unified cannot read: "
        f"line {line} of {rollout.path}: {what}",
        hint="the rollout was left unchanged; fix or remove that line, or start a new session",
        details={"path": str(rollout.path), "line": line},
    )


def _conversation_from_rollout(rollout: Rollout) -> Conversation:
    turns: list[UserTurn | ModelTurn] = []
    names: dict[str, str] = {}
    model: str | None = None
    system: str | None = None

    def model_turn() -> ModelTurn:
        if not turns or not isinstance(turns[-1], ModelTurn):
            turns.append(ModelTurn(parts=[], provider="openai", model=model))
        last = turns[-1]
        assert isinstance(last, ModelTurn)
        return last

    def user_turn() -> UserTurn:
        if not turns or not isinstance(turns[-1], UserTurn):
            turns.append(UserTurn(parts=[]))
        last = turns[-1]
        assert isinstance(last, UserTurn)
        return last

    for number, record in zip(rollout.line_numbers, rollout.records, strict=True):
        try:
            kind = record.get("type")
            payload = record.get("payload")
            if not isinstance(payload, dict):
                continue
            if kind == "turn_context" and isinstance(payload.get("model"), str):
                model = payload["model"]
                continue
            if kind == "token_usage_record" and turns and isinstance(turns[-1], ModelTurn):
                turns[-1].usage = rollout_usage(payload.get("usage"))
                continue
            if kind != "response_item":
                continue
            item = payload.get("type")
            instructions = _instructions(payload)
            if instructions is not None:
                system = instructions if system is None else system
                continue
            if item == "message":
                role = payload.get("role")
                if not isinstance(payload.get("content", []), list):  # listed and shown without it; exported: lost
                    who = {"assistant": "an assistant", "user": "a user"}.get(str(role), f"a {role!r}")
                    raise _Unfit(f"{who} message's content is {json_type(payload['content'])}, not a list")
                if role == "assistant":
                    for part in content_parts(payload):
                        if isinstance(part, dict) and isinstance(part.get("text"), str):
                            model_turn().parts.append(TextPart(text=part["text"]))
                elif (role == "user" and user_text(payload) is not None) or (role == "user" and _has_image(payload)):
                    parts: list[UserPart] = []
                    for part in content_parts(payload):
                        if not isinstance(part, dict):
                            continue
                        if part.get("type") == "input_text" and isinstance(part.get("text"), str):
                            if not part["text"].startswith(("<image", "</image")):
                                parts.append(TextPart(text=part["text"]))
                        elif part.get("type") == "input_image" and (image := _image(part.get("image_url"))) is not None:
                            parts.append(image)
                    user_turn().parts.extend(parts)
            elif item == "reasoning":
                listed = payload.get("summary") or []
                if not isinstance(listed, list):
                    raise _Unfit(f"a reasoning item's summary is {json_type(listed)}, not a list")
                summary = "\n\n".join(str(s.get("text")) for s in listed if isinstance(s, dict) and s.get("text"))
                signature = payload.get("encrypted_content")
                model_turn().parts.append(
                    ThinkingPart(text=summary, signature=signature if isinstance(signature, str) else None)
                )
            elif item == "function_call":
                call_id = str(payload.get("call_id") or payload.get("id") or "")
                name = _call_name(payload)
                names[call_id] = name
                raw = payload.get("arguments")
                raw = "{}" if raw in (None, "") else raw
                if not isinstance(raw, str):  # Codex writes the model's arguments as the JSON text it sent
                    raise _Unfit(f"function_call {name!r}'s arguments is {json_type(raw)}, not a string of JSON")
                try:
                    arguments = json.loads(raw)
                except (ValueError, RecursionError):
                    arguments = {"arguments": raw}
                model_turn().parts.append(
                    ToolCallPart(
                        id=call_id,
                        name=name,
                        arguments=arguments if isinstance(arguments, dict) else {"value": arguments},
                    )
                )
            elif item == "custom_tool_call":
                call_id = str(payload.get("call_id") or payload.get("id") or "")
                names[call_id] = str(payload.get("name") or "")
                model_turn().parts.append(
                    ToolCallPart(id=call_id, name=names[call_id], arguments={"input": str(payload.get("input") or "")})
                )
            elif item == "web_search_call":
                action = payload.get("action")
                call_id = str(payload.get("id") or "")
                model_turn().parts.append(
                    ServerToolCallPart(
                        id=call_id, name="web_search", arguments=action if isinstance(action, dict) else {}
                    )
                )
            elif item in _OUTPUT_ITEMS:
                call_id = str(payload.get("call_id") or "")
                user_turn().parts.append(
                    ToolResultPart(
                        call_id=call_id, name=names.get(call_id, ""), output=_output_text(payload.get("output"))
                    )
                )
        except _Unfit as exc:
            raise _corrupt(rollout, number, str(exc)) from None
        except (AttributeError, TypeError, ValueError):  # a shape not foreseen above: its line named all the same
            raise _corrupt(rollout, number, "an item of a shape Codex does not write") from None
    cwd = rollout.meta.get("cwd")
    origin = Origin(
        backend=BACKEND,
        session_id=rollout.thread_id,
        short_id=codex_short_id(rollout.thread_id),
        model=model,
        cwd=cwd if isinstance(cwd, str) else None,
    )
    return Conversation(origin=origin, system_instruction=system, turns=[t for t in turns if t.parts])


def _instructions(payload: dict[str, Any]) -> str | None:
    """The text of a `<user_instructions>` message (how a continued conversation's system instruction is kept)."""
    if payload.get("type") != "message" or payload.get("role") != "user":
        return None
    parts = [p.get("text") for p in content_parts(payload) if isinstance(p, dict)]
    text = parts[0] if len(parts) == 1 and isinstance(parts[0], str) else ""
    start, end = "<user_instructions>\n", "\n</user_instructions>"
    return text[len(start) : -len(end)] if text.startswith(start) and text.endswith(end) else None


def _has_image(payload: dict[str, Any]) -> bool:
    return any(isinstance(p, dict) and p.get("type") == "input_image" for p in content_parts(payload))


# --- continue -----------------------------------------------------------------------------------------


def _stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _line(ms: int, kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": _stamp(ms), "type": kind, "payload": payload}, ensure_ascii=False)


def _json_text(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _model_items(turn: ModelTurn, custom: set[str]) -> Iterable[dict[str, Any]]:
    for number, part in enumerate(turn.parts):
        if isinstance(part, TextPart):
            yield {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": part.text}]}
        elif isinstance(part, ThinkingPart):
            if not part.text and signature_for(turn, part, "openai") is None:
                continue
            yield {
                "type": "reasoning",
                "id": f"rs_unified_{number}",
                "summary": [{"type": "summary_text", "text": part.text}] if part.text else [],
                "content": None,
                "encrypted_content": signature_for(turn, part, "openai"),
            }
        elif isinstance(part, ToolCallPart):
            if part.name == "apply_patch" and isinstance(part.arguments.get("input"), str):
                custom.add(part.id)
                yield {
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": part.id,
                    "name": "apply_patch",
                    "input": part.arguments["input"],
                }
                continue
            item: dict[str, Any] = {
                "type": "function_call",
                "name": part.name,
                "arguments": _json_text(part.arguments),
                "call_id": part.id,
            }
            if part.name.startswith("mcp__") and part.name.count("__") >= 2:
                _, server, tool = part.name.split("__", 2)
                item |= {"namespace": f"mcp__{server}", "name": tool}
            yield item
        elif isinstance(part, ServerToolCallPart):
            text = f"[server tool {part.name} was called with {_json_text(part.arguments)}]"
            yield {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        elif isinstance(part, ServerToolResultPart):
            text = f"[server tool {part.name} returned: {part.output or _json_text(part.data)}]"
            yield {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        elif isinstance(part, ImagePart):
            text = f"[the model generated an image ({part.mime_type}, {len(part.data)} bytes), not carried over]"
            yield {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def _user_items(turn: UserTurn, custom: set[str]) -> Iterable[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for part in turn.parts:
        if isinstance(part, TextPart):
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart) and not taken(part):  # the API refused the whole request
            content.append({"type": "input_text", "text": image_note(part, "OpenAI")})
        elif isinstance(part, ImagePart):
            data = base64.b64encode(part.data).decode()
            content.append({"type": "input_image", "image_url": f"data:{part.mime_type.lower()};base64,{data}"})
        elif isinstance(part, ToolResultPart):
            kind = "custom_tool_call_output" if part.call_id in custom else "function_call_output"
            yield {"type": kind, "call_id": part.call_id, "output": part.output}
    if content:
        yield {"type": "message", "role": "user", "content": content}


def rollout_from_conversation(
    conversation: Conversation, *, thread_id: str, cwd: str, provider: str, now_ms: int | None = None
) -> str:
    """The text of a rollout file holding `conversation` (see the module docstring); its `session_meta`
    names the conversation's origin (`unified_continued_from`), which `unified sessions show` reports. Results
    come right after their calls, ids and names as OpenAI takes them (`Conversation.for_provider`)."""
    conversation = conversation.for_provider("openai")
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    lines = [
        _line(
            ms,
            "session_meta",
            {
                "id": thread_id,
                "session_id": thread_id,
                "timestamp": _stamp(ms),
                "cwd": cwd,
                "originator": "unified",
                "cli_version": PINNED_VERSION,
                "source": "vscode",
                "model_provider": provider,
                **(
                    {"unified_continued_from": conversation.origin.model_dump(mode="json", exclude_none=True)}
                    if conversation.origin is not None
                    else {}
                ),
            },
        )
    ]
    custom: set[str] = set()
    task: str | None = None
    last_text = ""
    thread_usage: Usage | None = None
    responses = 0

    def close_task() -> None:
        nonlocal task
        if task is not None:
            lines.append(_line(ms, "event_msg", {"type": "agent_message", "message": last_text}))
            lines.append(
                _line(ms, "event_msg", {"type": "task_complete", "turn_id": task, "last_agent_message": last_text})
            )
        task = None

    if conversation.system_instruction:
        text = f"<user_instructions>\n{conversation.system_instruction}\n</user_instructions>"
        lines.append(
            _line(
                ms,
                "response_item",
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
            )
        )
    for turn in conversation.turns:
        if isinstance(turn, UserTurn):
            prompt = "\n".join(p.text for p in turn.parts if isinstance(p, TextPart))
            if prompt:
                close_task()
                task = uuid7(ms)
                lines.append(_line(ms, "event_msg", {"type": "task_started", "turn_id": task}))
                lines.append(_line(ms, "event_msg", {"type": "user_message", "message": prompt, "images": None}))
            for item in _user_items(turn, custom):
                lines.append(_line(ms, "response_item", item))
        else:
            for item in _model_items(turn, custom):
                if item.get("type") == "message":
                    last_text = item["content"][0]["text"]
                lines.append(_line(ms, "response_item", item))
            if turn.usage:  # kept on its turn, as Codex records a response's (never counted again by a run)
                thread_usage = turn.usage if thread_usage is None else thread_usage + turn.usage
                responses += 1
                record = {
                    "thread_id": thread_id,
                    "turn_id": task or thread_id,
                    "session_id": thread_id,
                    "root_turn_id": task or thread_id,
                    "response_id": f"resp_unified_{responses}",
                    "usage": _codex_usage(turn.usage),
                    "turn_token_usage": _codex_usage(turn.usage),
                    "thread_token_usage": _codex_usage(thread_usage),
                }
                lines.append(_line(ms, "token_usage_record", record))
    close_task()
    return "\n".join(lines) + "\n"


def _split_last_user(conversation: Conversation) -> tuple[Conversation, UserTurn]:
    """The conversation without its last turn, a user's text or images, and that turn. Anything else last is a
    `ConfigurationError`: taking the last user's text from further back left out every turn after it (a tool
    round that ran, which the model then asked for again)."""
    turns = list(conversation.turns)
    last = turns[-1] if turns else None
    if not isinstance(last, UserTurn) or not any(isinstance(p, TextPart | ImagePart) for p in last.parts):
        raise ConfigurationError(
            "retry on codex answers a user's text or images again; the conversation ends with "
            + ("tool results" if isinstance(last, UserTurn) else "the model's turn" if last else "no turn"),
            hint="pass a prompt instead of retry",
        )
    if any(isinstance(p, ToolResultPart) for p in last.parts):
        raise ConfigurationError(
            "retry on codex answers a user's text or images again; the last turn holds tool results",
            hint="pass a prompt instead of retry",
        )
    return conversation.model_copy(update={"turns": turns[:-1]}), last


def _opening_for(turn: UserTurn) -> tuple[str, tuple[ImageInput, ...]]:
    """The retried turn's text and images; an image OpenAI cannot take is told in the text (it was left out
    without a word)."""
    text = "\n".join(
        p.text if isinstance(p, TextPart) else image_note(p, "OpenAI")
        for p in turn.parts
        if isinstance(p, TextPart) or (isinstance(p, ImagePart) and not taken(p))
    )
    images = tuple(
        ImageInput(mime_type=p.mime_type.lower(), data=p.data)  # taken: one of the four types it holds
        for p in turn.parts
        if isinstance(p, ImagePart) and taken(p)
    )
    return text, images


def open_history(rollouts: Rollouts, params: ExecuteParams, provider: str) -> Opening:
    """Write the conversation as a new thread's rollout; the run resumes it (blocking)."""
    conversation = params.history
    assert conversation is not None
    prompt: str | None = None
    images: tuple[ImageInput, ...] = ()
    if params.retry:
        conversation, last = _split_last_user(conversation)
        prompt, images = _opening_for(last)
    ms = int(time.time() * 1000)
    thread_id = uuid7(ms)
    cwd = str(params.cwd.expanduser().resolve())
    text = rollout_from_conversation(conversation, thread_id=thread_id, cwd=cwd, provider=provider, now_ms=ms)
    longest = max(len(line.encode()) for line in text.split("\n"))
    if longest > _rollouts.MAX_LINE_BYTES:  # the reader skips such a line: the turn would be gone from the session
        raise ConfigurationError(
            f"the history holds a part of {longest} bytes, longer than a codex session line may be "
            f"({_rollouts.MAX_LINE_BYTES})",
            hint="continue it on another backend, or cut that text or image down",
        )
    rollouts.write(thread_id, datetime.fromtimestamp(ms / 1000, UTC), text)
    return Opening(thread_id, resumed=False, prompt=prompt, images=images, continued_from=conversation.origin)


def open_retry(rollouts: Rollouts, thread_id: str) -> Opening:
    """Cut the thread's rollout before the task of its last user message; that message is the turn's input. A
    thread that ends with tool results the model has not answered is resumed as it is, `CONTINUE_PROMPT` the input."""
    rollout = rollouts.read(thread_id)
    with contextlib.suppress(CorruptSession):  # an item unified cannot read: the last user message is cut as before
        if conversation_from_rollout(rollout).ends_with_tool_results():
            return Opening(thread_id, resumed=True, prompt=CONTINUE_PROMPT)
    path = rollout.path
    raw = read_regular(path).splitlines(keepends=True)
    last_user: int | None = None
    task_start: int | None = None
    cut = 0
    parsed: list[dict[str, Any] | None] = []
    for line in raw:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            record = None
        parsed.append(record if isinstance(record, dict) else None)
    for index, record in enumerate(parsed):
        payload = record.get("payload") if record else None
        if not isinstance(payload, dict):
            continue
        if record and record.get("type") == "event_msg" and payload.get("type") == "task_started":
            task_start = index
        if record and record.get("type") == "response_item" and (user_text(payload) is not None or _has_image(payload)):
            last_user = index
            cut = task_start if task_start is not None and task_start < index else index
    if last_user is None:
        raise CorruptSession(
            f"codex session {codex_short_id(thread_id)} has no user turn to answer again", hint="pass a prompt"
        )
    payload = parsed[last_user]["payload"]  # type: ignore[index]
    turn = UserTurn(parts=[])
    text = user_text(payload) or ""
    for part in content_parts(payload):
        if isinstance(part, dict) and part.get("type") == "input_image" and (image := _image(part.get("image_url"))):
            turn.parts.append(image)
    prompt, images = text, _opening_for(turn)[1]
    _keep_tail(rollouts.home / "unified-retry-backups", f"{path.name}.{int(time.time())}", b"".join(raw[cut:]))
    write_atomically(path, b"".join(raw[:cut]))
    return Opening(thread_id, resumed=True, prompt=prompt, images=images)


def _keep_tail(folder: Path, name: str, data: bytes) -> None:
    """Keep a retry's cut-off tail as a new file `name` in `folder` (a real folder, never a link): an existing
    file is never replaced (two retries in one second each keep theirs: `name.<random>`) and a link planted at
    the name is never followed out of the home (O_EXCL refuses any existing entry, O_NOFOLLOW the folder's)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot keep the retried turn's cut-off tail in {folder}: {exc.strerror or exc}",
            hint="make it a folder of its own (not a link), then retry; the session was left unchanged",
        ) from None
    try:
        for attempt in range(16):
            candidate = name if attempt == 0 else f"{name}.{secrets.token_hex(4)}"
            try:
                fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=directory)
            except FileExistsError:
                continue
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            return
        raise FileExistsError(errno.EEXIST, "no free name for a retry's backup", str(folder / name))
    finally:
        os.close(directory)


def export_session(home: Path, thread_id: str) -> Conversation:
    return conversation_from_rollout(Rollouts(home).read(thread_id))
