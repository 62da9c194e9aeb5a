"""generate-content sessions: the whole conversation (`contents`, signatures included) in the shared store.

The API keeps nothing between calls, so resuming resends the stored history exactly as the model
produced it; the state holds `contents` as the SDK's JSON (thought signatures base64).
"""

from __future__ import annotations

from typing import Any

from unified._adapters.generate_content._conversation import conversation_from_contents
from unified._sessions.locator import StoreSessionLocator
from unified._text import json_type
from unified.conversations import Conversation, Origin
from unified.events import Usage
from unified.sessions import StoredSession

__all__ = ["BACKEND", "GenerateContentSessionLocator"]

BACKEND = "generate-content"


class GenerateContentSessionLocator(StoreSessionLocator):
    """The SessionLocator of this backend (`unified sessions list|show|delete`)."""

    backend = BACKEND

    def show_state(self, session: StoredSession) -> dict[str, Any]:
        return {
            "contents": session.state.get("contents", []),
        }

    def conversation_of(self, session: StoredSession, origin: Origin) -> Conversation:
        usage = {int(k): Usage.model_validate(v, strict=True) for k, v in (session.state.get("usage") or {}).items()}
        contents = session.state.get("contents", [])
        if not isinstance(contents, list):  # else Python's "'int' object is not iterable", or a dict's keys read
            raise TypeError(f"its contents is {json_type(contents)}, not a list of contents")
        return conversation_from_contents(contents, model=session.model, origin=origin, usage=usage)
