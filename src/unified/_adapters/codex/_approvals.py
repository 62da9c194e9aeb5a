"""The approval bridge: Codex's requests to the client → the caller's policy and `on_user_input` → the answer.

The run starts every thread with `approvalPolicy: "untrusted"`, under which Codex 0.171 asks before
*every* command and every patch, and (with `default_tools_approval_mode = "prompt"`) every MCP tool
call; so nothing that can change anything runs unless this bridge says so. Accepted calls run
outside Codex's sandbox: "allow" means allow.

Who decides (one `permission_decision` per call):

- `policy`: a read-only command (Codex's own parse of it, `commandActions`, is only `read`,
  `listFiles` and `search`, and unified's own parse agrees: `unified.tools._read_only`) runs without asking,
  in every mode; in `plan` mode everything else is denied, an MCP tool its server marks `readOnlyHint` too
  (the server's own claim, which a hostile server makes of a tool that writes: asked as on the other backends);
- `approval_mode`: `yolo` allows everything, `auto_edit` allows patches; and when nobody answers
  (no `on_user_input`, a timeout) the mode decides as elsewhere (default denies). A patch that writes a
  protected path or a path outside the workspace (docs/tools.md, "Protected paths"; a move's destination
  too), whose files the request does not show, or that asks for a writable root (`grantRoot`) is asked
  in auto_edit as in default mode (rule `protected-paths`; denied when nobody answers);
- `user`: `on_user_input` answered the permission prompt.

Answers: allow → `accept`; allow always → `acceptForSession` (Codex then runs that exact command
line, or patches to those files, without asking, for as long as this run's process lives); deny →
`decline`, and a denial's message reaches the model as a steer of the running turn
(`turn/steer`), right after the refusal; stop → `cancel` (Codex ends the turn `interrupted`) and
the run ends `interrupted`. A changed input cannot be: Codex's answers carry no command or patch
(extra fields are ignored and the original would run), so such an answer is a **denial** with a
`permission_answer_unsupported` warning, never a silent run of the original.
Never `acceptWithExecpolicyAmendment`: it writes a permanent rule into CODEX_HOME.
An approval request that does not say what would run (no string `itemId`, a `command` that is not text,
an MCP approval naming no server), or that cannot be judged (a command longer than bash can be given, a
patch of more files than are judged one by one), or that is about another command, directory or kind of call
than Codex announced under its `itemId`, is declined unasked, with a `malformed_line` warning, and its call
reported denied; so is a second request about a call already decided (one decision per call).
"""

from __future__ import annotations

import fnmatch
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from unified import _limits as limits
from unified._adapters.codex._translate import AppServerTranslator, tool_call_of, unwrap_shell
from unified._binary.jsonrpc import JsonRpcConnection, RpcError, as_dict, as_list
from unified._redaction import clip
from unified.backends import RunContext, refusal
from unified.errors import RunStopped
from unified.events import (
    ALLOW_ALWAYS,
    ALLOW_ONCE,
    DENY,
    PermissionDecision,
    Question,
    QuestionOption,
    ToolResult,
    ToolUse,
    UserInputRequest,
    WarningEvent,
    permission_request,
)

if TYPE_CHECKING:  # the tool runtime loads with the first approval, not with the adapter
    from unified.tools import Policy
    from unified.tools._paths import Workspace
    from unified.types import ApprovalMode

__all__ = ["CODEX_SUBAGENT_TOOL", "READ_ONLY_ACTIONS", "ApprovalBridge", "subagents_refused"]

UNCOVERED = "none (no rule covers it)"
"""The rule a decision names when no rule of the caller's policy covers the call (`_user_verdict`)."""

CODEX_SUBAGENT_TOOL = "spawn_agent"
"""Codex's subagent tool, as its `tool_use` names it. The policy reads it as `invoke_agent` (as Claude Code's
`Agent`: the shipped `delegate` row allows it), and a user rule may name it by Codex's own name too."""


def subagents_refused(policy: Policy, mode: ApprovalMode) -> str | None:
    """The rule of `policy` that may deny or ask for a subagent in `mode` (`unasked_refusal` of `invoke_agent`, or a
    user rule naming `spawn_agent`), else None: Codex spawns one without asking anyone, so then the thread must not
    have the tools."""
    from unified.tools._policy import USER_TIER, Decision, unasked_refusal

    refusal = unasked_refusal(policy, "invoke_agent", mode)
    if refusal is not None:
        return refusal
    verdict = policy.evaluate(CODEX_SUBAGENT_TOOL, {}, mode, unseen=True)
    rule = verdict.rule
    return (
        rule.name
        if rule is not None and rule.priority >= USER_TIER and verdict.decision is not Decision.ALLOW
        else None
    )


READ_ONLY_ACTIONS = frozenset({"read", "listFiles", "search"})
METHOD_NOT_FOUND = -32601
Kind = Literal["command", "file", "mcp"]
Choice = Literal["allow_once", "allow_always", "deny"]


def _read_only_command(params: dict[str, Any]) -> bool:
    """Whether Codex's parse of the command (`commandActions`) is only reads, listings and searches, and
    unified's own parse agrees (`unified.tools._read_only`): Codex's names the program, not what its options
    do, and called `find . -delete`, `rg --pre ./x` and `cat a | tee x` reads. A command Codex runs in an
    environment other than this machine's (`environmentId`, `local` in 0.171) is no read of the workspace."""
    if params.get("environmentId") not in (None, "local"):  # run elsewhere: what it reads is not the workspace's
        return False
    actions = [a for a in as_list(params.get("commandActions")) if isinstance(a, dict)]
    if not actions or not all(isinstance(a.get("type"), str) and a["type"] in READ_ONLY_ACTIONS for a in actions):
        return False
    command = params.get("command")
    if not isinstance(command, str):
        return False
    from unified.tools._read_only import not_read_only

    return not_read_only(unwrap_shell(command)) is None


def _read_paths(params: dict[str, Any], cwd: str) -> list[str]:
    """Where a read-only command reads: its directory, each path Codex's parse names, and each word of the
    command that may be a path (`_read_only.operands`: Codex's parse names one path of `nl a /etc/x`), all
    from that directory."""
    from unified.tools._read_only import operands

    given = params.get("cwd")
    where = given if isinstance(given, str) and given else cwd
    actions = [a for a in as_list(params.get("commandActions")) if isinstance(a, dict)]
    named = [a["path"] for a in actions if isinstance(a.get("path"), str) and a["path"]]
    command = params.get("command")
    words = operands(unwrap_shell(command)) if isinstance(command, str) else []
    return [where, *(os.path.join(where, path) for path in [*named, *words])]


def _item_id(params: dict[str, Any]) -> str:
    """The item an approval is about; "" when the request names none (a non-string id names nothing)."""
    item_id = params.get("itemId")
    return item_id if isinstance(item_id, str) else ""


def _unreadable(kind: Kind, params: dict[str, Any], call_id: str) -> str | None:
    """Why an approval request does not say what would run (then it is declined), else None."""
    if kind == "mcp":
        # The server is named; the tool often is not (`_meta` may carry only `tool_params`, the tool's name
        # being in the request's prose): a request without it is still asked, as its server's tool.
        if not (isinstance(params.get("serverName"), str) and params["serverName"]):
            return "no MCP server named"
        # Round 41: one matching no call Codex started was decided with no event (`permission_decision` names a
        # call): in yolo, or by a rule, allowed unseen. What it would run is no call the run has shown.
        return None if call_id else "it matches no MCP tool call Codex started (server, tool and arguments)"
    if not call_id:
        return "no itemId"
    if kind == "command" and "command" in params and not isinstance(params["command"], str):
        return "a command that is not text"
    return None


class ApprovalBridge:
    """Answers the requests Codex sends during one run (every thread of it)."""

    def __init__(
        self,
        ctx: RunContext,
        connection: JsonRpcConnection,
        translator: AppServerTranslator,
        policy: Policy | None = None,
    ) -> None:
        self.ctx = ctx
        self.connection = connection
        self.translator = translator
        self.policy = policy
        """The caller's policy: its user rules decide before the table of `_policy` (`_user_verdict`)."""
        self.capped = False
        """A call of the model's request `max_turns` was refused, the turn cancelled: the run ends `max_turns`."""

    async def answer(self, message: dict[str, Any]) -> None:
        method = str(message.get("method"))
        request_id = message["id"]
        params = as_dict(message.get("params"))
        if method == "item/commandExecution/requestApproval":
            await self._approve(request_id, params, "command", _item_id(params))
        elif method == "item/fileChange/requestApproval":
            await self._approve(request_id, params, "file", _item_id(params))
        elif method == "mcpServer/elicitation/request":
            meta = as_dict(params.get("_meta"))
            if meta.get("codex_approval_kind") == "mcp_tool_call":
                await self._approve(request_id, params, "mcp", self._mcp_call(params))
            else:
                await self._elicitation(request_id, params)
        elif method == "item/tool/requestUserInput":
            await self._user_input(request_id, params)
        else:
            # Never leave a request pending: Codex would wait for it (the turn stays `waitingOnApproval`).
            await self.connection.respond_error(request_id, METHOD_NOT_FOUND, f"unified does not handle {method}")

    # --- permission ---------------------------------------------------------------------------------

    async def _cap(self, request_id: Any, kind: Kind, call_id: str, name: str, cap: int) -> None:
        """A call of the model's request `cap` (or a later one): answering it would have Codex send request `cap` + 1
        with its result, so it is not run and the turn is cancelled (`cancel`: Codex ends the turn at once and sends
        nothing more). Codex asks before every command, patch and MCP call, so none runs past the cap."""
        if call_id:
            reason = f"not run: the run reached max_turns={cap}"
            await self._refused(call_id, name, reason, None, rule="max_turns", stops_run=True)
        self.capped = True
        await self._respond(request_id, kind, "cancel")

    async def _refused(
        self,
        call_id: str,
        name: str,
        reason: str,
        task: str | None,
        *,
        rule: str | None = None,
        stops_run: bool = False,
    ) -> None:
        """Report `call_id` denied by unified for a reason of its own, not a user's (`reason`: its result too)."""
        self.translator.decided.add(call_id)
        self.translator.not_run[call_id] = reason
        await self.ctx.emit(
            refusal(call_id, name, reason, decided_by="policy", rule=rule, stops_run=stops_run, subagent_task_id=task)
        )

    def _mcp_call(self, params: dict[str, Any]) -> str:
        """An MCP approval names no item: the open mcpToolCall of that server, tool and arguments."""
        meta = as_dict(params.get("_meta"))
        for item in reversed(self.translator.open_calls()):
            if (
                item.get("type") == "mcpToolCall"
                and item.get("server") == params.get("serverName")
                and item.get("tool") == meta.get("tool_name")
                and (meta.get("tool_params") is None or item.get("arguments") == meta.get("tool_params"))
            ):
                return str(item.get("id"))
        return ""

    def _unjudged(self, kind: Kind, params: dict[str, Any], call_id: str) -> str | None:
        """Why a readable approval request is declined unjudged, else None: a patch of more files than are judged one
        by one; a command longer than bash can be given (Linux refuses to start it: Codex answers "Argument list too
        long"), which the policy's parse would read on the event loop for seconds; a command approval of another kind
        than a command to start (`writeStdin`: 0.171 asked none for the model's input, measured; `humanCommand`, for
        a human alone whatever the mode, needs a capability unified does not declare); a request about a call other than
        the one Codex announced under that id (Codex 0.171 starts the item, with the very command and directory it
        asks about, right before the request), so that the call reported and the call decided could differ."""
        item = self.translator.item(call_id)
        if kind == "file":
            files = len(as_list(as_dict(item).get("changes")))
            if files > limits.MAX_PATCH_FILES:
                return f"a patch of {files:,} files, more than the {limits.MAX_PATCH_FILES:,} it judges one by one"
        if kind == "mcp":
            return None
        asked = params.get("kind", "command")
        if kind == "command" and asked not in ("command", None):
            # Codex 0.171's other kinds: input to a running terminal, a checkpoint only a human may answer
            return f"an approval of kind {clip(str(asked), 40)!r}, not of a command to start"
        command = params.get("command") or as_dict(item).get("command")  # the one judged (`_policy_calls`)
        if kind == "command" and isinstance(command, str) and (size := limits.command_too_long(command)):
            return f"a command of {size:,} bytes, more than bash can be given ({limits.MAX_SHELL_COMMAND_BYTES:,})"
        if item is None:
            return None
        announced = item.get("type")
        if announced != ("commandExecution" if kind == "command" else "fileChange"):
            return f"a {kind} approval about {call_id}, which Codex announced as {clip(str(announced), 40)}"
        for key in ("command", "cwd") if kind == "command" else ():
            if key in params and params[key] != item.get(key):
                return f"a {key} other than the one Codex announced for {call_id}"
        return None

    async def _announce(self, call_id: str, params: dict[str, Any], kind: Kind, task: str | None) -> str:
        """The call's tool name, emitting its `tool_use` first if Codex asked before announcing it."""
        if call_id and call_id in self.translator.tools:
            return self.translator.tools[call_id]
        if kind == "command":
            name, arguments = "exec_command", {"cmd": unwrap_shell(str(params.get("command") or ""))}
        elif kind == "file":
            name, arguments = "apply_patch", {}
        else:
            meta = as_dict(params.get("_meta"))
            name = f"mcp__{params.get('serverName')}__{meta.get('tool_name')}"
            arguments = as_dict(meta.get("tool_params"))
        if call_id:
            self.translator.tools[call_id] = name
            await self.ctx.emit(ToolUse(tool_use_id=call_id, name=name, input=arguments, subagent_task_id=task))
        return name

    def workspace(self) -> Workspace:
        """Where Codex works: its thread's cwd (as Codex reports it: a replay's is the recording's), and the
        run's include directories."""
        from unified.tools._paths import Workspace

        root = Path(self.translator.cwd) if self.translator.cwd else self.ctx.params.cwd.expanduser()
        return Workspace(root, self.ctx.params.include_directories)

    async def _guarded(self, params: dict[str, Any], call_id: str) -> str | None:
        """Why auto_edit must not approve this patch unasked (see the module docstring), or None."""
        from unified.tools._runtime import protected_write

        if params.get("grantRoot") is not None:
            return f"the patch asks for write access to {clip(str(params['grantRoot']), 200, more='…')}"
        item = self.translator.item(call_id) or {}
        changes = [as_dict(c) for c in as_list(item.get("changes"))]
        if not changes:
            return "the request does not show the patch's files"
        workspace = self.workspace()
        for change in changes:
            what = change.get("kind")
            if not isinstance(what, dict) or what.get("type") not in ("add", "delete", "update"):
                # a move's destination is in an update's `kind`: an unknown one may hide a write elsewhere
                return f"the request does not show what the patch does to {clip(str(change.get('path')), 200)}"
            move = what.get("move_path")
            for path in (change.get("path"), *(() if move is None else (move,))):
                if not isinstance(path, str) or not path:
                    return "the request does not show the patch's files"
                guarded = await protected_write(
                    "apply_patch",
                    {"file_path": path},
                    workspace,
                    os.environ.get("PATH", ""),  # Codex runs with the host's PATH (`_launch`)
                    edit=True,
                    elsewhere=True,
                )
                if guarded is not None:
                    return guarded
        return None

    async def _reads_outside(self, params: dict[str, Any]) -> str | None:
        """Why a read-only command must be asked all the same: it runs, or reads, outside the workspace."""
        from unified.tools._runtime import read_outside

        workspace = self.workspace()
        outside = await read_outside(workspace, _read_paths(params, str(workspace.root)))
        command = params.get("command")
        if outside is not None or not isinstance(command, str):
            return outside
        # inside the workspace all the same: a hard link to `~/.netrc` (`grep -r pass docs`, `cat docs/*`), round 18
        from unified.tools import _protected, _shell_syntax

        where = params.get("cwd")
        cwd = Path(where) if isinstance(where, str) and where else workspace.root
        parts = _shell_syntax.parse(unwrap_shell(command))
        return await anyio.to_thread.run_sync(_protected.credential_read, parts, cwd, workspace.roots)

    def _policy(
        self, kind: Kind, params: dict[str, Any], guarded: str | None, read_only: bool
    ) -> tuple[Choice | None, str | None, str | None]:
        """(choice, decided_by, rule) when no one needs to be asked; (None, None, None) to ask. `read_only`: a
        command both Codex's parse and unified's call a read (`_read_only_command`)."""
        mode = self.ctx.params.approval_mode
        if read_only and guarded is None:
            return "allow_once", "policy", "read-only command (Codex's parse and unified's: reads, listings, searches)"
        if mode == "plan":
            return "deny", "policy", "plan mode: only read-only calls run"
        if mode == "yolo" or (mode == "auto_edit" and kind == "file" and guarded is None):
            return "allow_once", "approval_mode", None
        return None, None, None

    def _policy_calls(self, kind: Kind, params: dict[str, Any], call_id: str) -> list[tuple[str, dict[str, Any]]]:
        """The call as the policy reads it (unified's tool names, `run_shell_command` {command, dir_path when it runs
        elsewhere than the thread's cwd}, `write_file` /
        `edit_file` {file_path} per file of a patch, `mcp__<server>__<tool>` {its arguments}); an empty argument
        mapping where the request does not show them (then a rule reading them may apply: `Policy.evaluate`)."""
        if kind == "command":
            command = params.get("command") or as_dict(self.translator.item(call_id)).get("command")
            if not isinstance(command, str):
                return [("run_shell_command", {})]
            shell: dict[str, Any] = {"command": unwrap_shell(command)}
            where = params.get("cwd")
            if isinstance(where, str) and where and Path(where) != self.workspace().root:
                shell["dir_path"] = where  # as the runtime's shell names it, judged through links too
            return [("run_shell_command", shell)]
        if kind == "file":
            calls: list[tuple[str, dict[str, Any]]] = []
            for change in as_list(as_dict(self.translator.item(call_id)).get("changes")):
                kind_of = as_dict(as_dict(change).get("kind"))
                path, move = as_dict(change).get("path"), kind_of.get("move_path")
                tool = "write_file" if kind_of.get("type") == "add" else "edit_file"
                calls += [(tool, {"file_path": path})] if isinstance(path, str) and path else [(tool, {})]
                calls += [("write_file", {"file_path": move})] if isinstance(move, str) and move else []
            return calls or [("edit_file", {})]
        meta = as_dict(params.get("_meta"))
        arguments = meta.get("tool_params")
        name = f"mcp__{params.get('serverName')}__{meta.get('tool_name') or ''}"
        return [(name, arguments if isinstance(arguments, dict) else {})]

    async def _user_verdict(self, kind: Kind, params: dict[str, Any], call_id: str) -> tuple[bool, str, str] | None:
        """What the caller's user rules say of the call, when one decides it (or may: `Policy.evaluate`'s doubt):
        (denied, the rule, why); a deny of any part outranks an ask. A call no rule of the policy covers at all (one
        built without the shipped table, `Policy().with_toml(...)`) is asked too: the table's own unasked reads stand
        for the shipped rows, not for a policy without them. None: no user rule decides (an allow leaves the call to
        `_policy`'s table, which may still ask: the policy and Codex's own checks must both allow it)."""
        if self.policy is None:
            return None
        from unified.tools._policy import USER_TIER, Decision
        from unified.tools._runtime import linked_verdict

        mode = self.ctx.params.approval_mode
        workspace = self.workspace()
        found: tuple[bool, str, str] | None = None
        for tool, arguments in self._policy_calls(kind, params, call_id):
            if tool.endswith("__") and kind == "mcp":  # the request names no tool: any rule for the server's may apply
                unnamed = self._unnamed_mcp_rule(tool, mode)
                if unnamed is not None:
                    found = found or (False, unnamed, f"rule {unnamed} may apply to the MCP tool Codex does not name")
                continue
            verdict = await linked_verdict(self.policy, workspace, tool, arguments, mode, unseen=not arguments)
            rule = verdict.rule
            if rule is None and verdict.decision is Decision.ASK_USER:
                found = found or (False, UNCOVERED, f"no rule of the policy covers {tool} in {mode} mode")
                continue
            if rule is None or rule.priority < USER_TIER or verdict.decision is Decision.ALLOW:
                continue
            if verdict.decision is Decision.DENY:
                return True, rule.name, verdict.doubt or f"rule {rule.name} denies it in {mode} mode"
            found = found or (False, rule.name, verdict.doubt or f"rule {rule.name} asks for it in {mode} mode")
        return found

    def _unnamed_mcp_rule(self, prefix: str, mode: ApprovalMode) -> str | None:
        """A user rule that denies or asks for some tool of the server `prefix` (`mcp__<server>__`) names, for an MCP
        approval that does not say which tool (`_meta` may carry only its arguments): it may apply, so it is asked."""
        from unified.tools._policy import USER_TIER, Decision

        assert self.policy is not None
        for rule in self.policy.rules:
            if rule.priority < USER_TIER or rule.decision is Decision.ALLOW:
                continue
            if rule.modes is not None and mode not in rule.modes:
                continue
            if any(
                fnmatch.fnmatchcase(prefix, name) or fnmatch.fnmatchcase(name, prefix + "*") for name in rule.tool_names
            ):
                return rule.name
        return None

    def _prompt(
        self,
        request_id: Any,
        call_id: str,
        name: str,
        kind: Kind,
        params: dict[str, Any],
        task: str | None,
        guarded: str | None = None,
    ) -> UserInputRequest:
        item = self.translator.item(call_id) or {}
        details: dict[str, Any] = {"kind": kind}
        if kind == "command":
            text = unwrap_shell(str(params.get("command") or item.get("command") or ""))
            details |= {"command": text, "cwd": params.get("cwd") or item.get("cwd")}
            if params.get("reason"):
                details["reason"] = params["reason"]
            prompt = f"Allow the command `{text}`?" + (f"\nIt needs approval: {guarded}." if guarded else "")
        elif kind == "file":
            _, arguments = tool_call_of(item, self.translator.cwd) if item else ("apply_patch", {"changes": []})
            details |= arguments
            paths = ", ".join(str(as_dict(c).get("path")) for c in as_list(arguments.get("changes")))
            prompt = f"Allow changes to {paths or 'files'}?" + (f"\nIt needs approval: {guarded}." if guarded else "")
        else:
            meta = as_dict(params.get("_meta"))
            details |= {
                "server": params.get("serverName"),
                "tool": meta.get("tool_name"),
                "arguments": meta.get("tool_params"),
            }
            prompt = str(params.get("message") or f"Allow {name}?")
        clean = json.loads(json.dumps(details, default=str))
        from unified.tools._paths import shown_prompt  # the tool runtime's escape; it loads with the first approval

        return permission_request(
            f"{self.translator.main_thread}:{request_id}",
            shown_prompt(prompt),  # round 39: a command's U+202E, a path's U+200D showed as nothing
            tool_use_id=call_id or None,
            tool_name=name,
            details=clean,
        ).model_copy(update={"subagent_task_id": task})

    async def _approve(self, request_id: Any, params: dict[str, Any], kind: Kind, call_id: str) -> None:
        task = self.translator.task_of(params.get("threadId"))
        unreadable = _unreadable(kind, params, call_id) or self._unjudged(kind, params, call_id)
        if unreadable is not None:
            # Fail closed: what would run is unknown, so nobody can approve it.
            text = f"unified declined a Codex approval request it cannot read ({unreadable})"
            await self.ctx.emit(WarningEvent(code="malformed_line", message=text, subagent_task_id=task))
            if call_id and call_id not in self.translator.decided:
                # its call is reported denied: its item's end (declined) read as a call Codex "ran without asking"
                await self._refused(call_id, await self._announce(call_id, params, kind, task), text, task)
            await self._respond(request_id, kind, "decline")
            return
        if call_id in self.translator.decided:
            # Fail closed: a call has one decision, given; a second request about it is not allowed on its strength.
            text = f"unified declined a second Codex approval request for {call_id}, which was decided already"
            await self.ctx.emit(WarningEvent(code="malformed_line", message=text, subagent_task_id=task))
            await self._respond(request_id, kind, "decline")
            return
        name = await self._announce(call_id, params, kind, task)
        cap = self.ctx.params.max_turns
        if cap is not None and task is None and (self.capped or self.translator.request_of(call_id) >= cap):
            await self._cap(request_id, kind, call_id, name, cap)
            return
        mode = self.ctx.params.approval_mode
        guarded = None
        user = None
        choice: Choice | None
        decided_by: str | None
        rule: str | None
        reason: str | None
        excluded = self._excluded(name, kind, params, call_id)
        if excluded is not None:  # Codex cannot stop offering it: every call of it is refused here, in every mode
            choice, decided_by, rule = "deny", "policy", "excluded_tools"
            reason = f"the run's excluded_tools names {excluded}"
        else:
            read_only = kind == "command" and _read_only_command(params)  # judged once: it parses the command
            if kind == "file" and mode == "auto_edit":
                guarded = await self._guarded(params, call_id)
            elif read_only and mode != "yolo":
                guarded = await self._reads_outside(params)
            choice, decided_by, rule = self._policy(kind, params, guarded, read_only)
            reason = None
            user = await self._user_verdict(kind, params, call_id)
            if user is not None:  # a user rule outranks the table: its denial stands, its ask is asked in every mode
                denied, rule, reason = user
                choice, decided_by = ("deny", "policy") if denied else (None, None)
        message = None
        stop = False
        warn = None
        if choice is None:
            reply = None
            if self.ctx.params.on_user_input is not None:
                reply = await self.ctx.ask_user(self._prompt(request_id, call_id, name, kind, params, task, guarded))
                if reply.cancelled:
                    reply = None
            if reply is None:
                decided_by = "approval_mode"
                choice = "allow_once" if mode == "yolo" or (mode == "auto_edit" and kind == "file") else "deny"
                reason = f"approval mode {mode} (nobody answered)"
                if guarded is not None:
                    decided_by, choice = "policy", "deny"
                    rule = "protected-paths" if kind == "file" else "outside-workspace"
                    reason = f"{guarded}; it needs approval and nobody answered"
                if user is not None:
                    decided_by, choice, rule = "policy", "deny", user[1]
                    reason = f"{user[2]}; it needs approval and nobody answered"
            else:
                decided_by = "user"
                choice = reply.permission()
                stop = reply.stop
                if reply.updated_input is not None and choice != DENY:
                    choice = "deny"
                    reason = "the user changed the input, which Codex cannot run (denied instead)"
                    warn = f"{name}: Codex cannot run a call with a changed input; the call was denied instead"
                elif choice == DENY and reply.message:
                    message = reply.message
        if choice == ALLOW_ALWAYS:
            rule = self._session_rule(kind, params, call_id)
        decision = PermissionDecision(
            tool_use_id=call_id or f"approval-{request_id}",
            tool_name=name,
            decision="allow" if choice in (ALLOW_ONCE, ALLOW_ALWAYS) else "deny",
            decided_by=decided_by or "approval_mode",
            rule=rule,
            reason="the user stopped the run" if stop else reason,
            message=message,
            stops_run=stop,
            subagent_task_id=task,
        )
        if call_id:
            self.translator.decided.add(call_id)
            await self.ctx.emit(decision)
        if warn is not None:
            await self.ctx.emit(WarningEvent(code="permission_answer_unsupported", message=warn, subagent_task_id=task))
        if stop:
            await self._respond(request_id, kind, "cancel")
            raise RunStopped(f"the user stopped the run at {name} ({call_id})", hint="resume the session to go on")
        if message is not None:
            await self._steer(params, f"The user denied the {name} call. The user says: {message}")
        answer = {ALLOW_ONCE: "accept", ALLOW_ALWAYS: "acceptForSession", DENY: "decline"}[choice]
        await self._respond(request_id, kind, answer)

    def _excluded(self, name: str, kind: Kind, params: dict[str, Any], call_id: str) -> str | None:
        """The name under which the run's `excluded_tools` removes this call (Codex's, `exec_command` say, or
        unified's as the policy reads the call, `run_shell_command` say), None when it does not: Codex 0.171 offers
        its tools whatever the run excludes, and in yolo an excluded shell ran (measured)."""
        if not self.ctx.params.excluded_tools:
            return None
        from unified.tools._runtime import is_excluded  # the runtime's own reading of excluded_tools

        names = [name, *(tool for tool, _ in self._policy_calls(kind, params, call_id))]
        return next((n for n in names if is_excluded(n, self.ctx.params.excluded_tools)), None)

    def _session_rule(self, kind: Kind, params: dict[str, Any], call_id: str) -> str:
        if kind == "command":
            command = str(params.get("command") or as_dict(self.translator.item(call_id)).get("command") or "")
            rule = f"Codex allows `{unwrap_shell(command)}` again without asking while this run's process lives"
            self.translator.session_rules[command] = rule
            return rule
        if kind == "file":
            item = self.translator.item(call_id) or {}
            paths = [str(as_dict(c).get("path")) for c in as_list(item.get("changes"))]
            rule = f"Codex allows changes to {', '.join(paths) or 'these files'} again while this run's process lives"
            for path in paths:
                self.translator.session_rules[path] = rule
            return rule
        return "Codex was asked to remember the approval of this MCP tool for the session"

    async def _respond(self, request_id: Any, kind: Kind, answer: str) -> None:
        if kind == "mcp":
            action = {"accept": "accept", "acceptForSession": "accept", "decline": "decline", "cancel": "cancel"}[
                answer
            ]
            meta = {"persist": "session"} if answer == "acceptForSession" else None
            await self.connection.respond(request_id, {"action": action, "content": None, "_meta": meta})
        else:
            await self.connection.respond(request_id, {"decision": answer})

    async def _steer(self, params: dict[str, Any], text: str) -> None:
        thread_id = str(params.get("threadId") or self.translator.main_thread)
        turn_id = params.get("turnId")
        if not isinstance(turn_id, str):
            return
        try:
            await self.connection.request(
                "turn/steer",
                {
                    "threadId": thread_id,
                    "expectedTurnId": turn_id,
                    "input": [{"type": "text", "text": text, "text_elements": []}],
                },
            )
        except RpcError as exc:
            await self.ctx.emit(
                WarningEvent(
                    code="permission_answer_unsupported",
                    message=f"the denial's message could not reach the model: {exc.message}",
                    subagent_task_id=self.translator.task_of(thread_id),
                )
            )

    # --- questions ----------------------------------------------------------------------------------

    async def _user_input(self, request_id: Any, params: dict[str, Any]) -> None:
        """The model's `request_user_input` tool: its questions to `on_user_input`."""
        from unified.tools._ask_user import shown_question  # the runtime's escape, as for a permission prompt

        task = self.translator.task_of(params.get("threadId"))
        call_id = str(params.get("itemId") or f"input-{request_id}")
        other = self.translator.tools.get(call_id, "request_user_input")
        if call_id in self.translator.decided or other != "request_user_input":
            # one decision per call, and the question's own: an allow of it would be reported for another call
            what = "a call decided already" if other == "request_user_input" else f"a call of {clip(other, 80)}"
            text = f"unified answered nothing to a Codex question naming {call_id}, {what}"
            await self.ctx.emit(WarningEvent(code="malformed_line", message=text, subagent_task_id=task))
            await self.connection.respond(request_id, {"answers": {}})
            return
        questions = [as_dict(q) for q in as_list(params.get("questions"))]
        arguments = {"questions": json.loads(json.dumps(questions))}
        if call_id not in self.translator.tools:
            self.translator.tools[call_id] = "request_user_input"
            await self.ctx.emit(
                ToolUse(tool_use_id=call_id, name="request_user_input", input=arguments, subagent_task_id=task)
            )
        self.translator.decided.add(call_id)
        await self.ctx.emit(
            PermissionDecision(
                tool_use_id=call_id,
                tool_name="request_user_input",
                decision="allow",
                decided_by="backend",
                reason="a question to the user changes nothing",
                subagent_task_id=task,
            )
        )
        request = UserInputRequest(
            request_id=f"{self.translator.main_thread}:{request_id}",
            source="model-tool",
            questions=[
                shown_question(
                    Question(
                        id=str(q.get("id") or f"q{n}"),
                        prompt=str(q.get("question") or ""),
                        header=str(q.get("header") or "") or None,
                        options=[
                            QuestionOption(
                                id=str(o.get("label")),
                                label=str(o.get("label")),
                                description=str(o.get("description") or "") or None,
                            )
                            for o in as_list(q.get("options"))
                            if isinstance(o, dict)
                        ],
                    )
                )
                for n, q in enumerate(questions)
            ],
            tool_use_id=call_id,
            tool_name="request_user_input",
            subagent_task_id=task,
        )
        reply = await self.ctx.ask_user(request)
        answers: dict[str, Any] = {}
        if not reply.cancelled:
            for question_id, value in reply.answers.items():
                answers[question_id] = {"answers": value if isinstance(value, list) else [value]}
        await self.connection.respond(request_id, {"answers": answers})
        self.translator.answered.add(call_id)
        await self.ctx.emit(
            ToolResult(
                tool_use_id=call_id,
                output=json.dumps({k: v["answers"] for k, v in answers.items()})
                if answers
                else "the user did not answer",
                is_error=not answers,
                subagent_task_id=task,
            )
        )

    async def _elicitation(self, request_id: Any, params: dict[str, Any]) -> None:
        """An MCP server's own question (not an approval): one free-text answer, or a refusal."""
        task = self.translator.task_of(params.get("threadId"))
        request = UserInputRequest(
            request_id=f"{self.translator.main_thread}:{request_id}",
            source="mcp-elicitation",
            questions=[Question(id="answer", prompt=str(params.get("message") or "The MCP server asks for input"))],
            tool_name=str(params.get("serverName") or "") or None,
            details=json.loads(json.dumps({"requestedSchema": params.get("requestedSchema")}, default=str)),
            subagent_task_id=task,
        )
        reply = await self.ctx.ask_user(request)
        if reply.cancelled or not reply.answers:
            await self.connection.respond(request_id, {"action": "decline", "content": None, "_meta": None})
            return
        await self.connection.respond(request_id, {"action": "accept", "content": dict(reply.answers), "_meta": None})
