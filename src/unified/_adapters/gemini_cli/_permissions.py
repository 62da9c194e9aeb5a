"""The permission bridge: the CLI asks (`session/request_permission`), unified's policy answers.

One authority decides every call on every backend: the `unified.tools` policy table, the approval
mode, the caller's `on_user_input` and the "allow always" rules of the session, through a
`ToolRuntime` that only decides (`ToolRuntime.decide`, the API backends' own decision). The CLI is made
to ask before every call that can change anything (`_launch.policy_rules`); each answer is then
carried to it as ACP can:

- allow (once or always) → `proceed_once`. Never `proceed_always`: the CLI would then allow calls it
  deems the same, wider than the one call; "allow always" is a session rule of unified's instead, so
  the same call is allowed again by policy when the CLI next asks;
- deny → `cancel`; the model reads the CLI's text (`denial_text`), which is what the `tool_result` says;
- stop → `session/cancel`, the request answered `cancelled`, and `RunStopped` (the run ends `interrupted`);
- what ACP cannot carry: a changed input (an option id is all it takes) becomes a denial, since running
  the model's input would do what the user did not approve, and a denial's message does not reach the
  model; each gives a `warning(permission_answer_unsupported)`. A denial still never runs;
- a request that names no tool call (`toolCall.toolCallId`), or a call already decided (one decision per
  call), is rejected unasked, with a `malformed_line` warning;
- in a run with `max_turns` every call asks, and the first of request `max_turns` is not run: the run ends
  `max_turns` (`TurnCap`);
- a read the CLI asks about because the run's folders hold another name of a credential file
  (`_launch.credential_alias_rules`) is put to the caller although reads are allowed (`_credential_doubt`).

unified's own ask_user (`_ask_server.py`: this run's `mcp_<server>_ask_the_user`, shown as `ask_user` by the
translator) is decided like any call: the shipped `ask-user` rule allows it, so it is never a prompt; an MCP
tool of any other server, whatever its name, asks as every MCP tool does.

The request is shown with the arguments it carries (`_translate.request_args`) and the session's real
cwd, in the API backends' shape (`details.args`) plus ACP's own view (kind, title, locations, diffs).
Calls the CLI runs without asking (the read-only tools unified's table allows, everything in yolo) keep
one decision each: unified's rule when its table allows the tool without asking (`relabel`), else the
CLI's own (`decided_by="backend"`).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from unified._adapters.gemini_cli._acp import AcpConnection
from unified._adapters.gemini_cli._launch import CREDENTIAL_READERS, cli_denials, policy_tool_names
from unified._adapters.gemini_cli._translate import AcpTranslator, Item
from unified._binary.jsonrpc import as_dict, as_list
from unified.backends import RunContext
from unified.errors import RunStopped, UnifiedError
from unified.events import (
    ALLOW_ONCE,
    DENY,
    PermissionDecision,
    Question,
    UserInputRequest,
    UserInputResponse,
    WarningEvent,
)
from unified.types import ExecuteParams

if TYPE_CHECKING:  # the tool runtime (its shell parser) loads with the first run, not with the adapter
    from unified.tools import PermissionRequest, Policy, ToolCall, ToolRuntime

__all__ = ["PermissionBridge", "PermissionGate", "TurnCap", "TurnCapReached", "pick_option"]

Deliver = Callable[[Item, Any], Awaitable[None]]
CHANGED_INPUT = "the user changed the input, which the Gemini CLI cannot run (denied instead)"


def pick_option(options: list[dict[str, Any]], choice: str) -> str | None:
    """The ACP option for our decision, by its `kind` (never an `allow_always` one: see the module docstring)."""
    wanted = {ALLOW_ONCE: ("allow_once",), DENY: ("reject_once", "reject_always")}
    for kind in wanted[choice]:
        for option in options:
            if option.get("kind") == kind and isinstance(option.get("optionId"), str):
                return str(option["optionId"])
    return None


_COUNTED_CALL = re.compile(r".+__.+_\d{10,}_(?P<index>\d+)")
"""A call id 0.61 makes itself (`<tool>__<tool>_<Date.now()>_<index>`, or `..._synth_<prompt>_...`), when the model's
call has none: `index` counts the calls of one model request (`Turn.callCounter`), from 0."""


class TurnCapReached(UnifiedError):
    """The model made a call in request `max_turns`: not run, and the run ends `max_turns` (`AcpRun`)."""


class TurnCap:
    """unified's `max_turns` over ACP. 0.61 reads its own limit only from settings files (docs/backends/gemini-cli.md),
    so a run with `max_turns` has the CLI ask about every call (`_launch.Launch.policy_flags`). Over ACP the CLI runs a
    request's calls one at a time once its stream has ended, then sends the next request, checking for a cancel just
    before it: a call it waits on unified for cannot be overtaken by the next request. The first call of request
    `max_turns` is answered `cancelled` after a `session/cancel` (the stop path of `PermissionBridge.answer`), so the
    CLI sends no further request, and the run ends `max_turns` (measured on 0.61 against FakeGemini, a model calling
    read_file for ever, `max_turns=2`: 2 requests in 20 of 20 runs, the session resumed after each).

    Which request a call belongs to: a call id the CLI made (`_COUNTED_CALL`) with index 0 begins a request, a higher
    index continues it; each call the model named itself (the API gave its id) is counted as a request of its own
    (ACP shows no other sign of where a request ends), so a request with k named calls counts as k: the run may end
    before its `max_turns`-th request, never after it."""

    def __init__(self, max_turns: int) -> None:
        self.max_turns = max_turns
        self.requests = 0
        """The model requests whose calls have been asked about so far."""

    def reached(self, call_id: str) -> bool:
        """Whether the call `call_id`, asked about now, was made in request `max_turns` or later."""
        counted = _COUNTED_CALL.fullmatch(call_id)
        if counted is None or int(counted["index"]) == 0 or self.requests == 0:
            self.requests += 1
        return self.requests >= self.max_turns


class PermissionGate:
    """unified's decisions for one run: a `ToolRuntime` that decides and runs nothing (its tools are the CLI's).

    `ask` puts a prompt to the caller (None: nobody to ask, as on the API backends without
    `on_user_input`); `quiet` is the same table without anyone to ask, for the calls the CLI ran unasked.
    """

    def __init__(
        self,
        params: ExecuteParams,
        ask: Callable[[PermissionRequest], Awaitable[UserInputResponse]],
        policy: Policy | None = None,
    ) -> None:
        from unified.tools import ToolRuntime

        cwd = params.cwd.expanduser().resolve()
        common: dict[str, Any] = {
            "include_directories": params.include_directories,
            "approval_mode": params.approval_mode,
            "policy": policy,
        }
        self._asking: ToolRuntime | None = ToolRuntime(
            cwd, ask=ask if params.on_user_input is not None else None, **common
        )
        self._quiet_args = (cwd, common)
        self._quiet: ToolRuntime | None = None
        self._denials = cli_denials(policy)
        """The tools the CLI is told to deny by a `--policy` rule (`_launch.cli_denials`), by the caller's rule."""

    @property
    def runtime(self) -> ToolRuntime:
        """The runtime that decides (and asks): once the gate is closed, the quiet one (`aclose`)."""
        return self._asking if self._asking is not None else self.quiet

    @property
    def quiet(self) -> ToolRuntime:
        """The same table without anyone to ask, made at its first use: a gate is made between `session/new`
        and `session/prompt`, where a second runtime (~0.1 ms) delayed the prompt the CLI waits for, and most
        runs never relabel a decision."""
        if self._quiet is None:
            from unified.tools import ToolRuntime

            cwd, common = self._quiet_args
            self._quiet = ToolRuntime(cwd, **common)
        return self._quiet

    async def decide(self, call: ToolCall, *, unseen: bool = False, doubt: str | None = None) -> PermissionDecision:
        return await self.runtime.decide(call, unseen=unseen, doubt=doubt)

    def strictest(self, names: Sequence[str], args: Mapping[str, Any], *, unseen: bool) -> str:
        """Of the readings of one call's tool name (`_launch.policy_tool_names`: an MCP tool whose server names
        overlap), the one the policy treats most strictly (deny, then ask, then allow): fail closed, since the CLI
        does not say which server's tool it is."""
        if len(names) == 1:
            return names[0]
        from unified.tools._policy import ALIASES, STRICTNESS

        runtime = self.runtime

        def strictness(name: str) -> int:
            tool = ALIASES.get(name, name)
            return STRICTNESS[runtime.policy.evaluate(tool, args, runtime.approval_mode, unseen=unseen).decision]

        return max(names, key=strictness)

    async def relabel(self, decision: PermissionDecision) -> PermissionDecision:
        """A call the CLI ran unasked: unified's own rule when its table allows the tool without asking. A call the CLI
        refused of a tool the caller's policy denies by a `--policy` rule (`cli_denials`: the CLI does not offer
        it, or its policy denied it): that rule, `decided_by="policy"`."""
        denial = self._denials.get(decision.tool_name)
        if denial is not None and decision.decision == "deny" and decision.rule is None:
            return decision.model_copy(update={"decided_by": "policy", "rule": denial[0]})
        if decision.decided_by != "backend" or decision.decision != "allow":
            return decision
        from unified.tools import ToolCall

        verdict = await self.quiet.decide(ToolCall(decision.tool_use_id, decision.tool_name, {}))
        if verdict.decision != "allow":
            return decision
        return decision.model_copy(
            update={"decided_by": verdict.decided_by, "rule": verdict.rule, "reason": verdict.reason}
        )

    async def aclose(self) -> None:
        asking, self._asking = self._asking, None
        if asking is not None:
            await asking.aclose()
        if self._quiet is not None:
            await self._quiet.aclose()
        # The asking runtime holds the bridge's `_ask` and the bridge holds this gate: dropped here, a finished
        # run with `on_user_input` is freed at once, not left to the cycle collector.


class PermissionBridge:
    """Answers the permission requests of one ACP session with unified's decisions."""

    def __init__(
        self,
        ctx: RunContext,
        connection: AcpConnection,
        translator: AcpTranslator,
        session_id: str,
        deliver: Deliver,
        flush: Callable[[], Awaitable[None]],
        cwd: Path,
        policy: Policy | None = None,
        *,
        aliases: Sequence[str] | None = (),
        max_turns: int | None = None,
    ) -> None:
        self.ctx = ctx
        self._flush = flush
        self.connection = connection
        self.translator = translator
        self.session_id = session_id
        self._deliver = deliver
        self.cwd = cwd
        self.gate = PermissionGate(ctx.params, self._ask, policy)
        self.servers = tuple(server.name for server in ctx.params.mcp_servers)
        """The run's MCP servers, whose names tell where the CLI's `mcp_<server>_<tool>` splits."""
        self._shown: dict[str, Any] = {}
        """ACP's view of the call being asked about, added to the prompt's `details`."""
        self.aliases = aliases
        """The entries of the run's folders that are a credential file under another name (`Launch.credential_aliases`),
        whose reads the CLI asks about (`_launch.credential_alias_rules`)."""
        self.cap = TurnCap(max_turns) if max_turns is not None else None
        """The run's `max_turns`, kept here (`TurnCap`); None: the run sets none."""

    async def answer(self, request_id: Any, params: dict[str, Any], raw: Any) -> None:
        await self._flush()  # what came before the prompt goes out before it
        for item in self.translator.permission_request(params, str(self.cwd)):
            await self._deliver(item, raw)
        call = as_dict(params.get("toolCall"))
        call_id = call.get("toolCallId")
        options = [o for o in as_list(params.get("options")) if isinstance(o, dict)]
        if not isinstance(call_id, str) or not call_id or self.translator.was_decided(call_id):
            # Fail closed: the request names no call, so nobody can approve what would run; or a call decided
            # already (one decision per call: a second request is not allowed on the strength of the first).
            await self._warn(
                "unified denied a Gemini CLI permission request that names no tool call"
                if not isinstance(call_id, str) or not call_id
                else f"unified denied a second Gemini CLI permission request for {call_id}, which was decided already"
            )
            option = pick_option(options, DENY)
            refusal = {"outcome": "selected", "optionId": option} if option is not None else {"outcome": "cancelled"}
            await self.connection.respond(request_id, {"outcome": refusal})
            return
        tool_name = self.translator.tool_name(call_id)
        if tool_name == "ask_user" and call_id not in self.translator.ask_user_calls:
            await self._question(request_id, call, call_id, options)
            return
        if self.cap is not None and self.cap.reached(call_id):
            await self._stop_at_cap(request_id, call_id, self.cap.max_turns)
        args = self.translator.args_of(call_id)
        self._shown = {
            "cwd": str(self.cwd),
            "kind": call.get("kind"),
            "title": call.get("title"),
            "locations": call.get("locations") or [],
            "diffs": [c for c in as_list(call.get("content")) if isinstance(c, Mapping) and c.get("type") == "diff"],
        }
        from unified.tools import ToolCall

        # ACP shows no arguments but the shell's and the edits' (`_translate.request_args`): a rule reading them asks.
        # The policy speaks unified's names (an MCP tool's `mcp__<server>__<tool>`, the strictest reading where the
        # run's server names overlap); the events keep the CLI's.
        named = self.gate.strictest(policy_tool_names(tool_name, self.servers), args, unseen=not args)
        doubt = self._credential_doubt(tool_name)
        decision = await self.gate.decide(ToolCall(call_id, named, args), unseen=not args, doubt=doubt)
        decision = decision.model_copy(update={"tool_name": tool_name})
        if decision.decision == "allow" and decision.input is not None:
            decision = decision.model_copy(update={"decision": "deny", "input": None, "reason": CHANGED_INPUT})
            await self._unsupported(f"{tool_name}: ACP cannot run a call with a changed input; it was denied instead")
        elif decision.decision == "deny" and decision.message is not None and not decision.stops_run:
            await self._unsupported(f"{tool_name}: ACP cannot pass the denial's message to the model; it was not sent")
        self.translator.mark_decided(call_id)
        await self.ctx.emit(decision.model_copy(update={"session_id": self.session_id}))
        if decision.stops_run:
            # Cancel first, then answer `cancelled` (ACP's order): a plain rejection would let the CLI
            # send the denial to the model before the cancel arrives.
            await self.connection.notify("session/cancel", {"sessionId": self.session_id})
            await self.connection.respond(request_id, {"outcome": {"outcome": "cancelled"}})
            raise RunStopped(f"the user stopped the run at {tool_name} ({call_id})", hint="resume the session to go on")
        option = pick_option(options, ALLOW_ONCE if decision.decision == "allow" else DENY)
        outcome: dict[str, Any] = (
            {"outcome": "selected", "optionId": option} if option is not None else {"outcome": "cancelled"}
        )
        await self.connection.respond(request_id, {"outcome": outcome})
        if decision.decision == "deny":
            for item in self.translator.denied(call_id):
                await self._deliver(item, raw)

    async def _stop_at_cap(self, request_id: Any, call_id: str, max_turns: int) -> NoReturn:
        """The call of request `max_turns` (`TurnCap`): denied as not run, the prompt cancelled before the CLI is
        answered (ACP's order: it then sends no further request), and the run ends `max_turns`."""
        reason = f"not run: the run reached max_turns={max_turns}"
        self.translator.mark_decided(call_id)
        await self.ctx.emit(self.translator.decided(call_id, "deny", "backend", reason))
        await self.connection.notify("session/cancel", {"sessionId": self.session_id})
        await self.connection.respond(request_id, {"outcome": {"outcome": "cancelled"}})
        raise TurnCapReached(f"stopped after max_turns={max_turns} model requests; the last turn's calls were not run")

    def _credential_doubt(self, tool_name: str) -> str | None:
        """Why a read the CLI asks about is asked although unified's table allows reads: the run's folders hold
        another name of a credential file (`aliases`), the only reason the CLI asks for these reads but a caller's
        rule. ACP's request for a read carries no arguments, so which file it reads is not known: asked, never
        allowed by the read-only rule."""
        if tool_name not in (*CREDENTIAL_READERS, "read_file") or self.aliases == ():
            return None
        if self.aliases is None:
            return "the workspace holds too many entries to tell whether this read reaches a credential file"
        shown = ", ".join(self.aliases[:3]) + (", ..." if len(self.aliases) > 3 else "")
        return (
            f"the workspace holds another name of a credential file ({shown}: a hard link or a link to one), "
            "which this read may reach, so unified does not read it unasked"
        )

    async def _ask(self, request: PermissionRequest) -> UserInputResponse:
        """The prompt as the API backends put it (`PermissionRequest.to_event`), with ACP's view and the cwd."""
        event = request.to_event(f"permission-{request.call.id}")
        details = {**event.details, **self._shown}
        return await self.ctx.ask_user(event.model_copy(update={"details": details, "session_id": self.session_id}))

    async def _question(self, request_id: Any, call: Mapping[str, Any], call_id: str, options: list[Any]) -> None:
        """The model's `ask_user` (0.61 registers none over ACP; kept for a CLI that does)."""
        from unified.tools._ask_user import shown_question  # escaped as the permission prompts are

        title = str(call.get("title") or "ask_user")
        request = UserInputRequest(
            request_id=f"{self.session_id}:{request_id}",
            source="model-tool",
            questions=[shown_question(Question(id="answer", prompt=title))],
            tool_use_id=call_id or None,
            tool_name="ask_user",
            details={k: call[k] for k in ("kind", "locations", "content") if k in call},
            session_id=self.session_id,
        )
        reply = await self.ctx.ask_user(request)
        answered = not reply.cancelled and bool(reply.answers)
        if call_id:
            await self.ctx.emit(
                self.translator.decided(
                    call_id, "allow" if answered else "deny", "user" if answered else "policy", None
                )
            )
        option = pick_option(options, ALLOW_ONCE if answered else DENY)
        outcome = {"outcome": "selected", "optionId": option} if option is not None else {"outcome": "cancelled"}
        await self.connection.respond(request_id, {"outcome": outcome})
        if not answered and call_id:
            for item in self.translator.denied(call_id):
                await self._deliver(item, None)

    async def _warn(self, message: str) -> None:
        await self.ctx.emit(WarningEvent(code="malformed_line", message=message, session_id=self.session_id))

    async def _unsupported(self, message: str) -> None:
        await self.ctx.emit(
            WarningEvent(code="permission_answer_unsupported", message=message, session_id=self.session_id)
        )

    async def aclose(self) -> None:
        await self.gate.aclose()
