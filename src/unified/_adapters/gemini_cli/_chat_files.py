"""The Gemini CLI's chat files: read, list, resolve by short id, show, and guard against its data-loss bugs.

Layout (0.61): `<GEMINI_CLI_HOME or HOME>/.gemini/tmp/<slug>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`,
`<slug>` recorded per project root in `.gemini/projects.json`; older versions used
`tmp/<sha256(root)>/`. Line 1 is the header (`sessionId`, `startTime`, `kind`); then message
records (the same id is appended again as tool calls attach: the last one wins), `$set` updates
(`lastUpdated`, `summary`, `messages` = a checkpoint replacing every message) and `$rewindTo`.

Each `tmp/<slug>/` directory belongs to one project root, named by `projects.json` or by the
directory's own `.project_root` file; a session's cwd is that root. Resolving with a cwd searches
that project first and, on a miss, every project: a run resuming a session of another project
moves it into its own first (`_relocate.py`).

Listing reads the head (up to the first real prompt) and a tail of each file, not the whole file.
Every file is opened by `unified._files.open_regular`: a FIFO or a device at a chat file's path (or
a link to one) is refused as unreadable, never waited on. A file we cannot read is reported in
`problems` (and by `GeminiSessionLocator.list_sessions` as an entry with `problem` set); nothing
here deletes a file except `ChatFiles.delete()` on the caller's explicit request (only regular files
whose header names the session), `ChatFiles.delete_unreadable()` likewise (the one unreadable regular file
the reference names, `unreadable()`) and `ResumeGuard.after()`, which only removes a file the CLI has
just created with no messages for a session that has a real file elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

import platformdirs

from unified._files import (
    BOM_HINT,
    FileTooLarge,
    NotRegularFile,
    folder_entries,
    open_regular,
    read_regular,
    read_regular_text,
    starts_with_bom,
    write_atomically,
)
from unified._internal.counts import positive_int
from unified._redaction import clip
from unified._text import json_type, loaded_well_formed
from unified.errors import AmbiguousSession, CorruptSession, SessionNotFound
from unified.events import Usage
from unified.sessions import SHORT_ID_LENGTH, SessionInfo, resolve_ref, short_id_of

__all__ = [
    "BACKEND",
    "CONTINUED_FROM",
    "PROJECT_ROOT_FILE",
    "ChatFile",
    "ChatFiles",
    "ResumeGuard",
    "gemini_home",
    "parse_chat",
    "read_chat",
    "real_directory",
    "repair_function_responses",
    "repair_session",
    "replay_count",
    "session_files",
    "session_usage",
    "summarize",
    "usage_from_counts",
    "usage_from_tokens",
]

BACKEND = "gemini-cli"
_ID_CHARS = re.compile(r"[0-9a-z_-]+")
"""What a session id is made of (the CLI accepts [A-Za-z0-9_-]); anything else cannot name a file."""
_HEAD_BYTES = 64 * 1024
_TAIL_BYTES = 64 * 1024
MAX_CHAT_FILE_BYTES = 512 * 1024 * 1024
"""Largest chat file read whole (a resume, `show`, `export`): about the longest string V8 holds (2**29 - 24
characters), so the CLI itself cannot load a larger one. A listing reads only a file's edges, so nothing
bounded the read that followed: a resume or an export read a chat file of any size whole, then parsed it.
A larger one is `CorruptSession` naming it, unread and kept."""
_CONTEXT_PREFIX = "<session_context>"
PROJECT_ROOT_FILE = ".project_root"
"""The CLI's marker in each `tmp/<slug>/` directory: the project root it belongs to."""
CONTINUED_FROM = "continuedFrom"
"""The header key (ours; the CLI ignores it) naming the session a continued conversation came from."""


def gemini_home(env: Mapping[str, str]) -> Path:
    """`<GEMINI_CLI_HOME or HOME>/.gemini`, as the CLI computes it."""
    base = env.get("GEMINI_CLI_HOME") or env.get("HOME") or str(Path.home())
    return Path(base) / ".gemini"


def real_directory(path: Path) -> None:
    """Refuse (`CorruptSession`) a path that is not a directory itself: a symbolic link is not followed."""
    try:
        status = path.lstat()
    except OSError as exc:
        raise CorruptSession(f"cannot read {path}: {exc.strerror or exc}", hint="check the Gemini CLI's home") from exc
    if not stat.S_ISDIR(status.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(status.st_mode) else "not a directory"
        raise CorruptSession(
            f"{path} is {what}: unified does not move or write chat files through it",
            hint="it was left unchanged; replace it by a directory of the Gemini CLI's home",
        )


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _loads(line: bytes | str) -> dict[str, Any] | None:
    """One record of a chat file; a lone surrogate (the CLI's `JSON.stringify` escapes half an emoji) as U+FFFD, and
    so is a byte that is no UTF-8: the CLI (Node) reads the file so, and a record dropped here for one bad byte is
    one the CLI still replays on `session/load` (`replay_count` came out short: the rest of the replay, an old
    answer, was taken for the new prompt's and the new answer for a retry of it, "stream_resumed")."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return loaded_well_formed(text, value) if isinstance(value, dict) else None


def header_of(handle: BinaryIO) -> dict[str, Any] | None:
    """The header (first line) of the chat file open in `handle`, None when it is not one: read up to
    `_HEAD_BYTES`, as a listing reads it (a first line of hundreds of MB, or no newline at all, was read whole
    by a resume's search for the session's files and by a delete)."""
    return _loads(handle.readline(_HEAD_BYTES))


def prompt_text(message: Mapping[str, Any]) -> str | None:
    """The text of a real user prompt (not the CLI's `<session_context>` preamble, not a tool answer)."""
    if message.get("type") != "user":
        return None
    content = message.get("content")
    parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    texts = [
        part if isinstance(part, str) else part.get("text")
        for part in parts
        if isinstance(part, str) or (isinstance(part, Mapping) and isinstance(part.get("text"), str))
    ]
    text = "\n".join(t for t in texts if t)
    if not text or text.startswith(_CONTEXT_PREFIX):
        return None
    return text


@dataclass(slots=True)
class ChatFile:
    """A whole chat file replayed: the records as the CLI would load them."""

    path: Path
    header: dict[str, Any]
    messages: list[dict[str, Any]]
    meta: dict[str, Any]
    bad_lines: int

    @property
    def session_id(self) -> str:
        return str(self.header.get("sessionId", ""))


def read_chat(path: Path) -> ChatFile:
    """Replay a chat file: last record per id, `$set` (checkpoints included) and `$rewindTo`."""
    try:
        raw = read_regular(path, max_bytes=MAX_CHAT_FILE_BYTES)
    except NotRegularFile as exc:
        raise CorruptSession(f"cannot read {path}: it is {exc.strerror}", hint=exc.hint) from exc
    except FileTooLarge as exc:
        raise _too_large(path, exc) from exc
    except OSError as exc:
        raise CorruptSession(f"cannot read {path}: {exc}", hint="check the file's permissions") from exc
    return parse_chat(raw, path)


def _no_header(path: Path) -> CorruptSession:
    hint = BOM_HINT if starts_with_bom(path) else "the file is not a Gemini CLI chat file"
    return CorruptSession(f"{path} has no session header", hint=hint)


def _too_large(path: Path, exc: FileTooLarge) -> CorruptSession:
    return CorruptSession(
        f"cannot read the gemini-cli chat file {path}: {exc.strerror}; the gemini CLI cannot load one this large",
        hint="it was left unchanged; start a new session (or move the file away)",
    )


def parse_chat(raw: bytes, path: Path) -> ChatFile:
    """Replay the content of a chat file (`path` names it in errors and in the result)."""
    lines = raw.splitlines()
    header = _loads(lines[0]) if lines else None
    if header is None or "sessionId" not in header:
        raise _no_header(path)
    order: list[str] = []
    by_id: dict[str, dict[str, Any]] = {}
    meta: dict[str, Any] = {}
    bad = 0
    for line in lines[1:]:
        if not line.strip():
            continue
        record = _loads(line)
        if record is None:
            bad += 1
            continue
        if "sessionId" in record and "kind" in record:
            continue  # the header, written again when the CLI re-initialises the file
        if isinstance(record.get("$set"), dict):
            updates = dict(record["$set"])
            checkpoint = updates.pop("messages", None)
            if isinstance(checkpoint, list):
                order = []
                by_id = {}
                for message in checkpoint:
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        order.append(message["id"])
                        by_id[message["id"]] = message
            meta.update(updates)
            continue
        if "$rewindTo" in record:
            target = record["$rewindTo"]
            if target in by_id:
                keep = order[: order.index(target)]
                by_id = {key: by_id[key] for key in keep}
                order = keep
            continue
        message_id = record.get("id")
        if isinstance(message_id, str):
            if message_id not in by_id:
                order.append(message_id)
            by_id[message_id] = record
    return ChatFile(path, header, [by_id[key] for key in order], meta, bad)


def _read_edges(path: Path) -> tuple[list[bytes], list[bytes]]:
    """Complete lines from the file's head and (when it is large) its tail."""
    with open_regular(path) as handle:
        head = handle.read(_HEAD_BYTES)
        size = os.fstat(handle.fileno()).st_size
        if size <= _HEAD_BYTES:
            lines = head.splitlines()
            return lines, lines
        handle.seek(max(size - _TAIL_BYTES, 0))
        tail = handle.read()
    head_lines = head.splitlines()[:-1]  # the last one may be cut
    tail_lines = tail.splitlines()[1:]
    return head_lines, tail_lines


def usage_from_counts(counts: Mapping[str, Any]) -> Usage:
    """One `gemini` record's `tokens` as Usage."""
    return Usage(
        input_tokens=positive_int(counts.get("input")),
        output_tokens=positive_int(counts.get("output")),
        thinking_tokens=positive_int(counts.get("thoughts")),
        cached_tokens=positive_int(counts.get("cached")),
        tool_use_tokens=positive_int(counts.get("tool")),
    )


def usage_from_tokens(records: Mapping[str, Mapping[str, Any]]) -> Usage:
    """The sum of `gemini` records' `tokens` (one per model call, by message id)."""
    total = Usage()
    for counts in records.values():
        total += usage_from_counts(counts)
    return total


def session_usage(path: Path) -> tuple[Usage, int]:
    """(the tokens of every model call the chat file records, how many calls): what the API backends keep as
    a session's usage and turns. Every `gemini` record with a `tokens` field is one call (the CLI records
    a call's tool calls apart, without one); the last record of a message id wins and a checkpoint
    (`$set.messages`) replaces what came before. Only lines naming `tokens` are parsed."""
    calls: dict[str, dict[str, Any]] = {}
    try:
        with open_regular(path) as handle:
            for line in handle:
                if b'"tokens"' not in line:
                    continue
                record = _loads(line)
                if record is None:
                    continue
                updates = record.get("$set")
                messages = updates.get("messages") if isinstance(updates, dict) else None
                if isinstance(messages, list):
                    calls = {}
                    candidates = [m for m in messages if isinstance(m, dict)]
                else:
                    candidates = [record]
                for message in candidates:
                    if message.get("type") == "gemini" and "tokens" in message and isinstance(message.get("id"), str):
                        tokens = message.get("tokens")
                        calls[message["id"]] = tokens if isinstance(tokens, dict) else {}
    except OSError:
        return Usage(), 0
    return usage_from_tokens(calls), len(calls)


def summarize(path: Path, project_dir: str | None) -> SessionInfo | None:
    """A listing record from the head and tail of a chat file; None for a session with no prompt yet. A file
    larger than `MAX_CHAT_FILE_BYTES` is `CorruptSession`: no resume could read it (and `session_usage`, which
    reads every line, would hold its longest one)."""
    size = path.stat().st_size
    if size > MAX_CHAT_FILE_BYTES:
        raise _too_large(path, FileTooLarge(path, size, MAX_CHAT_FILE_BYTES))
    head, tail = _read_edges(path)
    header = _loads(head[0]) if head else None
    if header is None or not isinstance(header.get("sessionId"), str):
        raise _no_header(path)
    session_id = header["sessionId"]
    first_prompt = None
    unreadable = 0
    damaged: str | None = None
    for line in head[1:]:
        record = _loads(line)
        if record is None:
            unreadable += bool(line.strip())
            continue
        candidates = record.get("$set", {}).get("messages", []) if isinstance(record.get("$set"), dict) else [record]
        first_prompt = next((t for m in candidates if isinstance(m, dict) for t in [prompt_text(m)] if t), None)
        if first_prompt:
            break
        damaged = damaged or _damaged_prompt(record)
    if first_prompt is None and unreadable:  # a file cut (or damaged) before its prompt, not one without a prompt yet
        raise CorruptSession(
            f"{path} has no prompt that can be read: {unreadable} of its lines are no JSON object (cut short, or "
            "not the CLI's records: a list, a number, a string)",
            hint="it was left unchanged",
        )
    if first_prompt is None and damaged is not None:  # hidden as a session with no prompt yet, it could not be deleted
        raise CorruptSession(
            f"{path} has no prompt that can be read: {damaged}",
            hint="fix or remove that line, or delete the session; it was left unchanged",
        )
    if first_prompt is None and len(head) == len(tail) and head == tail:
        return None
    updated = _parse_time(header.get("lastUpdated"))
    summary = model = None
    for line in tail:
        record = _loads(line)
        if record is None:
            continue
        updates = record.get("$set")
        if isinstance(updates, dict):
            updated = _parse_time(updates.get("lastUpdated")) or updated
            summary = updates.get("summary") if isinstance(updates.get("summary"), str) else summary
        elif record.get("type") == "gemini" and isinstance(record.get("model"), str):
            model = record["model"]
    usage, turns = session_usage(path)
    return SessionInfo(
        backend=BACKEND,
        session_id=session_id,
        short_id=short_id_of(session_id),
        started_at=_parse_time(header.get("startTime")),
        updated_at=updated,
        summary=summary,
        first_prompt=clip(first_prompt, 500) if first_prompt else None,
        cwd=project_dir,
        model=model,
        path=str(path),
        extra={"usage": usage.model_dump(), "turns": turns},  # as the API backends' stores list them
    )


def _damaged_prompt(record: dict[str, Any]) -> str | None:
    """What is wrong with a user record whose content is of a shape the CLI never writes (a number, an item that
    is neither text nor an object, a `text` that is no string), or None."""
    if record.get("type") != "user":
        return None
    content = record.get("content")
    if not isinstance(content, str | list):
        return f"a user message's content is {json_type(content)}, not text or a list"
    for index, item in enumerate(content if isinstance(content, list) else []):
        if not isinstance(item, str | dict):
            return f"a user message's content[{index}] is {json_type(item)}, not text or an object"
        if isinstance(item, dict) and "text" in item and not isinstance(item["text"], str):
            return f"a user message's content[{index}].text is {json_type(item['text'])}, not text"
    return None


def _recency(info: SessionInfo) -> datetime:
    """A listing's order: the last update, else the start, a stamp without a time zone read as UTC (as the CLI
    writes them), none at all first. Compared as they were, a chat file whose header had no `startTime`, or one
    without a zone ("2026-11-29T10:00:00"), beside the CLI's own (UTC, "Z") failed every listing and every
    short id's resolve with TypeError ("can't compare offset-naive and offset-aware datetimes"; exit 70)."""
    stamp = info.updated_at or info.started_at
    if stamp is None:
        return datetime.min.replace(tzinfo=UTC)
    return stamp if stamp.utcoffset() is not None else stamp.replace(tzinfo=UTC)


class ChatFiles:
    """The Gemini CLI's chat files under `<GEMINI_CLI_HOME or HOME>/.gemini/tmp`: list, resolve, show, delete
    (blocking; `GeminiSessionLocator` runs it off the event loop)."""

    backend = BACKEND

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(env if env is not None else os.environ)
        self.problems: list[tuple[Path, str]] = []
        """Files skipped during the last listing, with the reason."""

    @property
    def home(self) -> Path:
        """The CLI's home (`gemini_home` of the environment these files were looked up in)."""
        return gemini_home(self._env)

    @property
    def root(self) -> Path:
        return self.home / "tmp"

    def projects(self) -> dict[str, str]:
        """Project root → directory name under tmp/ (slug), from projects.json."""
        try:
            data = json.loads(read_regular(self.home / "projects.json"))
        except (OSError, ValueError, RecursionError):
            return {}
        projects = data.get("projects") if isinstance(data, dict) else None
        return {str(k): str(v) for k, v in projects.items()} if isinstance(projects, dict) else {}

    @staticmethod
    def _marked_root(directory: Path) -> str | None:
        try:
            return read_regular_text(directory / PROJECT_ROOT_FILE).strip() or None
        except (OSError, UnicodeDecodeError):
            return None

    def project_dirs(self, cwd: str | None) -> Iterator[tuple[Path, str | None]]:
        projects = self.projects()
        owner = {slug: root for root, slug in projects.items()}
        if cwd is None:
            if self.root.is_dir():
                for directory in folder_entries(self.root, BACKEND):
                    if (directory / "chats").is_dir():
                        yield directory, owner.get(directory.name) or self._marked_root(directory)
            return
        path = Path(cwd).expanduser().resolve()
        marked: dict[str, list[str]] = {}
        if self.root.is_dir():
            for directory in folder_entries(self.root, BACKEND):
                root = self._marked_root(directory)
                if root is not None:
                    marked.setdefault(root, []).append(directory.name)
        for candidate in (path, *path.parents):
            names = [projects[str(candidate)]] if str(candidate) in projects else []
            names += [name for name in marked.get(str(candidate), []) if name not in names]
            names.append(hashlib.sha256(str(candidate).encode()).hexdigest())
            found = [self.root / name for name in names if (self.root / name / "chats").is_dir()]
            for directory in found:
                yield directory, str(candidate)
            if found:
                return

    def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        return self._collect(cwd, "session-*.jsonl")

    def _collect(self, cwd: str | None, pattern: str) -> list[SessionInfo]:
        """Sessions from the chat files matching `pattern`, newest first: one per id and project (its largest
        file there). An id in two projects is two entries (each its own file, its own state: a copy, another
        tool's), so neither hides the other and a short id naming both is ambiguous (`_resolve`); one file
        under two names (a move cut short between its link and its unlink, `_relocate`) is one entry."""
        self.problems = []
        best: dict[tuple[str, Path], tuple[int, tuple[int, int], SessionInfo]] = {}
        for directory, project in self.project_dirs(cwd):
            for path in folder_entries(directory / "chats", BACKEND, pattern):
                try:
                    info = summarize(path, project)
                except (CorruptSession, OSError) as exc:
                    self.problems.append((path, str(exc)))
                    continue
                if info is None:
                    continue
                status = path.stat()
                key = (info.session_id, directory)
                if key not in best or status.st_size > best[key][0]:
                    best[key] = (status.st_size, (status.st_dev, status.st_ino), info)
        files: dict[tuple[str, tuple[int, int]], SessionInfo] = {}
        for _, inode, info in best.values():
            files.setdefault((info.session_id, inode), info)
        sessions = list(files.values())
        sessions.sort(key=_recency, reverse=True)
        return sessions

    def resolve(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """The session `ref` names: in the project at `cwd` first (when given), else in any project.

        Reads only the files whose name can match `ref` (their names end in the id's first 8
        characters); the full listing is read only to explain a miss. A session of another project is
        found too: a run resuming it from `cwd` moves it there first (`_relocate.gather`).
        """
        return self.locate(ref, cwd)[0]

    def locate(self, ref: str, cwd: str | None = None) -> tuple[SessionInfo, bool]:
        """(the session `ref` names, whether it is in the project at `cwd`), as `resolve` finds it."""
        try:
            return self._resolve(ref, cwd), cwd is not None
        except SessionNotFound:
            if cwd is None:
                self._refuse_unreadable(ref)
                raise
        try:
            return self._resolve(ref, None), False
        except SessionNotFound:
            self._refuse_unreadable(ref)
            shown = clip(ref, 80, more="…")
            raise SessionNotFound(
                f"no gemini-cli session matches {shown!r} in the project at {cwd} nor in any other project "
                f"under {self.root}",
                hint="run `unified sessions list` to see every session",
                details={"ref": ref, "searched": str(self.root)},
            ) from None

    def _refuse_unreadable(self, ref: str) -> None:
        """A miss explained: a chat file named for `ref`'s id that cannot be read is `CorruptSession`, not a
        session that does not exist (`problems` holds what the last listing skipped)."""
        key = ref.strip().lower()
        stem = key[:SHORT_ID_LENGTH]
        for path, why in self.problems:
            suffix = path.stem.rsplit("-", 1)[-1].lower()
            if stem and (suffix.startswith(stem) if len(stem) < SHORT_ID_LENGTH else suffix == stem):
                raise CorruptSession(
                    f"the gemini-cli chat file {path} is named for {ref!r} but cannot be read: {why}",
                    hint="it was left unchanged; the Gemini CLI cannot resume it either",
                    details={"ref": ref, "path": str(path)},
                )

    def _resolve(self, ref: str, cwd: str | None) -> SessionInfo:
        key = ref.strip().lower()
        found: list[SessionInfo] = []
        if _ID_CHARS.fullmatch(key):
            stem = key[:SHORT_ID_LENGTH]
            wildcard = "" if len(stem) == SHORT_ID_LENGTH else "*"
            found = self._collect(cwd, f"session-*-{stem}{wildcard}.jsonl")
        if not found:
            found = self.list_sessions(cwd)
        info = resolve_ref(ref, found, BACKEND)
        copies = [s for s in found if s.session_id == info.session_id]
        if len(copies) > 1:  # one id in two projects: which one is meant only the caller knows
            where = "\n".join(f"  {s.cwd or '(project unknown)'}: {s.path}" for s in copies)
            raise AmbiguousSession(
                f"gemini-cli session {info.session_id} is in the chat files of {len(copies)} projects:\n{where}",
                hint="name the project: run from it, or pass --cwd (ExecuteParams.cwd, `cwd=`) with the session",
                details={"candidates": [s.path for s in copies], "projects": [s.cwd for s in copies]},
            )
        return info

    def show(self, ref: str, cwd: str | None = None) -> dict[str, Any]:
        info = self.resolve(ref, cwd)
        chat = read_chat(Path(str(info.path)))
        shown: dict[str, Any] = {
            "session": info.model_dump(mode="json"),
            "messages": chat.messages,
            "skipped_lines": chat.bad_lines,
        }
        if isinstance(chat.header.get(CONTINUED_FROM), dict):
            shown["continued_from"] = chat.header[CONTINUED_FROM]
        return shown

    def unreadable(self, ref: str, cwd: str | None = None) -> tuple[Path, str, str | None]:
        """The one chat file named for `ref` that cannot be read, for a delete (what `resolve` refuses with
        `CorruptSession`): (its path, why, the session id its header names, if it names one). Named as strictly
        as any session: a reference several such files match is `AmbiguousSession`; the `resolve` error of a
        reference that names a readable session, or nothing, is raised as it is."""
        try:
            self.locate(ref, cwd)  # fills `problems`
        except CorruptSession:
            pass
        else:
            raise SessionNotFound(f"the gemini-cli session {ref!r} names can be read: it is no unreadable file")
        key = ref.strip().lower()
        matches = [(path, why) for path, why in self.problems if _named_for(path, key)]
        if len(matches) > 1:
            raise AmbiguousSession(
                f"{clip(ref, 80, more='…')!r} names {len(matches)} unreadable gemini-cli chat files: "
                + ", ".join(str(path) for path, _ in matches),
                hint="give more characters of the id, or pass --cwd with the project of the one to delete",
                details={"candidates": [str(path) for path, _ in matches]},
            )
        if not matches:
            raise SessionNotFound(f"no unreadable gemini-cli chat file is named for {clip(ref, 80, more='…')!r}")
        path, why = matches[0]
        return path, why, _header_id(path)

    def delete_unreadable(self, path: Path) -> None:
        """Remove the unreadable chat file `unreadable` named: a regular file only (never a link's target)."""
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise CorruptSession(
                f"{path} is not a regular file: not the CLI's chat file, not ours to delete",
                hint="remove it by hand if it is yours",
            )
        path.unlink()

    def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        info = self.resolve(ref, cwd)
        path = Path(str(info.path))
        for twin in path.parent.glob(f"session-*-{info.short_id}.jsonl"):
            try:
                with open_regular(twin) as handle:
                    header = header_of(handle)
            except NotRegularFile:
                continue  # not a chat file: not the CLI's, not ours to delete
            if header is not None and header.get("sessionId") == info.session_id:
                twin.unlink()
        shutil.rmtree(path.parent / info.session_id, ignore_errors=True)
        return info


def _named_for(path: Path, key: str) -> bool:
    """Whether the chat file at `path` is named for the (lower-case) reference `key`: its name's id suffix starts
    with a short one; a longer one must also be what its header names, when it names anything."""
    suffix = path.stem.rsplit("-", 1)[-1].lower()
    if len(key) <= SHORT_ID_LENGTH:
        return bool(key) and suffix.startswith(key)
    header = _header_id(path)
    return suffix == key[:SHORT_ID_LENGTH] and (header is None or header.lower().startswith(key))


def _header_id(path: Path) -> str | None:
    """The session id the header (first line) of the chat file at `path` names, or None (no header to read)."""
    try:
        with open_regular(path, follow_links=False) as handle:
            header = header_of(handle)
    except OSError:
        return None
    session_id = header.get("sessionId") if header is not None else None
    return session_id if isinstance(session_id, str) else None


# --- what the adapter needs of them ---------------------------------------------------------------


def session_files(home: Path, session_id: str) -> list[Path]:
    """Every chat file (in any project) whose header names `session_id`."""
    found = []
    for path in (home / "tmp").glob(f"*/chats/session-*-{short_id_of(session_id)}.jsonl"):
        try:
            with open_regular(path) as handle:
                header = header_of(handle)
        except OSError:
            continue
        if header is not None and header.get("sessionId") == session_id:
            found.append(path)
    return found


def conversation_size(path: Path) -> int:
    """How many messages (prompts and answers, not the preamble) the file holds."""
    try:
        chat = read_chat(path)
    except CorruptSession:
        return 0
    return sum(1 for m in chat.messages if m.get("type") == "gemini" or prompt_text(m))


def _response_id(part: object) -> str | None:
    response = part.get("functionResponse") if isinstance(part, Mapping) else None
    value = response.get("id") if isinstance(response, Mapping) else None
    return value if isinstance(value, str) else None


def _calls_of(message: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """(every call id of a `gemini` message, the ids whose response the CLI rebuilds from `toolCalls[].result`)."""
    calls = [c for c in message.get("toolCalls") or [] if isinstance(c, Mapping) and isinstance(c.get("id"), str)]
    content = message.get("content")
    in_content = {
        str(part["functionCall"]["id"])
        for part in (content if isinstance(content, list) else [])
        if isinstance(part, Mapping)
        and isinstance(part.get("functionCall"), Mapping)
        and part["functionCall"].get("id")
    }
    return {str(c["id"]) for c in calls} | in_content, {str(c["id"]) for c in calls if c.get("result")}


def surplus_responses(messages: list[dict[str, Any]]) -> dict[str, set[str]]:
    """The function responses the CLI 0.61 would send twice, or without their call, on a resume.

    `session/load` (and `--resume`) rebuild the history from the chat file: a `gemini` message gives
    the model's turn with its calls and, from each call's recorded `result`, a user turn answering
    them; the `user` record of the function responses the CLI sent at the time (also in the file) is
    added again (every response twice); a call the user denied is in no `toolCalls`, so its response
    follows no call. The Gemini API refuses both (HTTP 400). Returns message id -> the response ids to
    drop: those a preceding `gemini` message answers already, and those whose call it does not hold.
    """
    surplus: dict[str, set[str]] = {}
    previous: Mapping[str, Any] | None = None
    for message in messages:
        kind = message.get("type")
        if kind in ("info", "error", "warning"):
            continue
        content = message.get("content")
        parts: list[Any] = content if isinstance(content, list) else []
        ids = [i for i in (_response_id(part) for part in parts) if i]
        if kind == "user" and ids:
            gemini = previous is not None and previous.get("type") == "gemini"
            calls, answered = _calls_of(previous) if previous is not None and gemini else (set(), set())
            drop = {i for i in ids if i in answered or i not in calls}
            if drop and isinstance(message.get("id"), str):
                surplus[message["id"]] = drop
            if any(_response_id(part) not in drop for part in parts):  # what stays is the turn before the next
                previous = message
            continue
        if kind == "user" and prompt_text(message) is None:
            continue  # the preamble or an ignored line: not a turn of the history
        previous = message
    return surplus


def _without_responses(message: dict[str, Any], drop: set[str]) -> dict[str, Any] | None:
    """`message` without the function responses in `drop`; None when nothing else is left."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    kept = [part for part in content if _response_id(part) not in drop]
    return {**message, "content": kept} if kept else None


def repair_function_responses(path: Path) -> str | None:
    """Drop from a chat file the function responses a resume would send twice or without their call
    (`surplus_responses`), so the history the CLI loads is one the Gemini API accepts. Every other
    line is kept byte for byte; the file is replaced atomically. Returns what was done, or None."""
    try:
        raw = read_regular(path)
        chat = parse_chat(raw, path)
    except (OSError, CorruptSession):
        return None
    surplus = surplus_responses(chat.messages)
    if not surplus:
        return None
    lines = raw.split(b"\n")
    out: list[bytes] = [lines[0]]
    for line in lines[1:]:
        record = _loads(line) if line.strip() else None
        if record is None:
            out.append(line)
            continue
        updates = record.get("$set")
        if isinstance(updates, dict) and isinstance(updates.get("messages"), list):
            messages = [
                fixed
                for m in updates["messages"]
                for fixed in [
                    _without_responses(m, surplus[m["id"]]) if isinstance(m, dict) and m.get("id") in surplus else m
                ]
                if fixed is not None
            ]
            out.append(json.dumps({**record, "$set": {**updates, "messages": messages}}, ensure_ascii=False).encode())
        elif isinstance(record.get("id"), str) and record["id"] in surplus:
            fixed = _without_responses(record, surplus[record["id"]])
            if fixed is not None:
                out.append(json.dumps(fixed, ensure_ascii=False).encode())
        else:
            out.append(line)
    write_atomically(path, b"\n".join(out), mode=stat.S_IMODE(path.stat().st_mode))
    count = sum(len(ids) for ids in surplus.values())
    return (
        f"removed {count} function response(s) from {path.name} that a resume would send twice or without their "
        "call (the Gemini API refuses such a history)"
    )


def repair_session(home: Path, session_id: str) -> list[str]:
    """`repair_function_responses` on every chat file of the session; what was done (for warnings)."""
    return [done for path in session_files(home, session_id) if (done := repair_function_responses(path))]


def replay_count(messages: list[dict[str, Any]]) -> int:
    """How many `session/update`s `session/load` replays for these messages (the CLI's `streamHistory`).

    User messages with any content, then per answer its thoughts, its text and its tool calls. The
    replay is not awaited by the CLI and can trail the `session/load` answer: counting tells the
    adapter when it is over, so none of it is mistaken for the new prompt's events.
    """
    count = 0
    for message in messages:
        content = message.get("content")
        parts = content if isinstance(content, list) else [content]
        has_content = any(
            (isinstance(part, str) and part.strip())
            or (isinstance(part, Mapping) and (not isinstance(part.get("text"), str) or part["text"].strip()))
            for part in parts
            if part
        )
        if message.get("type") == "user":
            count += bool(has_content)
        elif message.get("type") == "gemini":
            thoughts, calls = message.get("thoughts"), message.get("toolCalls")
            count += len(thoughts) if isinstance(thoughts, list) else 0
            count += bool(has_content)
            count += len(calls) if isinstance(calls, list) else 0
    return count


def _file_minute(path: Path) -> datetime | None:
    """The minute a chat file's name carries (`session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`)."""
    try:
        return datetime.strptime(path.name[len("session-") : len("session-") + 16], "%Y-%m-%dT%H-%M").replace(
            tzinfo=UTC
        )
    except ValueError:
        return None


def _copy_regular(source: Path, target: Path) -> None:
    """`source` copied to `target` with its times, as `shutil.copy2` copies, but read through a descriptor
    checked to be a regular file (`open_regular`: a FIFO or a device swapped in is refused, never waited on or
    copied without end) and written atomically (a link put at `target` is replaced, never written through)."""
    with open_regular(source) as handle:
        data = handle.read()
        times = os.fstat(handle.fileno())
    write_atomically(target, data, mode=stat.S_IMODE(times.st_mode))
    os.utime(target, ns=(times.st_atime_ns, times.st_mtime_ns))


class ResumeGuard:
    """Protects a conversation across `session/load` / `--resume` (two CLI bugs: docs/backends/gemini-cli.md, Quirk 7).

    Both bugs have one cause: before looking the session up, the CLI starts a fresh recording of it
    in `session-<current UTC minute>-<id8>.jsonl`. In the minute the session was created that is the
    session's own file, and the fresh record's checkpoint replaces the history (the load then finds
    nothing: "No previous sessions found" / "Invalid session identifier"); in a later minute it is
    an empty duplicate, which the CLI's next session cleanup takes for a corrupt session, deleting
    every file with that id suffix, the real one included.

    Before: a file named for the current minute is renamed to an earlier, free minute (so the fresh
    record can never land in it), and every file of the session is copied aside. After: a file that
    lost messages anyway is restored, and every empty duplicate (a file of the session with no message
    while another has some) is removed, the load's and any made before it.
    """

    def __init__(self, home: Path, session_id: str) -> None:
        self.home = home
        self.session_id = session_id
        self._backup_dir = Path(platformdirs.user_cache_dir("unified")) / "gemini-cli" / "backups" / session_id
        self._saved: dict[Path, int] = {}
        self.repairs: list[str] = []

    def before(self) -> None:
        self._backup_dir.mkdir(parents=True, exist_ok=True)
        now = datetime.now(UTC).replace(second=0, microsecond=0)
        for index, path in enumerate(session_files(self.home, self.session_id)):
            minute = _file_minute(path)
            if minute is not None and minute >= now:
                path = self._move_before(path, now)
            try:
                _copy_regular(path, self._backup_dir / f"{index}-{path.name}")
            except OSError as exc:  # swapped for a FIFO or a device since it was listed, or unreadable
                hint = exc.hint if isinstance(exc, NotRegularFile) else "check the file's permissions and the disk"
                why = exc.strerror or str(exc)
                raise CorruptSession(f"cannot back up {path} before resuming it: {why}", hint=hint) from exc
            self._saved[path] = conversation_size(path)

    @staticmethod
    def _move_before(path: Path, now: datetime) -> Path:
        minute = now
        while True:
            minute -= timedelta(minutes=1)
            target = path.with_name(f"session-{minute:%Y-%m-%dT%H-%M}-{path.name.rsplit('-', 1)[1]}")
            if not target.exists():
                path.rename(target)
                return target

    def after(self) -> list[str]:
        """Repair what the CLI broke; returns the repairs (for a warning event): a file restored, not the empty
        duplicate removed."""
        for index, (path, size) in enumerate(self._saved.items()):
            if conversation_size(path) < size:
                _copy_regular(self._backup_dir / f"{index}-{path.name}", path)
                self.repairs.append(f"restored {path.name}: the CLI had dropped messages from it")
        sizes = {path: conversation_size(path) for path in session_files(self.home, self.session_id)}
        if any(sizes.values()):
            for path, size in sizes.items():
                if size == 0:
                    # Unsaid: every load makes one (the current minute's file, `before` moved the session's out of
                    # it), so a `session_repaired` warning on every resume asked nothing of anyone. And one that was
                    # there before the load, known to `before`: `session/new` records a new session twice (the CLI's
                    # `config.initialize()` starts a chat, then `newSession` another, 3 ms apart here), each in the
                    # file of its own minute, and the conversation goes to the first: a minute boundary between the two
                    # leaves the second empty in the next minute (3 of 20 new sessions with the CLI's clock run 2000
                    # times fast; a CI run of the resume test found it after its third run).
                    path.unlink()
        shutil.rmtree(self._backup_dir, ignore_errors=True)
        return self.repairs
