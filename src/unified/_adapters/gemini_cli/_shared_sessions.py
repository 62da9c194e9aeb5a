"""gemini-cli sessions in a shared `SessionStore`, so any worker can resume them (docs/sessions.md).

The Gemini CLI resumes only from its own chat files. When a store is configured
(`ExecuteParams.session_store`, or `UNIFIED_SESSION_STORE_URL`), each run's chat file(s) are
saved to it when the run ends, as a `StoredSession` of backend "gemini-cli" whose state holds the
files' text; a resume found in the store first writes them into this worker's CLI home (the
project of the run's cwd), so `session/load` finds them. The store is then the source of truth:
its copy replaces an older local one, and a run holds the store's lease from before the files
are written until they are saved again, so two workers never continue one conversation.

Only the public store interface is used; the store knows nothing of chat files. The CLI's
data-loss guards (`ResumeGuard`) run after the files are written, exactly as for a local session.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from unified import _limits as limits
from unified._adapters.gemini_cli._chat_files import (
    BACKEND,
    PROJECT_ROOT_FILE,
    ChatFiles,
    gemini_home,
    parse_chat,
    real_directory,
    session_files,
    session_usage,
    summarize,
)
from unified._binary.shared import SharedFiles
from unified._files import read_regular_text, read_regular_texts, write_atomically
from unified.errors import CorruptSession
from unified.sessions import StoredSession, short_id_of

__all__ = [
    "CHAT_FILES",
    "shared_files",
    "state_summary",
    "stored_session",
    "write_chat_files",
]

CHAT_FILES = "chat_files"
"""The state key: chat file name -> its text."""
_SLUG = re.compile(r"[A-Za-z0-9._-]+")
"""A folder name `projects.json` may give a project: one path component (checked again for `.` and `..`)."""
_CHAT_NAME = re.compile(r"session-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-[0-9A-Za-z_-]{1,8}\.jsonl")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "project"


def project_chats(home: Path, cwd: Path) -> Path:
    """The `chats/` directory of the project at `cwd` in this CLI home, made if needed.

    The project's directory is the one `projects.json` names, else an existing one of the project
    (its `.project_root` marker names `cwd`, or older CLIs' sha256 name), else a new directory with
    that marker (the CLI adopts a marked directory before claiming a new one).
    """
    root = str(cwd)
    tmp = home / "tmp"
    if os.path.lexists(tmp):
        real_directory(tmp)  # never written through a link
    files = ChatFiles({"GEMINI_CLI_HOME": str(home.parent)})
    registered = files.projects().get(root)
    if registered:
        if not _SLUG.fullmatch(registered) or registered in (".", ".."):
            raise CorruptSession(
                f"{home / 'projects.json'} names {registered!r} as the folder of {root}, which is no folder name "
                f"under {tmp}",
                hint="it was left unchanged; fix or remove that entry of projects.json",
            )
        for directory in (tmp / registered, tmp / registered / "chats"):
            if os.path.lexists(directory):
                real_directory(directory)
        (tmp / registered / "chats").mkdir(parents=True, exist_ok=True)
        return tmp / registered / "chats"
    for directory, project in files.project_dirs(root):  # a marked or (older CLIs) sha256-named one
        if project == root:
            return directory / "chats"
    base = _slug(cwd.name)
    for number in range(10_000):
        candidate = tmp / (base if number == 0 else f"{base}-{number}")
        marker = candidate / PROJECT_ROOT_FILE
        if not candidate.exists():
            (candidate / "chats").mkdir(parents=True)
            marker.write_text(root, encoding="utf-8")
            return candidate / "chats"
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if read_regular_text(marker).strip() == root:
                (candidate / "chats").mkdir(exist_ok=True)
                return candidate / "chats"
    raise CorruptSession(f"no free project directory for {root} under {tmp}", hint="clean up that directory")


def _checked_files(session: StoredSession) -> dict[str, str]:
    """The chat files of a stored session, refused if any could land outside its directory or names
    another session (a store is shared: its content is not trusted to name paths)."""
    files = session.state.get(CHAT_FILES)
    where = f"gemini-cli session {session.short_id} in the session store"
    if not isinstance(files, dict) or not files:
        raise CorruptSession(f"{where} holds no chat files", hint="it was left unchanged; start a new session")
    for name, text in files.items():
        if not (isinstance(name, str) and _CHAT_NAME.fullmatch(name) and isinstance(text, str)):
            raise CorruptSession(f"{where} holds a chat file named {name!r}", hint="it was left unchanged")
        if not name.endswith(f"-{short_id_of(session.session_id)}.jsonl"):
            raise CorruptSession(f"{where} holds {name}, a file of another session", hint="it was left unchanged")
        if parse_chat(text.encode(), Path(name)).session_id != session.session_id:
            raise CorruptSession(f"{where} holds {name}, whose header names another session", hint="left unchanged")
    return dict(files)


def write_chat_files(session: StoredSession, home: Path, cwd: Path) -> list[Path]:
    """Put the store's copy of the session into the CLI home, in the project at `cwd`.

    Older local files of the session in that project are replaced (the store's set is the
    newest whole set); each file is written to a temp name and renamed, so the CLI never reads
    half a file.
    """
    files = _checked_files(session)
    chats = project_chats(home, cwd)
    for stale in session_files(home, session.session_id):
        if stale.parent == chats and stale.name not in files:
            stale.unlink()
    written = []
    for name, text in files.items():
        target = chats / name
        write_atomically(target, text)
        written.append(target)
    return written


def stored_session(home: Path, session_id: str, cwd: Path, previous: StoredSession | None) -> StoredSession | None:
    """The session's chat files (those of the project holding its largest one) as a StoredSession;
    None if the CLI wrote none. Files larger together than a store record may be (`MAX_SESSION_RECORD_BYTES`)
    are `FileTooLarge`, never read whole."""
    files = session_files(home, session_id)
    if not files:
        return None
    largest = max(files, key=lambda p: p.stat().st_size)
    files = [path for path in files if path.parent == largest.parent]
    info = summarize(largest, str(cwd))
    session = previous or StoredSession(backend=BACKEND, session_id=session_id)
    if info is not None:
        session.first_prompt = session.first_prompt or info.first_prompt
        session.model = info.model or session.model
    session.usage, session.turns = session_usage(largest)
    session.cwd = str(cwd)
    session.state = {CHAT_FILES: read_regular_texts(files, max_bytes=limits.MAX_SESSION_RECORD_BYTES)}
    return session


def shared_files(env: Mapping[str, str], cwd: Path) -> SharedFiles:
    """gemini-cli's chat files as `unified._binary.shared` moves them (in the CLI home `env` names)."""
    home, where = gemini_home(env), cwd.expanduser().resolve()
    return SharedFiles(
        BACKEND,
        "the chat files",
        write=lambda session: write_chat_files(session, home, where),
        collect=lambda session_id, previous: stored_session(home, session_id, where, previous),
    )


def state_summary(session: StoredSession) -> dict[str, Any]:
    """The conversation of a stored gemini-cli session, for `unified sessions show` on a worker without it."""
    files = _checked_files(session)
    name = max(files, key=lambda n: len(files[n]))
    chat = parse_chat(files[name].encode(), Path(name))
    return {"messages": chat.messages, "skipped_lines": chat.bad_lines}
