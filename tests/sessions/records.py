"""A stored session to put in a store, for the session store tests."""

from __future__ import annotations

from unified.sessions import StoredSession

BACKEND = "generate-content"


def stored_session(session_id: str | None = None, first_prompt: str = "hi") -> StoredSession:
    """A generate-content session holding its first prompt; `session_id` replaces the new one's."""
    session = StoredSession.new(BACKEND, model="m", cwd="/w", first_prompt=first_prompt)
    if session_id is not None:
        session.session_id = session_id
    session.state["contents"] = [{"role": "user", "parts": [{"text": first_prompt}]}]
    return session
