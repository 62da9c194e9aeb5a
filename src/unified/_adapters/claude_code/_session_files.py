"""Claude Code's session files on disk: parse, list, resolve by short id, show, delete. Blocking (run in a thread).

A session is `<CLAUDE_CONFIG_DIR>/projects/<cwd, every non-alphanumeric character as '-'>/<uuid>.jsonl`,
compact JSON lines appended as the session goes: `user` and `assistant` lines (one per content
block, lines of one model message share its `message.id`), their `parentUuid` chain, and lines of
the CLI's own bookkeeping (`attachment`, `queue-operation`, `last-prompt`, `api-request*`,
`cost-state`, ...). A subagent's transcript lives in `<uuid>/subagents/` beside it.

The CLI resumes a full UUID from any directory (it looks through every project); it takes no
prefix, so unified resolves short ids and prefixes here, over every project: a session resumes by
its short id from any directory. A line that is not JSON is skipped (counted); a file with no
readable conversation is listed with a `problem` and left as it is.
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from unified._adapters.claude_code._launch import config_dir
from unified._adapters.claude_code._options import BACKEND
from unified._files import folder_entries, open_regular, write_atomically
from unified._text import json_type, loaded_well_formed
from unified.errors import CorruptSession, SessionNotFound
from unified.sessions import SessionInfo, SessionProblem, resolve_ref, short_id_of

__all__ = [
    "CONTINUED_FROM",
    "ParsedSession",
    "SessionFiles",
    "is_prompt",
    "parse_session",
    "project_dir_name",
    "prompt_text",
    "write_lines",
]

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
CONTINUED_FROM = "unified-continued-from"
"""A line of ours in a session file made from a conversation: where it came from (the CLI skips
line types it does not know, and keeps them when it appends)."""
MAX_SESSION_BYTES = 256 * 1024 * 1024
"""A session file larger than this is listed with a problem, not read."""
BOM_WARNING = (
    "claude-code session file {path} starts with a UTF-8 byte order mark: unified reads its first line, but the "
    "claude CLI drops it (the first prompt); a resume by unified removes the 3 bytes first, or remove EF BB BF by hand"
)


def project_dir_name(cwd: str) -> str:
    """The CLI's project folder for a working directory: `/work/a_b` → `-work-a-b`."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def prompt_text(content: object) -> str | None:
    """The text a person typed in a user line (None for tool results and the CLI's own notes)."""
    if isinstance(content, str):
        return None if content.startswith(("<system-reminder>", "<command-", "<local-command")) else content
    if not isinstance(content, list):
        return None
    texts = [
        b["text"]
        for b in content
        if isinstance(b, Mapping)
        and b.get("type") == "text"
        and isinstance(b.get("text"), str)
        and not b["text"].startswith("<system-reminder>")
    ]
    has_image = any(isinstance(b, Mapping) and b.get("type") == "image" for b in content)
    if any(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content):
        return None
    return "\n".join(texts) if texts or has_image else None


def is_prompt(line: Mapping[str, Any]) -> bool:
    """A user line with what a person said (not a tool result, a sidechain or a note of the CLI)."""
    if line.get("type") != "user" or line.get("isMeta") or line.get("isSidechain"):
        return False
    message = line.get("message")
    text = prompt_text(message.get("content")) if isinstance(message, Mapping) else None
    return text is not None and not text.startswith("[Request interrupted by user")


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass
class ParsedSession:
    """What a session file holds, as far as listing, showing and exporting need it."""

    session_id: str
    path: Path
    lines: list[dict[str, Any]] = field(default_factory=list)
    """Every readable JSON line, in file order (none kept for a listing: `parse_session(keep_lines=False)`)."""
    good_lines: int = 0
    """How many lines were readable JSON objects."""
    bad_lines: int = 0
    cwd: str | None = None
    model: str | None = None
    first_prompt: str | None = None
    started_at: datetime | None = None
    updated_at: datetime | None = None
    continued_from: dict[str, Any] | None = None
    """The conversation this session was made from (`ExecuteParams.history`), as its origin names it."""
    unreadable_user: str | None = None
    """What was wrong with the first user line whose message is of a shape the CLI never writes ("message is a
    string, not an object"): with no prompt read, such a file is listed with a problem, not hidden as one that never
    got a prompt."""
    bom: bool = False
    """The first line starts with a UTF-8 byte order mark (an editor's save): unified reads the line, but the claude
    CLI does not (its first prompt lost), so the listing warns (`BOM_WARNING`) and a resume removes it (`drop_bom`)."""

    def conversation_lines(self) -> list[dict[str, Any]]:
        """The main conversation's `user` / `assistant` lines, in order."""
        return [
            line
            for line in self.lines
            if line.get("type") in ("user", "assistant") and not line.get("isSidechain") and not line.get("isMeta")
        ]


def parse_session(path: Path, *, max_bytes: int | None = None, keep_lines: bool = True) -> ParsedSession:
    """Read one session file (tolerating bad lines). OSError when it cannot be read: `NotRegularFile` for a
    FIFO or a device at its path (or a link to one), never waited on; with `max_bytes`, a file larger than
    that is refused unread. `keep_lines=False` (a listing) keeps no line: one at a time is held, not a
    file of up to `max_bytes` as Python objects."""
    parsed = ParsedSession(session_id=path.stem, path=path)
    with open_regular(path, max_bytes=max_bytes) as handle:
        for number, data in enumerate(handle):
            if number == 0 and data.startswith(codecs.BOM_UTF8):  # json.loads refuses it: the line was lost unsaid
                data = data[len(codecs.BOM_UTF8) :]
                parsed.bom = True
            if not data.strip():
                continue
            raw = data.decode("utf-8", "replace")  # as the CLI (Node) reads it: a bad byte dropped the line's message
            try:
                line = json.loads(raw)
            except (ValueError, RecursionError):
                parsed.bad_lines += 1
                continue
            if not isinstance(line, dict):
                parsed.bad_lines += 1
                continue
            line = loaded_well_formed(raw, line)  # a lone surrogate the CLI's JSON.stringify escaped, as U+FFFD
            parsed.good_lines += 1
            if keep_lines:
                parsed.lines.append(line)
            if line.get("type") == CONTINUED_FROM:
                origin = line.get("origin")
                parsed.continued_from = origin if isinstance(origin, dict) else {}
            if line.get("type") not in ("user", "assistant") or line.get("isSidechain"):
                continue
            stamp = _time(line.get("timestamp"))
            if stamp is not None:
                parsed.started_at = parsed.started_at or stamp
                parsed.updated_at = stamp
            if isinstance(line.get("cwd"), str) and parsed.cwd is None:
                parsed.cwd = line["cwd"]
            message = line.get("message")
            if line.get("type") == "user" and parsed.unreadable_user is None:
                if not isinstance(message, Mapping):
                    parsed.unreadable_user = f"message is {json_type(message)}, not an object"
                elif not isinstance(message.get("content"), str | list):
                    parsed.unreadable_user = f"message content is {json_type(message.get('content'))}, not text"
            if not isinstance(message, Mapping):
                continue
            if line.get("type") == "assistant" and isinstance(message.get("model"), str):
                if message["model"] != "<synthetic>":
                    parsed.model = message["model"]
            elif is_prompt(line):
                parsed.first_prompt = parsed.first_prompt or prompt_text(message.get("content")) or ""
    return parsed


def drop_bom(path: Path) -> str | None:
    """Before `claude --resume`: a byte order mark at the file's start removed (the CLI drops the line it starts,
    the session's first prompt); what was repaired (a `session_repaired` warning), None when there was none.

    `CorruptSession` when the mark cannot be removed, the file left as it is: a read-only file (its owner's
    choice, which a rename over it would undo) or one whose folder takes no new file; resumed as it is, the CLI
    would lose the first prompt unsaid. A link is followed: the file it names is repaired, the link kept (a rename
    over the link put a copy in its place, and left the file it named with its mark)."""
    with open_regular(path, max_bytes=MAX_SESSION_BYTES) as handle:
        if handle.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:
            return None
        rest = handle.read()
        writable = os.fstat(handle.fileno()).st_mode & stat.S_IWUSR
    try:
        if not writable:
            raise PermissionError(errno.EACCES, "the file is read-only", str(path))
        write_atomically(path.resolve(), rest, mode=0o600)
    except OSError as exc:
        raise CorruptSession(
            f"claude-code session file {path} starts with a UTF-8 byte order mark, which the claude CLI reads as a "
            f"broken line (the session's first prompt lost), and unified could not remove it: {exc.strerror or exc}",
            hint="make the file and its folder writable, or remove its first 3 bytes (EF BB BF) by hand; then resume",
            details={"path": str(path), "errno": exc.errno},
        ) from None
    return (
        f"claude-code session file {path} started with a UTF-8 byte order mark, which the claude CLI reads as a "
        "broken line (its first prompt lost): the 3 bytes were removed before the resume"
    )


def write_lines(path: Path, lines: list[dict[str, Any]]) -> None:
    """Write a session file as the CLI does: compact JSON lines (its cross-project lookup matches the
    raw text, so a file with spaces after `:` is not found from another directory), atomically, 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n" for line in lines)
    write_atomically(path, text, mode=0o600)


class SessionFiles:
    """The session files under one CLI home (the backend's isolated home)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.projects = config_dir(home) / "projects"

    def files(self) -> Iterator[Path]:
        """Every session file (`<uuid>.jsonl` directly in a project folder)."""
        for project in folder_entries(self.projects, BACKEND):
            if not project.is_dir():
                continue
            for path in folder_entries(project, BACKEND):
                if path.suffix == ".jsonl" and _UUID.match(path.stem):
                    yield path

    def find(self, session_id: str) -> Path | None:
        """The file of a session, by its full id, in any project."""
        return next((p for p in self.files() if p.stem == session_id), None)

    def info(self, path: Path) -> SessionInfo | None:
        """The listing entry of one file; None for a file with no prompt (a process that never got one)."""
        session_id = path.stem
        try:
            parsed = parse_session(path, max_bytes=MAX_SESSION_BYTES, keep_lines=False)
        except OSError as exc:
            return self._unreadable(path, f"cannot be read: {exc}")
        if parsed.first_prompt is None:
            if parsed.bad_lines and not parsed.good_lines:
                return self._unreadable(path, f"no readable line ({parsed.bad_lines} lines are not JSON)")
            if not parsed.good_lines:  # the CLI's first line makes the file: an empty one was emptied since
                return self._unreadable(path, "is empty")
            if parsed.unreadable_user is not None:  # a damaged prompt: hidden, it could be neither found nor deleted
                why = f"has no prompt unified can read: a user line's {parsed.unreadable_user}"
                return self._unreadable(
                    path, why, "fix or remove that line, or delete the session; it was left unchanged"
                )
            return None
        updated = parsed.updated_at
        if updated is None:  # no line said when: the file's own time, if it is still there
            try:
                updated = datetime.fromtimestamp(path.stat().st_mtime, UTC)
            except FileNotFoundError:
                return None  # deleted while it was read (a `sessions delete` beside the listing): nothing to list
            except OSError as exc:
                return self._unreadable(path, f"cannot be read: {exc}")
        return SessionInfo(
            backend=BACKEND,
            session_id=session_id,
            short_id=short_id_of(session_id),
            started_at=parsed.started_at,
            updated_at=updated,
            first_prompt=parsed.first_prompt,
            cwd=parsed.cwd,
            model=parsed.model,
            path=str(path),
            extra={
                **({"skipped_lines": parsed.bad_lines} if parsed.bad_lines else {}),
                **({"continued_from": parsed.continued_from} if parsed.continued_from is not None else {}),
                **({"warnings": [BOM_WARNING.format(path=path)]} if parsed.bom else {}),
            },
        )

    def _unreadable(
        self, path: Path, why: str, hint: str = "the claude CLI cannot resume it either; it was left unchanged"
    ) -> SessionInfo:
        return SessionInfo(
            backend=BACKEND,
            session_id=path.stem,
            short_id=short_id_of(path.stem),
            path=str(path),
            problem=SessionProblem(
                kind="corrupt",
                message=f"claude-code session file {path} {why}",
                hint=hint,
            ),
        )

    def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        found = [info for path in self.files() if (info := self.info(path)) is not None]
        if cwd is not None:
            found = [s for s in found if s.problem is not None or s.cwd == cwd]
        return sorted(found, key=lambda s: str(s.updated_at or ""), reverse=True)

    def resolve(self, ref: str, cwd: str | None = None, *, unreadable: bool = False) -> SessionInfo:
        """The session `ref` names, looked for in every project (it resumes from any directory); `unreadable`
        (a delete): also a file that cannot be read, its `problem` set."""
        del cwd  # a Claude Code session resumes from any directory: every project is searched
        return resolve_ref(ref, self.list_sessions(None), BACKEND, unreadable=unreadable)

    def show(self, ref: str, cwd: str | None = None) -> dict[str, Any]:
        info = self.resolve(ref, cwd)
        assert info.path is not None
        parsed = parse_session(Path(info.path))
        messages = [
            {"type": line.get("type"), "timestamp": line.get("timestamp"), "message": line.get("message")}
            for line in parsed.conversation_lines()
        ]
        return {"session": info.model_dump(mode="json"), "messages": messages, "skipped_lines": parsed.bad_lines}

    def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """Remove the session's file and its folder of subagent transcripts; one that cannot be read too (the user
        must be able to remove what they cannot read), when it is a regular file."""
        info = self.resolve(ref, cwd, unreadable=True)
        path = Path(info.path) if info.path else None
        if path is None or not path.exists():
            raise SessionNotFound(f"claude-code session {info.short_id} has no file", hint="list them again")
        if info.problem is not None and not stat.S_ISREG(os.lstat(path).st_mode):
            raise CorruptSession(
                f"{path} is not a regular file: not the CLI's session file, not ours to delete",
                hint="remove it by hand if it is yours",
            )
        path.unlink()
        side = path.with_suffix("")
        if side.is_dir():
            shutil.rmtree(side, ignore_errors=True)
        return info
