"""One ACP run inside a leased agent process: open the session, pump the prompt's messages, end it.

The parts, each in its own module: `_session_setup` (new/load), `_translate` (updates → events,
pure), `_chat_records` + `_hold_back` (tool arguments and outputs from the chat file, in order),
`_subagents` (the child chat files), `_permissions` (the bridge to `on_user_input`), `_ask_server`
(unified's ask_user as the run's MCP server, when the run has `on_user_input`), `_outcome` (stop reason,
usage, errors). This module pumps the messages between them and handles
cancellation and a dying process.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from unified._adapters.gemini_cli._acp import AcpConnection
from unified._adapters.gemini_cli._ask_server import serve_ask_user
from unified._adapters.gemini_cli._chat_files import gemini_home
from unified._adapters.gemini_cli._chat_records import ChatRecords
from unified._adapters.gemini_cli._conversation import Opening, keep_failed_prompt, messages_now, undo_cancel_rollback
from unified._adapters.gemini_cli._hold_back import SETTLE_INTERVAL_S, ToolOutputHold
from unified._adapters.gemini_cli._launch import BACKEND, Launch
from unified._adapters.gemini_cli._outcome import DEFAULT_BASE_URL, error_from_exit, no_answer, prompt_end
from unified._adapters.gemini_cli._permissions import PermissionBridge, TurnCapReached
from unified._adapters.gemini_cli._relocate import SESSION_ID, session_lease
from unified._adapters.gemini_cli._replays import Folding, MessageEnd
from unified._adapters.gemini_cli._retry_watch import WATCH_INTERVAL_S, RetryWatch
from unified._adapters.gemini_cli._session_setup import OpeningStalled, SessionSetup
from unified._adapters.gemini_cli._subagents import POLL_INTERVAL_S, SubagentWatcher
from unified._adapters.gemini_cli._translate import AcpTranslator, Item, TurnBoundary, tool_name_from_call_id
from unified._binary.framing import answer_over_cap
from unified._binary.jsonrpc import ConnectionClosed, LineProblem, as_dict, stream_ended
from unified._binary.loops import every
from unified._binary.pool import Lease
from unified.backends import RunContext, RunOutcome, refusal
from unified.errors import ConfigurationError, UnifiedError
from unified.events import (
    PermissionDecision,
    SessionStarted,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    ToolResult,
    ToolUse,
    UserInputRequest,
    UserInputResponse,
)
from unified.sessions import short_id_of
from unified.types import ExecuteParams

__all__ = ["AcpRun", "prompt_blocks"]

CANCEL_GRACE_S = 2.0
"""How long a cancelled prompt may take to end before its process is retired."""
EXIT_GRACE_S = 2.0
"""How long a process that closed its stdout may take to exit before its code is read."""

_ANSWER_CHUNK = re.compile(
    r'"sessionId"\s*:\s*"([^"\\]+)"\s*,\s*"update"\s*:\s*\{\s*"sessionUpdate"\s*:\s*"agent_message_chunk"'
)
"""In the start of an ACP line, a piece of a session's answer text (its id). Over the framing's cap it is dropped and
the answer is lost: the prompt's end is `framing.answer_over_cap` (it was `stream_interrupted` "the model answered
with nothing")."""


def prompt_blocks(params: ExecuteParams) -> list[dict[str, Any]]:
    """The prompt's ACP content blocks: its text (none when a prompt of images only has none: the CLI sent the empty
    text part on, which the Gemini API refuses), then its images."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": params.prompt}] if params.prompt else []
    for image in params.images:
        blocks.append({"type": "image", "mimeType": image.mime_type, "data": base64.b64encode(image.data).decode()})
    return blocks


class AcpRun:
    """One run inside a leased process."""

    def __init__(
        self, launch: Launch, ctx: RunContext, lease: Lease[AcpConnection], opening: Opening | None = None
    ) -> None:
        self.launch = launch
        self.ctx = ctx
        self.params = ctx.params
        self.lease = lease
        self.connection = lease.resource
        self.opening = opening
        """A session written for this run (a continued conversation) or a retried prompt: what to load and say."""
        load = opening.load if opening is not None else None
        self.setup = SessionSetup(self.connection, ctx, launch, load)
        self.translator = AcpTranslator()
        self._questions = 0
        self._shown: _Shown | None = None
        self._answer_lost = False

    @property
    def session_id(self) -> str:
        return self.setup.session_id

    async def run(self) -> RunOutcome:
        cwd = self.params.cwd.expanduser().resolve()
        if not cwd.is_dir():
            raise ConfigurationError(f"cwd {cwd} is not a directory", hint="pass an existing working directory")
        try:
            from unified.tools._runtime import is_excluded  # the runtime's own reading of excluded_tools

            if self.params.on_user_input is None or is_excluded("ask_user", self.params.excluded_tools):
                return await self._open_and_prompt(cwd)
            async with serve_ask_user(self._ask, self._question_id) as server:
                self.setup.own_servers = [server.acp_entry()]
                self.translator.ask_user_tool = server.cli_tool_name
                self.translator.ask_user_noted = server.note_call
                try:
                    return await self._open_and_prompt(cwd)
                finally:  # the server holds this run's methods: no cycle for the collector to find
                    self.translator.ask_user_noted = None
        except OpeningStalled:
            self.lease.retire()  # its opening still hangs in it: no other run gets it
            raise
        except ConnectionClosed as exc:
            self.lease.retire()
            ended = await stream_ended(self.connection.process, "gemini", "during the run", exc, EXIT_GRACE_S)
            raise error_from_exit(*ended) from exc
        finally:
            if self.session_id:
                self.connection.close_inbox(self.session_id)

    async def _open_and_prompt(self, cwd: Path) -> RunOutcome:
        await self.setup.open(cwd)
        self.translator.session_id = self.session_id
        if self.params.resume or not SESSION_ID.fullmatch(self.session_id):
            return await self._prompt(cwd, resumed=bool(self.params.resume))  # a resume's lease: the backend's
        # A new session's lease (`_relocate.session_lease`): a resume from another directory must not move its
        # chat files while this run writes them.
        async with session_lease(gemini_home(self.launch.env), self.session_id):
            return await self._prompt(cwd, resumed=False)

    async def _ask(self, request: UserInputRequest) -> UserInputResponse:
        """A question of the model's ask_user (served by `_ask_server`) to the caller, on this session, after
        its call's `tool_use` and whatever came before it (as a permission prompt comes after them)."""
        if self._shown is not None:
            await self._shown.before(request.tool_use_id)
        return await self.ctx.ask_user(request.model_copy(update={"session_id": self.session_id or None}))

    def _question_id(self) -> str:
        self._questions += 1
        return f"question-{self._questions}"

    async def _prompt(self, cwd: Path, *, resumed: bool) -> RunOutcome:
        ctx = self.ctx
        short = short_id_of(self.session_id)
        await ctx.emit(
            SessionStarted(
                backend=BACKEND,
                model=self.setup.model,
                short_id=short,
                resumed=resumed,
                cwd=str(cwd),
                transport="acp",
                session_id=self.session_id,
            )
        )
        home = gemini_home(self.launch.env)
        watcher = SubagentWatcher(home, self.session_id, ctx, self.launch.policy, self.launch.subagent_silence_s)
        watcher.start()
        chat = ChatRecords(home, self.session_id)
        chat.start()
        delivery = _Delivery(ctx, watcher)
        hold = ToolOutputHold(chat, delivery.deliver_now, self._warn)
        sink = _Sink(hold, self.translator, chat)
        self._shown = _Shown(hold, delivery, sink)
        bridge = PermissionBridge(
            ctx,
            self.connection,
            self.translator,
            self.session_id,
            sink.deliver,
            hold.flush,
            cwd,
            self.launch.policy,
            aliases=self.launch.credential_aliases,
            max_turns=self.launch.max_turns,
        )
        sink.relabel = bridge.gate.relabel
        try:
            return await self._prompt_with(bridge, sink, hold, chat, watcher, delivery, short)
        finally:
            self._shown = None  # it holds the hold, which holds this run's `_warn`: no cycle
            with anyio.CancelScope(shield=True):
                await bridge.aclose()

    async def _prompt_with(
        self,
        bridge: PermissionBridge,
        sink: _Sink,
        hold: ToolOutputHold,
        chat: ChatRecords,
        watcher: SubagentWatcher,
        delivery: _Delivery,
        short: str,
    ) -> RunOutcome:
        ctx = self.ctx
        opening = self.opening
        blocks = opening.prompt if opening is not None and opening.prompt is not None else prompt_blocks(self.params)
        url = self.launch.env.get("GOOGLE_GEMINI_BASE_URL") or DEFAULT_BASE_URL
        connection = self.connection
        shared = lambda: connection.open_inboxes > 1  # noqa: E731  # other runs' sessions on this process now
        retries = RetryWatch(  # from its end
            connection.debug_log, self._warn, url, self.launch.max_retries, shared, self.launch.max_retry_delay_s
        )
        request_id = await self.connection.start_request(
            "session/prompt", {"sessionId": self.session_id, "prompt": blocks}, self.setup.inbox
        )
        try:
            try:
                done = anyio.Event()  # the tickers' end: set, not cancelled (`every`)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(every, POLL_INTERVAL_S, watcher.tick, done)
                    tg.start_soon(every, SETTLE_INTERVAL_S, hold.tick, done)
                    tg.start_soon(every, WATCH_INTERVAL_S, retries.tick, done)
                    try:
                        answer = await self._pump(request_id, sink, bridge, retries)
                    finally:
                        done.set()
            except BaseExceptionGroup as group:
                # A dead process surfaces from the task group wrapped; `run` explains it.
                if all(isinstance(exc, ConnectionClosed) for exc in group.exceptions):
                    raise group.exceptions[0] from None
                if all(isinstance(exc, UnifiedError) for exc in group.exceptions):
                    raise group.exceptions[0] from None
                raise
        except TurnCapReached as reached:
            # The call of request `max_turns` was answered `cancelled` after a `session/cancel`: the CLI ends the
            # prompt without another request (`TurnCap`); its turn is kept in the chat file, so the session resumes.
            with anyio.CancelScope(shield=True):
                await self._cancel(request_id, blocks)
                await hold.flush(wait=False)
                await sink.end_message(final=False)
            await ctx.end_message()
            return RunOutcome(status="max_turns", short_id=short, error=str(reached))
        except UnifiedError:
            # The caller's permission answer ended the run, the provider cannot be reached or the run's retries
            # are spent (`_retry_watch`), or the run failed: end the prompt (the CLI would retry for minutes),
            # then report it.
            with anyio.CancelScope(shield=True):
                await self._cancel(request_id, blocks)
                await hold.flush(wait=False)
                await sink.end_message(final=False)  # text held as a possible retry goes out as it came
            raise
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._cancel(request_id, blocks)
                await hold.flush(wait=False)
                await sink.end_message(final=False)  # text held as a possible retry goes out as it came
            raise
        finally:
            self.connection.forget(request_id)
        await hold.flush()
        chat.poll(rescan=True)
        kept_nothing = await sink.end_message(final="error" not in answer)
        await self._calls_acp_never_showed(chat, delivery, bridge.gate.relabel)
        recorded = chat.usage()  # the chat file's exact per-call counts, also when the prompt failed
        if recorded is not None:
            ctx.add_usage(recorded)
        if "error" in answer:  # the CLI takes the prompt back out of its history: note it for a retry
            home = gemini_home(self.launch.env)
            await anyio.to_thread.run_sync(keep_failed_prompt, home, self.session_id, blocks)
        end = prompt_end(answer, short, self.connection.process.stderr_tail())
        if recorded is None and end.usage is not None:  # no chat file: ACP's report of one call
            ctx.add_usage(end.usage)
        await ctx.end_message()
        if end.outcome.status == "success" and self._answer_lost:
            raise answer_over_cap("the gemini CLI")
        if end.outcome.status == "success" and (
            kept_nothing or (not sink.received and chat.prompted and not chat.tokens)
        ):
            # Over ACP the CLI ends a prompt whose last model call got no answer, even on its own retries (an answer
            # cut off after text was shown, `_replays`; or no chunk at all: no item, no model call recorded) as a
            # plain `end_turn`. Not a success: `gemini -p` fails the same turn.
            raise no_answer(url, shown=kept_nothing)
        return end.outcome

    async def _calls_acp_never_showed(
        self,
        chat: ChatRecords,
        delivery: _Delivery,
        relabel: Callable[[PermissionDecision], Awaitable[PermissionDecision]],
    ) -> None:
        """Calls the CLI answered but never reported over ACP (a tool it does not have: "Tool not found"),
        shown as a `tool_use` (no arguments: the CLI records none for them), the backend's denial (as the
        API backends report a call of a tool they lack; the caller's rule when its policy made the CLI not
        offer the tool, `PermissionGate.relabel`) and its `tool_result`, once the prompt has ended."""
        for call_id, response in chat.answered.items():
            if call_id in self.translator.tools:
                continue
            output = response.get("response")
            name = response.get("name")
            use = ToolUse(
                tool_use_id=call_id,
                name=name if isinstance(name, str) and name else tool_name_from_call_id(call_id, None),
                session_id=self.session_id,
            )
            await delivery.deliver_now(use, None)
            reason = f"the Gemini CLI has no tool named {use.name!r}"
            denial = refusal(call_id, use.name, reason, decided_by="backend", session_id=self.session_id)
            await delivery.deliver_now(await relabel(denial), None)
            is_error = not isinstance(output, dict) or "error" in output
            result = ToolResult(tool_use_id=call_id, output=output, is_error=is_error, session_id=self.session_id)
            await delivery.deliver_now(result, None)

    async def _pump(
        self, request_id: int, sink: _Sink, bridge: PermissionBridge, retries: RetryWatch
    ) -> dict[str, Any]:
        """Route the session's messages until the prompt's answer arrives; returns that answer."""
        while True:
            message = await self.connection.receive(self.setup.inbox)
            if isinstance(message, LineProblem):
                lost = _ANSWER_CHUNK.search(message.head)
                self._answer_lost = self._answer_lost or (lost is not None and lost.group(1) == self.session_id)
                await self._warn("malformed_line", message.text)
                continue
            if message.get("id") == request_id and "method" not in message:
                return message
            method = message.get("method")
            params = as_dict(message.get("params"))
            if method == "session/update":
                retries.progress()
                for item in self.translator.update(params.get("update") or {}):
                    await sink.deliver(item, message)
            elif method == "session/request_permission" and "id" in message:
                await bridge.answer(message["id"], params, message)
            elif "id" in message and method:
                await self.connection.respond_error(message["id"], -32601, f"{method} is not supported")

    async def _cancel(self, request_id: int, blocks: list[dict[str, Any]]) -> None:
        """`session/cancel`, wait briefly for the prompt to end; else retire the process.

        A cold (transient) process is ended by the lease anyway; a warm one that settles keeps
        serving its other sessions undisturbed. The CLI takes the cancelled prompt's whole turn out of its chat
        file; it is put back (`undo_cancel_rollback`, with the prompt itself when the file kept none), so the session
        keeps what happened and stays resumable.
        """
        home = gemini_home(self.launch.env)
        saved = await anyio.to_thread.run_sync(messages_now, home, self.session_id)
        try:
            await self.connection.notify("session/cancel", {"sessionId": self.session_id})
            with anyio.move_on_after(CANCEL_GRACE_S):
                while True:
                    message = await self.connection.receive(self.setup.inbox)
                    if isinstance(message, LineProblem):
                        continue
                    if message.get("id") == request_id and "method" not in message:
                        return
                    if message.get("method") == "session/request_permission" and "id" in message:
                        await self.connection.respond(message["id"], {"outcome": {"outcome": "cancelled"}})
        except ConnectionClosed:
            pass
        finally:
            await anyio.to_thread.run_sync(undo_cancel_rollback, saved, blocks)
        self.lease.retire()

    async def _warn(self, code: str, message: str) -> None:
        await self.setup.warn(code, message)


class _Sink:
    """Where translated items go: a main-session result the CLI ran waits for its chat-file record, and the
    decision of a call the CLI ran unasked is unified's rule where its table allows the tool unasked."""

    def __init__(self, hold: ToolOutputHold, translator: AcpTranslator, chat: ChatRecords) -> None:
        self.hold = hold
        self.translator = translator
        self.folding = Folding(chat)
        """The main agent's text of the current model call, its retried attempts folded (`_replays`)."""
        self.relabel: Callable[[PermissionDecision], Awaitable[PermissionDecision]] | None = None
        self.arrived = anyio.Event()
        """Set (and replaced) whenever an item has been handed to the hold (delivered or queued there)."""
        self.received = False
        """Whether the prompt brought any item at all (text, a thought, a call): a prompt that brought none and
        recorded no model call got no answer."""

    async def deliver(self, item: Item, raw: Any) -> None:
        self.received = True
        if isinstance(item, TextDelta) and item.subagent_task_id is None:
            for shown in self.folding.text(item):
                await self._deliver(shown, raw)
            return
        if self.folding.ends_message(item):
            await self.end_message(final=False)  # the model call's stream is over
        await self._deliver(item, raw)

    async def end_message(self, *, final: bool) -> bool:
        """The current message ends (`Folding.end`); whether the CLI kept no answer after text was shown."""
        items, kept_nothing = self.folding.end(final=final)
        for item in items:
            await self._deliver(item, None)
        return kept_nothing

    async def _deliver(self, item: Item | MessageEnd, raw: Any) -> None:
        if isinstance(item, PermissionDecision) and self.relabel is not None and item.subagent_task_id is None:
            item = await self.relabel(item)
        await self.hold.deliver(item, raw, hold=self._from_chat_file(item, raw))
        arrived, self.arrived = self.arrived, anyio.Event()
        arrived.set()

    def _from_chat_file(self, item: Item | MessageEnd, raw: Any) -> bool:
        """Whether the chat file completes this item: a main-session call the CLI ran (not one we
        denied, whose result is ours; not one first seen in a permission prompt, whose `tool_use` must
        precede the prompt), not a subagent (its detail is the watcher's) and without ACP `rawInput`."""
        if not (isinstance(item, ToolUse | ToolResult) and item.subagent_task_id is None):
            return False
        if self.translator.subagent_name(item.tool_use_id) is not None:
            return False
        if isinstance(item, ToolUse) and item.input:
            return False
        return isinstance(raw, dict) and raw.get("method") == "session/update"


class _Delivery:
    """The last step of every item: turn accounting, subagent usage, `native`, emit."""

    def __init__(self, ctx: RunContext, watcher: SubagentWatcher) -> None:
        self.ctx = ctx
        self.watcher = watcher
        self.uses: set[str] = set()
        """The calls whose `tool_use` went out."""

    async def deliver_now(self, item: Item | MessageEnd, raw: Any) -> None:
        ctx = self.ctx
        if isinstance(item, TurnBoundary):
            await ctx.end_message()
            ctx.turns += 1
            return
        if isinstance(item, MessageEnd):
            await ctx.end_message()
            return
        if isinstance(item, SubagentCompleted):
            usage = await self.watcher.finish(item.task_id)
            item = item.model_copy(update={"usage": usage})
        item.native = ctx.native(raw)
        await ctx.emit(item)
        if isinstance(item, ToolUse):
            self.uses.add(item.tool_use_id)
        if isinstance(item, SubagentStarted):
            self.watcher.track(item.task_id, item.agent_name)


class _Shown:
    """What must be on the stream before a question of unified's ask_user: its call's `tool_use` (the MCP call
    can reach the server before the pump has delivered the ACP update that announced it) and what was held
    before it."""

    WAIT_S = 2.0

    def __init__(self, hold: ToolOutputHold, delivery: _Delivery, sink: _Sink) -> None:
        self.hold = hold
        self.delivery = delivery
        self.sink = sink

    async def before(self, call_id: str | None) -> None:
        """As before a permission prompt: the held items go out (their records waited for, briefly). The
        call's own update may still be on its way from the pump: each item that arrives is flushed out too,
        until the call's `tool_use` went out or `WAIT_S` passed (a question without one is still asked)."""
        with anyio.move_on_after(self.WAIT_S):
            while call_id is not None and call_id not in self.delivery.uses:
                arrived = self.sink.arrived  # taken before the flush: an item handed over during it wakes us
                await self.hold.flush()
                if call_id in self.delivery.uses:
                    break
                await arrived.wait()
        await self.hold.flush()
