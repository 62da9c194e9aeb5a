"""The Gemini CLI backend: one run = one ACP session in a (warm or cold) `gemini --acp` process.

backend_options (all optional):
- `gemini_binary`: path of the `gemini` executable (else UNIFIED_GEMINI_BIN, .gemini-cli, PATH);
- `transport`: "acp" (default) or "stream-json" (`gemini -p`, for CLIs without ACP; loses thoughts,
  permission prompts and subagent detail);
- `pool_size`: warm processes kept by the default pool; 0 = a cold process per run;
- `pool`: an `AcpPool` to use instead of the default one;
- `fake_responses`: a `--fake-responses` JSONL file (offline tests); `fake_responses_strict`
  (default True) picks `--fake-responses` over `--fake-responses-non-strict`;
- `env`: extra environment variables for the child;
- `acp_transcript`: a list that receives every JSON-RPC message both ways (cassette recording).

Tool outputs: ACP omits them for reads and listings, so a main-session `tool_result` is held until the
call's record reaches the session's chat file (`chat_tail.ChatTail`) and then carries its
`functionResponse.response`; nothing overtakes a held result (ACP's order is kept), and without a
record in time it goes out as ACP gave it. `tool_use.input` stays ACP's title/paths: the CLI records
the model's arguments only once the call has finished (measured on 0.61).
"""

from __future__ import annotations

import base64
import json
import math
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import anyio
import platformdirs

from unified._errors import AuthError, BackendError, ConfigurationError, RateLimited, SessionNotFound
from unified._internal.backend import RunContext, RunOutcome
from unified.adapters.gemini_cli.chat_tail import ChatTail, tool_response
from unified.adapters.gemini_cli.home import cache_file, child_env, gemini_home
from unified.adapters.gemini_cli.pool import AcpPool, Lease, default_pool, pool_key
from unified.adapters.gemini_cli.sessions import GeminiSessionLocator, ResumeGuard, read_chat, replay_count
from unified.adapters.gemini_cli.subagents import SubagentWatcher
from unified.adapters.gemini_cli.translate import (
    AcpTranslator,
    TurnBoundary,
    tool_name_of,
    usage_of_prompt_result,
)
from unified.adapters.gemini_cli.transport import (
    AcpConnection,
    AcpRequestError,
    ChildProcess,
    ConnectionClosed,
    Inbox,
    as_dict,
    error_for_exit,
    json_line_warning,
    locate,
)
from unified.events import (
    ALLOW_ALWAYS,
    ALLOW_ONCE,
    DENY,
    PermissionDecision,
    Question,
    SessionStarted,
    SubagentCompleted,
    SubagentStarted,
    ToolResult,
    UnifiedEvent,
    Usage,
    UserInputRequest,
    WarningEvent,
    permission_request,
)
from unified.sessions import short_id_of
from unified.types import ApprovalMode, ExecuteParams, HttpMcpServer, McpServer, SseMcpServer, StdioMcpServer

BACKEND = "gemini-cli"
FAKE_MODEL = "gemini-2.5-flash"
"""With recorded responses a concrete model is required: `auto` would consume a line routing."""
ACP_MODES: dict[ApprovalMode, str] = {"default": "default", "auto_edit": "autoEdit", "yolo": "yolo", "plan": "plan"}
CANCEL_GRACE_S = 2.0
REPLAY_QUIET_S = 2.0
"""How long the history replay of `session/load` may pause before we stop waiting for the rest."""
SETTLE_INTERVAL_S = 0.1
"""How often a held `tool_result` looks for its call's record in the chat file."""
FLUSH_GRACE_S = 1.0
"""How long a held `tool_result` may still wait for its record when the stream must move on."""
_REPLAYED = frozenset({"user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call"})


def _option(params: ExecuteParams, name: str, kind: type[Any], default: Any = None) -> Any:
    value = params.backend_options.get(name, default)
    if value is not None and not isinstance(value, kind):
        raise ConfigurationError(
            f"backend_options[{name!r}] must be {kind.__name__}, not {type(value).__name__}",
            hint="see docs/backends/gemini-cli.md for the options",
        )
    return value


def mcp_to_acp(server: McpServer) -> dict[str, Any]:
    """Typed MCP servers → ACP `mcpServers` entries (`env`/`headers` as name/value lists)."""
    if isinstance(server, HttpMcpServer | SseMcpServer):
        return {
            "type": server.type,
            "name": server.name,
            "url": server.url,
            "headers": [{"name": k, "value": v} for k, v in server.headers.items()],
        }
    return {
        "name": server.name,
        "command": server.command,
        "args": list(server.args),
        "env": [{"name": k, "value": v} for k, v in server.env.items()],
    }


def _prompt_blocks(params: ExecuteParams) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": params.prompt}]
    for image in params.images:
        blocks.append({"type": "image", "mimeType": image.mime_type, "data": base64.b64encode(image.data).decode()})
    return blocks


def _mode_allows(mode: ApprovalMode, kind: object) -> bool:
    """What the approval mode decides when nobody answers a permission prompt."""
    if mode == "yolo":
        return True
    if mode == "auto_edit":
        return kind == "edit"
    return False


def _workdir() -> Path:
    """A neutral cwd for the processes: the CLI files a startup session under its cwd's project."""
    path = Path(platformdirs.user_cache_dir("unified")) / "gemini-cli" / "workdir"
    path.mkdir(parents=True, exist_ok=True)
    return path


class GeminiCliBackend:
    name = BACKEND

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params
        self.transport = _option(params, "transport", str, "acp")
        if self.transport not in ("acp", "stream-json"):
            raise ConfigurationError(
                f"unknown gemini-cli transport {self.transport!r}", hint="use 'acp' or 'stream-json'"
            )
        extra_env = {str(k): str(v) for k, v in _option(params, "env", dict, {}).items()}
        if params.system_instruction is not None:
            # Replaces the CLI's whole system prompt; read per process, so it is part of the pool key.
            extra_env["GEMINI_SYSTEM_MD"] = str(cache_file("system", ".md", params.system_instruction))
        self.env = child_env(extra_env)
        self.binary = locate(_option(params, "gemini_binary", str | os.PathLike), self.env)  # type: ignore[arg-type]
        fake = _option(params, "fake_responses", str | os.PathLike)  # type: ignore[arg-type]
        self.fake_responses = Path(fake).resolve() if fake is not None else None
        self.model = params.model or (FAKE_MODEL if self.fake_responses else None)
        pool = params.backend_options.get("pool")
        if pool is not None and not isinstance(pool, AcpPool):
            raise ConfigurationError("backend_options['pool'] must be an AcpPool", hint="or leave it out")
        size = _option(params, "pool_size", int)
        self.pool: AcpPool = pool or (AcpPool(size=0) if size == 0 else default_pool())
        if size and pool is None:
            self.pool.size = size

    # --- options ------------------------------------------------------------------------------

    def unsupported_options(self, params: ExecuteParams) -> list[tuple[str, str, bool]]:
        problems: list[tuple[str, str, bool]] = []
        if params.thinking is not None:
            problems.append(
                (
                    "thinking",
                    "gemini 0.61 takes thinking settings only from settings files (modelConfigs), which unified "
                    "does not write; the CLI uses its own (budget 8192 on 2.5 models, level high on 3)",
                    False,
                )
            )
        if params.max_turns is not None:
            problems.append(
                (
                    "max_turns",
                    "gemini 0.61 takes its turn limit only from settings files (model.maxSessionTurns), which "
                    "unified does not write",
                    False,
                )
            )
        if self.transport == "stream-json":
            if params.images:
                problems.append(("images", "the stream-json transport takes a text prompt only", True))
            if params.on_user_input is not None:
                problems.append(("on_user_input", "stream-json cannot ask: the approval mode decides", False))
        return problems

    def _argv(self) -> list[str]:
        argv = [str(self.binary.path), "--acp"]
        if self.fake_responses is not None:
            strict = _option(self.params, "fake_responses_strict", bool, True)
            argv += ["--fake-responses" if strict else "--fake-responses-non-strict", str(self.fake_responses)]
        for directory in self.params.include_directories:
            argv += ["--include-directories", str(Path(directory).resolve())]
        return argv + self.policy_flags()

    def policy_flags(self) -> list[str]:
        """`excluded_tools` as a `--policy` file of deny rules (0.61 has no exclude flag; settings are the
        user's). A deny rule without arguments removes the tool from what the model is offered."""
        if not self.params.excluded_tools:
            return []
        rules = "".join(
            f'[[rule]]\ntoolName = {json.dumps(name)}\ndecision = "deny"\npriority = 999\n\n'
            for name in sorted(set(self.params.excluded_tools))
        )
        return ["--policy", str(cache_file("exclude-tools", ".toml", rules))]

    # --- the run ------------------------------------------------------------------------------

    async def run(self, ctx: RunContext) -> RunOutcome:
        from unified.adapters.gemini_cli.stream_json import run_stream_json

        if ctx.params.resume:  # an unknown or ambiguous id fails here, before a process is started
            where = str(ctx.params.cwd.expanduser().resolve())
            await anyio.to_thread.run_sync(GeminiSessionLocator(self.env).resolve, ctx.params.resume, where)
        if self.transport == "stream-json":
            return await run_stream_json(self, ctx)
        argv = self._argv()
        # `session/load` looks the session up under its `cwd` parameter, not the process's cwd,
        # so resumed runs share the warm processes too.
        spawn_cwd = _workdir()

        async def spawn() -> AcpConnection:
            connection = AcpConnection(ChildProcess(argv, cwd=spawn_cwd, env=self.env))
            try:
                info = await connection.request(
                    "initialize",
                    # Never advertise fs capabilities: with them the 0.61 CLI cannot create new files.
                    {
                        "protocolVersion": 1,
                        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
                    },
                )
            except (ConnectionClosed, AcpRequestError) as exc:
                code = await connection.child.wait_exit(2.0)
                tail = connection.child.stderr.text()
                await connection.close()
                raise error_for_exit(code, tail, f"gemini --acp failed to start ({exc})") from exc
            connection.agent_info = dict(info.get("agentInfo") or {})
            connection.can_load = as_dict(info.get("agentCapabilities")).get("loadSession") is True
            return connection

        transcript = self.params.backend_options.get("acp_transcript")

        async with self.pool.lease(pool_key([*argv, str(spawn_cwd)], self.env), spawn) as lease:
            if not self.params.resume or lease.connection.can_load:
                if isinstance(transcript, list):
                    lease.connection.transcript = transcript
                return await _AcpRun(self, ctx, lease).run()
        await ctx.emit(
            WarningEvent(
                code="resume_via_stream_json",
                message="this gemini does not offer ACP session/load; the resumed run uses `gemini -p --resume` "
                "(no thoughts, no permission prompts)",
            )
        )
        return await run_stream_json(self, ctx)


class _AcpRun:
    """One run inside a leased process."""

    def __init__(self, backend: GeminiCliBackend, ctx: RunContext, lease: Lease) -> None:
        self.backend = backend
        self.ctx = ctx
        self.params = ctx.params
        self.lease = lease
        self.connection = lease.connection
        self.inbox = Inbox()
        self.session_id = ""
        self.translator = AcpTranslator()
        self.watcher: SubagentWatcher | None = None
        self.chat: ChatTail | None = None
        self._held: list[tuple[ToolResult, Any]] = []
        self._emit_lock = anyio.Lock()
        self._chat_warned = False

    async def run(self) -> RunOutcome:
        cwd = self.params.cwd.expanduser().resolve()
        if not cwd.is_dir():
            raise ConfigurationError(f"cwd {cwd} is not a directory", hint="pass an existing working directory")
        try:
            if self.params.resume:
                await self._load(cwd)
            else:
                await self._new(cwd)
            return await self._prompt(cwd, resumed=bool(self.params.resume))
        except ConnectionClosed as exc:
            self.lease.retire()
            child = self.connection.child
            code = await child.wait_exit(2.0)
            raise error_for_exit(code, child.stderr.text(), f"gemini exited during the run ({exc})") from exc
        finally:
            if self.session_id:
                self.connection.close_inbox(self.session_id)

    # --- session setup ------------------------------------------------------------------------

    async def _request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return await self.connection.request(method, params)
        except AcpRequestError as exc:
            self.connection.child.drain_stderr()
            raise _error_from_acp(exc, self.connection.child.stderr.text()) from exc

    async def _new(self, cwd: Path) -> None:
        await self._warn_unstartable_mcp(cwd)
        result = await self._request("session/new", {"cwd": str(cwd), "mcpServers": self._mcp_servers()})
        self._opened(str(result["sessionId"]))
        await self._configure()

    def _mcp_servers(self) -> list[dict[str, Any]]:
        return [mcp_to_acp(server) for server in self.params.mcp_servers]

    async def _warn_unstartable_mcp(self, cwd: Path) -> None:
        """Warn about stdio MCP servers whose command does not exist.

        0.61 does not report a failed MCP server over ACP (one stderr line at exit, naming no server),
        so the failure we can see beforehand is ours to report.
        """
        for server in self.params.mcp_servers:
            if isinstance(server, StdioMcpServer) and not _command_exists(server.command, cwd, self.backend.env):
                await self._warn(
                    "mcp_server_unavailable",
                    f"MCP server {server.name!r} cannot start: command {server.command!r} was not found "
                    f"(PATH of the gemini process, relative paths from {cwd}); its tools will be missing",
                )

    def _opened(self, session_id: str) -> None:
        self.session_id = session_id
        self.translator.session_id = session_id
        self.inbox = self.connection.open_inbox(session_id)

    async def _configure(self) -> None:
        if self.backend.model:
            await self._request("session/set_model", {"sessionId": self.session_id, "modelId": self.backend.model})
        mode = ACP_MODES[self.params.approval_mode]
        if mode != "default":
            await self._request("session/set_mode", {"sessionId": self.session_id, "modeId": mode})

    async def _load(self, cwd: Path) -> None:
        """`session/load` by short id, its history replay skipped, guarded against the CLI's resume bugs."""
        info = GeminiSessionLocator(self.backend.env).resolve(str(self.params.resume), str(cwd))
        replayed = replay_count(read_chat(Path(str(info.path))).messages)
        guard = ResumeGuard(gemini_home(self.backend.env), info.session_id)
        guard.before()
        self._opened(info.session_id)
        await self._warn_unstartable_mcp(cwd)
        try:
            await self._request(
                "session/load",
                {"sessionId": info.session_id, "cwd": str(cwd), "mcpServers": self._mcp_servers()},
            )
        finally:
            # Right away, not at the end of the run: the empty duplicate must not outlive the load.
            for repair in guard.after():
                await self._warn("session_repaired", repair)
        await self._configure()
        await self._skip_replay(replayed)

    async def _skip_replay(self, expected: int) -> None:
        """Consume the history `session/load` replays: it is the past, not this run's events.

        The CLI sends the replay without awaiting it, so it can trail the load's answer; we count
        it off (see `replay_count`) and stop early only if it pauses for `REPLAY_QUIET_S`.
        """
        seen = 0
        while seen < expected:
            with anyio.move_on_after(REPLAY_QUIET_S) as quiet:
                message = await self.connection.receive(self.inbox)
            if quiet.cancelled_caught:
                return
            update = as_dict(as_dict(message.get("params")).get("update"))
            if message.get("method") == "session/update" and update.get("sessionUpdate") in _REPLAYED:
                seen += 1

    # --- the prompt ---------------------------------------------------------------------------

    async def _prompt(self, cwd: Path, *, resumed: bool) -> RunOutcome:
        ctx = self.ctx
        short = short_id_of(self.session_id)
        await ctx.emit(
            SessionStarted(
                backend=BACKEND,
                model=self.backend.model,
                short_id=short,
                resumed=resumed,
                cwd=str(cwd),
                transport="acp",
                session_id=self.session_id,
            )
        )
        self.watcher = SubagentWatcher(gemini_home(self.backend.env), self.session_id, ctx)
        self.chat = ChatTail(gemini_home(self.backend.env), self.session_id)
        self.chat.start()
        request_id = await self.connection.start_request(
            "session/prompt", {"sessionId": self.session_id, "prompt": _prompt_blocks(self.params)}, self.inbox
        )
        try:
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self.watcher.run)
                    tg.start_soon(self._settle_loop)
                    try:
                        answer = await self._pump(request_id)
                    finally:
                        tg.cancel_scope.cancel()
            except BaseExceptionGroup as group:
                # A dead process surfaces from the task group wrapped; `run` explains it.
                if all(isinstance(exc, ConnectionClosed) for exc in group.exceptions):
                    raise group.exceptions[0] from None
                raise
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._cancel(request_id)
                async with self._emit_lock:
                    await self._flush(wait=False)
            raise
        finally:
            self.connection.forget(request_id)
        return await self._finish(answer, short)

    async def _pump(self, request_id: int) -> dict[str, Any]:
        while True:
            message = await self.connection.receive(self.inbox)
            if message.get("id") == request_id and "method" not in message:
                return message
            warning = json_line_warning(message)
            if warning is not None:
                await self._warn("malformed_line", warning)
                continue
            method = message.get("method")
            params = as_dict(message.get("params"))
            if method == "session/update":
                for item in self.translator.update(params.get("update") or {}):
                    await self._deliver(item, message)
            elif method == "session/request_permission" and "id" in message:
                await self._permission(message["id"], params, message)
            elif "id" in message and method:
                await self.connection.respond_error(message["id"], -32601, f"{method} is not supported")

    async def _deliver(self, item: UnifiedEvent | TurnBoundary, raw: Any) -> None:
        async with self._emit_lock:
            if isinstance(item, ToolResult) and self._from_chat_file(item, raw):
                self._held.append((item, raw))
                await self._settle()
                return
            if self._held:
                # Nothing overtakes a held result: the stream keeps ACP's order, only a little later.
                await self._flush()
            await self._deliver_now(item, raw)

    # --- tool outputs from the chat file --------------------------------------------------------

    def _from_chat_file(self, result: ToolResult, raw: Any) -> bool:
        """Whether the chat file holds this result's real output: a main-session call the CLI ran
        (not one we denied, whose result is ours) and not a subagent (its detail is the watcher's)."""
        return (
            result.subagent_task_id is None
            and self.translator.subagent_name(result.tool_use_id) is None
            and isinstance(raw, dict)
            and raw.get("method") == "session/update"
        )

    async def _settle(self, *, rescan: bool = False) -> None:
        """Emit, in order, the held results whose call record has reached the chat file, with its output."""
        while self._held and self.chat is not None:
            result, raw = self._held[0]
            record = self.chat.lookup(result.tool_use_id, rescan=rescan)
            answer = tool_response(record) if record is not None else None
            if answer is None:
                return
            self._held.pop(0)
            output, is_error = answer
            args = record.get("args") if record is not None else None
            update = {"output": output, "is_error": is_error, "input": args if isinstance(args, dict) else None}
            await self._deliver_now(result.model_copy(update=update), raw)

    async def _settle_loop(self) -> None:
        while True:
            await anyio.sleep(SETTLE_INTERVAL_S)
            if self._held:
                async with self._emit_lock:
                    await self._settle()

    async def _flush(self, *, wait: bool = True) -> None:
        """Emit every held result: with its recorded output if it arrives within `FLUSH_GRACE_S`, else
        with what ACP said (today's fallback) and, if the chat file is missing or unreadable, a warning."""
        if not self._held:
            return
        await self._settle(rescan=True)
        if wait and self.chat is not None and self.chat.tails:
            with anyio.move_on_after(FLUSH_GRACE_S):
                while self._held:
                    await anyio.sleep(SETTLE_INTERVAL_S / 2)
                    await self._settle()
        if not self._held:
            return
        held, self._held = self._held, []
        if not self._chat_warned and self.chat is not None and (self.chat.unreadable or not self.chat.tails):
            self._chat_warned = True
            await self._warn(
                "tool_output_unavailable",
                f"the session's chat file could not be read ({self.chat.unreadable or 'no file found'}); "
                "tool results carry only what ACP reports (no output for reads and listings)",
            )
        for result, raw in held:
            await self._deliver_now(result, raw)

    async def _deliver_now(self, item: UnifiedEvent | TurnBoundary, raw: Any) -> None:
        ctx = self.ctx
        if isinstance(item, TurnBoundary):
            await ctx.end_message()
            ctx.turns += 1
            return
        assert self.watcher is not None
        if isinstance(item, SubagentCompleted):
            usage = await self.watcher.finish(item.task_id)
            item = item.model_copy(update={"usage": usage})
        item.native = ctx.native(raw)
        await ctx.emit(item)
        if isinstance(item, SubagentStarted):
            self.watcher.track(item.task_id, item.agent_name)

    async def _permission(self, request_id: Any, params: dict[str, Any], raw: Any) -> None:
        for item in self.translator.permission_request(params):
            await self._deliver(item, raw)
        call = as_dict(params.get("toolCall"))
        call_id = str(call.get("toolCallId", ""))
        tool_name = self.translator.tool_name(call_id) if call_id else tool_name_of("", call.get("kind"))
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        is_question = tool_name == "ask_user"
        decided_by: Literal["user", "approval_mode"] = "approval_mode"
        choice: str = DENY
        answer = None
        if self.params.on_user_input is not None:
            answer = await self.ctx.ask_user(self._question(request_id, call, call_id, tool_name, is_question))
            if not answer.cancelled:
                decided_by = "user"
                choice = ALLOW_ONCE if is_question and answer.answers else answer.permission()
        if decided_by == "approval_mode":
            choice = ALLOW_ONCE if _mode_allows(self.params.approval_mode, call.get("kind")) else DENY
        option = _pick_option(options, choice)
        await self.ctx.emit(
            PermissionDecision(
                tool_use_id=call_id,
                tool_name=tool_name,
                decision="deny" if choice == DENY else "allow",
                decided_by=decided_by,
                reason=None if decided_by == "user" else f"approval mode {self.params.approval_mode}",
                session_id=self.session_id,
            )
        )
        outcome: dict[str, Any] = (
            {"outcome": "selected", "optionId": option} if option is not None else {"outcome": "cancelled"}
        )
        await self.connection.respond(request_id, {"outcome": outcome})
        if choice == DENY and call_id:
            # The CLI sends no update for a rejected call: close it here so it has its result.
            for item in self.translator.denied(call_id, f"denied ({decided_by.replace('_', ' ')})"):
                await self._deliver(item, raw)

    def _question(
        self, request_id: Any, call: Mapping[str, Any], call_id: str, tool_name: str, is_question: bool
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
        return permission_request(
            f"{self.session_id}:{request_id}",
            f"Allow {tool_name}: {title}?",
            tool_use_id=call_id or None,
            tool_name=tool_name,
            details=details,
            session_id=self.session_id,
        )

    async def _finish(self, answer: dict[str, Any], short: str) -> RunOutcome:
        ctx = self.ctx
        if isinstance(answer.get("error"), dict):
            raise _error_from_acp(
                AcpRequestError("session/prompt", answer["error"]), self.connection.child.stderr.text()
            )
        result = as_dict(answer.get("result"))
        usage = usage_of_prompt_result(result)
        if usage is not None:
            ctx.add_usage(self._estimated(usage))
        async with self._emit_lock:
            await self._flush()
        await ctx.end_message()
        stop = result.get("stopReason")
        if stop == "cancelled":
            return RunOutcome(status="cancelled", short_id=short)
        if stop == "max_turn_requests":
            return RunOutcome(status="max_turns", short_id=short)
        if stop == "refusal":
            return RunOutcome(status="error", error="the model refused to answer", short_id=short)
        if stop == "max_tokens":
            await self._warn("max_tokens", "the answer was cut at the model's output token limit")
        return RunOutcome(status="success", short_id=short)

    def _estimated(self, usage: Usage) -> Usage:
        """Gemini 2.5 Flash may report 0 output tokens: estimate ceil(chars / 4) over text and thoughts."""
        chars = self.translator.text_chars + self.translator.thought_chars
        if usage.output_tokens or not chars:
            return usage
        return usage.model_copy(
            update={
                "output_tokens": math.ceil(self.translator.text_chars / 4),
                "thinking_tokens": usage.thinking_tokens or math.ceil(self.translator.thought_chars / 4),
                "estimated": True,
            }
        )

    async def _cancel(self, request_id: int) -> None:
        """`session/cancel`, wait briefly for the prompt to end; else retire the process.

        A cold (transient) process is ended by the lease anyway; a warm one that settles keeps
        serving its other sessions undisturbed.
        """
        try:
            await self.connection.notify("session/cancel", {"sessionId": self.session_id})
            with anyio.move_on_after(CANCEL_GRACE_S):
                while True:
                    message = await self.connection.receive(self.inbox)
                    if message.get("id") == request_id and "method" not in message:
                        return
                    if message.get("method") == "session/request_permission" and "id" in message:
                        await self.connection.respond(message["id"], {"outcome": {"outcome": "cancelled"}})
        except ConnectionClosed:
            pass
        self.lease.retire()

    async def _warn(self, code: str, message: str) -> None:
        await self.ctx.emit(WarningEvent(code=code, message=message, session_id=self.session_id or None))


def _command_exists(command: str, cwd: Path, env: Mapping[str, str]) -> bool:
    """Whether the CLI could spawn `command` (it runs MCP servers with the session's cwd)."""
    if os.sep in command:
        return os.access(cwd / Path(command).expanduser(), os.X_OK)
    return shutil.which(command, path=env.get("PATH")) is not None


def _pick_option(options: list[dict[str, Any]], choice: str) -> str | None:
    """The ACP option for our decision, by its `kind` (ids differ between agents)."""
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


def _error_from_acp(
    exc: AcpRequestError, stderr_tail: str = ""
) -> BackendError | AuthError | RateLimited | SessionNotFound:
    reason = exc.data.get("details") if isinstance(exc.data, dict) else None  # e.g. why set_mode was refused
    text = f"{exc.method}: {exc.message}" + (f": {reason}" if isinstance(reason, str) and reason else "")
    details = {"code": exc.code, "data": exc.data, "stderr_tail": stderr_tail.strip()}
    if exc.code in (401, 403) or "authenticat" in exc.message.lower():
        return AuthError(text, hint="check GEMINI_API_KEY / Vertex settings / `gemini` login", details=details)
    if exc.code == 429 or "RESOURCE_EXHAUSTED" in exc.message:
        return RateLimited(text, hint="wait and retry, or use another key or project", details=details)
    if exc.method == "session/load":
        return SessionNotFound(text, hint="run `unified sessions list --backend gemini-cli`", details=details)
    if exc.method == "session/set_mode":  # the CLI refuses yolo/auto_edit in a folder it does not trust
        return BackendError(
            text,
            hint="the CLI allows this approval mode only in a trusted folder: trust it in `gemini` (/permissions) "
            "or set security.folderTrust.enabled to false in the CLI's settings.json; its stderr has more",
            details=details,
        )
    return BackendError(text, hint="see the message; the CLI's stderr has more", details=details)
