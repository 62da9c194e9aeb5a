"""Session records and the store protocol: what a `SessionStore` holds and how a short id names one.

Imports only the event protocol and the errors, so stores, backends and the session service can all
depend on it without depending on one another. The public face is `unified.sessions`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from unified import _limits as limits
from unified._exports import publish
from unified._redaction import clip
from unified.errors import (
    AmbiguousSession,
    CorruptSession,
    SessionNotFound,
    UnsupportedSessionFormat,
)
from unified.events import Usage

__all__ = [
    "SHORT_ID_LENGTH",
    "SessionInfo",
    "SessionProblem",
    "SessionStore",
    "StoredSession",
    "clipped_prompt",
    "refuse_empty",
    "resolve_ref",
    "short_id_of",
    "unreadable_why",
]


SHORT_ID_LENGTH = 8


def short_id_of(session_id: str) -> str:
    """The first eight characters of a session id, as the Gemini CLI names its files."""
    return session_id[:SHORT_ID_LENGTH]


class SessionProblem(BaseModel):
    """Why a stored session cannot be read. The file stays as it is: nothing rewrites it, and only a `delete`
    naming that session removes it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    kind: Literal["corrupt", "newer_format"]
    message: str
    hint: str

    def error(self) -> CorruptSession | UnsupportedSessionFormat:
        """The exception a load or a resume of this session raises."""
        if self.kind == "newer_format":
            return UnsupportedSessionFormat(self.message, hint=self.hint)
        return CorruptSession(self.message, hint=self.hint)


class SessionInfo(BaseModel):
    """One stored session, as listed. Reading it must not need the whole conversation.

    `problem` is set for a session whose record cannot be read (corrupt, or written by a newer
    `unified`): listings report it instead of hiding it, and resolving it raises its error.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    backend: str
    session_id: str
    short_id: str
    started_at: datetime | None = None
    updated_at: datetime | None = None
    summary: str | None = None
    """The backend's own summary of the session (the Gemini CLI writes one), else None: a listing shows it, or the
    first prompt (`first_prompt`) when there is none, for every backend alike."""
    first_prompt: str | None = None
    cwd: str | None = None
    model: str | None = None
    path: str | None = Field(default=None, description="Where the session lives (a file, or the store's key).")

    @field_validator("first_prompt")
    @classmethod
    def _clipped(cls, prompt: str | None) -> str | None:
        """Every backend's listing alike (`clipped_prompt`): Claude Code's and Codex's session files gave it
        whole, so `unified sessions list --json` printed a pasted prompt of megabytes for each session."""
        return clipped_prompt(prompt)

    problem: SessionProblem | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


def clipped_prompt(prompt: str | None) -> str | None:
    """A first prompt as a session's header and listing keep it: at most `limits.MAX_SESSION_PROMPT_CHARS` (every
    listing reads every header; the whole prompt is in the conversation)."""
    if prompt is None or len(prompt) <= limits.MAX_SESSION_PROMPT_CHARS:
        return prompt
    return clip(prompt, limits.MAX_SESSION_PROMPT_CHARS, more="…")


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class StoredSession:
    """A session of an API backend as a `SessionStore` holds it: metadata plus the backend's own `state`.

    `state` is JSON-shaped data the backend alone interprets (the whole conversation for
    generate-content, the interaction chain for interactions).
    """

    backend: str
    session_id: str
    model: str | None = None
    cwd: str | None = None
    first_prompt: str | None = None
    created_at: datetime = field(default_factory=_now)
    updated_at: datetime = field(default_factory=_now)
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    state: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(cls, backend: str, *, model: str | None, cwd: str | None, first_prompt: str | None) -> StoredSession:
        """A fresh session with a new id (nothing is stored until a store's `save`)."""
        return cls(backend=backend, session_id=str(uuid.uuid4()), model=model, cwd=cwd, first_prompt=first_prompt)

    @property
    def short_id(self) -> str:
        return short_id_of(self.session_id)


@runtime_checkable
class SessionStore(Protocol):
    """Where the API backends keep their sessions: one namespace of session ids per backend.

    Every method is a coroutine, so a store over a network database needs no thread; a store
    over local files runs its I/O in a worker thread. Implement these six and pass the store as
    `ExecuteParams.session_store`. `FileSessionStore` (the default) and `MemorySessionStore`
    are the built-in implementations; docs/sessions.md states what each promises.
    """

    async def list_sessions(self, backend: str) -> list[SessionInfo]:
        """Every session of `backend`, newest first; unreadable ones included with `problem` set."""
        ...

    async def resolve(self, backend: str, ref: str) -> SessionInfo:
        """The one session `ref` (full id, short id or unique prefix, any case) names.

        Raises SessionNotFound, AmbiguousSession, or the `problem` error of an unreadable session.
        """
        ...

    async def load(self, backend: str, session_id: str) -> StoredSession:
        """The whole session with this exact id; CorruptSession/UnsupportedSessionFormat if unreadable."""
        ...

    async def save(self, session: StoredSession) -> None:
        """Store `session` whole, replacing its previous version atomically.

        Known secret values are redacted first. Refuses (with the problem's error) to replace a
        stored record it cannot read, so a newer or damaged record is never overwritten.
        """
        ...

    async def delete(self, backend: str, session_id: str) -> None:
        """Remove one session; raises SessionInUse while a run holds its lease."""
        ...

    def lease(self, backend: str, session_id: str) -> AbstractAsyncContextManager[None]:
        """Hold the session for one run. Does not wait: a session already held raises SessionInUse."""
        ...


def _describe(sessions: Sequence[SessionInfo], limit: int = 5, *, whole_ids: bool = False) -> str:
    """One line per session, the most recent `limit`: its short id (`whole_ids`: its whole id, for the
    candidates of an ambiguous reference, which may all share one short id), its time, its first prompt."""
    recent = sorted(sessions, key=by_recency, reverse=True)
    lines = [  # one line each: a prompt may have many; none ends in blanks (an unreadable record has no time or
        # prompt: the hint after the last line stood five spaces off, round 21)
        f"  {clip(s.session_id, 80, more='…') if whole_ids else s.short_id}  "
        f"{(s.updated_at or s.started_at or '')!s:.19}  "
        f"{clip(' '.join((s.summary or s.first_prompt or '').split()), 60)}".rstrip()
        for s in recent[:limit]
    ]
    more = len(sessions) - limit
    return "\n".join(lines + ([f"  (and {more} more)"] if more > 0 else [])) if lines else "  (no sessions)"


def by_recency(info: SessionInfo) -> str:
    return str(info.updated_at or info.started_at or "")


def refuse_empty(ref: str) -> None:
    """An empty or blank reference names no session: `SessionNotFound`, said once wherever it is given."""
    if not ref.strip():
        raise SessionNotFound(
            "an empty session reference names no session", hint="pass a short id (`unified sessions list` shows them)"
        )


def resolve_ref(ref: str, sessions: Iterable[SessionInfo], backend: str, *, unreadable: bool = False) -> SessionInfo:
    """Pick the session `ref` names: an exact full id, an exact short id, or a unique prefix.

    Matching ignores case, but an id given exactly as written names that id (ids that differ in case only).
    Several matches give `AmbiguousSession` listing them; none gives
    `SessionNotFound` listing the most recent sessions; a match whose record is unreadable
    raises its problem's error (CorruptSession, UnsupportedSessionFormat), unless `unreadable` (a delete:
    what cannot be read must still be removable, named as strictly as any other).
    """
    refuse_empty(ref)
    wanted = ref.strip().lower()
    candidates = list(sessions)
    # The id as written first: ids that differ in case only (another tool's, a hand's) were each an exact match
    # of the other's reference, ambiguous whatever was given, so neither could be resumed, shown or deleted.
    exact = [s for s in candidates if s.session_id == ref.strip()] or [
        s for s in candidates if s.session_id.lower() == wanted
    ]
    matches = exact or [
        s for s in candidates if s.session_id.lower().startswith(wanted) or s.short_id.lower().startswith(wanted)
    ]
    unique = {s.session_id: s for s in matches}
    if len(unique) == 1:
        found = next(iter(unique.values()))
        if found.problem is not None and not unreadable:
            raise found.problem.error()
        return found
    if len(unique) > 1:
        shown = clip(ref, 80, more="…")
        raise AmbiguousSession(
            f"{shown!r} matches {len(unique)} {backend} sessions:\n"
            f"{_describe(list(unique.values()), 20, whole_ids=True)}",
            hint="give more characters of the id, enough to tell these apart",
            details={"candidates": sorted(unique)},
        )
    raise SessionNotFound(  # the reference may be anything a caller was given: quoted clipped
        f"no {backend} session matches {clip(ref, 80, more='…')!r}; recent sessions:\n{_describe(candidates)}",
        hint="run `unified sessions list` to see them all",
        details={"ref": ref},
    )


publish(
    "unified.sessions",
    ["SessionInfo", "SessionProblem", "SessionStore", "StoredSession", "resolve_ref", "short_id_of"],
    globals(),
)


def unreadable_why(exc: Exception) -> str:
    """Why a stored state could not be read, for an error: pydantic's first error by its field path (never its
    input, which may be anything the session holds), else the exception's words; export said only its type."""
    if isinstance(exc, ValidationError):
        first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
        why = f"{'.'.join(map(str, first['loc'])) or exc.title}: {first['msg']}"
    else:
        why = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    return clip(why, 240)
