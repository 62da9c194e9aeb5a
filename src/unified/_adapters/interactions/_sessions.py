"""Interactions sessions: our short id → the chain of interaction ids the server holds.

The server keeps the conversation (unless `store=false`); we keep only the chain, so resuming
continues from its last interaction with `previous_interaction_id`. In `store=false` mode the
server keeps nothing, so the state also holds the whole conversation as steps, resent each turn.
Files live in the shared session store (`<user data dir>/unified/sessions/interactions/`).
"""

from __future__ import annotations

from typing import Any

from unified._adapters.interactions._conversation import conversation_from_steps
from unified._sessions.locator import StoreSessionLocator
from unified.conversations import Conversation, Origin
from unified.events import Usage
from unified.sessions import StoredSession

__all__ = ["BACKEND", "InteractionsSessionLocator", "append_interaction", "chain"]

BACKEND = "interactions"


def chain(session: StoredSession) -> list[str]:
    """The interaction ids of a session, oldest first. TypeError when the stored value is not a list of ids (a
    store is shared: another tool or a hand may write anything): a string was taken for its characters, so
    `"abc"` resumed from interaction "c", `[1, null]` from "None", and the turn's answer then failed to append
    (AttributeError, `internal_error` after the model had answered). A resume says `corrupt_session`."""
    ids = session.state.get("interactions") or []
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
        raise TypeError("its interactions are not a list of interaction ids")
    return list(ids)


def append_interaction(session: StoredSession, interaction_id: str) -> None:
    ids = session.state.setdefault("interactions", [])
    if not ids or ids[-1] != interaction_id:
        ids.append(interaction_id)


class InteractionsSessionLocator(StoreSessionLocator):
    """The SessionLocator of the interactions backend, over the shared store.

    `delete` removes our record only: the server's interactions expire on their own.
    """

    backend = BACKEND

    def show_state(self, session: StoredSession) -> dict[str, Any]:
        return {
            "interactions": session.state.get("interactions") or [],  # as stored, whatever it is
            "store": session.state.get("store", True),
            "steps": session.state.get("steps", []),
        }

    def conversation_of(self, session: StoredSession, origin: Origin) -> Conversation:
        usage = {int(k): Usage.model_validate(v, strict=True) for k, v in (session.state.get("usage") or {}).items()}
        return conversation_from_steps(session.state.get("steps", []), model=session.model, origin=origin, usage=usage)
