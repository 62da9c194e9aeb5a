"""gemini-cli history <-> the portable `Conversation`: the CLI's chat file, read and written.

Reading (export): the messages the CLI would load (`read_chat`: last record per id, checkpoints,
rewinds), without its `<session_context>` preamble. A `gemini` message is one model turn: its
thoughts (subject and description), its text, its tool calls; each call's result is taken from the
call's own `result` (the CLI also writes them again as a user message, which is skipped when it
repeats them). The chat file keeps no thought signatures, so none are exported.

Writing (continuing a conversation on gemini-cli): a chat file the CLI loads with `session/load`,
as its own would look: a header, then messages. Each tool call carries its result once, in the
call (no second user message of the same responses), so a resumed request answers each call once.
A Google turn whose parts carry signatures is written as the CLI's part list (`content` holding the
thought, text and `functionCall` parts with their `thoughtSignature`, which the CLI sends as they
are); any other turn as the CLI records one (text, `thoughts`, `toolCalls`), its signatures dropped
(`signature_for`: they never cross providers; the CLI adds Gemini's documented sentinel to a call
without one). Server-side tools of another provider are told as text, since the CLI cannot replay them.

`open_history` places that file where the CLI 0.61 looks for the sessions of a cwd: the project's
folder under `<home>/.gemini/tmp/`, named by the cwd's slug in `projects.json` (claimed the way the
CLI's `ProjectRegistry` claims one, with its `.project_root` marker), the file named for a minute in
the past (the CLI's fresh record of the current minute must not land in it). `open_retry` cuts a
session's last prompt off (`$rewindTo`, as the CLI's own rewind does) to send it again; a session that
ends with tool results is sent `CONTINUE_PROMPT` after them instead.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from unified._adapters.gemini_cli._chat_files import (
    CONTINUED_FROM,
    PROJECT_ROOT_FILE,
    gemini_home,
    prompt_text,
    read_chat,
    real_directory,
    session_files,
    usage_from_counts,
)
from unified._files import append_line, read_regular, read_regular_text, write_atomically
from unified._internal.gemini_parts import response_of_result, result_of_response
from unified._redaction import redact_key_shapes
from unified._text import json_type
from unified.conversations import (
    CONTINUE_PROMPT,
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
from unified.errors import ConfigurationError, CorruptSession
from unified.sessions import short_id_of

__all__ = [
    "Opening",
    "chat_records_from_conversation",
    "conversation_from_messages",
    "keep_failed_prompt",
    "messages_now",
    "open_history",
    "open_retry",
    "project_slug",
    "retried_turn",
    "undo_cancel_rollback",
]

FAILED_TURN = "unifiedFailedTurn"
"""A `$set` key of ours in a chat file: the prompt of a turn that failed (the CLI 0.61 takes a failed prompt
back out of its history) and the turn it followed, so `retry` can send it again."""

PAST = timedelta(minutes=2)
"""How far in the past a written chat file's timestamps (and its file name's minute) are."""

_CONTEXT_PREFIX = "<session_context>"


def _result_part(response: Mapping[str, Any], name: str, call_id: str) -> ToolResultPart:
    return result_of_response(call_id, name, response.get("response") or {})


def conversation_from_messages(messages: list[dict[str, Any]], *, origin: Origin | None = None) -> Conversation:
    """The messages of a chat file (as `read_chat` gives them) as a Conversation."""
    turns: list[UserTurn | ModelTurn] = []
    answered: set[str] = set()
    for message in messages:
        try:
            _add_message(message, turns, answered)
        except (_Unfit, AttributeError, TypeError, ValueError) as exc:  # a chat file edited by hand or by an attacker
            where = f"session {origin.short_id}" if origin is not None else "the chat file"
            what = str(exc) if isinstance(exc, _Unfit) else "it is of a shape the Gemini CLI does not write"
            raise CorruptSession(  # it ended "(id 'g1', AttributeError)": Python's word, no field named
                f"{where} holds a message unified cannot read: message "
                f"{redact_key_shapes(str(message.get('id')))[:64]!r}: {what}",
                hint="the file was left unchanged; remove or fix that message, or start a new session",
            ) from None
    return Conversation(origin=origin, turns=[t for t in turns if t.parts])


class _Unfit(Exception):
    """A field of a chat message of a type the Gemini CLI never writes; its message names the field and the type."""


def _items(value: object, field: str) -> list[Any]:
    """A list field of a chat message (absent: empty); `_Unfit` naming it when it is anything else."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Unfit(f"its `{field}` is {json_type(value)}, not a list")
    return value


def _fields(value: object, field: str) -> Mapping[str, Any]:
    """An object in a chat message; `_Unfit` naming it when it is anything else."""
    if not isinstance(value, Mapping):
        raise _Unfit(f"its `{field}` is {json_type(value)}, not an object")
    return value


def _add_message(message: dict[str, Any], turns: list[UserTurn | ModelTurn], answered: set[str]) -> None:
    """One message of a chat file into `turns` (a model message may continue the last model turn)."""
    kind = message.get("type")
    if kind == "gemini":
        model_parts: list[ModelPart] = []
        results: list[UserPart] = []
        for index, thought in enumerate(_items(message.get("thoughts"), "thoughts")):
            thought = _fields(thought, f"thoughts[{index}]")
            text = "\n\n".join(str(thought.get(k)) for k in ("subject", "description") if thought.get(k))
            if text:
                model_parts.append(ThinkingPart(text=text))
        content = message.get("content")
        if isinstance(content, str) and content:
            model_parts.append(TextPart(text=content))
        in_content = _model_parts_of(content) if isinstance(content, list) else []
        model_parts.extend(in_content)
        listed = {p.id for p in in_content if isinstance(p, ToolCallPart)}
        for index, call in enumerate(_items(message.get("toolCalls"), "toolCalls")):
            call = _fields(call, f"toolCalls[{index}]")
            call_id = str(call.get("id") or "")
            if call_id not in listed:
                arguments = dict(_fields(call.get("args") or {}, f"toolCalls[{index}].args"))
                model_parts.append(ToolCallPart(id=call_id, name=str(call.get("name") or ""), arguments=arguments))
            for item in _items(call.get("result"), f"toolCalls[{index}].result"):
                response = item.get("functionResponse") if isinstance(item, Mapping) else None
                if isinstance(response, Mapping):
                    results.append(_result_part(response, str(call.get("name") or ""), call_id))
                    answered.add(call_id)
        usage = usage_from_counts(_fields(message["tokens"], "tokens")) if message.get("tokens") else None
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


def _model_parts_of(content: list[Any]) -> list[ModelPart]:
    """A `gemini` message's content as Gemini parts (the CLI's checkpoints, a continued conversation's turns),
    their signatures kept: the turn is Google's."""
    parts: list[ModelPart] = []
    for item in content:
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, Mapping):
            continue
        signature = item.get("thoughtSignature") if isinstance(item.get("thoughtSignature"), str) else None
        call = item.get("functionCall")
        if isinstance(call, Mapping):
            arguments = call.get("args") if isinstance(call.get("args"), dict) else {}
            name = str(call.get("name") or "")
            parts.append(
                ToolCallPart(id=str(call.get("id") or ""), name=name, arguments=arguments, signature=signature)
            )
        elif isinstance(item.get("text"), str) and item.get("thought"):
            parts.append(ThinkingPart(text=item["text"], signature=signature))
        elif isinstance(item.get("text"), str) and (item["text"] or signature):
            parts.append(TextPart(text=item["text"], signature=signature))
    return parts


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
    """The chat file (header first) the CLI loads to continue `conversation` as session `session_id`; names
    as Gemini takes them (`Conversation.for_provider`)."""
    conversation = conversation.for_provider("google")
    stamp = (now or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    header: dict[str, Any] = {
        "sessionId": session_id,
        "projectHash": hashlib.sha256(str(project_root).encode()).hexdigest(),
        "startTime": stamp,
        "lastUpdated": stamp,
        "kind": "main",
    }
    if conversation.origin is not None:
        header[CONTINUED_FROM] = conversation.origin.model_dump(mode="json", exclude_none=True)
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


def _signed(turn: ModelTurn) -> bool:
    """Whether a Google model can read some signature of this turn (then it is written as parts)."""
    return any(
        isinstance(part, TextPart | ThinkingPart | ToolCallPart) and signature_for(turn, part, "google") is not None
        for part in turn.parts
    )


def _content_parts(turn: ModelTurn) -> list[dict[str, Any]]:
    """A Google turn as Gemini parts, in order, each with its signature (the CLI sends them unchanged)."""
    parts: list[dict[str, Any]] = []
    for part in turn.parts:
        item: dict[str, Any]
        if isinstance(part, ThinkingPart):
            item = {"text": part.text, "thought": True}
        elif isinstance(part, TextPart):
            item = {"text": part.text}
        elif isinstance(part, ToolCallPart):
            item = {"functionCall": {"id": part.id, "name": part.name, "args": part.arguments}}
        elif isinstance(part, ServerToolCallPart | ServerToolResultPart):
            parts.append({"text": part.as_text()})
            continue
        else:  # a generated image: not part of what the model reads back
            continue
        signature = signature_for(turn, part, "google")
        if signature is not None:
            item["thoughtSignature"] = signature
        parts.append(item)
    return parts


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
    signed = _signed(turn)
    message: dict[str, Any] = {
        "id": uuid.uuid4().hex,
        "timestamp": stamp,
        "type": "gemini",
        "content": _content_parts(turn) if signed else "".join(texts),
        "thoughts": [] if signed else thoughts,
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


# --- placing a continued conversation, and cutting a prompt off for a retry --------------------------


@dataclass(frozen=True, slots=True)
class Opening:
    """How a run opens its session: `session/load` of `load` (a session id), then `prompt` as the message
    when given (a retried turn's blocks) instead of the run's own prompt."""

    load: str
    prompt: list[dict[str, Any]] | None = None


_SLUG = re.compile(r"[A-Za-z0-9._-]+")
"""A folder name `projects.json` may give a project (the CLI's are `[a-z0-9-]+`): one path component."""


def _slugify(text: str) -> str:
    return re.sub(r"^-|-$", "", re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", text.lower()))) or "project"


def _marker(directory: Path) -> str | None:
    try:
        return read_regular_text(directory / PROJECT_ROOT_FILE).strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def project_slug(home: Path, root: Path) -> str:
    """The folder name under `<home>/tmp/` where the CLI 0.61 keeps the sessions of `root`, claimed as its
    `ProjectRegistry.getShortId` claims it: the registered slug (if its marker agrees), else a folder whose
    `.project_root` names `root`, else the slugified base name, with `-1`, `-2`, ... while taken. The
    registry (`projects.json`) and the markers (in `tmp/` and `history/`) are written as the CLI would."""
    bases = (home / "tmp", home / "history")
    registry = home / "projects.json"
    try:
        data = json.loads(read_regular(registry))
    except (OSError, ValueError, RecursionError):
        data = {}
    projects: dict[str, str] = dict(data.get("projects") or {}) if isinstance(data, dict) else {}
    key = str(root)
    slug = projects.get(key)
    if slug is not None and (not isinstance(slug, str) or not _SLUG.fullmatch(slug) or slug in (".", "..")):
        raise CorruptSession(
            f"{registry} names {slug!r} as the folder of {key}, which is no folder name under {home / 'tmp'}",
            hint="it was left unchanged; fix or remove that entry of projects.json",
        )
    for base_dir in bases:  # never write through a link (to outside the CLI's home)
        if os.path.lexists(base_dir):
            real_directory(base_dir)
    if slug is not None and any(_marker(b / slug) not in (None, key) for b in bases):
        slug = None
    if slug is None:
        slug = next((d.name for b in bases if b.is_dir() for d in sorted(b.iterdir()) if _marker(d) == key), None)
    if slug is None:
        taken = set(projects.values())
        base, counter = _slugify(root.name or "project"), 0
        while True:
            slug = base if counter == 0 else f"{base}-{counter}"
            counter += 1
            if slug not in taken and all(_marker(b / slug) in (None, key) for b in bases):
                break
    for base_dir in bases:
        if os.path.lexists(base_dir / slug):
            real_directory(base_dir / slug)
        (base_dir / slug).mkdir(parents=True, exist_ok=True)
        if _marker(base_dir / slug) is None:  # missing, empty or unreadable (a FIFO is replaced, never opened)
            write_atomically(base_dir / slug / PROJECT_ROOT_FILE, key)
    if projects.get(key) != slug:
        projects[key] = slug
        write_atomically(registry, json.dumps({"projects": projects}, indent=2))
    return slug


def retried_turn(conversation: Conversation) -> tuple[Conversation, list[dict[str, Any]]]:
    """The conversation without its last turn, a user's text or images, and that turn as ACP prompt blocks."""
    last = conversation.turns[-1] if conversation.turns else None
    if not isinstance(last, UserTurn):
        raise ConfigurationError(
            "there is no failed turn to retry: the conversation ends with the model's turn",
            hint="pass a prompt instead of retry",
        )
    if any(isinstance(part, ToolResultPart) for part in last.parts):
        raise ConfigurationError(
            "retry on gemini-cli answers a user's text or images again; the last turn holds tool results",
            hint="continue the conversation with a prompt instead",
        )
    blocks = [
        {"type": "text", "text": p.text}
        if isinstance(p, TextPart)
        else {"type": "image", "mimeType": p.mime_type, "data": base64.b64encode(p.data).decode("ascii")}
        for p in last.parts
        if isinstance(p, TextPart | ImagePart)
    ]
    return conversation.model_copy(update={"turns": conversation.turns[:-1]}), blocks


def open_history(
    env: Mapping[str, str], cwd: Path, conversation: Conversation, *, model: str, retry: bool = False
) -> Opening:
    """Write `conversation` as a new session's chat file where the CLI finds the sessions of `cwd`; with
    `retry`, without its last user turn, which becomes the prompt. Blocking (run it off the event loop)."""
    prompt = None
    if retry:
        conversation, prompt = retried_turn(conversation)
    home = gemini_home(env)
    session_id = str(uuid.uuid4())
    now = datetime.now(UTC) - PAST
    records = chat_records_from_conversation(
        conversation, session_id=session_id, project_root=cwd, model=model, now=now
    )
    chats = home / "tmp" / project_slug(home, cwd) / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"session-{now:%Y-%m-%dT%H-%M}-{short_id_of(session_id)}.jsonl"
    write_atomically(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return Opening(load=session_id, prompt=prompt)


def _prompt_blocks(content: object) -> list[dict[str, Any]]:
    items = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    blocks: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            blocks.append({"type": "text", "text": item})
        elif isinstance(item, Mapping) and isinstance(item.get("text"), str):
            blocks.append({"type": "text", "text": item["text"]})
        elif isinstance(item, Mapping) and isinstance(item.get("inlineData"), Mapping):
            blob = item["inlineData"]
            blocks.append({"type": "image", "mimeType": blob.get("mimeType") or "image/png", "data": blob.get("data")})
    return blocks


def _last_turn_id(messages: list[dict[str, Any]]) -> str | None:
    """The id of the last answer or real prompt (not the CLI's preamble, not an info line)."""
    for message in reversed(messages):
        if (message.get("type") == "gemini" or prompt_text(message) is not None) and isinstance(message.get("id"), str):
            return str(message["id"])
    return None


def _blocks_text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(str(b["text"]) for b in blocks if b.get("type") == "text" and b.get("text"))


def keep_failed_prompt(home: Path, session_id: str, blocks: list[dict[str, Any]]) -> None:
    """Note a prompt the model did not answer (an error answer), with the turn it followed, in the session's
    chat files: the CLI removes a failed prompt from its history, and `retry` must find it. A file left with no
    prompt at all (a session's first prompt failed) gets the prompt as its one turn, as a cancelled one does
    (`undo_cancel_rollback`): the CLI cannot load a session without a prompt ("No previous sessions found"), so the
    run's `short_id` resumed nothing (`session_not_found`, bad input round 15: a model stream with an event cut in
    the middle). Blocking."""
    for path in session_files(home, session_id):
        try:
            messages = read_chat(path).messages
        except CorruptSession:
            continue
        turns = [m for m in messages if m.get("type") == "gemini" or prompt_text(m) is not None]
        if turns and prompt_text(turns[-1]) == _blocks_text(blocks):
            turns = turns[:-1]  # the prompt itself, not taken out (yet)
        kept: dict[str, Any] = {FAILED_TURN: {"prompt": blocks, "after": _last_turn_id(turns)}}
        if not any(prompt_text(m) is not None for m in messages):
            kept["messages"] = _with_prompt(messages, blocks)
        append_line(path, (json.dumps({"$set": kept}, ensure_ascii=False) + "\n").encode())


SavedMessages = dict[Path, list[dict[str, Any]]]
"""The messages of each of a session's chat files at one moment (`messages_now`)."""


def messages_now(home: Path, session_id: str) -> SavedMessages:
    """The messages each of the session's chat files holds now (one unified cannot read is left out). Blocking."""
    saved: SavedMessages = {}
    for path in session_files(home, session_id):
        with contextlib.suppress(CorruptSession):
            saved[path] = read_chat(path).messages
    return saved


def undo_cancel_rollback(saved: SavedMessages, blocks: list[dict[str, Any]]) -> None:
    """Put back what a cancelled prompt took out of the chat files saved just before the cancel.

    On an abort the CLI 0.61 (`GeminiChat.sendMessageStream`) rolls its history back to where the prompt began
    and writes that to the chat file: the prompt, the model's answers and every tool call that ran are gone. A
    session left with no prompt cannot even be loaded ("No previous sessions found"), so a cancelled run's
    `short_id` resumed nothing, and a failover (which cancels the prompt once the CLI's retries are spent) carried
    nothing of the turn: the next backend ran its tool calls again. When a file now holds a strict beginning of
    what it held (a rollback, nothing new), the messages as they were go back as a `$set` record, the CLI's own
    checkpoint form.

    A prompt cancelled before the CLI recorded it (or whose record the rollback took with it) leaves a file with
    no prompt, which the CLI cannot load either: the run's `short_id` (in its `session_started` and `result`)
    resumed nothing. Such a file gets the prompt (`blocks`) as its one turn, as `gemini -p` keeps a cancelled
    prompt, so the session resumes (and exports) with it. Blocking."""
    for path, before in saved.items():
        try:
            now = read_chat(path).messages
        except CorruptSession:
            continue
        if len(now) < len(before) and [m.get("id") for m in now] == [m.get("id") for m in before[: len(now)]]:
            now = before
        elif not any(prompt_text(m) is not None for m in now):
            now = _with_prompt(now, blocks)
        else:
            continue
        append_line(path, (json.dumps({"$set": {"messages": now}}, ensure_ascii=False) + "\n").encode())


def _with_prompt(messages: list[dict[str, Any]], blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` and then the prompt `blocks` as a user message of the CLI's record (a session's one turn)."""
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return [*messages, {"id": uuid.uuid4().hex, "timestamp": stamp, "type": "user", "content": _user_content(blocks)}]


def _user_content(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A prompt's ACP blocks as the CLI records a user message's content (`_prompt_blocks` reads them back)."""
    content: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "text":
            content.append({"text": block.get("text")})
        elif block.get("type") == "image":
            content.append({"inlineData": {"mimeType": block.get("mimeType"), "data": block.get("data")}})
    return content


def open_retry(path: Path, session_id: str) -> Opening:
    """What a retry of the session sends: when the session ends with tool results the model has not answered (its
    answer to a tool round failed), `CONTINUE_PROMPT` after them, as a failover does (the CLI takes only a user's
    message; the prompt of before the round is not sent again, nor the round run again). Else the session's failed
    prompt: the one `keep_failed_prompt` noted, when nothing came after the turn it followed; else an unanswered
    last prompt (a run that died in its turn), cut off the file (a `$rewindTo` record, as the CLI's own rewind
    writes) to be sent again. Blocking."""
    chat = read_chat(path)
    with contextlib.suppress(CorruptSession):  # a message unified cannot read: the prompt is looked for as before
        if conversation_from_messages(chat.messages).ends_with_tool_results():
            return Opening(load=session_id, prompt=[{"type": "text", "text": CONTINUE_PROMPT}])
    messages = [m for m in chat.messages if m.get("type") == "gemini" or prompt_text(m) is not None]
    failed = chat.meta.get(FAILED_TURN)
    if (
        isinstance(failed, dict)
        and isinstance(failed.get("prompt"), list)
        and failed.get("after") == _last_turn_id(messages)
    ):
        return Opening(load=session_id, prompt=list(failed["prompt"]))
    last = messages[-1] if messages else None
    if last is None or prompt_text(last) is None or not isinstance(last.get("id"), str):
        raise ConfigurationError(
            f"there is no failed turn to retry in session {short_id_of(session_id)}: its last turn was answered",
            hint="send a prompt instead of retry",
        )
    append_line(path, (json.dumps({"$rewindTo": last["id"]}) + "\n").encode())
    return Opening(load=session_id, prompt=_prompt_blocks(last.get("content")))
