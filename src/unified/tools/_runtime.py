"""ToolRuntime: declarations for the model, then policy-gated, scheduled execution of its calls."""

from __future__ import annotations

import copy
import fnmatch
import functools
import itertools
import json
import posixpath
import shlex
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Protocol

import anyio
import anyio.to_thread
from pydantic import BaseModel, ValidationError

from unified import _limits as limits
from unified._exports import publish
from unified._internal.imports import import_off_loop
from unified._internal.models import ToolFamily
from unified._redaction import Redactor, clip, redactor
from unified._text import one_line, well_formed, well_formed_json
from unified.errors import RunStopped
from unified.events import (
    PermissionDecision,
    ToolProgress,
    UserInputRequest,
    UserInputResponse,
    permission_request,
)
from unified.tools import _files, _protected, _reach, _search, _shell, _shell_syntax
from unified.tools._ask_user import CURRENT_CALL_ID, UserInputBridge, ask_user_tool
from unified.tools._base import (
    InlineData,
    Params,
    Progress,
    ToolError,
    ToolOutput,
    ToolSpec,
    params_schema,
)
from unified.tools._custom import function_tool
from unified.tools._ignore import WALK_VETO
from unified.tools._paths import Workspace, echoed, shown_name, shown_prompt, shown_reason, spelled
from unified.tools._policy import (
    ALIASES,
    DEFAULT_TIER,
    PATH_ARGUMENTS,
    STRICTNESS,
    Decision,
    Policy,
    Rule,
    Verdict,
    offered_names,
    plain_path,
    session_rule,
)
from unified.tools._regex import matchable
from unified.types import ApprovalMode, McpServer, StdioMcpServer

__all__ = [
    "ALIASES",
    "AskPermission",
    "EventForwarder",
    "McpConnectError",
    "NullObserver",
    "PermissionAnswer",
    "PermissionRequest",
    "ToolCall",
    "ToolObserver",
    "ToolOutcome",
    "ToolRuntime",
    "is_excluded",
    "refused_by",
]

PermissionAnswer = Literal["allow_once", "allow_always", "deny"]

PROTECTED_RULE = Rule(tool_names=("*",), decision=Decision.ASK_USER, priority=5.0, name="protected-paths")
"""Not a row of any table: the name a decision carries when a write to a protected path was put to
the user although a rule allowed it (docs/tools.md, "Protected paths")."""
OUTSIDE_RULE = Rule(tool_names=("*",), decision=Decision.ASK_USER, priority=5.0, name="outside-workspace")
"""Not a row of any table either: the name a decision carries when a backend's own read of a path outside
the workspace was put to the user although a rule allowed it (docs/tools.md, "Protected paths")."""
LOCAL_NETWORK_RULE = Rule(tool_names=("*",), decision=Decision.ASK_USER, priority=5.0, name="local-network")
"""Not a row of any table either: the name a decision carries when a backend's own fetch of a URL on this machine,
its network or its cloud's metadata service (`unified._urls.local_target`) was put to the user although a rule
allowed it."""


def is_excluded(name: str, excluded_tools: Sequence[str]) -> bool:
    """Whether `excluded_tools` (glob patterns, Gemini CLI names accepted: `ALIASES`) removes our tool `name`:
    the one reading of `ExecuteParams.excluded_tools`, for the runtime and for a tool an adapter serves itself."""
    patterns = (offered for pattern in excluded_tools for offered in offered_names(pattern))
    return any(fnmatch.fnmatchcase(name, ALIASES.get(pattern, pattern)) for pattern in patterns)


@dataclass(frozen=True)
class ToolCall:
    """One function call of a model turn."""

    id: str
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    @property
    def wait_for_previous(self) -> bool:
        return self.args.get("wait_for_previous") is True


@dataclass(frozen=True)
class PermissionRequest:
    """A call the policy wants a human to approve."""

    call: ToolCall
    tool_name: str
    summary: str

    def to_event(self, request_id: str) -> UserInputRequest:
        """The `user_input_request` (source `permission`) an adapter emits for this request."""
        return permission_request(
            request_id,
            self.summary,
            tool_use_id=self.call.id,
            tool_name=self.call.name,
            details={"args": dict(self.call.args)},
        )


AskPermission = Callable[[PermissionRequest], Awaitable[PermissionAnswer | UserInputResponse]]
"""A permission hook: a bare answer, or a whole `UserInputResponse` (changed input, a message, stop)."""


async def _permission_via(user_input: UserInputBridge, request: PermissionRequest) -> UserInputResponse:
    """A permission prompt as a `user_input_request` (source `permission`) through the run's bridge."""
    return await user_input(request.to_event(f"permission-{request.call.id}"))


class ToolObserver(Protocol):
    """Where the runtime reports what the adapter turns into events."""

    async def decision(self, call: ToolCall, event: PermissionDecision) -> None: ...

    async def progress(self, call: ToolCall, event: ToolProgress) -> None: ...


class NullObserver:
    """An observer that drops everything (tests, callers that need no events)."""

    async def decision(self, call: ToolCall, event: PermissionDecision) -> None:
        return None

    async def progress(self, call: ToolCall, event: ToolProgress) -> None:
        return None


class EventForwarder:
    """An observer that hands every report, unchanged, to one `emit` (e.g. a run's `ctx.emit`)."""

    def __init__(self, emit: Callable[[PermissionDecision | ToolProgress], Awaitable[None]]) -> None:
        self._emit = emit

    async def decision(self, call: ToolCall, event: PermissionDecision) -> None:
        await self._emit(event)

    async def progress(self, call: ToolCall, event: ToolProgress) -> None:
        await self._emit(event)


@dataclass(frozen=True)
class ToolOutcome:
    """The answer to one call. `response` is exactly the function response for the model."""

    call_id: str
    name: str
    response: dict[str, Any]
    is_error: bool
    inline_data: tuple[InlineData, ...] = ()
    decision: PermissionDecision | None = None


@dataclass(frozen=True)
class McpConnectError:
    """An MCP server that could not be used; the adapter reports it as a warning."""

    server: str
    message: str


class _DeclarationRoom:
    """What is left of `MAX_DECLARED_TOOLS` and `MAX_MCP_DECLARATION_BYTES` as MCP tools are declared: once a
    server's tool does not fit, it and the server's later tools are left out (its order kept: never a tool here and
    there), and `say` names them in one warning."""

    def __init__(self, declared: int) -> None:
        self.declared = declared
        self.bytes = 0
        self.left_out: list[str] = []

    def takes(self, spec: ToolSpec) -> bool:
        """Whether `spec` is declared; if not, it is counted among those left out."""
        if not self.left_out and self.declared < limits.MAX_DECLARED_TOOLS:
            size = len(json.dumps(spec.declaration("default-legacy")))
            if self.bytes + size <= limits.MAX_MCP_DECLARATION_BYTES:
                self.declared += 1
                self.bytes += size
                return True
        self.left_out.append(spec.name)
        return False

    def say(self, server: str, listed: int) -> str:
        """The warning for the tools of `server` left out (then none are, for the next server's own)."""
        shown = ", ".join(repr(name) for name in self.left_out[:5]) + (", …" if len(self.left_out) > 5 else "")
        said = (
            f"MCP server {server!r}: {len(self.left_out):,} of its {listed:,} tools were left out ({shown}): a run "
            f"declares at most {limits.MAX_DECLARED_TOOLS} tools and {limits.MAX_MCP_DECLARATION_BYTES // 1024} KiB "
            "of MCP tool declarations (the Gemini API takes at most 512 tools); leave out the tools the agent does "
            "not need (excluded_tools) to make room for these"
        )
        self.left_out = []
        return said


def _builtin_tools(files: _files.FileConfig, shell: _shell.ShellConfig) -> list[ToolSpec]:
    def bind(fn: Callable[[Any, Any, Progress], Awaitable[ToolOutput]], config: Any) -> Any:
        return functools.partial(fn, config)

    read_schema = copy.deepcopy(params_schema(_files.ReadFileParams))
    read_schema["properties"]["limit"]["description"] = _files.read_file_limit_text(files)
    return [
        ToolSpec(
            "read_file",
            "read",
            _files.ReadFileParams,
            bind(_files.read_file, files),
            "Reads a file. Text comes back as lines from `offset`; a read that does not reach the end, "
            "or starts after line 1, ends with a line saying which lines it shows and where to continue. "
            "PNG, JPEG, GIF and WebP images come back as images.",
            "Reads a file. Read only what your next step needs: page with `offset` and `limit`; a windowed "
            "read ends with `[showing lines a-b of n; continue with offset: m]`. PNG, JPEG, GIF and WebP "
            "images come back as images.",
            schema=read_schema,
        ),
        ToolSpec(
            "write_file",
            "edit",
            _files.WriteFileParams,
            bind(_files.write_file, files),
            "Writes content to a file, creating missing parent directories and overwriting an existing file.",
            "Writes the complete content of a file, creating missing parent directories; overwrites existing "
            "files. Best for new or small files; use edit_file for targeted changes to large ones.",
        ),
        ToolSpec(
            "edit_file",
            "edit",
            _files.EditFileParams,
            bind(_files.edit_file, files),
            "Replaces exact text in a file. `old_string` must occur exactly once (include surrounding lines "
            "to make it unique) unless `allow_multiple` is true; read the file first and copy the text "
            "literally, whitespace included. An empty `old_string` creates a new file.",
            "Replaces exact text in a file: `old_string` must match exactly one place unless "
            "`allow_multiple` is true. Preferred for surgical edits.",
        ),
        ToolSpec(
            "list_dir",
            "read",
            _files.ListDirParams,
            bind(_files.list_dir, files),
            "Lists the entries directly inside a directory; directories end with `/`.",
        ),
        ToolSpec(
            "tree",
            "read",
            _files.TreeParams,
            bind(_files.tree, files),
            "Shows the directory tree beneath a path to a depth (2 by default, 10 at most), leaving out "
            "what ignore files exclude. A directory at the depth bound says how many entries it holds.",
        ),
        ToolSpec(
            "search",
            "read",
            _search.SearchParams,
            bind(_search.search, files),
            "Searches file contents for a regular expression, line by line, skipping ignored and binary files.",
            "Searches file contents for a regular expression, line by line, skipping what .gitignore/.ignore "
            "exclude and binary files. Returns path:line: text rows, 50 by default, 200 at most; prefer it "
            "to grep in the shell.",
        ),
        ToolSpec(
            "glob",
            "read",
            _files.GlobParams,
            bind(_files.glob, files),
            "Finds files whose path matches a glob pattern (e.g. `src/**/*.py`, `**/*.md`), returning "
            "absolute paths sorted by modification time (newest first).",
        ),
        ToolSpec(
            "run_shell_command",
            "execute",
            _shell.ShellParams,
            bind(_shell.run_shell_command, shell),
            "Runs `bash -c <command>` in its own process group. Returns Output (combined stdout/stderr, the "
            "tail if long), then Exit Code if non-zero, Signal if killed, Background PIDs and Process Group "
            "PGID. A command silent for too long is cancelled. Set is_background instead of using `&`. "
            "Use quiet flags and disable pagers (git --no-pager).",
        ),
        ToolSpec(
            "list_background_processes",
            "read",
            _shell.ListBackgroundParams,
            bind(_shell.list_background_processes, shell),
            "Lists the background shell processes of this session and their status.",
        ),
        ToolSpec(
            "read_background_output",
            "read",
            _shell.ReadBackgroundParams,
            bind(_shell.read_background_output, shell),
            "Reads the last lines of a background shell process's output.",
        ),
    ]


CLOSED_BEFORE_ANSWERING = (
    "it closed its stdout before it answered initialize: it exited or crashed, or it is no MCP server (a program "
    "that prints something else); what it wrote to stderr is on unified's stderr. Run its command alone to see"
)
"""Said of a stdio MCP server whose connection closed before it answered: the SDK's "Connection closed" told
neither that the server had gone nor where its last words are."""


class ToolRuntime:
    """The local tools of one session: their declarations, policy, scheduling and lifetime.

    Use it as an async context manager (`async with ToolRuntime(...) as tools:`) so MCP sessions
    and background processes end with it.

    A shell command sees only the host variables of `_shell.SHELL_ENV_ALLOWLIST` and
    `shell_env_allowlist` (names, `*`/`?` wildcards) whose values are not secrets, plus
    `shell_env`, set as given. No tool's output or error reaches the model with a secret value
    of the environment in it (docs/tools.md, "The shell's environment"). Before its first command
    this process is made undumpable, so a command cannot read the host's environment in
    `/proc/<pid>/environ` (Linux; process-wide, with costs: `unified._undumpable.hide_host_environment`), nor
    can a stdio MCP server it starts; `hide_host_environment=False` leaves it dumpable.
    """

    def __init__(
        self,
        workspace: Path,
        *,
        include_directories: Sequence[Path] = (),
        approval_mode: ApprovalMode = "default",
        policy: Policy | None = None,
        rules_file: Path | None = None,
        excluded_tools: Sequence[str] = (),
        ask: AskPermission | None = None,
        user_input: UserInputBridge | None = None,
        read_mode: _files.ReadMode = "default-cap",
        line_cap: int = 2000,
        shell_timeout_s: float = 300.0,
        shell_output_cap: int = _shell.SHELL_OUTPUT_CAP,
        shell_env_allowlist: Sequence[str] = (),
        shell_env: Mapping[str, str] | None = None,
        secrets: Sequence[str] = (),
        hide_host_environment: bool = True,
    ) -> None:
        if line_cap < 1:
            raise ValueError(f"line_cap must be at least 1 (got {line_cap})")
        self.workspace = Workspace(workspace, include_directories)
        self.approval_mode: ApprovalMode = approval_mode
        base = policy if policy is not None else Policy.default()
        self.policy = base.with_file(rules_file) if rules_file is not None else base
        self._excluded = tuple(excluded_tools)
        self._ask = ask
        if user_input is not None and ask is None:
            self._ask = functools.partial(_permission_via, user_input)
        self._ask_lock = anyio.Lock()
        self._secrets = tuple(secrets)
        """Secret values besides the environment's (`redaction.run_secrets`): never shown to the model."""
        files = _files.FileConfig(self.workspace, read_mode, line_cap)
        self._shell = _shell.ShellConfig(
            self.workspace,
            shell_timeout_s,
            shell_output_cap,
            env_allowlist=tuple(shell_env_allowlist),
            env=dict(shell_env or {}),
            secrets=tuple(secrets),
            hide_host_environment=hide_host_environment,
        )
        self._tools: dict[str, ToolSpec] = {t.name: t for t in _builtin_tools(files, self._shell)}
        if user_input is not None:
            questions = itertools.count(1)
            self.add(ask_user_tool(user_input, lambda: f"question-{next(questions)}"))
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> ToolRuntime:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close MCP sessions and kill background processes still running."""
        # The MCP task groups were entered outside any scope opened here, so they must be left
        # outside one too; only the process clean-up is shielded from cancellation.
        try:
            await self._stack.aclose()
        finally:
            with anyio.CancelScope(shield=True):
                await self._shell.close()

    def add(self, spec: ToolSpec) -> None:
        if spec.name in self._tools:
            raise ValueError(f"a tool named {spec.name!r} is already registered")
        self._tools[spec.name] = spec

    def register(self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> None:
        """Offers a Python callable to the model (schema from its type hints, under the policy)."""
        self.add(function_tool(fn, name=name, description=description))

    async def connect_mcp(self, servers: Sequence[McpServer]) -> list[McpConnectError]:
        """Connects each server and offers its tools as `mcp__<server>__<tool>`; failures are returned.

        The MCP SDK (~1 s to import) is imported only when a server is configured, off the event loop.
        """
        if not servers:
            return []
        if self._shell.hide_host_environment and any(isinstance(server, StdioMcpServer) for server in servers):
            _shell.hide_host_environment()  # a stdio server is a child too, running what the model sends it
        mcp = await import_off_loop("unified.tools._mcp")

        errors: list[McpConnectError] = []
        room = _DeclarationRoom(len(self.tool_names()))
        for server in servers:
            try:
                specs = await mcp.connect_server(server, self._stack, self._secrets)
            except Exception as exc:
                cause: BaseException = exc
                while isinstance(cause, BaseExceptionGroup) and cause.exceptions:
                    cause = cause.exceptions[0]
                # its own URL's credentials and headers too: an HTTP client's error quotes the URL whole
                clean = redactor(extra=(*self._secrets, *mcp.server_secrets(server)))
                # on one line: an HTTP client's error runs on ("...\nRedirect location: '/'\nFor more information ...")
                notes = "; ".join(getattr(exc, "__notes__", ()))  # what the server answered (`connect_server`)
                reason = clean(one_line(f"{type(cause).__name__}: {cause}" + (f" ({notes})" if notes else "")))
                if isinstance(server, StdioMcpServer) and str(cause) == "Connection closed":  # the mcp SDK's words
                    reason += f" ({CLOSED_BEFORE_ANSWERING})"
                errors.append(McpConnectError(server.name, f"MCP server {server.name!r} failed to start: {reason}"))
                continue
            for spec in specs:
                # two of its tools with one function name (`a b` and `a_b` are both `a_b`): the first stays; a schema
                # no declaration can carry: left out. The run goes on with a warning, not a ValueError or TypeError
                problem = "it has the name of a tool already offered" if spec.name in self._tools else None
                problem = problem or mcp.schema_problem(spec.schema)
                if problem is not None:
                    left_out = f"its tool {spec.name!r} was left out: {problem}"
                    errors.append(McpConnectError(server.name, f"MCP server {server.name!r}: {left_out}"))
                    continue
                if is_excluded(spec.name, self._excluded) or room.takes(spec):  # an excluded tool is not declared
                    self.add(spec)
            if room.left_out:
                errors.append(McpConnectError(server.name, room.say(server.name, len(specs))))
        return errors

    def _available(self, name: str) -> ToolSpec | None:
        spec = self._tools.get(ALIASES.get(name, name))
        if spec is None or is_excluded(spec.name, self._excluded):
            return None
        return spec

    def tool_names(self) -> list[str]:
        return [name for name in self._tools if self._available(name)]

    def declarations(self, family: ToolFamily = "default-legacy") -> list[dict[str, Any]]:
        """Function declarations (name, description, JSON-schema parameters) for the model."""
        return [self._tools[name].declaration(family) for name in self.tool_names()]

    async def decide(self, call: ToolCall, *, unseen: bool = False, doubt: str | None = None) -> PermissionDecision:
        """The permission decision for one call, without running it: the policy table, the approval mode,
        the `ask` hook and the "allow always" session rules, exactly as `run_batch` decides its calls.

        For a backend whose tools run elsewhere and ask before each call (the Gemini CLI), so that its
        calls get the same answers as the API backends'. A Gemini CLI name is read through `ALIASES`.
        `unseen`: the backend did not show the call's arguments (`Policy.evaluate`: a rule that reads them
        may apply, so it is asked, never allowed by an allow rule that reads them). `doubt`: why the backend's call
        must be asked although a rule allows it, as `read_outside` says for Claude Code's reads (a read that may reach a
        credential file under another name, the Gemini CLI's `credential_alias_rules`): asked as `OUTSIDE_RULE`, but
        in yolo, which allows every call.
        """
        args = {k: v for k, v in call.args.items() if k != "wait_for_previous"}
        tool = ALIASES.get(call.name, call.name)
        unjudgeable = _unjudgeable(call, tool, args)
        if unjudgeable is not None:
            return PermissionDecision(
                tool_use_id=call.id, tool_name=call.name, decision="deny", decided_by="backend", reason=unjudgeable
            )
        return await self._decide(call, tool, args, elsewhere=True, unseen=unseen, doubt=doubt)

    async def run_batch(self, calls: Sequence[ToolCall], observer: ToolObserver | None = None) -> list[ToolOutcome]:
        """Runs one model turn's calls; outcomes in call order.

        Calls run concurrently, except that edit tools and calls with `wait_for_previous` wait for
        everything before them and finish before anything after them starts. Within a concurrent
        group every permission is settled first, in call order, one prompt at a time.
        """
        obs: ToolObserver = observer or NullObserver()
        outcomes: dict[int, ToolOutcome] = {}
        group: list[int] = []

        async def flush() -> None:
            prepared = [(i, await self._prepare(calls[i], obs)) for i in group]

            async def execute(index: int, ready: _Ready) -> None:
                outcomes[index] = await self._execute(calls[index], ready, obs)

            async with anyio.create_task_group() as tg:
                for index, ready in prepared:
                    if isinstance(ready, ToolOutcome):
                        outcomes[index] = ready
                    else:
                        tg.start_soon(execute, index, ready)
            group.clear()

        for index, call in enumerate(calls):
            spec = self._available(call.name)
            if call.wait_for_previous or (spec is not None and spec.kind == "edit"):
                await flush()
                group.append(index)
                await flush()
            else:
                group.append(index)
        await flush()
        return [outcomes[i] for i in range(len(calls))]

    async def _prepare(self, call: ToolCall, obs: ToolObserver) -> _Ready | ToolOutcome:
        """Look-up, validation and the policy decision; an outcome if the call must not run."""
        spec = self._available(call.name)
        if spec is None:
            names = ", ".join(self.tool_names())
            return await _refused(call, obs, f'Tool "{echoed(call.name)}" not found. Available tools: {names}')
        args = {k: v for k, v in call.args.items() if k != "wait_for_previous"}
        unjudgeable = _unjudgeable(call, spec.name, args)
        if unjudgeable is not None:
            return await _refused(call, obs, unjudgeable)
        params: Any = args
        if spec.params is not None:
            try:
                params = spec.params.model_validate(args)
            except ValidationError as exc:
                kept = _nulls_left_out(spec.params, args, exc)
                failed: ValidationError | None = exc
                if kept is not args:  # a second try only with nulls left out: the same arguments fail the same way
                    args, failed = kept, None
                    try:
                        params = spec.params.model_validate(args)
                    except ValidationError as again:
                        failed = again
                if failed is not None:
                    reason = _reasons(failed)
                    return await _refused(call, obs, f"Invalid parameters provided to {call.name}. Reason: {reason}")
        judged: dict[str, Path | _files.Unresolved] = {}
        event = await self._decide(call, spec.name, args, judged)
        if event.input is not None and spec.params is not None:
            try:  # the user changed the input: it must be as valid as the model's
                params = spec.params.model_validate(event.input)
            except ValidationError as exc:
                reasons = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
                )
                event = event.model_copy(
                    update={"decision": "deny", "reason": f"the input the user gave is invalid: {reasons}"}
                )
        elif event.input is not None:
            params = event.input
        await obs.decision(call, event)
        refusal = refused_by(call, event)
        if refusal is not None:
            return refusal
        # the path the protected-path check judged is the one the tool must write (unless the user changed it)
        judged_path = judged.get("path") if event.input is None else None
        return _Ready(spec, params, event, judged_path, self._veto(spec.name, args, event))

    async def _protected_write(
        self,
        tool: str,
        args: Mapping[str, Any],
        judged: dict[str, Path | _files.Unresolved] | None = None,
        *,
        elsewhere: bool = False,
    ) -> str | None:
        """Why this call may write a protected path (docs/tools.md, "Protected paths"), or None.
        `judged` receives the real path a file tool's call was judged on."""
        spec = self._tools.get(tool)
        edit = spec is not None and spec.kind == "edit"
        search_path = self._shell.search_path()
        return await protected_write(tool, args, self.workspace, search_path, judged, edit=edit, elsewhere=elsewhere)

    async def _decide(
        self,
        call: ToolCall,
        tool: str,
        args: dict[str, Any],
        judged: dict[str, Path | _files.Unresolved] | None = None,
        *,
        elsewhere: bool = False,
        unseen: bool = False,
        doubt: str | None = None,
    ) -> PermissionDecision:
        verdict = await linked_verdict(
            self.policy, self.workspace, tool, args, self.approval_mode, unseen=unseen, elsewhere=elsewhere
        )
        if doubt is not None and verdict.decision is Decision.ALLOW and self.approval_mode != "yolo":
            verdict = Verdict(Decision.ASK_USER, OUTSIDE_RULE, doubt)
        guarded = None
        if verdict.decision is not Decision.DENY and self.approval_mode != "yolo":
            guarded = await self._protected_write(tool, args, judged, elsewhere=elsewhere)
        if guarded is not None and verdict.decision is Decision.ALLOW:
            verdict = Verdict(Decision.ASK_USER, PROTECTED_RULE, guarded)
        rule = verdict.rule
        # The shipped per-mode rows are "the approval mode deciding"; every other rule is policy.
        shipped_mode_rule = rule is not None and rule.modes is not None and int(rule.priority) == DEFAULT_TIER
        by: Literal["policy", "approval_mode"] = "approval_mode" if shipped_mode_rule else "policy"
        name = rule.name if rule else None

        def decided(decision: Literal["allow", "deny"], reason: str, **kw: Any) -> PermissionDecision:
            fields: dict[str, Any] = {"decided_by": by, "rule": name, **kw}
            return PermissionDecision(
                tool_use_id=call.id, tool_name=call.name, decision=decision, reason=reason, **fields
            )

        if verdict.decision is Decision.ALLOW:
            return decided("allow", f"allowed by rule {name} in {self.approval_mode} mode")
        if verdict.decision is Decision.DENY:
            return decided("deny", verdict.doubt or f"rule {name} denies it in {self.approval_mode} mode")
        if self._ask is None:
            why = f"{verdict.doubt}; " if verdict.doubt else ""
            return decided("deny", f"{why}it needs approval and nobody can answer in this non-interactive run")
        written = await self._written_elsewhere(tool, args, (judged or {}).get("path"))
        protected = f"\nIt writes a protected path: {guarded}." if guarded else ""
        summary = shown_prompt(_summary(tool, args) + written + protected)
        request = PermissionRequest(call, tool, summary)
        async with self._ask_lock:
            try:
                reply = await self._ask(request)
            except Exception as exc:
                return decided("deny", f"the permission prompt failed ({type(exc).__name__}: {exc})")
        response = reply if isinstance(reply, UserInputResponse) else None
        answer = response.permission() if response is not None else reply
        message = response.message if response is not None else None
        if response is not None and response.stop:
            return decided("deny", "the user stopped the run", decided_by="user", message=message, stops_run=True)
        if response is not None and response.cancelled:  # no answer: the approval mode's default stands
            why = f"{verdict.doubt}; " if verdict.doubt else ""
            return decided("deny", f"{why}it needs approval and nobody answered")
        changed = response.updated_input if response is not None and answer != "deny" else None
        if answer == "allow_always" and changed is None:
            added = session_rule(tool, args, self.approval_mode)
            self.policy = self.policy.with_rules([added])
            return decided("allow", "the user allowed it for this session", decided_by="user", rule=added.name)
        if answer in ("allow_once", "allow_always"):
            if changed is not None:
                return decided("allow", "the user allowed it with a changed input", decided_by="user", input=changed)
            return decided("allow", "the user allowed it once", decided_by="user")
        return decided("deny", "the user denied it", decided_by="user", message=message)

    async def _written_elsewhere(
        self, tool: str, args: Mapping[str, Any], judged: Path | _files.Unresolved | None
    ) -> str:
        """A line of a permission prompt naming the file an edit tool's call writes when its argument, as written,
        names another (a link on the way: `notes.md -> src/auth.py`; a `file://` URL), or nothing. The tool writes
        the file the path reaches; the prompt named the argument alone, so a person approved `notes.md` and
        `src/auth.py` was overwritten (round 36). `judged`: the real path the protected-path check judged, which the
        tool writes or nothing (a link swapped since is refused), when it judged one."""
        spec = self._tools.get(tool)
        raw = args.get("file_path")
        if spec is None or spec.kind != "edit" or not isinstance(raw, str):
            return ""
        if isinstance(judged, Path):
            real = judged
        else:
            try:
                real = await anyio.to_thread.run_sync(self.workspace.real_path, raw, abandon_on_cancel=True)
            except (ToolError, OSError):  # the tool refuses it too
                return ""
        if spelled(raw) == raw and real == Path(posixpath.normpath(self.workspace.root / plain_path(raw))):
            return ""  # the file it names as written, absolute or not
        form = _reach.reached_form(self.workspace.root, real, False)
        return f"\nIt writes {shown_name(form)}, where {echoed(raw)} leads."

    def _veto(self, tool: str, args: Mapping[str, Any], event: PermissionDecision) -> _reach.Veto | None:
        """What leaves an entry out of this call's walk (search, glob, tree of a folder): each entry the policy would
        not let the call name directly (`_reach.Veto`), when a rule reads paths at all. Judged on the arguments
        the tool runs with (the user's changed input, if any)."""
        key = _WALK_KEYS.get(tool)
        if key is None:
            return None
        readers = _reach.reads_arguments(self.policy, tool, self.approval_mode)
        if readers is None:
            return None
        given = event.input if event.input is not None else args
        root, mode = self.workspace.root, self.approval_mode
        return _reach.Veto(readers, root, tool, dict(given), key, mode, event.rule, through_links=tool == "search")

    async def _execute(self, call: ToolCall, ready: _Ready, obs: ToolObserver) -> ToolOutcome:
        async def progress(message: str) -> None:
            await obs.progress(call, ToolProgress(tool_use_id=call.id, status="running", message=message))

        token = CURRENT_CALL_ID.set(call.id)
        judged = _files.JUDGED_PATH.set(ready.judged_path)
        vetoed = WALK_VETO.set(ready.veto)
        try:
            result = await ready.spec.run(ready.params, progress)
        except ToolError as exc:
            return _error(call, str(exc), ready.decision)
        except Exception as exc:
            return _error(call, f"Tool {call.name} failed unexpectedly: {type(exc).__name__}: {exc}", ready.decision)
        finally:
            WALK_VETO.reset(vetoed)
            _files.JUDGED_PATH.reset(judged)
            CURRENT_CALL_ID.reset(token)
        try:
            output = model_output(result.output, self._redactor())
        except ToolError as exc:
            return _error(call, f"Tool {call.name} {exc}", ready.decision)
        return ToolOutcome(call.id, call.name, {"output": output}, False, result.inline_data, ready.decision)

    def _redactor(self) -> Redactor:
        return redactor(extra=self._secrets)


@dataclass(frozen=True)
class _Ready:
    spec: ToolSpec
    params: Params | dict[str, Any]
    decision: PermissionDecision
    judged_path: Path | _files.Unresolved | None = None
    """The real path the protected-path check judged (write_file, edit_file; not in yolo mode), or why
    it could not resolve one."""
    veto: _reach.Veto | None = None
    """What leaves an entry out of the call's walk (`ToolRuntime._veto`)."""


async def protected_write(
    tool: str,
    args: Mapping[str, Any],
    workspace: Workspace,
    search_path: str,
    judged: dict[str, Path | _files.Unresolved] | None = None,
    *,
    edit: bool,
    elsewhere: bool = False,
) -> str | None:
    """Why a call of `tool` (unified's name; `edit`: a tool that writes its `file_path`) may write a protected
    path (docs/tools.md, "Protected paths"), or None. `judged` receives the real path a file tool's call was
    judged on. `search_path` is the `PATH` its commands run with.

    `elsewhere`: the tool is a backend's own (the Gemini CLI's, Claude Code's, Codex's), which writes the path
    itself, after the answer, by its own rules. Then a path outside the workspace is asked (the CLIs write
    their own settings, memory and instructions there, and unified's tools, which would refuse it, cannot
    vouch for it), and the path is judged as the kernel reads it (links, then `..`) and as a program that
    normalises it first does (`..`, then links): `.vscode/lnk/../tasks.json` is `.vscode/tasks.json` to
    Claude Code whatever `lnk` leads to.

    The reason is one line, each character that breaks a line or hides escaped (`shown_reason`): it repeats a
    command's words and a link's target as written, which a repository may name (`out<LF>Error: ...`)."""
    reason = await _protected_reason(tool, args, workspace, search_path, judged, edit=edit, elsewhere=elsewhere)
    return None if reason is None else shown_reason(reason)


async def _protected_reason(
    tool: str,
    args: Mapping[str, Any],
    workspace: Workspace,
    search_path: str,
    judged: dict[str, Path | _files.Unresolved] | None,
    *,
    edit: bool,
    elsewhere: bool,
) -> str | None:
    """`protected_write`'s reason, as the checks word it."""
    if edit and isinstance(args.get("file_path"), str):
        raw = args["file_path"]
        candidates = []
        for lexical in (False, True) if elsewhere else (False,):
            try:
                candidates.append(await workspace.resolve(raw, lexical=lexical))
            except ToolError as exc:
                if judged is not None:  # the tool refuses it too, and must even if it resolves by then
                    judged["path"] = _files.Unresolved(str(exc))
                if elsewhere:
                    shown = shown_name(clip(raw, 200, more="…"))  # round 39: a reason a person reads
                    return f"{shown} is not a path in the workspace, so unified cannot judge it: {exc}"
                return None
        if judged is not None:
            judged["path"] = candidates[0]
        for path in candidates:
            pattern = _protected.protected_path(path) or _protected.program_directory(
                path, search_path, workspace.roots
            )
            if pattern is not None:
                return f"{workspace.display(path)} is a protected path ({pattern}): writing it changes what runs later"
            repository = await anyio.to_thread.run_sync(_protected.git_configured, path, workspace.roots)
            if repository is not None:
                return f"{workspace.display(path)} is a protected path: {repository}"
            # unified's own tools write a new file and rename it over the name; a backend's write in place
            reached = await anyio.to_thread.run_sync(_reached_by_write, path, workspace.roots, elsewhere)
            if reached is not None:
                return f"writing {workspace.display(path)} changes more than that file: {reached}"
        return None
    if tool == "run_shell_command" and isinstance(args.get("command"), str):
        parts = _shell_syntax.parse(args["command"])
        try:
            cwd = await workspace.resolve(str(args.get("dir_path") or "."))
        except ToolError:
            cwd = workspace.root
        roots = workspace.roots
        command = args["command"]
        inputs = tuple(_shell_syntax.redirected_inputs(command)) if "<" in command else ()
        return await anyio.to_thread.run_sync(
            functools.partial(_protected.shell_protected, parts, cwd, roots, search_path, inputs=inputs)
        )
    return None


def _reached_by_write(path: Path, roots: Sequence[Path], in_place: bool) -> str | None:
    """What else than `path` a write of the file changes (`protected_write`): a protected link's target always, and
    for a write `in_place` (a backend's own tool: Node's `writeFile` truncates and writes) its other hard links."""
    return (_protected.hard_linked(path) if in_place else None) or _protected.linked_from_protected(path, roots)


async def real_paths(
    workspace: Workspace, tool: str, args: Mapping[str, Any], *, lexical: bool = False
) -> dict[str, Any] | None:
    """The arguments of a call of a built-in tool (or of a binary's tool as the policy names it) with each path
    argument that resolves elsewhere than it reads (through a link: `docs/l/key` with `docs/l -> ../secrets`) put
    as the path it reaches, relative to the workspace root (absolute outside it), or None when none does. A rule's
    `argsPattern` reads the text of a path; a link in the workspace (a repository may hold one, a command may make
    one) spelled `secrets/key` another way, and a deny rule for `secrets/` let `read_file` read it. A folder is
    put with a trailing `/`, so that rule also covers a search of `secrets` or `docs/l`. A path that
    cannot be resolved is left as it is: the runtime's tool refuses it, a binary's asks (`read_outside`).
    `lexical`: each path's `..` applied to its text first, as Claude Code does before it opens it (Node's
    `path.resolve`): `a/b/../c` is `a/c` to it, wherever the link `a/b` leads; None when no path has a `..`."""
    if tool not in _PATH_TOOLS:
        return None
    changed: dict[str, Any] = {}
    for key in PATH_ARGUMENTS:
        value = args.get(key)
        if not isinstance(value, str) or not value:
            continue
        target = value
        if lexical:
            target = posixpath.normpath(spelled(value))
            if target == spelled(value) or ".." not in value:
                continue
        try:
            real = await anyio.to_thread.run_sync(workspace.real_path, target, abandon_on_cancel=True)
        except (ToolError, OSError):  # realpath raises when a link it follows is swapped away meanwhile
            continue
        root = workspace.root
        # a folder as a rule for its files spells it (a trailing `/`): a search of `docs/l` reads `secrets/`
        folder = real != root and await anyio.to_thread.run_sync(real.is_dir, abandon_on_cancel=True)
        form = _reach.reached_form(root, real, folder)
        if form != plain_path(value):
            changed[key] = form
    pattern = args.get("pattern")
    if tool == "glob" and not lexical and isinstance(pattern, str):
        reached = await _glob_reaches(workspace, args.get("path"), pattern)
        if reached is not None:
            changed["pattern"] = reached
    return {**args, **changed} if changed else None


async def _glob_reaches(workspace: Workspace, base: Any, pattern: str) -> str | None:
    """A glob pattern with its folders before the first wildcard put as the folder they reach (`docs/l/*` ->
    `secrets/*`), or None when that is as written: the walk lists what is under the link, which a rule for
    `secrets/` reading the pattern's text did not see."""
    parts = pattern.split("/")
    fixed = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[{")), len(parts) - 1)
    if fixed == 0:
        return None
    folder = "/".join(parts[:fixed]) or "/"
    if isinstance(base, str) and base and not folder.startswith("/"):
        folder = f"{base.rstrip('/')}/{folder}"
    try:
        real = await anyio.to_thread.run_sync(workspace.real_path, folder, abandon_on_cancel=True)
    except (ToolError, OSError):
        return None
    root = workspace.root
    form = real.relative_to(root).as_posix() if real.is_relative_to(root) else str(real)
    reached = "/".join((form, *parts[fixed:])) if real != root else "/".join(parts[fixed:])
    return None if reached == pattern else reached


async def linked_verdict(
    policy: Policy,
    workspace: Workspace,
    tool: str,
    args: Mapping[str, Any],
    mode: ApprovalMode,
    *,
    unseen: bool = False,
    paths: Mapping[str, Any] | None = None,
    elsewhere: bool = False,
) -> Verdict:
    """The policy's verdict on a call, read on its arguments and on the paths they reach (`real_paths`: through
    the kernel's links, and with `..` applied first as Claude Code applies it), the strictest. The one place a
    path rule is judged through links: unified's own tools (`_decide`) and the binaries' permission requests
    (Claude Code's `can_use_tool`, Codex's approvals, the Gemini CLI's through `decide`) all ask here, so a deny
    of `secrets/` holds on `docs/l/key` whichever program reads it. `paths`: the arguments as the program reads
    its paths (Claude Code's `~`), when not as written.

    Where a rule reads arguments (`_reach.reads_arguments`), also what the call reaches past its path arguments: a
    shell command's words through links and the folders its recursive readers walk (`_shell_verdict`), and, for a
    tool a binary runs `elsewhere` (Claude Code's), the folder its search or glob walks (`_elsewhere_verdict`).
    Unified's own walks leave out what the policy refuses as they go instead (`walk_veto`)."""
    verdict = policy.evaluate(tool, args, mode, unseen=unseen)
    if verdict.decision is Decision.DENY:
        return verdict
    for lexical in (False, True):
        real = await real_paths(workspace, tool, args if paths is None else paths, lexical=lexical)
        if real is not None:
            verdict = _stricter(verdict, policy.evaluate(tool, real, mode, unseen=unseen))
    readers = _reach.reads_arguments(policy, tool, mode) if not unseen else None
    if readers is None or verdict.decision is Decision.DENY:
        return verdict
    if tool == "run_shell_command" and isinstance(args.get("command"), str):
        return await anyio.to_thread.run_sync(_shell_verdict, readers, workspace, args, mode, verdict)
    if elsewhere:
        return await anyio.to_thread.run_sync(
            _elsewhere_verdict, readers, workspace, tool, paths or args, mode, verdict
        )
    return verdict


def _shell_verdict(
    policy: Policy, workspace: Workspace, args: Mapping[str, Any], mode: ApprovalMode, verdict: Verdict
) -> Verdict:
    """`verdict` made stricter by what a shell command reaches (`_reach.shell_reach`): its words as the paths they
    reach from every directory it may run in, and each folder a recursive reader of it walks, entry by entry.
    Blocking."""
    tool = "run_shell_command"
    try:
        cwd = workspace.real_path(str(args.get("dir_path") or "."))
    except (ToolError, OSError):
        cwd = workspace.root
    reach = _reach.shell_reach(str(args["command"]), cwd, workspace.root)
    if reach.doubt is not None and verdict.decision is Decision.ALLOW:
        doubt = _reach.refusing_reader(policy)
        if doubt is not None:
            return Verdict(Decision.ASK_USER, doubt, f"rule {doubt.name} may apply to a path it reads: {reach.doubt}")
    if reach.command is not None:
        rewritten = policy.evaluate(tool, {**args, "command": reach.command}, mode)
        if _reach.refuses_by_path(rewritten):
            verdict = _stricter(verdict, rewritten)
    budget = [limits.POLICY_WALK_MAX_ENTRIES]
    for folder, certain, words, index in reach.walks:
        if verdict.decision is Decision.DENY:
            break

        def judged(form: str, words: tuple[str, ...] = words, index: int = index) -> dict[str, Any]:
            argv = [*words, form] if index < 0 else [*words[:index], form, *words[index + 1 :]]
            return {**args, "command": shlex.join(argv)}

        found = _reach.tree_verdict(
            policy, workspace.root, tool, judged, folder, mode, verdict, certain=certain, budget=budget
        )
        if found is not None:
            verdict = _stricter(verdict, found)
    return verdict


def _elsewhere_verdict(
    policy: Policy, workspace: Workspace, tool: str, args: Mapping[str, Any], mode: ApprovalMode, verdict: Verdict
) -> Verdict:
    """`verdict` made stricter for a binary's own tool: a path it resolves in its own process (`/proc/self/cwd/..`)
    is asked, and the folder its search or glob walks (Claude Code's Grep and Glob, the Gemini CLI's grep_search and
    glob; its `path` or `dir_path`, else the workspace; the Gemini CLI's read_many_files, the workspace: its globs are
    not read) is judged entry by entry (`_reach.tree_verdict`). Blocking."""
    for key in PATH_ARGUMENTS:
        value = args.get(key)
        if (
            isinstance(value, str)
            and verdict.decision is Decision.ALLOW
            and _reach.process_path(str(workspace.root / spelled(value)))
        ):
            doubt = _reach.refusing_reader(policy)
            if doubt is not None:
                shown = clip(value, 200, more="…")
                why = f"rule {doubt.name} may apply to {shown}, which the program resolves in its own process"
                return Verdict(Decision.ASK_USER, doubt, why)
    if tool not in ("search", "glob", "read_many_files"):
        return verdict
    key = "dir_path" if "dir_path" in args else "path"  # the Gemini CLI's name, Claude Code's
    if tool == "read_many_files":  # the Gemini CLI's: every file its `include` globs take, from the workspace
        found = _reach.tree_verdict(
            policy, workspace.root, tool, lambda form: {**args, key: form}, workspace.root, mode, verdict
        )
        return verdict if found is None else _stricter(verdict, found)
    folder = args.get(key)
    pattern = args.get("pattern")
    listed = None
    if tool == "glob" and isinstance(pattern, str):  # it lists the names its pattern takes, under its fixed folders
        parts = pattern.split("/")
        cut = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[{")), len(parts) - 1)
        prefix = "/".join(parts[:cut]) or ("/" if pattern.startswith("/") else "")
        if prefix:
            folder = (
                prefix if prefix.startswith("/") or not isinstance(folder, str) else f"{folder.rstrip('/')}/{prefix}"
            )
        try:
            listed = _files.glob_regex("/".join(parts[cut:]) or "*")
        except ToolError:
            listed = None  # a pattern unified cannot read: every entry is judged
    try:
        real = workspace.real_path(folder if isinstance(folder, str) and folder else ".")
    except (ToolError, OSError):
        return verdict
    if not real.is_dir():
        return verdict

    def judged(form: str) -> dict[str, Any]:
        return {**args, key: form}

    takes = None if listed is None else (lambda relative: listed.fullmatch(matchable(relative)) is not None)
    found = _reach.tree_verdict(policy, workspace.root, tool, judged, real, mode, verdict, listed=takes)
    return verdict if found is None else _stricter(verdict, found)


async def read_outside(workspace: Workspace, paths: Sequence[str], *, trees: bool = False) -> str | None:
    """Why a backend's own tool that reads `paths` (Claude Code's Read, Grep, Glob, LS; a command Codex
    parses as reads) must be asked although a rule allows reads: one of them lies outside the workspace
    (as the kernel or as a program normalising `..` first reads it), where unified's own tools never read
    and the run's credentials live (Claude Code's key file, Codex's auth.json, `~/.aws`), or one is a credential file
    under another name (a hard link), or, for a tool that reads `trees` (Grep), a folder holding one. None: all
    inside, none a credential file."""
    resolved: list[tuple[str, Path]] = []
    for raw in paths:
        for lexical in (False, True):
            try:
                resolved.append((raw, await workspace.resolve(raw, lexical=lexical)))
            except ToolError as exc:
                shown = shown_name(clip(raw, 200, more="…"))
                return f"{shown} is not a path in the workspace, so unified does not read it unasked: {exc}"
    # inside, and still a credential file: a hard link to `~/.netrc` (Read of `docs/n`, Grep of `docs`), round 18
    for raw, path in dict.fromkeys(resolved):
        reached = await anyio.to_thread.run_sync(
            functools.partial(_protected.credential_reach, path, workspace.roots, tree=trees)
        )
        if reached is not None:
            return f"{shown_name(clip(raw, 200, more='…'))} reaches {reached}, so unified does not read it unasked"
    return None


def _unjudgeable(call: ToolCall, tool: str, args: Mapping[str, Any]) -> str | None:
    """Why the policy must not read these arguments at all, or None: nested deeper than any rule's `argsPattern`
    can serialise (a RecursionError), or a shell command longer than bash can be given (its parse alone would
    hold the event loop for seconds)."""
    invalid = f"Invalid parameters provided to {call.name}. Reason:"
    if limits.too_deep(args):
        return f"{invalid} they nest deeper than {limits.MAX_JSON_DEPTH} levels."
    command = args.get("command")
    if tool == "run_shell_command" and isinstance(command, str) and (size := limits.command_too_long(command)):
        return (
            f"{invalid} the command is {size:,} bytes, more than bash can be given "
            f"({limits.MAX_SHELL_COMMAND_BYTES:,}); write the long part to a file and run that."
        )
    return None


def _nulls_left_out(model: type[BaseModel], args: dict[str, Any], exc: ValidationError) -> dict[str, Any]:
    """`args` without the nulls `exc` refused for parameters that have a default: a model sends `null` for an
    optional parameter it means to leave out (as JSON Schema's "not given" reads to it), and gets the default,
    as it would by leaving it out; a null the parameter's type takes (`str | None`) is never refused, so kept.
    `args` itself (the same object) when there is none to leave out: the caller then validates no second time."""
    refused = {e["loc"][0] for e in exc.errors() if len(e["loc"]) == 1 and args.get(str(e["loc"][0]), 0) is None}
    fields = model.model_fields
    optional = {name for name in refused if name in fields and not fields[str(name)].is_required()}
    return {key: value for key, value in args.items() if key not in optional} if optional else args


def _reasons(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors())


async def _refused(call: ToolCall, obs: ToolObserver, message: str) -> ToolOutcome:
    """A call that cannot run at all (unknown tool, invalid arguments): its one decision is the runtime's."""
    event = PermissionDecision(
        tool_use_id=call.id, tool_name=call.name, decision="deny", decided_by="backend", reason=message
    )
    await obs.decision(call, event)
    return _error(call, message, event)


def refused_by(call: ToolCall, decision: PermissionDecision) -> ToolOutcome | None:
    """What a decision that does not let `call` run makes of it: a stop ends the run (`RunStopped`), a denial is
    the call's error, in the words the model reads on every backend; None when the call may run. One place for
    the runtime's calls and the agent loop's `delegate`, which the policy decides as any call."""
    if decision.stops_run:
        raise RunStopped(
            f"the user stopped the run at {call.name} ({call.id})",
            hint="resume the session to go on",
            details={"tool_use_id": call.id},
        )
    if decision.decision == "deny":
        told = f". The user says: {decision.message}" if decision.message else ""
        return _error(call, f"Tool call {call.name} was denied: {decision.reason}{told}", decision)
    return None


def _error(call: ToolCall, message: str, decision: PermissionDecision | None = None) -> ToolOutcome:
    return ToolOutcome(call.id, call.name, {"error": capped(redactor()(message))}, True, (), decision)


def capped(text: str, limit: int = limits.MAX_TOOL_OUTPUT_CHARS) -> str:
    """`text` (already redacted) as UTF-8 can carry it (`well_formed`: a file name that is not UTF-8 comes as
    surrogate escapes, and in a glob's output it failed the whole run inside the API client), cut to `limit`
    characters, saying how much was left out."""
    text = well_formed(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[output cut at {limit:,} characters: {len(text) - limit:,} more not shown]"


def model_output(value: Any, clean: Redactor) -> Any:
    """A tool's output as the model reads it: secrets replaced in every string (keys included) of
    any output type, each `well_formed`, then cut to `MAX_TOOL_OUTPUT_CHARS` (a
    structured output by its JSON, which then comes back as that cut text). Output nested deeper than
    `MAX_JSON_DEPTH` is refused."""
    if isinstance(value, str):
        return capped(clean(value))
    if limits.too_deep(value):
        raise ToolError(f"returned output nested deeper than {limits.MAX_JSON_DEPTH} levels; it was not sent.")
    redacted = well_formed_json(clean.json(value))
    if isinstance(redacted, (dict, list, tuple)):
        text = json.dumps(redacted, ensure_ascii=False, default=str)
        if len(text) > limits.MAX_TOOL_OUTPUT_CHARS:
            return capped(text)
    return redacted


_WALK_KEYS = {"search": "path", "glob": "dir_path", "tree": "path"}
"""Unified's tools that walk a folder, and the argument that names it (an entry is judged as that argument)."""

_PATH_TOOLS = frozenset(
    {"read_file", "write_file", "edit_file", "list_dir", "tree", "search", "glob", "run_shell_command"}
)
"""The built-in tools whose `file_path`, `dir_path` or `path` argument is a path of the workspace."""


def _stricter(first: Verdict, second: Verdict) -> Verdict:
    """The verdict that allows less (deny over ask over allow); the first when they are alike."""
    return second if STRICTNESS[second.decision] > STRICTNESS[first.decision] else first


_SUMMARY_PARTS = 6


def _summary(tool: str, args: Mapping[str, Any]) -> str:
    if tool == "run_shell_command":
        command = str(args.get("command", ""))
        directory = args.get("dir_path")
        where = f" in {directory}" if isinstance(directory, str) and directory not in ("", ".") else ""
        return f"Allow running `{command}`{where}?" + _shell_parts(command)
    if "file_path" in args:
        return f"Allow {tool} on {args['file_path']}?"
    return f"Allow {tool}?"


def _shell_parts(command: str) -> str:
    """What bash would really run, when the text alone could mislead a reader (several commands,
    wrappers, substitutions, redirections, parts only known at run time); else nothing."""
    parts = _shell_syntax.parse(command)
    if not parts:
        return ""
    [first, *rest] = parts
    if not rest and first.text.strip() == command.strip() and not first.via and first.unknown is None:
        return ""
    shown = [f"`{part.display()}`" for part in parts[:_SUMMARY_PARTS]]
    more = len(parts) - _SUMMARY_PARTS
    return "\nIt runs: " + ", ".join(shown) + (f" and {more} more" if more > 0 else "")


publish(
    "unified.tools",
    [
        "EventForwarder",
        "McpConnectError",
        "NullObserver",
        "PermissionRequest",
        "ToolCall",
        "ToolObserver",
        "ToolOutcome",
        "ToolRuntime",
    ],
    globals(),
)
