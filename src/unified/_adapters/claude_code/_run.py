"""One claude-code run: start the CLI for one session, hand it the prompt, pump its lines to the end.

The run's phases: `initialize` (the control protocol's handshake, with `forwardSubagentText`),
the user message, then every line of stdout until the run is really over: a `result` while no
subagent runs (a background agent makes the CLI print a second `result` once it has reported
back, after a turn of its own). Lines go to the translator (`_translate.py`); `can_use_tool`
requests to the permission bridge (`_permissions.py`); our own watchdogs act on the rest:

- a stall (no line for `stall_timeout_s` while the main agent waits for the model; the CLI's own
  stream watchdog waits at least 5 minutes) and a retry unified's policy would not wait for
  (`retry-after` beyond `max_retry_delay_s`, or a 401/403 the CLI retries like a 429) interrupt the
  turn (`interrupt`), then the run fails with the typed error;
- a cancellation (`EventStream.cancel()`) interrupts the turn (so the session file records it),
  waits briefly for its `result`, and ends the process group; children the CLI runs in groups of
  their own (its Bash commands) are ended too (`AgentSubprocess.close`).

Every run ends its process: stdin closed after the run (the CLI then exits by itself), its group
ended after `close_grace_s` if it has not. That process is a new one, or a spare started ahead
with this run's launch (`_spares.py`), its `initialize` already sent: from there on the same, but
for one thing: a spare that ends (stdout closed, or stdin refusing the prompt) before anything of
the run came back from it or reached the consumer raises `SpareLost`, and the backend runs the same
run cold. A spare can die after the pool last saw it alive; its death then costs the run nothing,
where a process that had begun to answer the prompt fails the run as a cold one does.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from unified._adapters.claude_code._control import ClaudeConnection, LineProblem, control_response_of
from unified._adapters.claude_code._launch import Launch
from unified._adapters.claude_code._options import BACKEND, ClaudeCodeOptions
from unified._adapters.claude_code._outcome import (
    error_from_exit,
    error_from_result,
    error_from_status,
    status_of_result,
)
from unified._adapters.claude_code._permissions import PermissionBridge
from unified._adapters.claude_code._spares import ClaudeSpare
from unified._adapters.claude_code._translate import (
    EndMessage,
    EndTurn,
    Item,
    Retry,
    Started,
    StreamTranslator,
    TurnResult,
    usage_from_model_usage,
)
from unified._binary.framing import answer_over_cap
from unified._binary.process import ProcessStarter
from unified._redaction import clip
from unified._text import json_type
from unified.backends import AgentProcess, RunContext, RunOutcome
from unified.errors import BackendError, RunStopped, UnifiedError
from unified.events import SessionStarted, UnifiedEvent, Usage, WarningEvent
from unified.sessions import short_id_of
from unified.types import StdioMcpServer

__all__ = ["ClaudeRun", "RunPlan", "SpareLost", "literal_content", "prompt_content"]

INITIALIZE_TIMEOUT_S = 120.0
MAX_EARLY_LINES = 100
"""Lines kept that the CLI writes before it answers `initialize` (to be pumped after it): the real CLI
writes none or a few; more is a CLI gone wrong (or steered), and holding them for up to
`INITIALIZE_TIMEOUT_S` would grow without bound (each line may be 8 MiB)."""
"""A hang guard for the handshake (about 1 s normally)."""
SETTLE_S = 5.0
"""How long an interrupted turn may take to print its `result`."""
CANCEL_SETTLE_S = 2.0
"""The same for a cancelled run, whose caller is waiting for it to end."""
_MCP_UP = frozenset({"connected", "pending"})
"""An MCP server's states in `init` that are no failure: up, or still starting (looked at later)."""
_MCP_CHECK = (
    "Check that it answers initialize and tools/list (start it alone, e.g. with the MCP inspector); raise its "
    "timeout_s if it is only slow"
)
_MCP_RUN_ALONE = (
    "Run its command alone to see why (one with a slash is taken from the run's cwd, one without from PATH)"
)
_MCP_OPEN_URL = "Check that its URL answers (and, for a 401 or 403, its headers)"
"""What to do about a server that is up but gave no tools, or never came up (`_mcp_looked`); about a stdio server that
failed, and an HTTP or SSE one."""
MCP_LOOK_SLACK_S = 5.0
"""How long after its `MCP_TIMEOUT` the run asks the CLI (`mcp_status`) about the MCP servers `init` listed as
`pending`. 2.1.332 does not wait for them (the first model request goes out at once, "still connecting") and says no
more of them on its stream: measured, a stdio server that answered `initialize` and never `tools/list` was
`pending` at 0.5 s and `connected` with no tools from 2.5 s on (MCP_TIMEOUT 2 s), the model's call of its tool
"No such tool available". The slack covers the CLI's own work after its timer fires."""


def prompt_content(text: str, images: Sequence[tuple[str, bytes]]) -> str | list[dict[str, Any]]:
    """The user message's content: the text, or text and image blocks."""
    if not images:
        return text
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for mime, data in images:
        blocks.append(
            {"type": "image", "source": {"type": "base64", "media_type": mime, "data": base64.b64encode(data).decode()}}
        )
    return blocks


def literal_content(content: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """The user message's content as the model reads it, never as a slash command (the `slash_commands` option off).

    Measured with 2.1.332 (stream-json input): a message whose text starts with `/` is run as a slash command, a string
    or the last text block of a list alike. `/cost`, `/login`, `/clear`, `/compact`, `/context` made no model request
    at all (the run ended `success` with no text: the caller's words were gone); `/model <name>` switched the session's
    model; `/init` sent the CLI's own prompt to write CLAUDE.md; `/<name>` sent the body of `.claude/commands/<name>.md`
    of the CLI's home (where a model's command of an earlier run may have planted one) in its place. The CLI reads
    only the last block and drops an empty text block before its request (the model read `/cost` alone, on resume too),
    so an empty text block last keeps the words as they are. Any text block whose words start with `/` (leading
    blanks aside: fail closed) gets one."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    texts = [block.get("text") for block in blocks if isinstance(block, dict) and block.get("type") == "text"]
    if not any(isinstance(text, str) and text.lstrip().startswith("/") for text in texts):
        return content
    return [*blocks, {"type": "text", "text": ""}]


class SpareLost(Exception):
    """The run's spare ended before anything of the run came back from it or reached the consumer: the
    run can start again cold, as if it had found no spare (the dead process has been ended and reaped)."""


@dataclass(frozen=True, slots=True)
class RunPlan:
    """Which session the process starts with and what the user says."""

    session_id: str
    resume: bool
    """True: `--resume` (an existing session file, ours or one written from a conversation)."""
    content: str | list[dict[str, Any]]
    resumed: bool
    """Whether `session_started` says `resumed` (the caller resumed; a history is a new session)."""


class ClaudeRun:
    """One run (see the module docstring)."""

    def __init__(self, ctx: RunContext, launch: Launch, options: ClaudeCodeOptions, starter: ProcessStarter) -> None:
        self.ctx = ctx
        self.params = ctx.params
        self.launch = launch
        self.options = options
        self.starter = starter
        include = self.params.thinking is None or self.params.thinking.include_thoughts
        self.translator = StreamTranslator(include_thoughts=include)
        self.connection: ClaudeConnection | None = None
        self.process: AgentProcess | None = None
        self.plan: RunPlan | None = None
        self.started = False
        self.main_usage = Usage()
        self.run_usage = Usage()
        self.requesting = False
        self.failure: UnifiedError | None = None
        self.retry_after_s: float | None = None
        """The wait the CLI's last `api_retry` said (an HTTP status's), for the error of the request that failed."""
        self.stopping = False
        self.answer_lost = False
        """A line carrying the answer's text was over the cap, dropped: the turn's end is an error, not `success`."""
        self.idle = False
        """The CLI printed the `result` of its turn (and runs nothing more): it can end by itself."""
        self.spare = False
        """The process is a spare (started ahead for whichever run took it)."""
        self.heard = False
        """A line of the CLI was handled after the handshake, or an event went to the consumer: from then on
        the run has begun, and a death of its process is the run's failure (no `SpareLost`)."""
        self.mcp_seen = False
        """`init` listed the MCP servers (the first `init` only: later ones repeat it)."""
        self.mcp_look_at: float | None = None
        """When the look at the servers `init` listed as `pending` is due (event-loop time; None: none due)."""
        self.mcp_pending: list[str] = []
        self.mcp_looks: dict[str, list[str]] = {}
        """Our `mcp_status` requests not answered yet, by id: the servers each answer is read for (`_mcp_looked`)."""
        self.mcp_unsaid: dict[str, str] = {}
        """The run's servers `init` listed as failed (name -> the CLI's status), until a warning named each."""
        self.init_sessions: list[str] = []
        """The session ids the run's `init`s named, each once, in order (`_init_session`)."""

    async def run(
        self,
        plan: RunPlan,
        spare: ClaudeSpare | None = None,
        replenish: Callable[[], Awaitable[None]] | None = None,
    ) -> RunOutcome:
        """The run, in a new process or in `spare` (started with `plan`'s session id, its `initialize`
        sent); `replenish` starts the next run's spare once this run's prompt is with its CLI."""
        self.plan = plan
        self.spare = spare is not None
        if spare is None:
            cwd = self.params.cwd.expanduser().resolve()
            argv = self.launch.argv(session_id=plan.session_id, resume=plan.resume)
            key_lease = self.launch.lease()
            try:
                started = self.starter(argv, cwd, self.launch.run_env())
            except BaseException:
                if key_lease is not None:
                    key_lease.release()
                raise
            connection = ClaudeConnection(
                started,
                plan.session_id,
                transcript=self.options.transcript,
                entries=self.launch.entries,
                key_lease=key_lease,
            )
        else:
            connection = spare.connection
        process = connection.process
        self.process = process
        self.connection = connection
        try:
            bridge = PermissionBridge(self.ctx, connection, self.translator, self.options.policy, self.launch.home)
            try:
                pending = await self._initialize(spare.initialize_id if spare is not None else None)
                await connection.user(plan.content if self.options.slash_commands else literal_content(plan.content))
                if replenish is not None:
                    await replenish()
                outcome = await self._pump(bridge, pending)
            except ConnectionError as exc:  # its stdin is gone: the process died
                raise await self._exit_error(f"while unified wrote to it ({exc})") from exc
            return outcome
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._interrupt(CANCEL_SETTLE_S)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                self._add_usage()
                await self._end(connection, self.idle and not self.translator.agents_running())

    # --- start-up ----------------------------------------------------------------------------------

    async def _initialize(self, sent: str | None) -> list[dict[str, Any]]:
        """The handshake (its request already `sent` to a spare); returns lines that arrived before its
        answer (to be pumped)."""
        connection = self.connection
        assert connection is not None
        request_id = sent or await connection.initialize(self.options.forward_subagent_text)
        early: list[dict[str, Any]] = []
        with anyio.move_on_after(INITIALIZE_TIMEOUT_S):
            while True:
                message = await connection.receive()
                if message is None:
                    raise await self._exit_error("before it answered initialize")
                if isinstance(message, LineProblem):
                    await self._warn("malformed_line", message.text)
                    continue
                answer = control_response_of(message)
                if answer is not None and answer[0] == request_id:
                    if answer[1].get("subtype") == "error":
                        raise UnifiedError(
                            f"the claude CLI refused initialize: {answer[1].get('error')}", code="backend_error"
                        )
                    return early
                if message.get("type") == "control_response":
                    raise _answered_under_another_id(message, request_id)
                if message.get("type") == "result":  # the CLI failed at start (e.g. a --resume it cannot find)
                    raise error_from_result(message, self.launch.env.get("ANTHROPIC_BASE_URL"))
                if len(early) == MAX_EARLY_LINES:
                    raise BackendError(
                        f"the claude CLI wrote more than {MAX_EARLY_LINES} lines before it answered initialize; "
                        "the run was stopped",
                        hint="run `unified doctor`; the CLI's stderr is in this error's details",
                        details={"stderr_tail": self.process.stderr_tail() if self.process is not None else ""},
                    )
                early.append(message)
        raise BackendError(
            f"the claude CLI did not answer initialize within {INITIALIZE_TIMEOUT_S:g} s",
            retryable=True,
            hint="run `unified doctor`; the CLI's stderr is in this error's details",
            details={"stderr_tail": self.process.stderr_tail() if self.process is not None else ""},
        )

    # --- the pump ----------------------------------------------------------------------------------

    async def _pump(self, bridge: PermissionBridge, pending: list[dict[str, Any]]) -> RunOutcome:
        connection = self.connection
        assert connection is not None
        while True:
            message = pending.pop(0) if pending else await self._receive()
            if message is None:
                raise await self._exit_error("during the run")
            self.heard = True
            if isinstance(message, LineProblem):
                self.answer_lost = self.answer_lost or message.answer
                await self._warn("malformed_line", message.text)
                continue
            kind = message.get("type")
            if kind == "control_request":
                await self._control_request(bridge, message)
                continue
            if kind == "control_response":
                await self._mcp_looked(message)
                continue
            if kind == "control_cancel_request":
                continue
            if kind == "system" and message.get("subtype") == "status":
                self.requesting = message.get("status") == "requesting"
            if kind == "system" and message.get("subtype") == "init":
                await self._init_session(message.get("session_id"))
                if not self.mcp_seen:
                    await self._plan_mcp_look(message)
            for item in self.translator.line(message):
                outcome = await self._item(item, message)
                if outcome is not None:
                    return outcome

    async def _receive(self) -> dict[str, Any] | LineProblem | None:
        """The next line; the look at the MCP servers is made once it is due (`_plan_mcp_look`)."""
        connection = self.connection
        assert connection is not None
        if self.mcp_look_at is not None:
            with anyio.move_on_after(self.mcp_look_at - anyio.current_time()):
                return await self._receive_watched()
            self.mcp_look_at = None
            self.mcp_looks[await connection.request("mcp_status")] = self.mcp_pending
        return await self._receive_watched()

    async def _receive_watched(self) -> dict[str, Any] | LineProblem | None:
        """The next line, within `stall_timeout_s` while the model is being asked."""
        connection = self.connection
        assert connection is not None
        if not self.requesting:
            return await connection.receive()
        with anyio.move_on_after(self.options.stall_timeout_s):
            return await connection.receive()
        error = UnifiedError(
            f"the model's answer stalled: nothing arrived for {self.options.stall_timeout_s:g} s (the claude CLI "
            "waits at least 5 minutes itself); the turn was interrupted",
            code="stream_interrupted",
            retryable=True,
            hint="retry; raise backend_options['stall_timeout_s'] for a model that pauses longer",
        )
        await self._interrupt()
        raise error

    async def _init_session(self, session: object) -> None:
        """A warning when an `init` names a session other than the run's first `init` did: the CLI went on in
        another session (its turns from then on are saved under that id), while the run reports the first, so a
        resume of it would go on without them. Later `init`s repeat the first's id; another was read past unsaid."""
        if not isinstance(session, str) or session in self.init_sessions:
            return
        self.init_sessions.append(session)
        if len(self.init_sessions) == 1:
            return
        first, now = (clip(repr(s), 80, more="…") for s in (self.init_sessions[0], session))
        await self._warn(
            "malformed_line",
            f"the claude CLI's system/init names session {now} after it named {first}: the CLI went on in another "
            f"session, and what follows is saved under {now}, not the session this run reports; resume the reported "
            "session only for the conversation before it, and report it with the output of `claude --version`",
        )

    async def _plan_mcp_look(self, init: Mapping[str, Any]) -> None:
        """Look at the run's MCP servers `init` lists as not up, or up without a tool in its `tools`: those at once
        (`init` gives no reason; measured, on a loaded machine the silent server of round 6 was already up with no
        tools by `init`); those `pending` after the CLI's one wait for them (`MCP_TIMEOUT`, `_launch`) and
        `MCP_LOOK_SLACK_S`."""
        assert self.connection is not None
        self.mcp_seen = True
        ours = {server.name for server in self.params.mcp_servers}
        servers, tools = init.get("mcp_servers"), init.get("tools")
        listed = [s for s in servers if isinstance(s, Mapping)] if isinstance(servers, list) else []
        states = {str(s["name"]): s.get("status") for s in listed if s.get("name") in ours}
        names = [tool for tool in tools if isinstance(tool, str)] if isinstance(tools, list) else []
        toolless = [
            name
            for name, status in states.items()
            if status == "connected" and not any(tool.startswith(f"mcp__{name}__") for tool in names)
        ]
        self.mcp_pending = [name for name, status in states.items() if status == "pending"]
        self.mcp_unsaid = {name: str(status) for name, status in states.items() if status not in _MCP_UP}
        if self.mcp_unsaid or toolless:
            self.mcp_looks[await self.connection.request("mcp_status")] = [*self.mcp_unsaid, *toolless]
        if self.mcp_pending:
            self.mcp_look_at = anyio.current_time() + self._mcp_wait_s() + MCP_LOOK_SLACK_S

    def _mcp_wait_s(self) -> float:
        """The CLI's one wait for its MCP servers (`MCP_TIMEOUT`, milliseconds), in seconds."""
        try:
            return int(self.launch.env.get("MCP_TIMEOUT", "")) / 1000
        except ValueError:
            return 30.0  # what the CLI waits when it cannot read it

    async def _mcp_looked(self, message: dict[str, Any]) -> None:
        """A `warning(mcp_unavailable)` for each server a look was for (`_plan_mcp_look`) that the answer to our
        `mcp_status` says is not up (with the CLI's reason), is still starting, or gave the CLI no tools: the model
        would just lack them, unsaid. A failed server the answer does not explain is said without its reason."""
        answer = control_response_of(message)
        names = self.mcp_looks.pop(answer[0], None) if answer is not None else None
        if answer is None or names is None:
            return
        body = answer[1].get("response") if answer[1].get("subtype") == "success" else None
        servers = body.get("mcpServers") if isinstance(body, Mapping) else None
        waited = f"{self._mcp_wait_s() + MCP_LOOK_SLACK_S:g} s"
        for server in servers if isinstance(servers, list) else []:
            if not isinstance(server, Mapping) or server.get("name") not in names:
                continue
            name, status, error = server["name"], server.get("status"), server.get("error")
            todo = _MCP_CHECK
            if status == "connected" and server.get("tools") == []:
                why = (
                    "started but gave the claude CLI no tools: it answered initialize and then did not list its "
                    "tools in time (or has none)"
                )
            elif status == "pending":
                why = f"has still not finished starting after {waited}"
            elif status != "connected":
                said = f": {clip(error.splitlines()[0], 300)}" if isinstance(error, str) and error.strip() else ""
                why, todo = (
                    f"did not start (the claude CLI says {clip(str(status), 40)!r}{said})",
                    self._failed_todo(name),
                )
            else:
                continue
            self.mcp_unsaid.pop(name, None)
            await self._warn("mcp_unavailable", f"MCP server {clip(name, 200)!r} {why}; its tools are missing. {todo}")
        await self._say_unsaid_mcp()

    def _failed_todo(self, name: str) -> str:
        """What to do about the run's MCP server `name` that failed: run its command, or check its URL."""
        stdio = any(server.name == name and isinstance(server, StdioMcpServer) for server in self.params.mcp_servers)
        return _MCP_RUN_ALONE if stdio else _MCP_OPEN_URL

    async def _say_unsaid_mcp(self) -> None:
        """A warning for each server `init` listed as failed that no answer of the CLI's explained (it had not
        come by the turn's result, or the CLI refused `mcp_status`): its name and the CLI's status alone."""
        unsaid, self.mcp_unsaid = self.mcp_unsaid, {}
        for name, status in unsaid.items():
            why, todo = f"did not start (the claude CLI says {clip(status, 40)!r})", self._failed_todo(name)
            await self._warn("mcp_unavailable", f"MCP server {clip(name, 200)!r} {why}; its tools are missing. {todo}")

    async def _control_request(self, bridge: PermissionBridge, message: dict[str, Any]) -> None:
        connection = self.connection
        assert connection is not None
        request_id = message.get("request_id")
        request = message.get("request")
        if not isinstance(request_id, str):
            await _odd_request_id(connection, self._emit, request_id, request)
            return
        if not isinstance(request, dict):
            # Its id can be answered: an error answer, or the CLI waited for one until the run's idle timeout.
            await connection.respond_error(
                request_id, f"unified could not read this request: its request is {json_type(request)}, not an object"
            )
            await self._emit(
                WarningEvent(
                    code="malformed_line",
                    message=f"the claude CLI sent a control_request whose request is {json_type(request)}, not an "
                    "object; unified answered it with an error",
                )
            )
            return
        if request.get("subtype") != "can_use_tool":
            # the subtype quoted clipped: one of megabytes went back whole, into the CLI's input and the transcript
            subtype = clip(repr(request.get("subtype")), 80, more="…")
            await connection.respond_error(request_id, f"unified does not handle {subtype} requests")
            return
        if self.stopping:
            await connection.respond(request_id, {"behavior": "deny", "message": "the user stopped the run"})
            return
        answer = await bridge.answer(request_id, request, self._emit)
        if answer is not None and answer.stops_run:
            self.stopping = True

    async def _item(self, item: Item, raw: dict[str, Any]) -> RunOutcome | None:
        ctx = self.ctx
        if isinstance(item, Started):
            if not self.started:
                await self._session_started(item)
            return None
        if isinstance(item, EndTurn):
            self.main_usage = self.main_usage + await ctx.end_turn(item.usage)
            self.requesting = False
            return None
        if isinstance(item, EndMessage):
            await ctx.end_message(item.subagent_task_id)
            return None
        if isinstance(item, Retry):
            await self._retry(item)
            return None
        if isinstance(item, TurnResult):
            return await self._result(item.raw)
        if not self.started:
            await self._session_started(Started(None, self.translator.model, None))
        item.native = ctx.native(raw)
        await ctx.emit(item)
        return None

    async def _emit(self, event: UnifiedEvent) -> None:
        if not self.started:
            await self._session_started(Started(None, self.translator.model, None))
        await self.ctx.emit(event)

    async def _session_started(self, started: Started) -> None:
        assert self.plan is not None
        self.started = True
        self.heard = True
        session_id = self.plan.session_id
        self.translator.session_id = session_id
        await self.ctx.emit(
            SessionStarted(
                backend=BACKEND,
                model=started.model or self.launch.model,
                short_id=short_id_of(session_id),
                resumed=self.plan.resumed,
                cwd=str(self.params.cwd.expanduser().resolve()),
                transport="stream-json",
                session_id=session_id,
            )
        )

    async def _retry(self, retry: Retry) -> None:
        what = f"HTTP {retry.status}" if retry.status is not None else retry.error.replace("_", " ")
        await self._warn(
            "retrying",
            f"the model request failed ({what}); the claude CLI asks again in {retry.delay_s:.1f} s "
            f"(retry {retry.attempt} of {retry.max_retries})",
        )
        if retry.status in (401, 403):
            self.failure = error_from_status(retry.status, "the credentials were refused", retries=retry.attempt - 1)
        elif retry.status in (429, 529) and retry.delay_s > self.options.max_retry_delay_s:
            self.failure = error_from_status(
                retry.status,
                f"the server asks to wait {retry.delay_s:g} s, more than max_retry_delay_s "
                f"({self.options.max_retry_delay_s:g} s)",
                retry_after_s=retry.delay_s,
            )
        self.retry_after_s = retry.delay_s if retry.status is not None else None
        if self.failure is not None:
            await self._interrupt()
            raise self.failure

    async def _result(self, raw: Mapping[str, Any]) -> RunOutcome | None:
        assert self.plan is not None
        self.run_usage = self.run_usage + usage_from_model_usage(raw.get("model_usage_since_last_result"))
        self.requesting = False
        self.idle = True
        await self._say_unsaid_mcp()
        status = status_of_result(raw)
        if self.stopping:
            raise RunStopped("the user stopped the run at a permission prompt", hint="resume the session to go on")
        if status == "error":
            base_url = self.launch.env.get("ANTHROPIC_BASE_URL")
            raise error_from_result(raw, base_url, retry_after_s=self.retry_after_s)
        if self.translator.agents_running():
            return None  # a background agent runs on: its report comes back in a turn of its own
        short = short_id_of(self.plan.session_id)
        if status == "max_turns":
            return RunOutcome(status="max_turns", short_id=short)
        if status == "aborted":
            return RunOutcome(status="cancelled", short_id=short)
        if self.answer_lost:
            raise answer_over_cap("the claude CLI")
        return RunOutcome(status="success", short_id=short)

    # --- the end -----------------------------------------------------------------------------------

    async def _interrupt(self, settle: float = SETTLE_S) -> None:
        """Ask the CLI to end the turn, and read until it has (or `settle` seconds passed)."""
        connection = self.connection
        if connection is None or self.process is None or self.process.returncode is not None:
            return
        try:
            await connection.request("interrupt")
            with anyio.move_on_after(settle):
                while True:
                    message = await connection.receive()
                    if message is None:
                        return
                    if isinstance(message, LineProblem):
                        continue
                    if message.get("type") == "result":
                        self.run_usage = self.run_usage + usage_from_model_usage(
                            message.get("model_usage_since_last_result")
                        )
                        self.idle = True
                        return
                    if message.get("type") == "control_request" and isinstance(message.get("request_id"), str):
                        await connection.respond(message["request_id"], {"behavior": "deny", "message": "interrupted"})
        except (ConnectionError, OSError):
            return

    async def _end(self, connection: ClaudeConnection, graceful: bool) -> None:
        """Every run ends its process: stdin closed, a short wait when it is idle (it then writes its
        session and exits by itself), then the group is ended and, once it is reaped, the live-process
        entry a killed CLI left is removed (`ClaudeConnection.close`)."""
        process = connection.process
        for completed in self.translator.unfinished_tasks():
            if self.started:
                try:
                    await self.ctx.emit(completed)
                except Exception:  # the consumer is gone: nothing to tell
                    break
        try:
            await process.end_input()
            if graceful:
                await process.wait(self.options.close_grace_s)
        finally:
            await connection.close()

    def _add_usage(self) -> None:
        """The run's usage beyond its main-agent calls (its subagents', from the CLI's per-result
        report), and what the CLI says it all cost."""
        rest = self.run_usage
        main = self.main_usage
        extra = Usage(
            input_tokens=max(0, rest.input_tokens - main.input_tokens),
            output_tokens=max(0, rest.output_tokens - main.output_tokens),
            thinking_tokens=max(0, rest.thinking_tokens - main.thinking_tokens),
            cached_tokens=max(0, rest.cached_tokens - main.cached_tokens),
            cache_creation_tokens=max(0, rest.cache_creation_tokens - main.cache_creation_tokens),
            cost_usd=rest.cost_usd,
        )
        if not extra.is_empty() or extra.cost_usd is not None:
            self.ctx.add_usage(extra)

    async def _exit_error(self, what: str) -> UnifiedError | SpareLost:
        """Why the process ended `what` (its exit code and stderr); `SpareLost` for a spare that had not
        begun the run (see the module docstring)."""
        process = self.process
        assert process is not None
        if self.spare and not self.heard:
            return SpareLost(f"the spare claude process (pid {process.pid}) ended {what}")
        code = await process.wait(2.0)
        return error_from_exit(code, process.stderr_tail(), what)

    async def _warn(self, code: str, message: str) -> None:
        self.heard = True
        await self.ctx.emit(WarningEvent(code=code, message=message))


async def _odd_request_id(
    connection: ClaudeConnection, emit: Callable[[UnifiedEvent], Awaitable[None]], request_id: object, request: object
) -> None:
    """A control request whose `request_id` is no string. A number (or a boolean) is answered with an error under
    that very id, which the CLI matches its pending request by; no id, null, or a list or object can be named by
    no answer, and the CLI waits for one: the run ends with a typed error, the process with it. Both were only
    warned about, and a CLI waiting for its permission answer hung the run until its idle timeout."""
    subtype = request.get("subtype") if isinstance(request, dict) else None
    kind = clip(subtype, 60) if isinstance(subtype, str) and subtype else "of no subtype"
    what = "no request_id" if request_id is None else f"a request_id that is {json_type(request_id)}"
    if isinstance(request_id, int | float):
        await connection.respond_error(
            request_id, f"unified could not take this request: its request_id is {json_type(request_id)}, not text"
        )
        await emit(
            WarningEvent(
                code="malformed_line",
                message=f"the claude CLI sent a control_request ({kind}) with {what}, not text; unified answered "
                "it with an error under that id (a permission request is so refused: the call does not run)",
            )
        )
        return
    raise BackendError(
        f"the claude CLI sent a control_request ({kind}) with {what}, which no answer can name; it waits for an "
        "answer, so the run was ended instead of hanging",
        retryable=True,
        hint="retry; if it happens again, update the claude CLI (`claude update`) or report it with the output "
        "of `claude --version`",
    )


def _answered_under_another_id(message: Mapping[str, Any], request_id: str) -> BackendError:
    """The error of a `control_response` that came before the answer to our `initialize` (`request_id`) and is not
    it: before that answer, `initialize` is the only request of ours, so this is its answer under an id that names
    nothing (mangled, a number, missing). Its own id would never come, and the run waited for it the whole
    `INITIALIZE_TIMEOUT_S` (120 s) before saying the CLI "did not answer"."""
    response = message.get("response")
    named = response.get("request_id") if isinstance(response, dict) else None
    what = f"request_id {clip(repr(named), 80, more='…')}" if named is not None else "no request_id"
    said = ""
    if isinstance(response, dict) and response.get("subtype") == "error":
        said = f"; it says: {clip(str(response.get('error')), 300)}"
    return BackendError(
        f"the claude CLI answered initialize under {what}, not {request_id!r}, the only request unified had sent"
        f"{said}; the run was ended instead of waiting {INITIALIZE_TIMEOUT_S:g} s for an answer that will not come",
        retryable=True,
        hint="retry; if it happens again, update the claude CLI (`claude update`) or report it with the output of "
        "`claude --version`",
    )
