"""The permission bridge: the CLI's `can_use_tool` request → the caller's policy and callback → the answer.

The CLI asks about every call that can change or read anything (`_tools.ASKED` as `--settings` ask
rules), so unified's policy (`unified.tools.Policy`, default the shipped one, with the run's
approval mode) decides each, as it does on the API backends: a rule allows or denies, else the
caller's `on_user_input` is asked (`user_input_request(source=permission)`), else the call is
denied. A write of a protected path (a file tool's path, what a Bash command writes: docs/tools.md,
"Protected paths") or of a path outside the workspace is asked whatever rule allows it, in every mode
but yolo, as on the API backends; so is a WebFetch of a URL on this machine, its network or its cloud's
metadata service (`unified._urls.local_target`: the CLI fetches it from here, where the Gemini CLI refuses it);
so is a call that does more than the rule allowing its tool reckons with (`_beyond_rules`: an isolated subagent,
`EnterWorktree`, a durable `CronCreate`).
Each decision is one `permission_decision`. The answers, as the CLI takes them:

- allow: `{"behavior": "allow"}` (the input the model gave runs);
- allow with a changed input: `updatedInput` (the CLI runs it, while its history keeps the model's
  input: the run reports what really ran on `permission_decision.input` and `tool_result.input`);
- allow always: allowed, plus a session rule in unified's policy for the same call (the same shell
  command's shape, the same tool elsewhere) that answers its repeats, and for the CLI a rule of
  our own with destination `session` naming only that call (a Bash command, a file path); never
  the CLI's suggestions, which write into the project's `.claude/settings.local.json` or switch
  the session's mode;
- deny: `{"behavior": "deny", "message": ...}`: the model reads the message as the call's error,
  "Tool call X was denied: <why>" plus ". The user says: <message>" when the user gave one;
- stop: a denial with `interrupt: true`: the CLI ends the turn; the run ends `interrupted`.

A request without a tool name or an input object is denied unasked, with a `malformed_line` warning
(a policy rule would match the call without its arguments); so is a second request about a call
already decided (one decision per call: its input may not be the one decided).

`AskUserQuestion` is a question, not a permission: it goes to `on_user_input` as
`user_input_request(source=model-tool)` and the answers travel back in `updatedInput.answers`
(question text → the chosen label(s) or free text); nobody to ask is a denial the model reads.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread

from unified._adapters.claude_code._control import ClaudeConnection
from unified._adapters.claude_code._launch import default_home
from unified._adapters.claude_code._tools import AGENT_TOOLS, QUESTION_TOOL, policy_call
from unified._adapters.claude_code._translate import StreamTranslator, as_object
from unified._binary.jsonrpc import as_list
from unified._redaction import clip
from unified._urls import local_target, resolves_locally
from unified.backends import RunContext, refusal
from unified.events import (
    JsonValue,
    PermissionDecision,
    Question,
    QuestionOption,
    UnifiedEvent,
    UserInputRequest,
    WarningEvent,
    permission_request,
)
from unified.tools import Policy, _protected
from unified.tools._ask_user import shown_question
from unified.tools._paths import Workspace, shown_name, shown_prompt
from unified.tools._policy import DEFAULT_TIER, Decision, Rule, Verdict, session_rule
from unified.tools._runtime import (
    LOCAL_NETWORK_RULE,
    OUTSIDE_RULE,
    PROTECTED_RULE,
    linked_verdict,
    protected_write,
    read_outside,
)

__all__ = ["Answer", "PermissionBridge", "cli_rule"]

Emit = Callable[[UnifiedEvent], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Answer:
    """What the bridge answered one request."""

    decision: PermissionDecision
    response: dict[str, Any]
    stops_run: bool = False


def cli_rule(tool: str, tool_input: Mapping[str, Any]) -> dict[str, Any] | None:
    """Our narrow "allow always" rule for the CLI (destination `session`), or None when the tool has no
    narrow form (then only unified's own session rule answers its repeats)."""
    if tool == "Bash" and isinstance(tool_input.get("command"), str):
        content = tool_input["command"]
    elif tool in ("Read", "Write", "Edit", "MultiEdit", "NotebookEdit") and isinstance(
        tool_input.get("file_path"), str
    ):
        content = tool_input["file_path"]
    else:
        return None
    return {
        "type": "addRules",
        "rules": [{"toolName": tool, "ruleContent": content}],
        "behavior": "allow",
        "destination": "session",
    }


def _summary(tool: str, tool_input: Mapping[str, Any]) -> str:
    if tool == "Bash" and "command" in tool_input:
        return f"Allow running `{tool_input['command']}`?"
    if isinstance(tool_input.get("command"), str):  # Monitor's: a shell command too, never its description alone
        return f"Allow {tool} running `{tool_input['command']}`?"
    socket = tool_input.get("ws")
    if isinstance(socket, Mapping) and isinstance(socket.get("url"), str):
        return f"Allow {tool} on {socket['url']}?"
    for key in ("file_path", "notebook_path", "path", "url", "pattern", "query"):
        if isinstance(tool_input.get(key), str):
            return f"Allow {tool} on {tool_input[key]}?"
    if isinstance(tool_input.get("description"), str):
        return f"Allow {tool}: {tool_input['description']}?"
    return f"Allow {tool}?"


def _home_expanded(args: Mapping[str, Any], home: Path) -> dict[str, Any]:
    """The arguments with a path's leading `~` read as the CLI reads it: its own HOME."""
    expanded = dict(args)
    for key in ("file_path", "path", "pattern"):
        value = args.get(key)
        if isinstance(value, str) and (value == "~" or value.startswith("~/")):
            expanded[key] = str(home) + value[1:]
    return expanded


def _read_paths(name: str, args: Mapping[str, Any]) -> list[str]:
    """The paths a read tool of the CLI names (unified's names, `policy_call`): Read's and LS's, Grep's
    and Glob's `path` (Grep's is `.` when it names none), a Glob pattern that leaves its folder (absolute, or
    with `..`), and the folder a Glob pattern's literal leading components name, which the CLI lists from: `lnk/*`
    with `lnk` a link out of the workspace listed the folder it leads to, unasked (round 25)."""
    keys = {"read_file": ("file_path",), "list_dir": ("file_path",), "search": ("path",), "glob": ("path",)}
    paths = [args[key] for key in keys.get(name, ()) if isinstance(args.get(key), str)]
    if name == "search" and not paths:  # Grep without a path searches the directory it runs in
        paths.append(".")
    pattern = args.get("pattern")
    if name == "glob" and isinstance(pattern, str):
        if pattern.startswith(("/", "~")) or ".." in pattern:
            paths.append(pattern)
        literal = list(
            itertools.takewhile(lambda part: not _protected.GLOB_MAGIC.search(part), pattern.split("/")[:-1])
        )
        if any(literal):
            base = args.get("path")
            folder = "/".join(literal)
            paths.append(f"{base.rstrip('/')}/{folder}" if isinstance(base, str) and base else folder)
    return paths


_UNJUDGED_RULE = Rule(tool_names=("*",), decision=Decision.ASK_USER, priority=5.0, name="unjudged")
"""Not a row of any table: the name a decision carries when a call after which unified's policy no longer judges what
runs was put to the user although a rule allowed it (`_beyond_rules`)."""


def _beyond_rules(tool: str, tool_input: Mapping[str, Any]) -> tuple[Rule, str] | None:
    """(rule, why) for a call of the CLI that does more than the rule allowing its tool reckons with, None for the rest.
    Round 37: each ran unasked under the rule allowing its tool (the shipped `delegate` in every mode, plan's too; a
    caller's own rule; an "allow always" answer for an earlier call of the tool).

    - `Agent` with `isolation`: `"worktree"` has the CLI write a git worktree and a branch into the repository before
      the subagent's first call (`.claude/worktrees/`, `.git/worktrees/`, `.git/refs/heads/`: measured with 2.1.332,
      in plan mode too), protected paths; `"remote"` (or a value unified does not know) runs the subagent off this
      machine, where none of its calls is put to unified's policy (2.1.332 gates it behind a Claude login). The
      `delegate` rule allows a subagent because each of its calls is asked: here that premise fails.
    - `EnterWorktree`: a new worktree is written into `.claude/worktrees/` and `.git` as above, and from then on the
      CLI's commands run in the worktree (or in the existing one its `path` names), while unified judges their
      relative paths against the workspace (measured: `echo x > f` wrote `.claude/worktrees/<name>/f`).
    - `CronCreate` with `durable`: the scheduled prompt is saved in the project's `.claude/scheduled_tasks.json`
      (measured), which later Claude Code sessions of the project run: a prompt injection that outlives the run.
    """
    if tool in AGENT_TOOLS and (isolation := tool_input.get("isolation")) is not None:
        if isolation == "worktree":
            return PROTECTED_RULE, "it makes a git worktree and branch in .claude/worktrees and .git"
        return (
            _UNJUDGED_RULE,
            f"its subagent's isolation is {clip(repr(isolation), 60, more='…')}: none of its calls is asked",
        )
    if tool == "EnterWorktree":
        return (
            _UNJUDGED_RULE,
            "the CLI's commands then run in a git worktree, not in the workspace unified judges them in",
        )
    if tool == "CronCreate" and tool_input.get("durable") not in (None, False):
        return PROTECTED_RULE, "it saves the scheduled prompt in .claude/scheduled_tasks.json for later sessions"
    return None


def _in_folder(name: str, args: Mapping[str, Any], folder: str) -> dict[str, Any]:
    """A call's arguments (unified's names, `policy_call`) as the CLI reads them while it works in `folder` (relative to
    the workspace root) after an `EnterWorktree`: a command runs there (`dir_path`, which the policy and the protected
    paths read, and which scopes an "allow always" to that folder), a relative path and a search or glob naming no
    folder are read from there."""
    moved = dict(args)
    if name == "run_shell_command":
        moved["dir_path"] = folder
    for key in ("file_path", "path"):
        value = moved.get(key)
        if isinstance(value, str) and value and not value.startswith(("/", "~")):
            moved[key] = f"{folder}/{value}"
    if name in ("search", "glob") and not (isinstance(moved.get("path"), str) and moved["path"]):
        moved["path"] = folder
    return moved


class PermissionBridge:
    """Answers the `can_use_tool` requests of one run."""

    def __init__(
        self,
        ctx: RunContext,
        connection: ClaudeConnection,
        translator: StreamTranslator,
        policy: Policy | None,
        home: Path | None = None,
    ) -> None:
        self.ctx = ctx
        self.connection = connection
        self.translator = translator
        self.policy = policy if policy is not None else Policy.default()
        self.mode = ctx.params.approval_mode
        self.workspace = Workspace(ctx.params.cwd.expanduser(), ctx.params.include_directories)
        """Where the CLI's tools work (its cwd, `--add-dir`): what a write is judged against."""
        self.home = home if home is not None else default_home()
        """The CLI's HOME (`_launch.claude_env`: unified's, not the user's), as which it reads a path's `~`."""
        _protected.credential_home(
            "claude-code", self.home
        )  # a caller's `home` option: its keys are credential files too
        self.moves: list[str] = []
        """Allowed `EnterWorktree` / `ExitWorktree` calls whose result has not been read yet (`_folder`)."""
        self.folder: str | None = None
        """Where the CLI's commands run, relative to the workspace root, once a worktree it entered is known; None: the
        workspace root."""
        self.lost: str | None = None
        """Why unified no longer knows where the CLI works (every later call is asked), or None."""
        self.isolated: set[str] = set()
        """Allowed `Agent` calls with `isolation`: their subagents work in a worktree of their own."""

    async def answer(self, request_id: str, request: Mapping[str, Any], emit: Emit) -> Answer | None:
        """Decide one request, emit what the stream shows of it, send the answer. None: the CLI
        withdrew the request meanwhile (nothing is sent)."""
        tool = str(request.get("tool_name") or "")
        call_id = request.get("tool_use_id") if isinstance(request.get("tool_use_id"), str) else None
        tool_input = as_object(request.get("input"))
        task = self.translator.task_of(request.get("agent_id"))
        if call_id is None:
            await self.connection.respond(request_id, {"behavior": "deny", "message": "the call has no tool_use_id"})
            return None
        why = None
        if not tool or not isinstance(request.get("tool_name"), str):
            why = "no tool name"
        elif not isinstance(request.get("input"), dict):
            why = "no input object"
        if why is not None:
            # Fail closed: what would run is unknown (a policy rule would match a call without its arguments).
            await emit(
                WarningEvent(
                    code="malformed_line",
                    message=f"unified denied a claude CLI permission request it cannot read ({why})",
                    subagent_task_id=task,
                )
            )
            await self.connection.respond(request_id, {"behavior": "deny", "message": f"the request has {why}"})
            return None
        if call_id in self.translator.decided:
            # Fail closed: a call has one decision, given; a second request about it (its input may differ)
            # is neither asked nor allowed on the strength of the first.
            await emit(
                WarningEvent(
                    code="malformed_line",
                    message=f"unified denied a second claude CLI permission request for call {call_id}, "
                    "which was decided already",
                    subagent_task_id=task,
                )
            )
            await self.connection.respond(
                request_id, {"behavior": "deny", "message": f"the call {call_id} was decided already"}
            )
            return None
        use = self.translator.use_for(call_id, tool, dict(tool_input), task)
        if use is not None:
            await emit(use)
        if tool == QUESTION_TOOL:
            answer = await self._question(request_id, call_id, tool_input, task)
        else:
            answer = await self._permission(request_id, call_id, tool, tool_input, request, task)
        self.translator.decided.add(call_id)
        if answer.decision.decision == "allow":
            self._moving(call_id, tool, tool_input, task)
        if answer.decision.input is not None:
            self.translator.ran_with[call_id] = dict(answer.decision.input)
        if answer.stops_run:
            self.translator.stopped.add(call_id)
        await emit(answer.decision)
        if request_id in self.connection.cancelled:
            return None
        await self.connection.respond(request_id, answer.response)
        return answer

    # --- where the CLI works ------------------------------------------------------------------------

    def _moving(self, call_id: str, tool: str, tool_input: Mapping[str, Any], task: str | None) -> None:
        """Note an allowed call that moves where the CLI (or a subagent) works."""
        if tool in ("EnterWorktree", "ExitWorktree"):
            if task is not None:  # a subagent's: whose folder it moves is not measured
                self.lost = f"a subagent's {tool} moved the folder the CLI works in"
            self.moves.append(call_id)
        elif tool in AGENT_TOOLS and tool_input.get("isolation") is not None:
            self.isolated.add(call_id)

    async def _folder(self, task: str | None, agent_id: object) -> tuple[str | None, str | None]:
        """(where a call runs, relative to the workspace root, None for the root; why unified does not know it, None
        when it does: the call is then asked). Round 41: after an allowed `EnterWorktree` the CLI's commands ran in
        `.claude/worktrees/<name>` (or in the existing worktree its `path` names, anywhere `git worktree list` lists
        one, which a repository's `.git/worktrees/*/gitdir` decides) while unified judged their relative paths against
        the workspace; so did an isolated subagent's."""
        tasks = self.translator.tasks
        if self.isolated and (
            (task is not None and tasks[task].tool_use_id in self.isolated) or (task is None and agent_id is not None)
        ):
            return None, "its subagent works in a git worktree of its own, where unified does not judge paths"
        for call_id in [c for c in self.moves if c in self.translator.answered]:
            self.moves.remove(call_id)
            if call_id not in self.translator.moved_to:
                continue  # it failed: nothing moved
            where = self.translator.moved_to[call_id]
            if where is None:
                self.lost = "the CLI did not say which folder it works in after a worktree call"
                continue
            real = Path(await anyio.to_thread.run_sync(os.path.realpath, where))
            root = self.workspace.root
            if real == root:
                self.folder = None
            elif self.workspace.contains(real) and real.is_relative_to(root):
                self.folder = real.relative_to(root).as_posix()
            else:
                self.lost = f"the CLI works in {shown_name(clip(where, 200, more='…'))}, outside the workspace"
        if self.lost is not None:
            return None, self.lost
        if self.moves:
            return None, "a worktree call the user allowed has not ended: the folder the CLI works in is not known yet"
        return self.folder, None

    # --- permission ------------------------------------------------------------------------------

    async def _permission(
        self,
        request_id: str,
        call_id: str,
        tool: str,
        tool_input: Mapping[str, Any],
        request: Mapping[str, Any],
        task: str | None,
    ) -> Answer:
        name, args = policy_call(tool, tool_input)
        folder, lost = await self._folder(task, request.get("agent_id"))
        if folder is not None:
            args = _in_folder(name, args, folder)
        paths = _home_expanded(args, self.home)
        verdict = await linked_verdict(self.policy, self.workspace, name, args, self.mode, paths=paths, elsewhere=True)
        if verdict.decision is Decision.ALLOW and self.mode != "yolo" and lost is not None:
            verdict = Verdict(Decision.ASK_USER, _UNJUDGED_RULE, lost)
        elif verdict.decision is Decision.ALLOW and self.mode != "yolo":
            guarded = await protected_write(
                name,
                paths,
                self.workspace,
                os.environ.get("PATH", ""),  # the CLI's Bash runs with the host's PATH (`_launch`)
                edit=name in ("write_file", "edit_file"),
                elsewhere=True,
            )
            if guarded is not None:
                verdict = Verdict(Decision.ASK_USER, PROTECTED_RULE, guarded)
            elif (
                outside := await read_outside(self.workspace, _read_paths(name, paths), trees=name == "search")
            ) is not None:
                verdict = Verdict(Decision.ASK_USER, OUTSIDE_RULE, outside)
            elif name == "glob" and (through := await self._glob_through_link(paths)) is not None:
                verdict = Verdict(Decision.ASK_USER, OUTSIDE_RULE, through)
            elif name == "web_fetch" and (
                (local := local_target(url := str(args.get("url", ""))) or await resolves_locally(url)) is not None
            ):
                verdict = Verdict(Decision.ASK_USER, LOCAL_NETWORK_RULE, local)
            elif (beyond := _beyond_rules(tool, tool_input)) is not None:
                verdict = Verdict(Decision.ASK_USER, *beyond)
        rule = verdict.rule
        shipped_mode_rule = rule is not None and rule.modes is not None and int(rule.priority) == DEFAULT_TIER
        by: Literal["policy", "approval_mode"] = "approval_mode" if shipped_mode_rule else "policy"
        rule_name = rule.name if rule is not None else None

        def decided(decision: Literal["allow", "deny"], reason: str, **fields: Any) -> PermissionDecision:
            values: dict[str, Any] = {"decided_by": by, "rule": rule_name, **fields}
            return PermissionDecision(
                tool_use_id=call_id,
                tool_name=tool,
                decision=decision,
                reason=reason,
                subagent_task_id=task,
                **values,
            )

        def denied(decision: PermissionDecision) -> Answer:
            told = f". The user says: {decision.message}" if decision.message else ""
            message = f"Tool call {tool} was denied: {decision.reason}{told}"
            return Answer(decision, {"behavior": "deny", "message": message})

        if verdict.decision is Decision.ALLOW:
            return Answer(decided("allow", f"allowed by rule {rule_name} in {self.mode} mode"), {"behavior": "allow"})
        if verdict.decision is Decision.DENY:
            return denied(decided("deny", verdict.doubt or f"rule {rule_name} denies it in {self.mode} mode"))
        why = f"{verdict.doubt}; " if verdict.doubt else ""
        if self.ctx.params.on_user_input is None:
            return denied(decided("deny", f"{why}it needs approval and nobody can answer in this non-interactive run"))
        details: dict[str, JsonValue] = {"input": dict(tool_input)}
        for key in ("description", "decision_reason", "blocked_path"):
            if isinstance(request.get(key), str):
                details[key] = request[key]
        protected = {
            PROTECTED_RULE: "\nIt writes a protected path: ",
            OUTSIDE_RULE: "\nIt reads outside the workspace: ",
            LOCAL_NETWORK_RULE: "\nIt fetches from this machine or its network: ",
            _UNJUDGED_RULE: "\nunified cannot judge what follows it: ",
        }
        why_asked = f"{protected[rule]}{verdict.doubt}." if rule in protected else ""
        prompt = permission_request(
            f"{self.ctx.session_id}:{request_id}",
            shown_prompt(
                _summary(tool, tool_input) + why_asked
            ),  # round 39: `.git<U+200D>/hooks` showed as `.git/hooks`
            tool_use_id=call_id,
            tool_name=tool,
            details=details,
            session_id=self.ctx.session_id,
        )
        if task is not None:
            prompt.subagent_task_id, prompt.is_subagent = task, True
        reply = await self.ctx.ask_user(prompt)
        if reply.stop:
            decision = decided(
                "deny", "the user stopped the run", decided_by="user", message=reply.message, stops_run=True
            )
            message = f"Tool call {tool} was stopped by the user" + (f": {reply.message}" if reply.message else "")
            return Answer(decision, {"behavior": "deny", "message": message, "interrupt": True}, stops_run=True)
        if reply.cancelled:
            return denied(decided("deny", f"{why}it needs approval and nobody answered"))
        choice = reply.permission()
        changed = reply.updated_input if choice != "deny" else None
        if choice == "allow_always" and changed is None:
            added = session_rule(name, args, self.mode)
            self.policy = self.policy.with_rules([added])
            response: dict[str, Any] = {"behavior": "allow"}
            narrow = cli_rule(tool, tool_input)
            if narrow is not None:
                response["updatedPermissions"] = [narrow]
            decision = decided("allow", "the user allowed it for this session", decided_by="user", rule=added.name)
            return Answer(decision, response)
        if choice in ("allow_once", "allow_always"):
            if changed is not None:
                decision = decided(
                    "allow", "the user allowed it with a changed input", decided_by="user", input=dict(changed)
                )
                return Answer(decision, {"behavior": "allow", "updatedInput": dict(changed)})
            return Answer(decided("allow", "the user allowed it once", decided_by="user"), {"behavior": "allow"})
        return denied(decided("deny", "the user denied it", decided_by="user", message=reply.message))

    async def _glob_through_link(self, args: Mapping[str, Any]) -> str | None:
        """Why a Glob whose pattern has wildcard folders (`*/lnk/x`, `**/lnk/*`) may list a folder outside the
        workspace through a link one of them matches (`_protected.glob_links_out`), or None. The CLI's ripgrep follows
        no link in its walk today; a link reached by a wildcard is asked all the same, as one named literally is."""
        pattern, base = args.get("pattern"), args.get("path")
        if not isinstance(pattern, str) or pattern.startswith("/"):
            return None  # an absolute pattern is judged whole as a read path (`_read_paths`)
        place = self.workspace.root / base if isinstance(base, str) and base else self.workspace.root
        found = await anyio.to_thread.run_sync(_protected.glob_links_out, place, pattern, self.workspace.roots)
        return None if found is None else f"the pattern {clip(pattern, 200, more='…')} may list outside: {found}"

    # --- AskUserQuestion -----------------------------------------------------------------------------

    async def _question(self, request_id: str, call_id: str, tool_input: Mapping[str, Any], task: str | None) -> Answer:
        raw_questions = [q for q in as_list(tool_input.get("questions")) if isinstance(q, Mapping)]
        questions = [
            Question(
                id=f"q{number}",
                prompt=str(q.get("question") or ""),
                header=q.get("header") if isinstance(q.get("header"), str) else None,
                options=[
                    QuestionOption(
                        id=str(o.get("label")),
                        label=str(o.get("label")),
                        description=o.get("description") if isinstance(o.get("description"), str) else None,
                    )
                    for o in as_list(q.get("options"))
                    if isinstance(o, Mapping) and isinstance(o.get("label"), str)
                ],
                multi_select=q.get("multiSelect") is True,
            )
            for number, q in enumerate(raw_questions)
        ]

        def refused(reason: str) -> Answer:
            return Answer(
                refusal(call_id, QUESTION_TOOL, reason, decided_by="policy", rule="ask-user", subagent_task_id=task),
                {"behavior": "deny", "message": reason},
            )

        if self.ctx.params.on_user_input is None or not questions:
            return refused("the question cannot be asked: nobody answers questions in this non-interactive run")
        reply = await self.ctx.ask_user(
            UserInputRequest(
                request_id=f"{self.ctx.session_id}:{request_id}",
                source="model-tool",
                questions=[shown_question(question) for question in questions],  # the answers map the raw ones
                tool_use_id=call_id,
                tool_name=QUESTION_TOOL,
                session_id=self.ctx.session_id,
                subagent_task_id=task,
            )
        )
        if reply.cancelled or not reply.answers:
            return refused("the user did not answer the question")
        answers: dict[str, str] = {}
        for question in questions:
            given = reply.answers.get(question.id)
            if given is None:
                continue
            labels = given if isinstance(given, list) else [given]
            answers[question.prompt] = ", ".join(str(label) for label in labels)
        updated = {**dict(tool_input), "answers": answers}
        allowed = PermissionDecision(
            tool_use_id=call_id,
            tool_name=QUESTION_TOOL,
            decision="allow",
            decided_by="policy",
            rule="ask-user",
            reason="a question for the user",
            subagent_task_id=task,
        )
        return Answer(allowed, {"behavior": "allow", "updatedInput": updated})
