"""Sessions across backends: what a stored conversation looks like and how a short id resolves.

Each backend keeps its sessions its own way (the Gemini CLI's chat files, `unified`'s own store
for the API backends); each adapter package provides a `SessionLocator` over them. What they
share lives here: the listing record and the rule that turns a short id, a unique prefix or a
full id into exactly one session, or into an error that lists what the caller can pick from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from unified._errors import AmbiguousSession, SessionNotFound

SHORT_ID_LENGTH = 8


def short_id_of(session_id: str) -> str:
    """The first eight characters of a session id, as the Gemini CLI names its files."""
    return session_id[:SHORT_ID_LENGTH]


class SessionInfo(BaseModel):
    """One stored session, as listed. Reading it must not need the whole conversation."""

    model_config = ConfigDict(extra="forbid")

    backend: str
    session_id: str
    short_id: str
    started_at: datetime | None = None
    updated_at: datetime | None = None
    summary: str | None = None
    first_prompt: str | None = None
    cwd: str | None = None
    model: str | None = None
    path: str | None = Field(default=None, description="Where the session lives on disk.")
    extra: dict[str, Any] = Field(default_factory=dict)


class SessionLocator(Protocol):
    """Finds a backend's sessions on disk."""

    backend: str

    def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        """Every session (of the project at `cwd` when the backend scopes sessions by project)."""
        ...

    def resolve(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """The one session `ref` names; raises SessionNotFound or AmbiguousSession."""
        ...

    def show(self, ref: str, cwd: str | None = None) -> dict[str, Any]:
        """The session's conversation as plain data, for `unified sessions show`."""
        ...

    def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """Remove one session (only ever on the caller's explicit request)."""
        ...


def _describe(sessions: Sequence[SessionInfo], limit: int = 5) -> str:
    recent = sorted(sessions, key=lambda s: s.updated_at or s.started_at or datetime.min, reverse=True)
    lines = [
        f"  {s.short_id}  {(s.updated_at or s.started_at or '')!s:.19}  {(s.summary or s.first_prompt or '')[:60]}"
        for s in recent[:limit]
    ]
    return "\n".join(lines) if lines else "  (no sessions)"


def resolve_ref(ref: str, sessions: Iterable[SessionInfo], backend: str) -> SessionInfo:
    """Pick the session `ref` names: an exact full id, an exact short id, or a unique prefix.

    Matching ignores case. Several matches give `AmbiguousSession` listing them; none gives
    `SessionNotFound` listing the most recent sessions.
    """
    wanted = ref.strip().lower()
    if not wanted:
        raise SessionNotFound("an empty session reference names no session", hint="pass a short id")
    candidates = list(sessions)
    exact = [s for s in candidates if s.session_id.lower() == wanted]
    if exact:
        return exact[0]
    matches = [
        s for s in candidates if s.session_id.lower().startswith(wanted) or s.short_id.lower().startswith(wanted)
    ]
    unique = {s.session_id: s for s in matches}
    if len(unique) == 1:
        return next(iter(unique.values()))
    if len(unique) > 1:
        raise AmbiguousSession(
            f"{ref!r} matches {len(unique)} {backend} sessions:\n{_describe(list(unique.values()), 20)}",
            hint="give more characters of the id",
            details={"candidates": sorted(unique)},
        )
    raise SessionNotFound(
        f"no {backend} session matches {ref!r}; recent sessions:\n{_describe(candidates)}",
        hint="run `unified sessions list` to see them all",
        details={"ref": ref},
    )
