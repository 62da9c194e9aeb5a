"""Codex's session files ("rollouts") on disk: find, list, resolve by short id, read, show, delete, write.

A thread lives in `<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDTHH-MM-SS>-<uuidv7>.jsonl`,
one JSON object per line (`{"timestamp", "ordinal", "type", "payload"}`): a `session_meta` first,
then `turn_context`, `response_item` (exactly what went to and came from the model), `event_msg`
(task started/complete, user and agent messages, token counts), ... Codex's sqlite files are a cache
of these; the rollout is the truth, and Codex resumes any rollout by its id.

**Short ids.** A UUIDv7 starts with its creation time in milliseconds: its first eight hex digits
change every 65.5 s, so threads made a minute apart can share them, and threads made within the
same minute share nine or more. The short id is therefore the id's last eight hex digits (random
bits); `resolve` takes a full id, a short id or any unique prefix of either, an ambiguous one is an
`AmbiguousSession` listing the candidates, and a reference that matches nothing a `SessionNotFound`
(never a new thread). Subagent threads (`session_meta.parent_thread_id`) are not listed: their
parent's session is.

Hostile input is normal: a line that is not JSON or is longer than `MAX_LINE_BYTES` is skipped, a
file whose first line is not a `session_meta` is listed with a `problem` (and refused on resume), and
so is a FIFO or a device at a rollout's path, or a link to one (opened by `open_regular`: refused,
never waited on or read).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from unified._adapters.codex._options import BACKEND
from unified._adapters.codex._translate import codex_usage
from unified._files import BOM_HINT, NotRegularFile, folder_entries, open_regular, starts_with_bom, write_atomically
from unified._text import loaded_well_formed
from unified.errors import CorruptSession, SessionNotFound
from unified.events import Usage
from unified.sessions import SessionInfo, SessionProblem, resolve_ref

__all__ = [
    "MAX_LINE_BYTES",
    "ROLLOUT_NAME",
    "SHORT_ID_CHARS",
    "Rollout",
    "Rollouts",
    "codex_short_id",
    "content_parts",
    "last_total",
    "omitted_images",
    "read_rollout",
    "rollout_name",
    "rollout_usage",
    "show_rollout",
    "user_text",
]

MAX_LINE_BYTES = 16 * 1024 * 1024
SHORT_ID_CHARS = 8
ROLLOUT_NAME = re.compile(
    r"rollout-(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})-"
    r"(?P<id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl"
)
OMITTED_IMAGE = "image content omitted because "
"""How Codex 0.171 starts the text it sends the model in place of an image it could not take ("... it could not
be processed", "... it exceeded the supported size limit; use a smaller image"): it tells nobody else."""
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "<turn_aborted>", "<skills_instructions>")
_PREVIEW_LINES = 400
TAIL_BYTES = 1 << 20
"""How much of a rollout's end `last_total` reads: a turn ends with its token count."""
"""Lines read to list a session (its first prompt is near the top); a `show` reads it all."""


def codex_short_id(thread_id: str) -> str:
    """The last eight hex digits of a thread id: random bits, unlike its leading timestamp."""
    return thread_id.replace("-", "")[-SHORT_ID_CHARS:].lower()


def rollout_name(thread_id: str, created: datetime) -> str:
    return f"rollout-{created.astimezone(UTC).strftime('%Y-%m-%dT%H-%M-%S')}-{thread_id}.jsonl"


def _lines(path: Path, limit: int | None = None) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """The file's records with their line numbers (from 1); None for a line that cannot be read (too long, not
    JSON, not an object)."""
    with open_regular(path) as handle:
        for count, line in enumerate(itertools.islice(_bounded_lines(handle), limit), 1):
            if line is None:
                yield count, None
                continue
            if not line.strip():
                continue
            text = line.decode("utf-8", "replace")  # as Codex reads it: a bad byte dropped the whole line's message
            try:
                record = json.loads(text)
            except (ValueError, RecursionError):
                yield count, None
                continue
            yield count, loaded_well_formed(text, record) if isinstance(record, dict) else None


def _bounded_lines(handle: BinaryIO) -> Iterator[bytes | None]:
    """The lines of `handle` from where it is, None for one over `MAX_LINE_BYTES` (read past, never held whole: a
    rollout's line may be a command's whole output, and a file of no line break at all is one line)."""
    while line := handle.readline(MAX_LINE_BYTES + 1):
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            del line  # not held while the rest is skipped, a MiB at a time
            while (rest := handle.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass
            yield None
            continue
        yield line


def content_parts(payload: dict[str, Any]) -> list[Any]:
    """A message item's `content` list; [] for one that is no list (a hand-edited or damaged rollout: `"content":
    5` broke `unified sessions list` with a bare TypeError). Its parts that are no object are skipped where read."""
    content = payload.get("content")
    return content if isinstance(content, list) else []


def user_text(payload: dict[str, Any]) -> str | None:
    """The text of a user `message` response item, unless it is context Codex added."""
    if payload.get("type") != "message" or payload.get("role") != "user":
        return None
    texts = [
        str(part.get("text"))
        for part in content_parts(payload)
        if isinstance(part, dict) and part.get("type") == "input_text"
    ]
    text = "\n".join(texts)
    if not text or text.lstrip().startswith(_CONTEXT_PREFIXES):
        return None
    return text


@dataclass
class Rollout:
    """One rollout file, read."""

    path: Path
    thread_id: str
    meta: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    bad_lines: int = 0
    line_numbers: list[int] = field(default_factory=list)
    """The line of the file each of `records` stands on (from 1), so an error about one can name it."""

    @property
    def parent(self) -> str | None:
        parent = self.meta.get("parent_thread_id")
        return parent if isinstance(parent, str) else None


def read_rollout(path: Path, limit: int | None = None, scan: Callable[[dict[str, Any]], bool] | None = None) -> Rollout:
    """The rollout at `path` (the first `limit` lines); CorruptSession when it does not start with a
    `session_meta` naming the thread of its file name. With `scan`, the records after the metadata are
    handed to it instead of kept (a listing reads a few fields of a file whose lines may be megabytes
    each), and reading stops once it returns True."""
    match = ROLLOUT_NAME.fullmatch(path.name)
    if match is None:
        raise CorruptSession(f"{path.name} is not a Codex rollout file name", hint="it was left unchanged")
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    bad = 0
    meta: dict[str, Any] | None = None
    try:
        for number, record in _lines(path, limit):
            if record is None:
                bad += 1
                continue
            if meta is None:
                payload = record.get("payload")
                if record.get("type") != "session_meta" or not isinstance(payload, dict):
                    raise CorruptSession(
                        f"{path} does not start with Codex's session metadata",
                        hint=BOM_HINT if starts_with_bom(path) else "Codex cannot resume it either",
                    )
                meta = payload
            elif scan is not None:
                if scan(record):
                    break
                continue
            records.append(record)
            numbers.append(number)
    except OSError as exc:
        hint = exc.hint if isinstance(exc, NotRegularFile) else "check its permissions"
        raise CorruptSession(f"{path} cannot be read: {exc.strerror or exc}", hint=hint) from exc
    if meta is None:
        what = f"has no line that is JSON ({bad} unreadable)" if bad else "is empty"
        raise CorruptSession(f"{path} {what}", hint="Codex cannot resume it either; it was left unchanged")
    if str(meta.get("id", "")).lower() != match["id"]:
        raise CorruptSession(f"{path} holds the metadata of thread {meta.get('id')!r}", hint="it was left unchanged")
    return Rollout(path=path, thread_id=match["id"], meta=meta, records=records, bad_lines=bad, line_numbers=numbers)


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    with contextlib.suppress(ValueError):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return None


class Rollouts:
    """The rollout files of one CODEX_HOME (blocking: call off the event loop)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.root = home / "sessions"

    def files(self) -> Iterator[tuple[Path, str]]:
        """(path, thread id) of every rollout file, by name."""
        for year in folder_entries(self.root, BACKEND):
            for month in folder_entries(year, BACKEND) if year.is_dir() else ():
                for day in folder_entries(month, BACKEND) if month.is_dir() else ():
                    for path in folder_entries(day, BACKEND) if day.is_dir() else ():
                        match = ROLLOUT_NAME.fullmatch(path.name)
                        if match is not None and path.is_file():
                            yield path, match["id"]

    def path_of(self, thread_id: str) -> Path | None:
        return next((path for path, found in self.files() if found == thread_id.lower()), None)

    def info(self, path: Path, thread_id: str) -> SessionInfo | None:
        """The listing of one file; None for a subagent's thread."""
        short = codex_short_id(thread_id)
        first = None
        model = None

        def scan(record: dict[str, Any]) -> bool:
            nonlocal first, model
            payload = record.get("payload")
            if not isinstance(payload, dict):
                return False
            if record.get("type") == "response_item" and first is None:
                first = user_text(payload)
            elif record.get("type") == "turn_context" and model is None and isinstance(payload.get("model"), str):
                model = payload["model"]
            return first is not None and model is not None

        try:
            rollout = read_rollout(path, _PREVIEW_LINES, scan)
        except CorruptSession as exc:
            problem = SessionProblem(kind="corrupt", message=exc.message, hint=exc.hint or "it was left unchanged")
            return SessionInfo(backend=BACKEND, session_id=thread_id, short_id=short, path=str(path), problem=problem)
        if rollout.parent is not None:
            return None
        try:
            updated = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        except OSError:
            updated = None
        cwd = rollout.meta.get("cwd")
        return SessionInfo(
            backend=BACKEND,
            session_id=thread_id,
            short_id=short,
            started_at=_time(rollout.meta.get("timestamp")),
            updated_at=updated,
            first_prompt=first,
            cwd=cwd if isinstance(cwd, str) else None,
            model=model,
            path=str(path),
            extra={
                "model_provider": rollout.meta.get("model_provider"),
                "cli_version": rollout.meta.get("cli_version"),
            },
        )

    def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        found = [info for path, thread_id in self.files() if (info := self.info(path, thread_id)) is not None]
        if cwd is not None:
            found = [s for s in found if s.problem is not None or s.cwd == cwd]
        return found

    def resolve(self, ref: str, *, unreadable: bool = False) -> SessionInfo:
        """The one thread `ref` names, from any directory (a thread keeps its own cwd); `unreadable` (a delete):
        also a rollout that cannot be read, its `problem` set."""
        return resolve_ref(ref, self.list_sessions(), BACKEND, unreadable=unreadable)

    def read(self, thread_id: str) -> Rollout:
        path = self.path_of(thread_id)
        if path is None:
            raise SessionNotFound(f"no codex session {thread_id}", hint="run `unified sessions list --backend codex`")
        return read_rollout(path)

    def children(self, thread_id: str) -> list[Path]:
        """The rollouts of the subagents this thread spawned (directly or not)."""
        found: list[Path] = []
        parents = {thread_id}
        candidates = list(self.files())
        changed = True
        while changed:
            changed = False
            for path, child in candidates:
                if child in parents or path in found:
                    continue
                with contextlib.suppress(CorruptSession):
                    if read_rollout(path, 1).parent in parents:
                        found.append(path)
                        parents.add(child)
                        changed = True
        return found

    def delete(self, thread_id: str) -> Path:
        """Remove the thread's rollout and its subagents' (Codex's sqlite cache forgets them on its own)."""
        path = self.path_of(thread_id)
        if path is None:
            raise SessionNotFound(f"no codex session {thread_id}", hint="run `unified sessions list --backend codex`")
        for child in self.children(thread_id):
            child.unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        return path

    def write(self, thread_id: str, created: datetime, text: str) -> Path:
        """Put a rollout's text where Codex finds it (atomically: Codex never reads half a file)."""
        when = created.astimezone(UTC)
        folder = self.root / f"{when:%Y}" / f"{when:%m}" / f"{when:%d}"
        folder.mkdir(parents=True, exist_ok=True)
        existing = self.path_of(thread_id)
        target = existing or folder / rollout_name(thread_id, when)
        write_atomically(target, text)
        return target


def show_rollout(rollout: Rollout) -> dict[str, Any]:
    """A rollout as plain data for `unified sessions show`: its metadata and its messages and calls."""
    messages: list[dict[str, Any]] = []
    for record in rollout.records:
        payload = record.get("payload")
        if record.get("type") != "response_item" or not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if kind == "message" and payload.get("role") == "assistant":
            text = "".join(str(p.get("text")) for p in content_parts(payload) if isinstance(p, dict) and "text" in p)
            messages.append({"role": "assistant", "text": text})
        elif kind == "message" and (said := user_text(payload)) is not None:
            messages.append({"role": "user", "text": said})
        elif kind == "reasoning":
            summary = [s.get("text") for s in payload.get("summary") or [] if isinstance(s, dict)]
            messages.append({"role": "assistant", "thinking": "\n\n".join(str(s) for s in summary if s)})
        elif kind in ("function_call", "custom_tool_call"):
            messages.append(
                {
                    "role": "assistant",
                    "tool_call": {
                        "id": payload.get("call_id"),
                        "name": payload.get("name"),
                        "arguments": payload.get("arguments") or payload.get("input"),
                    },
                }
            )
        elif kind in ("function_call_output", "custom_tool_call_output"):
            messages.append({"role": "tool", "call_id": payload.get("call_id"), "output": payload.get("output")})
    meta = {k: rollout.meta.get(k) for k in ("id", "timestamp", "cwd", "originator", "cli_version", "model_provider")}
    if "unified_continued_from" in rollout.meta:
        meta["continued_from"] = rollout.meta["unified_continued_from"]
    return {"meta": meta, "messages": messages, "skipped_lines": rollout.bad_lines}


def omitted_images(path: Path, offset: int, images: int) -> list[str]:
    """What Codex sent the model instead of each of a turn's `images` it could not take, one entry per image
    ("image 2 of 3: ... could not be processed"); read from the first user message written to the rollout at
    `path` after `offset` (its size before the turn). Empty when every image went, or nothing can be read (the
    check is a courtesy: the turn itself went on without the image either way)."""
    try:
        with open_regular(path) as handle:
            handle.seek(offset)
            for line in _bounded_lines(handle):
                if line is None or b'"user"' not in line:
                    continue
                record = json.loads(line)
                payload = record.get("payload") if isinstance(record, dict) else None
                if not isinstance(payload, dict) or payload.get("type") != "message" or payload.get("role") != "user":
                    continue
                content = [c for c in content_parts(payload) if isinstance(c, dict)]
                slots = [
                    c
                    for c in content
                    if c.get("type") == "input_image"
                    or (c.get("type") == "input_text" and str(c.get("text") or "").startswith(OMITTED_IMAGE))
                ]
                if len(slots) != images:
                    continue  # not this turn's message (a context one)
                return [
                    f"image {number} of {images}: {slot['text']}"
                    for number, slot in enumerate(slots, 1)
                    if slot.get("type") == "input_text"
                ]
    except (OSError, ValueError, RecursionError):
        return []
    return []


_ROLLOUT_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)
"""A rollout record's counts as `codex_usage` reads them (its cache writes too)."""


def rollout_usage(raw: object) -> Usage | None:
    """A usage of Codex's rollouts (`token_usage_record`'s `usage`, `token_count`'s totals) as ours: Codex's output
    count includes the reasoning tokens, ours does not. None for one that is no object."""
    if not isinstance(raw, dict):
        return None
    return codex_usage(raw, _ROLLOUT_KEYS)


def last_total(path: Path) -> Usage | None:
    """The thread's token total as its rollout last recorded it (the `total_token_usage` of its last `token_count`
    with figures, in its last `TAIL_BYTES`), None when there is none or nothing can be read.

    What a resumed thread's usage counts from: Codex 0.171 starts a resumed thread's total there, and tells it
    (`thread/tokenUsage/updated` of the earlier turn) for a thread it made, but not for one unified wrote from a
    history (measured: a run resuming such a thread counted the previous run's 7 + its own 11 input tokens)."""
    try:
        with open_regular(path) as handle:
            size = handle.seek(0, 2)
            handle.seek(max(size - TAIL_BYTES, 0))
            tail = handle.read(TAIL_BYTES)
    except OSError:
        return None
    for line in reversed(tail.split(b"\n")):
        if b'"token_count"' not in line:
            continue
        with contextlib.suppress(ValueError, RecursionError):
            record = json.loads(line)
            payload = record.get("payload") if isinstance(record, dict) else None
            info = payload.get("info") if isinstance(payload, dict) and payload.get("type") == "token_count" else None
            if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
                return rollout_usage(info["total_token_usage"])
    return None
