"""Record a run of any backend as a cassette that `unified replay` and `replay_events` play back.

    events = await record_run(params, Path("cassettes/mine/tool-call.yaml"), source="Google's API")

- `generate-content` and `interactions`: vcrpy writes every HTTP exchange of the run to a YAML
  file (credential headers, cookies and `key=` query values scrubbed, see `cassettes`);
- `gemini-cli`: the ACP JSON-RPC messages both ways go to a JSONL transcript, after a metadata
  line saying what it was recorded from, with the approval mode and the workspace; between them,
  `{"dir": "chat", "file": ..., "record": ...}` lines carry what the CLI wrote to its chat files
  meanwhile (tool arguments and outputs ACP does not carry): both come from the backend's
  `acp_transcript` option. Each chat record is placed before the ACP message that makes the
  adapter look it up (docs/testing.md, "What a gemini-cli cassette carries").

The run is a real one: whatever `params` point at (Google's API with your credentials, a
gateway, a FakeGemini) answers, and tools run in `params.cwd`. Every line written passes through
`redact()` (a transcript through `cassettes.scrub_text`), so no secret from the environment
reaches the file. `unified record` is this as a
command (docs/testing.md, "Recording cassettes").
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

from unified._exports import publish
from unified._redaction import given_secrets, redactor
from unified.events import UnifiedEvent
from unified.sessions import short_id_of
from unified.types import ExecuteParams

__all__ = ["RecordError", "record_run"]


class RecordError(Exception):
    """The cassette cannot be written as asked (wrong file type for the backend, an unknown backend)."""


_SUFFIXES = {
    "gemini-cli": (".jsonl",),
    "codex": (".jsonl",),
    "generate-content": (".yaml", ".yml"),
    "interactions": (".yaml", ".yml"),
}


async def record_run(params: ExecuteParams, path: Path, *, source: str) -> list[UnifiedEvent]:
    """Run `params` once and write what went over the wire to `path` (replaced if it exists).

    `source` says what answered (it goes into the file, for readers and for
    tests/test_cassettes_clean.py). Returns the run's events. Raises `RecordError` when `path`'s
    suffix does not fit the backend (`.jsonl` for gemini-cli, `.yaml` for the API backends).
    """
    backend = str(params.backend)
    suffixes = _SUFFIXES.get(backend)
    if suffixes is None:
        raise RecordError(
            f"cannot record the {backend!r} backend: choose gemini-cli, codex, generate-content or interactions"
        )
    if path.suffix not in suffixes:
        raise RecordError(f"{path}: a {backend} cassette is a {' or '.join(suffixes)} file")
    path.parent.mkdir(parents=True, exist_ok=True)
    if backend == "gemini-cli":
        return await _record_transcript(params, path, source)
    if backend == "codex":
        return await _record_codex(params, path, source)
    return await _record_http(params, path, source)


async def _run(params: ExecuteParams) -> list[UnifiedEvent]:
    from unified import execute

    async with execute(params) as stream:
        return [event async for event in stream]


async def _record_transcript(params: ExecuteParams, path: Path, source: str) -> list[UnifiedEvent]:
    transcript: list[dict[str, Any]] = []
    options = {**params.backend_options_dict(), "acp_transcript": transcript, "pool_size": 0}  # cold: all of it
    events = await _run(params.model_copy(update={"backend_options": options}))
    meta = {
        "cassette": path.stem,
        "recorded_from": source,
        "approval_mode": params.approval_mode,
        "paths_are_from": str(params.cwd),
    }
    extra = given_secrets(params.backend_options_dict(), params.mcp_servers)
    entries = [_without_mcp_values(entry) for entry in place_chat_records(_of_the_run(transcript))]
    _write_scrubbed(path, [meta, *entries], extra)
    return events


async def _record_codex(params: ExecuteParams, path: Path, source: str) -> list[UnifiedEvent]:
    """The app-server's JSON-RPC both ways (the codex backend's `transcript` option), after a metadata line."""
    from unified.testing._replay_codex import codex_meta

    transcript: list[dict[str, Any]] = []
    options = {**params.backend_options_dict(), "transcript": transcript}
    events = await _run(params.model_copy(update={"backend_options": options}))
    extra = given_secrets(params.backend_options_dict(), params.mcp_servers)  # the api_key option too
    _write_scrubbed(path, [codex_meta(source, params, path.stem), *transcript], extra)
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


async def _record_http(params: ExecuteParams, path: Path, source: str) -> list[UnifiedEvent]:
    from unified.testing._cassettes import make_vcr

    recorder = make_vcr(path.parent, source=source)
    recorder.record_mode = "all"
    _remove(path)  # vcrpy would keep an existing cassette's interactions: start from none
    with recorder.use_cassette(path.name):
        events = await _run(params)
    extra = given_secrets(params.backend_options_dict(), params.mcp_servers)
    _write_redacted(path, path.read_text(encoding="utf-8"), extra)  # noqa: ASYNC240 - one small file, after the run
    return events


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def _write_scrubbed(path: Path, lines: list[dict[str, Any]], extra: list[str]) -> None:
    from unified.testing._cassettes import scrub_text

    path.write_text("".join(scrub_text(json.dumps(line), extra) + "\n" for line in lines), encoding="utf-8")


def _write_redacted(path: Path, text: str, extra: list[str]) -> None:
    path.write_text(redactor(extra=extra)(text), encoding="utf-8")


publish("unified.testing", ["RecordError", "record_run"], globals())
