"""A stored session to put in a store, for the session store tests."""

from __future__ import annotations

from collections.abc import Sequence

from unified.conversations import Conversation, ImagePart, ModelTurn, TextPart, UserTurn
from unified.sessions import StoredSession

BACKEND = "generate-content"


def stored_session(session_id: str | None = None, first_prompt: str = "hi") -> StoredSession:
    """A generate-content session holding its first prompt; `session_id` replaces the new one's."""
    session = StoredSession.new(BACKEND, model="m", cwd="/w", first_prompt=first_prompt)
    if session_id is not None:
        session.session_id = session_id
    session.state["contents"] = [{"role": "user", "parts": [{"text": first_prompt}]}]
    return session


ATTACHMENT_DATA = {
    "application/pdf": b"%PDF-1.7 not an image",
    "image/svg+xml": b"<svg/>",
    "image/png": b"\x89PNG\r\n\x1a\n0000",
}
"""A few bytes of each attachment type the bad-input rounds carry to a provider that may refuse it."""


def with_attachments(mime_types: Sequence[str], *, answered_by: str, then: str | None = None) -> Conversation:
    """A conversation whose first user turn is text and one attachment of each of `mime_types` (in that order),
    answered by a model of the provider `answered_by`; `then`: a last user turn of that text."""
    parts: list[TextPart | ImagePart] = [TextPart(text="read these")]
    parts += [ImagePart(mime_type=mime_type, data=ATTACHMENT_DATA[mime_type]) for mime_type in mime_types]
    turns: list[UserTurn | ModelTurn] = [
        UserTurn(parts=parts),
        ModelTurn(parts=[TextPart(text="read")], provider=answered_by),
    ]
    if then is not None:
        turns.append(UserTurn(parts=[TextPart(text=then)]))
    return Conversation(turns=turns)
