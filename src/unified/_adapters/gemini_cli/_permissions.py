"""The permission bridge: ACP `session/request_permission` → the caller's `on_user_input` → the answer.

Whoever decides (the user through `on_user_input`, else the approval mode) is reported in a
`permission_decision`; the ACP option is picked by its `kind` (ids differ between agents). The
CLI sends nothing more for a call we reject, so its error `tool_result` is made here.

ACP's answer is only an option id: it cannot change the call's input nor carry a message to the
model. An answer with `updated_input` is therefore a denial (running the model's input instead
would do what the user did not approve) and a denial's `message` reaches the stream but not the
model; each gives a `warning(permission_answer_unsupported)`. `stop` rejects the call and raises
`RunStopped`: the prompt is cancelled (`session/cancel`, then the request answered `cancelled`) and
the run ends `interrupted`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from unified._adapters.gemini_cli._acp import AcpConnection
from unified._adapters.gemini_cli._translate import AcpTranslator, Item, tool_name_from_call_id
from unified._binary.jsonrpc import as_dict
from unified.backends import RunContext
from unified.errors import RunStopped
from unified.events import (
    ALLOW_ALWAYS,
    ALLOW_ONCE,
    DENY,
    Question,
    UserInputRequest,
    UserInputResponse,
    WarningEvent,
    permission_request,
)
from unified.tools import protected_path
from unified.types import ApprovalMode, ExecuteParams

__all__ = ["PermissionBridge", "mode_allows", "pick_option"]

Deliver = Callable[[Item, Any], Awaitable[None]]


def mode_allows(mode: ApprovalMode, kind: object) -> bool:
    """What the approval mode decides without asking: auto_edit's edits (the CLI runs in its default
    mode then, see `_session_setup.ACP_MODES`), everything in yolo; a protected write is asked."""
    if mode == "yolo":
        return True
    if mode == "auto_edit":
        return kind == "edit"
    return False


def protected_target(call: Mapping[str, Any], params: ExecuteParams) -> str | None:
    """Why an edit the CLI asks about writes a protected path (`unified.tools.protected_path`),
    from the paths of its `locations` and diff `content`; None when none is protected."""
    if call.get("kind") != "edit":
        return None
    paths = [as_dict(item).get("path") for item in [*(call.get("locations") or []), *(call.get("content") or [])]]
    roots = [Path(os.path.realpath(d)) for d in (params.cwd, *params.include_directories)]
    for raw in paths:
        if isinstance(raw, str) and raw:
            real = Path(os.path.realpath(Path(params.cwd, raw)))
            pattern = protected_path(real, roots)
            if pattern is not None:
                return f"{raw} is a protected path ({pattern}): writing it changes what runs later"
    return None


def pick_option(options: list[dict[str, Any]], choice: str) -> str | None:
    """The ACP option for our decision, by its `kind`."""
    wanted = {
        ALLOW_ONCE: ("allow_once",),
        ALLOW_ALWAYS: ("allow_always", "allow_once"),
        DENY: ("reject_once", "reject_always"),
    }
    for kind in wanted[choice]:
        for option in options:
            if option.get("kind") == kind and isinstance(option.get("optionId"), str):
                return str(option["optionId"])
    return None


class PermissionBridge:
    """Answers the permission requests of one ACP session."""

    def __init__(
        self,
        ctx: RunContext,
        connection: AcpConnection,
        translator: AcpTranslator,
        session_id: str,
        deliver: Deliver,
        flush: Callable[[], Awaitable[None]],
    ) -> None:
        self.ctx = ctx
        self._flush = flush
        self.connection = connection
        self.translator = translator
        self.session_id = session_id
        self._deliver = deliver

    async def answer(self, request_id: Any, params: dict[str, Any], raw: Any) -> None:
        await self._flush()  # what came before the prompt goes out before it
        for item in self.translator.permission_request(params):
            await self._deliver(item, raw)
        call = as_dict(params.get("toolCall"))
        call_id = str(call.get("toolCallId", ""))
        tool_name = self.translator.tool_name(call_id) if call_id else tool_name_from_call_id("", call.get("kind"))
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        is_question = tool_name == "ask_user"
        run_params = self.ctx.params
        decided_by: Literal["user", "approval_mode"] = "approval_mode"
        choice: str = DENY
        reply: UserInputResponse | None = None
        guarded = None if run_params.approval_mode == "yolo" else protected_target(call, run_params)
        by_mode = guarded is None and mode_allows(run_params.approval_mode, call.get("kind"))
        if run_params.on_user_input is not None and not (by_mode and run_params.approval_mode == "auto_edit"):
            question = self._question(request_id, call, call_id, tool_name, is_question, guarded)
            reply = await self.ctx.ask_user(question)
            if not reply.cancelled:
                decided_by = "user"
                choice = ALLOW_ONCE if is_question and reply.answers else reply.permission()
            else:
                reply = None
        if decided_by == "approval_mode":
            choice = ALLOW_ONCE if by_mode else DENY
        reason = None if decided_by == "user" else f"approval mode {run_params.approval_mode}"
        if guarded is not None and decided_by == "approval_mode":
            reason = f"{guarded}; it needs approval and nobody answered"
        if reply is not None and not is_question and choice != DENY and reply.updated_input is not None:
            choice, reason = DENY, "the user changed the input, which the Gemini CLI cannot run (denied instead)"
            await self._unsupported(
                f"{tool_name}: ACP cannot run a call with a changed input; the call was denied instead"
            )
        message = reply.message if reply is not None and choice == DENY else None
        if message is not None:
            await self._unsupported(f"{tool_name}: ACP cannot pass the denial's message to the model; it was not sent")
        stops = reply is not None and reply.stop
        option = pick_option(options, choice)
        if call_id:
            decision = self.translator.decided(
                call_id,
                "deny" if choice == DENY else "allow",
                decided_by,
                "the user stopped the run" if stops else reason,
                message=message,
                stops_run=stops,
            )
            await self.ctx.emit(decision)
        if stops:
            # Cancel first, then answer `cancelled` (ACP's order): a plain rejection would let the CLI
            # send the denial to the model before the cancel arrives.
            await self.connection.notify("session/cancel", {"sessionId": self.session_id})
            await self.connection.respond(request_id, {"outcome": {"outcome": "cancelled"}})
            raise RunStopped(f"the user stopped the run at {tool_name} ({call_id})", hint="resume the session to go on")
        outcome: dict[str, Any] = (
            {"outcome": "selected", "optionId": option} if option is not None else {"outcome": "cancelled"}
        )
        await self.connection.respond(request_id, {"outcome": outcome})
        if choice == DENY and call_id:
            for item in self.translator.denied(call_id, f"denied ({decided_by.replace('_', ' ')})"):
                await self._deliver(item, raw)

    async def _unsupported(self, message: str) -> None:
        await self.ctx.emit(
            WarningEvent(code="permission_answer_unsupported", message=message, session_id=self.session_id)
        )

    def _question(
        self,
        request_id: Any,
        call: Mapping[str, Any],
        call_id: str,
        tool_name: str,
        is_question: bool,
        guarded: str | None = None,
    ) -> UserInputRequest:
        title = str(call.get("title") or tool_name)
        details = {k: call[k] for k in ("kind", "locations", "content") if k in call}
        if is_question:
            return UserInputRequest(
                request_id=f"{self.session_id}:{request_id}",
                source="model-tool",
                questions=[Question(id="answer", prompt=title)],
                tool_use_id=call_id or None,
                tool_name=tool_name,
                details=details,
                session_id=self.session_id,
            )
        note = f"\nIt writes a protected path: {guarded}." if guarded else ""
        return permission_request(
            f"{self.session_id}:{request_id}",
            f"Allow {tool_name}: {title}?{note}",
            tool_use_id=call_id or None,
            tool_name=tool_name,
            details=details,
            session_id=self.session_id,
        )
