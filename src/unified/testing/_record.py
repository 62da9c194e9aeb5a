"""Record a run of any backend as a cassette that `unified replay` and `replay_events` play back.

    events = await record_run(params, Path("cassettes/mine/tool-call.yaml"), source="Google's API")

- `generate-content` and `interactions`: vcrpy writes every HTTP exchange of the run to a YAML
  file (credential headers, cookies and `key=` query values scrubbed, see `cassettes`);
- `claude-code`: the CLI's stream-json lines both ways (`{"dir": "send"|"recv", "msg"}`, from the
  backend's `transcript` option) go to a JSONL transcript after a metadata line naming the backend,
  the prompt, the model and the approval mode;
- `gemini-cli`: the ACP JSON-RPC messages both ways go to a JSONL transcript, after a metadata
  line saying what it was recorded from, with the approval mode and the workspace; between them,
  `{"dir": "chat", "file": ..., "record": ...}` lines carry what the CLI wrote to its chat files
  meanwhile (tool arguments and outputs ACP does not carry): both come from the backend's
  `acp_transcript` option. Each chat record is placed before the ACP message that makes the
  adapter look it up (docs/testing.md, "What a gemini-cli cassette carries").

The run is a real one: whatever `params` point at (Google's API with your credentials, a
gateway, a FakeGemini) answers, and tools run in `params.cwd`. Every line written passes through
`redact()` (a transcript through `cassettes.scrub_text`), so no secret from the environment
reaches the file. An HTTP cassette also keeps, under its `unified:` key, the approval mode and
every answer `params.on_user_input` gave (a transcript holds them in its ACP messages), so a
replay gives the same answers. A run that does not end in `success` writes nothing (an existing
cassette stays as it was) unless `keep_failed`: `RecordError` carries its events.
`unified record` is this as a command (docs/testing.md, "Recording cassettes").
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from unified._exports import publish
from unified._redaction import redactor, run_secrets
from unified.events import Result, UnifiedEvent, UserInputRequest, UserInputResponse
from unified.sessions import short_id_of
from unified.types import ExecuteParams, UserInputHandler

__all__ = ["RecordError", "record_run"]


class RecordError(Exception):
    """No cassette was written: it cannot be written as asked (wrong file type for the backend, an
    unknown backend; `events` is empty), or the run failed (`events` holds what it did)."""

    def __init__(self, message: str, events: Sequence[UnifiedEvent] = ()) -> None:
        super().__init__(message)
        self.events: list[UnifiedEvent] = list(events)


_SUFFIXES = {
    "gemini-cli": (".jsonl",),
    "claude-code": (".jsonl",),
    "codex": (".jsonl",),
    "generate-content": (".yaml", ".yml"),
    "interactions": (".yaml", ".yml"),
}


EventCallback = Callable[[UnifiedEvent], None]


async def record_run(
    params: ExecuteParams,
    path: Path,
    *,
    source: str,
    on_event: EventCallback | None = None,
    keep_failed: bool = False,
) -> list[UnifiedEvent]:
    """Run `params` once and write what went over the wire to `path` (replaced if it exists).

    `source` says what answered (it goes into the file, for readers and for
    tests/test_cassettes_clean.py). `on_event` sees each event as it arrives. Returns the run's
    events. Raises `RecordError` when `path`'s suffix does not fit the backend (`.jsonl` for
    gemini-cli, `.yaml` for the API backends), and, writing nothing, when the run does not end in
    `success` (unless `keep_failed`: a cassette of a failure, for a test of how code handles one).
    """
    backend = str(params.backend)
    suffixes = _SUFFIXES.get(backend)
    if suffixes is None:
        raise RecordError(
            f"cannot record the {backend!r} backend: choose gemini-cli, claude-code, codex, generate-content or "
            "interactions"
        )
    if path.suffix not in suffixes:
        raise RecordError(f"{path}: a {backend} cassette is a {' or '.join(suffixes)} file")
    scratch = path.with_name(f".{path.stem}.recording{path.suffix}")  # renamed to `path` once the run succeeded
    made = _place(path, scratch)
    events: list[UnifiedEvent] = []
    try:
        if backend == "gemini-cli":
            events = await _record_transcript(params, path, scratch, source, on_event)
        elif backend == "claude-code":
            events = await _record_claude_transcript(params, path, scratch, source, on_event)
        elif backend == "codex":
            events = await _record_codex(params, path, scratch, source, on_event)
        else:
            events = await _record_http(params, scratch, source, on_event)
        result = events[-1] if events and isinstance(events[-1], Result) else None
        if (result is None or result.status != "success") and not keep_failed:
            why = result.error or result.status if result is not None else "it ended without a result"
            raise RecordError(f"the run ended in {result.status if result else 'no result'}: {why}", events)
        if not scratch.is_file():
            raise RecordError("the run sent no request to record", events)
        scratch.replace(path)
    except OSError as exc:  # a file in the way, no permission, a full disk: said as such, not as a bug of unified
        _forget(scratch, made)
        raise RecordError(_unwritable(path, exc), events) from exc
    except BaseException:
        _forget(scratch, made)
        raise
    return events


def _place(path: Path, scratch: Path) -> list[Path]:
    """Make the cassette's folder and try its scratch file there, before the run: a cassette that cannot be written
    (a folder of its name, a folder nothing can be made in) ran the whole run, spending the model's tokens, then
    raised a bare OSError. Returns the folders it made, to remove if no cassette is written."""
    if path.is_dir():
        raise RecordError(f"{path}: is a folder; name the cassette file to write")
    made = [parent for parent in (path.parent, *path.parent.parents) if not parent.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch.open("w").close()
        _remove(scratch)
    except OSError as exc:
        _forget(scratch, made)
        raise RecordError(_unwritable(path, exc)) from exc
    return made


def _unwritable(path: Path, exc: OSError) -> str:
    return (
        f"{path}: cannot be written ({exc.strerror or exc}: {exc.filename or path}); name a cassette file in a folder "
        "this user can write"
    )


def _forget(scratch: Path, made: list[Path]) -> None:
    """Remove what a recording that wrote no cassette left: its scratch file and the folders made for it."""
    with contextlib.suppress(OSError):  # the error that ended it is the one to tell
        _remove(scratch)
    for folder in made:
        with contextlib.suppress(OSError):
            folder.rmdir()


async def _run(params: ExecuteParams, on_event: EventCallback | None) -> list[UnifiedEvent]:
    from unified import execute

    events: list[UnifiedEvent] = []
    async with execute(params) as stream:
        async for event in stream:
            events.append(event)
            if on_event is not None:
                on_event(event)
    return events


async def _record_transcript(
    params: ExecuteParams, path: Path, scratch: Path, source: str, on_event: EventCallback | None
) -> list[UnifiedEvent]:
    transcript: list[dict[str, Any]] = []
    options = {**params.backend_options_dict(), "acp_transcript": transcript, "pool_size": 0}  # cold: all of it
    events = await _run(params.model_copy(update={"backend_options": options}), on_event)
    meta = {
        "cassette": path.stem,
        "recorded_from": source,
        "approval_mode": params.approval_mode,
        "paths_are_from": str(params.cwd),
    }
    extra = run_secrets(params)
    entries = [_without_mcp_values(entry) for entry in place_chat_records(_of_the_run(transcript))]
    _write_scrubbed(scratch, [meta, *entries], extra)
    return events


async def _record_codex(
    params: ExecuteParams, path: Path, scratch: Path, source: str, on_event: EventCallback | None
) -> list[UnifiedEvent]:
    """The app-server's JSON-RPC both ways (the codex backend's `transcript` option), after a metadata line."""
    from unified.testing._replay_codex import codex_meta

    transcript: list[dict[str, Any]] = []
    options = {**params.backend_options_dict(), "transcript": transcript, "pool_size": 0}  # cold: all of it
    events = await _run(params.model_copy(update={"backend_options": options}), on_event)
    extra = run_secrets(params)  # the api_key option too
    _write_scrubbed(scratch, [codex_meta(source, params, path.stem), *transcript], extra)
    return events


def _without_mcp_values(entry: dict[str, Any]) -> dict[str, Any]:
    """An ACP message with every MCP server's env and header values replaced, whatever their names
    (`session/new` and `session/load` carry them as name/value lists the CLI then passes on)."""
    msg = entry.get("msg")
    params = msg.get("params") if isinstance(msg, dict) else None
    if not isinstance(msg, dict) or not isinstance(params, dict) or not isinstance(params.get("mcpServers"), list):
        return entry
    servers: list[Any] = params["mcpServers"]
    from unified.testing._cassettes import REDACTED

    def scrubbed(server: Any) -> Any:
        if not isinstance(server, dict):
            return server
        out = dict(server)
        for key in ("env", "headers"):
            values = out.get(key)
            if isinstance(values, list):
                out[key] = [{**v, "value": REDACTED} if isinstance(v, dict) and "value" in v else v for v in values]
        return out

    return {**entry, "msg": {**msg, "params": {**params, "mcpServers": [scrubbed(s) for s in servers]}}}


async def _record_claude_transcript(
    params: ExecuteParams, path: Path, scratch: Path, source: str, on_event: EventCallback | None
) -> list[UnifiedEvent]:
    transcript: list[dict[str, Any]] = []
    options = {**params.backend_options_dict(), "transcript": transcript}
    events = await _run(params.model_copy(update={"backend_options": options}), on_event)
    meta = {
        "cassette": path.stem,
        "recorded_from": source,
        "backend": "claude-code",
        "prompt": params.prompt,
        "model": params.model,
        "approval_mode": params.approval_mode,
        "paths_are_from": str(params.cwd),
    }
    _write_scrubbed(scratch, [meta, *transcript], run_secrets(params))
    return events


_FINAL_STATUSES = frozenset({"success", "error", "cancelled"})


def _finished_calls(record: dict[str, Any]) -> list[str]:
    """The ids of the tool calls a chat record shows finished (in a `gemini` message, or in the
    messages of a `$set.messages` checkpoint): the CLI's chat-file format, as the kit knows it."""
    updates = record.get("$set")
    messages = (
        updates["messages"] if isinstance(updates, dict) and isinstance(updates.get("messages"), list) else [record]
    )
    return [
        call["id"]
        for message in messages
        if isinstance(message, dict) and message.get("type") == "gemini"
        for call in message.get("toolCalls") or []
        if isinstance(call, dict) and isinstance(call.get("id"), str) and call.get("status") in _FINAL_STATUSES
    ]


def _of_the_run(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries without chat records of other sessions (the CLI starts one of its own in its
    spawn directory before `session/new`): only the run's session files and its subagents' files."""
    ids: set[str] = set()
    for entry in entries:
        msg = entry.get("msg", {})
        for holder in (msg.get("result"), msg.get("params") if msg.get("method") == "session/load" else None):
            if isinstance(holder, dict) and isinstance(holder.get("sessionId"), str):
                ids.add(holder["sessionId"])

    def of_the_run(file: str) -> bool:
        path = PurePosixPath(file)
        return any(path.name.endswith(f"-{short_id_of(i)}.jsonl") or i in path.parts for i in ids)

    return [entry for entry in entries if entry["dir"] != "chat" or of_the_run(entry["file"])]


def place_chat_records(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Move each chat record up to just before the ACP message that needs it, keeping each file's order.

    The CLI writes a tool call's record a few milliseconds after ACP's `tool_call_update`
    (completed or failed), but that update is what makes the adapter look the record up; a replay
    that wrote it as late as it was recorded would make the adapter wait for it. So a record goes
    before the first final update of any call it finishes, unless it was written earlier still;
    a record goes no later than the records after it in its file. Everything else keeps its place.
    """
    needed_at: dict[str, int] = {}
    for index, entry in enumerate(entries):
        update = entry.get("msg", {}).get("params", {}).get("update") if entry["dir"] == "recv" else None
        if isinstance(update, dict) and update.get("status") in ("completed", "failed"):
            call_id = update.get("toolCallId")
            if isinstance(call_id, str):
                needed_at.setdefault(call_id, index)
    slots: list[tuple[int, int, int]] = []  # (the entry it goes before, chat before ACP, original index)
    earliest_later: dict[str, int] = {}
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if entry["dir"] != "chat":
            slots.append((index, 1, index))
            continue
        finished = _finished_calls(entry["record"])
        slot = min([index, *(needed_at.get(call_id, index) for call_id in finished)])
        slot = min(slot, earliest_later.get(entry["file"], slot))
        earliest_later[entry["file"]] = slot
        slots.append((slot, 0, index))
    return [entries[index] for _, _, index in sorted(slots)]


def _answer_log(params: ExecuteParams, answers: list[dict[str, Any]]) -> UserInputHandler | None:
    """`params.on_user_input`, writing down each answer it gives (None when there is no callback)."""
    handler = params.on_user_input
    if handler is None:
        return None

    async def answer(request: UserInputRequest) -> UserInputResponse:
        response = await handler(request)
        answers.append(
            {
                "source": request.source,
                "tool_name": request.tool_name,
                "response": response.model_dump(mode="json", exclude_defaults=True),
            }
        )
        return response

    return answer


async def _record_http(
    params: ExecuteParams, scratch: Path, source: str, on_event: EventCallback | None
) -> list[UnifiedEvent]:
    from unified.testing._cassettes import make_vcr

    recorder = make_vcr(scratch.parent, source=source)
    recorder.record_mode = "all"
    _remove(scratch)  # vcrpy would keep an existing cassette's interactions: start from none
    answers: list[dict[str, Any]] = []
    with recorder.use_cassette(scratch.name):
        events = await _run(params.model_copy(update={"on_user_input": _answer_log(params, answers)}), on_event)
    extra = run_secrets(params)
    _add_metadata(scratch, {"approval_mode": params.approval_mode, "answers": answers}, extra)
    return events


def _add_metadata(scratch: Path, metadata: dict[str, Any], extra: list[str]) -> None:
    """Give the written cassette its `unified:` block, and redact it, the secrets given to the run
    (`extra`) too (vcrpy writes nothing for a run that sent no request)."""
    from unified.testing._cassettes import with_metadata

    if scratch.is_file():
        _write_redacted(scratch, with_metadata(scratch.read_text(encoding="utf-8"), metadata), extra)


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def _write_scrubbed(path: Path, lines: list[dict[str, Any]], extra: list[str]) -> None:
    from unified.testing._cassettes import scrub_text

    path.write_text("".join(scrub_text(json.dumps(line), extra) + "\n" for line in lines), encoding="utf-8")


def _write_redacted(path: Path, text: str, extra: list[str]) -> None:
    path.write_text(redactor(extra=extra)(text), encoding="utf-8")


publish("unified.testing", ["RecordError", "record_run"], globals())
