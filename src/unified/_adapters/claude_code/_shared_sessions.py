"""claude-code sessions in a shared `SessionStore`, so any worker can resume them (docs/sessions.md).

The CLI resumes only from its own session files. With a store configured (`ExecuteParams.session_store`,
or `UNIFIED_SESSION_STORE_URL`), each run's session file is saved to it when the run ends, as a
`StoredSession` of backend "claude-code" whose state holds the file's text and its project folder;
a resume found in the store first writes that file into this worker's CLI home (replacing an older
copy), so `--resume` finds it. The run holds the store's lease from before the file is written
until it is saved again, so two workers never continue one conversation. As for gemini-cli, only
the public store interface is used, and the store's content is checked before it is written (a
store is shared: its text names no path, its lines name its own session).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from unified import _limits as limits
from unified._adapters.claude_code._launch import config_dir
from unified._adapters.claude_code._options import BACKEND
from unified._adapters.claude_code._session_files import SessionFiles, parse_session
from unified._binary.shared import SharedFiles
from unified._files import read_regular_text, write_atomically
from unified.errors import CorruptSession
from unified.sessions import StoredSession

__all__ = ["SESSION_FILE", "session_lines", "shared_files", "state_summary", "stored_session", "write_session_file"]

SESSION_FILE = "session_file"
"""The state key: {"project": <folder name>, "text": <the file's JSON lines>}."""
_PROJECT = re.compile(r"^[A-Za-z0-9-]{1,255}$")


def session_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a session file's text, one a line. Split at "\\n" only, as the CLI splits it:
    `str.splitlines` also splits at U+2028, U+2029 and NEL, which JSON strings hold raw (the CLI's
    JSON.stringify, our `ensure_ascii=False`), and lost the message (or hid a line from `_checked`)."""
    lines = []
    for raw in text.split("\n"):
        try:
            line = json.loads(raw) if raw.strip() else None
        except (ValueError, RecursionError):
            continue
        if isinstance(line, dict):
            lines.append(line)
    return lines


def _checked(session: StoredSession) -> tuple[str, str]:
    """(project folder, text) of a stored session, refused if it could land elsewhere or names another session."""
    where = f"claude-code session {session.short_id} in the session store"
    state = session.state.get(SESSION_FILE)
    if (
        not isinstance(state, dict)
        or not isinstance(state.get("text"), str)
        or not isinstance(state.get("project"), str)
    ):
        raise CorruptSession(f"{where} holds no session file", hint="it was left unchanged; start a new session")
    project, text = state["project"], state["text"]
    if not _PROJECT.fullmatch(project):
        raise CorruptSession(f"{where} names the project folder {project!r}", hint="it was left unchanged")
    for line in session_lines(text):
        named = line.get("sessionId")
        if isinstance(named, str) and named != session.session_id:
            raise CorruptSession(f"{where} holds lines of session {named[:8]}", hint="it was left unchanged")
    return project, text


def write_session_file(session: StoredSession, home: Path) -> Path:
    """Put the store's copy into the CLI home (replacing any local copy), atomically."""
    project, text = _checked(session)
    projects = config_dir(home) / "projects"
    for stale in SessionFiles(home).files():
        if stale.stem == session.session_id and stale.parent.name != project:
            stale.unlink()
    target = projects / project / f"{session.session_id}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, text, mode=0o600)
    return target


def stored_session(home: Path, session_id: str, cwd: Path, previous: StoredSession | None) -> StoredSession | None:
    """The session's file as a StoredSession; None if the CLI wrote none. A file larger than a store record may be
    (`MAX_SESSION_RECORD_BYTES`) is `FileTooLarge`, refused unread."""
    path = SessionFiles(home).find(session_id)
    if path is None:
        return None
    bound = limits.MAX_SESSION_RECORD_BYTES  # the file was read whole, then parsed whole, however large
    text = read_regular_text(path, max_bytes=bound)
    parsed = parse_session(path, max_bytes=bound, keep_lines=False)
    session = previous or StoredSession(backend=BACKEND, session_id=session_id)
    session.first_prompt = session.first_prompt or parsed.first_prompt
    session.model = parsed.model or session.model
    session.cwd = parsed.cwd or str(cwd)
    session.state = {SESSION_FILE: {"project": path.parent.name, "text": text}}
    return session


def shared_files(home: Path, cwd: Path) -> SharedFiles:
    """claude-code's session file as `unified._binary.shared` moves it (in the CLI home `home`)."""
    where = cwd.expanduser().resolve()
    return SharedFiles(
        BACKEND,
        "the session file",
        write=lambda session: write_session_file(session, home),
        collect=lambda session_id, previous: stored_session(home, session_id, where, previous),
    )


def state_summary(session: StoredSession) -> dict[str, Any]:
    """The conversation of a stored session, for `unified sessions show` on a worker without its file."""
    _, text = _checked(session)
    messages = []
    for line in session_lines(text):
        if line.get("type") in ("user", "assistant") and not line.get("isSidechain"):
            messages.append({"type": line["type"], "timestamp": line.get("timestamp"), "message": line.get("message")})
    return {"messages": messages}
