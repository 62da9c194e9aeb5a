"""The fallback transport: `gemini -p "" --output-format stream-json`, one process per run, the prompt on its stdin.

A call's `tool_result` there carries the CLI's display of it (0.61: an empty string for a read, nothing for a
listing or an edit), not what the model read: a successful call's output is taken from the session's chat file,
which has it a few milliseconds later (as over ACP: `_chat_records.py`), or stays the display after
`RECORD_GRACE_S`.

For CLIs (or environments) without ACP. What it loses against ACP: thoughts, permission prompts
(the approval mode alone decides; in `default` mode writes and shell are simply not registered),
the `ask_user` tool, subagent detail (only the `invoke_agent` call and its result, from the chat file),
per-turn usage (one total at the end) and images.

`max_turns` is unified's here, as over ACP (`_permissions.TurnCap`; 0.61 reads `model.maxSessionTurns` only from
settings files: see docs/backends/gemini-cli.md), but nobody can be asked here: headless, the CLI announces each
call of a model request while that request streams and runs them, then sends the next request, only once it has
ended; so the first call of request `max_turns` (`StreamJsonTranslator.past_cap`) kills the process at once, before
the line is even handled. Its calls are answered "not run" (as the shared agent loop does), the run ends `max_turns`,
and the session resumes from the chat file the CLI wrote up to then (`repair_session` mends what the kill left, with a
`session_repaired` warning).

It is a race that unified can lose: a request whose stream has ended can have its calls run and the next request
sent before the kill lands (no gate holds the CLI there headless; its own `maxSessionTurns` would, but it reads that
only from settings files, and the system one unified writes only when root owns it). Measured on 0.61 against
FakeGemini, a model that calls read_file for ever, `max_turns=2`: 2 requests in 24 of 24 runs two at a time on a
loaded machine, but 3 requests in 3 of 24 runs six at once on two cores, the calls of request 2 run (the run still
ended `max_turns`, the third answer not shown). Calls the CLI ran before the kill landed are reported as they ran,
from the results it had written (`_ran_before_the_kill`), never as "not run". A request whose stream is still open
when its first call is announced never loses it (18 of 18 runs six at once; tests/e2e/conformance/test_max_turns.py).
Over ACP, which asks before each call, the cap is exact.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from unified._adapters.gemini_cli._chat_files import ChatFiles, ResumeGuard, gemini_home
from unified._adapters.gemini_cli._chat_records import ChatRecords, tool_response
from unified._adapters.gemini_cli._error_reports import sweep_error_reports
from unified._adapters.gemini_cli._launch import Launch, start_gemini
from unified._adapters.gemini_cli._outcome import DEFAULT_BASE_URL, error_from_exit, error_from_result
from unified._adapters.gemini_cli._relocate import SESSION_ID, session_lease
from unified._adapters.gemini_cli._replays import Folding, MessageEnd, Shown
from unified._adapters.gemini_cli._retry_watch import WATCH_INTERVAL_S, RetryWatch, debug_log_env, sweep_debug_logs
from unified._adapters.gemini_cli._translate import BACKEND_ALLOWED, Item, TurnBoundary, refused_unrun
from unified._binary.framing import CUT_OFF, answer_over_cap, parse_object
from unified._binary.jsonrpc import as_dict
from unified._binary.loops import every
from unified._binary.process import AgentSubprocess
from unified._internal.counts import positive_int
from unified._redaction import clip
from unified.backends import MalformedLine, RunContext, RunOutcome, refusal
from unified.capabilities import snapshot
from unified.errors import BackendError, UnifiedError
from unified.events import (
    ErrorEvent,
    PermissionDecision,
    SessionStarted,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    ToolResult,
    ToolUse,
    Usage,
    WarningEvent,
)
from unified.sessions import short_id_of
from unified.tools._protected import protected_links

__all__ = ["StreamJsonTranslator", "run_stream_json"]

STREAM_JSON_MODES = {"default": "default", "auto_edit": "auto_edit", "yolo": "yolo", "plan": "plan"}


ECHO_MAX_BYTES = 65_536 - 128
"""The longest `message(role=user)` line (the prompt's echo, less room for its framing) `gemini -p --output-format
stream-json` survives: measured with 0.61, once that line is over 64 KiB the CLI ends (exit 0) right after it, with
no answer and no `result` (a prompt of 65,300 `x` ran, 65,500 did not; of 32,700 `é` ran, 32,800 did not; over ACP
both run). A longer prompt is refused before the run starts, naming the transport that takes it."""

RECORD_GRACE_S = 1.0
"""How long a successful call's `tool_result` waits for the chat file's record of what the model read."""
RECORD_FIRST_POLL_S = 0.002
RECORD_POLL_S = 0.05
"""The chat file is looked at again after 2 ms, then twice as long each time up to 50 ms: the record comes
1-3 ms after the result line (0.61), which a 50 ms look would have held back each call's result for."""

_ANSWER_LINE = re.compile(
    r'\{"type"\s*:\s*"message"\s*,\s*(?:"timestamp"\s*:\s*"[^"]*"\s*,\s*)?"role"\s*:\s*"assistant"'
)
"""The start of a line of the model's answer text (0.61 writes `type`, `timestamp`, `role`, `content`). Over the
framing's cap, or cut off by the CLI's exit, it is dropped and the answer is lost: not a `success` (it was one, with an
empty final text, past the cap), and a cut one is told as such (it was "ended without a result")."""

STREAM_JSON_COLUMN = "gemini-cli/stream-json"
"""The capability matrix's column for this transport: what it loses is declared there."""


@dataclass(slots=True)
class StreamJsonTranslator:
    """The six stream-json event types → UnifiedEvents (pure)."""

    backend: str = "gemini-cli"
    cwd: str | None = None
    resumed: bool = False
    capabilities: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    usage: Usage | None = None
    final: dict[str, Any] | None = None
    _agents: dict[str, str] = field(default_factory=dict)
    _next_request: bool = True
    """Whether the next text or call is a new model request's (a turn): at first, and once a call was answered.
    Headless, every call of a request is announced while its answer streams, before any runs, so a `tool_use` after
    a `tool_result` is the next request's (before, only text after calls began a turn: a request that only called
    tools after another did was not counted), and text after its own request's call is not."""
    _started: bool = False
    _tools: dict[str, str] = field(default_factory=dict)
    """Calls announced (`tool_use`: id → tool name, for its `permission_decision`), and below those answered: the
    CLI's output is not trusted to name each call once, nor only calls it announced (a stream breaking the event
    protocol would be reported as unified's bug)."""
    _answered: set[str] = field(default_factory=set)

    def event(self, data: Mapping[str, Any]) -> list[Item]:
        kind = data.get("type")
        if kind == "init":
            given = data.get("session_id")  # text or none: an object was `str()`ed into an id "{'a': 1}" (round 22)
            session_id = given if isinstance(given, str) and given else None
            if self._started:  # a second `init`, or one after output: one session, started once
                self.session_id = self.session_id or session_id
                return []
            self.session_id = session_id
            return [self._start(data.get("model"))]
        items = self._content(kind, data)
        if not self._started and any(not isinstance(item, TurnBoundary | WarningEvent | ErrorEvent) for item in items):
            return [self._start(None), *items]  # output before `init`: the session starts first all the same
        return items

    def _start(self, model: object) -> SessionStarted:
        self._started = True
        return SessionStarted(
            backend=self.backend,
            model=model if isinstance(model, str) else None,
            short_id=short_id_of(self.session_id) if self.session_id else None,
            resumed=self.resumed,
            cwd=self.cwd,
            transport="stream-json",
            capabilities=self.capabilities,
            session_id=self.session_id,
        )

    def _content(self, kind: object, data: Mapping[str, Any]) -> list[Item]:
        sid = self.session_id
        if kind == "message":
            text = data.get("content")
            if data.get("role") != "assistant" or not isinstance(text, str) or not text:
                return []
            items: list[Item] = [TurnBoundary()] if self._next_request else []
            self._next_request = False
            return [*items, TextDelta(text=text, session_id=sid)]
        if kind == "tool_use":
            call_id = str(data.get("tool_id") or "")
            if not call_id:  # its result cannot name it; a second such call read as this one announced again
                shown = clip(str(data.get("tool_name") or "?"), 80)
                message = f"the Gemini CLI announced a call of {shown} without a tool_id; it is left out of the stream"
                return [WarningEvent(code="malformed_line", message=message, session_id=sid)]
            if call_id in self._tools:
                return []  # announced already
            boundary: list[Item] = [TurnBoundary()] if self._next_request else []
            self._next_request = False
            name = str(data.get("tool_name") or "")
            self._tools[call_id] = name
            args = as_dict(data.get("parameters"))
            uses: list[Item] = [*boundary, ToolUse(tool_use_id=call_id, name=name, input=args, session_id=sid)]
            if name == "invoke_agent":
                agent = str(args.get("agent_name") or "subagent")
                self._agents[call_id] = agent
                uses.append(
                    SubagentStarted(
                        task_id=call_id,
                        agent_name=agent,
                        description=str(args.get("prompt") or "") or None,
                        parent_tool_use_id=call_id,
                        session_id=sid,
                    )
                )
            return uses
        if kind == "tool_result":
            call_id = str(data.get("tool_id") or "")
            if call_id not in self._tools or call_id in self._answered:
                return []  # a result of no call announced, or a second one
            self._answered.add(call_id)
            self._next_request = True
            is_error = data.get("status") != "success"
            error = data.get("error") if isinstance(data.get("error"), dict) else None
            output = data.get("output") if not is_error else (error or {}).get("message", data.get("output"))
            results: list[Item] = [self._decision(call_id, error)]
            if call_id in self._agents:
                results.append(
                    SubagentCompleted(
                        task_id=call_id,
                        agent_name=self._agents.pop(call_id),
                        status="failed" if is_error else "completed",
                        result=output if isinstance(output, str) else None,
                        session_id=sid,
                    )
                )
            results.append(ToolResult(tool_use_id=call_id, output=output, is_error=is_error, session_id=sid))
            return results
        if kind == "error":
            message = str(data.get("message") or "")
            if data.get("severity") == "warning":
                return [WarningEvent(code="gemini_warning", message=message, session_id=sid)]
            return [ErrorEvent(code="gemini_error", message=message, session_id=sid)]
        if kind == "result":
            self.final = dict(data)
            stats = as_dict(data.get("stats"))
            self.usage = Usage(
                input_tokens=positive_int(stats.get("input_tokens")),
                output_tokens=positive_int(stats.get("output_tokens")),
                cached_tokens=positive_int(stats.get("cached")),
            )
        return []

    def past_cap(self, data: Mapping[str, Any], turns: int, max_turns: int | None) -> bool:
        """Whether `data` is a call the model makes in request `max_turns` or a later one (`turns`: the requests
        counted so far, this line not yet handled): the model would go on past the run's cap."""
        if max_turns is None or data.get("type") != "tool_use" or str(data.get("tool_id") or "") in self._tools:
            return False
        return turns + self._next_request >= max_turns

    def answers_a_call(self, data: Mapping[str, Any]) -> bool:
        """Whether `data` is the result of a call announced and not yet answered."""
        call_id = str(data.get("tool_id") or "")
        return data.get("type") == "tool_result" and call_id in self._tools and call_id not in self._answered

    def not_run(self, reason: str) -> list[PermissionDecision | ToolResult]:
        """Each call announced and never answered, denied and answered `reason` (the run stopped it), once."""
        items: list[PermissionDecision | ToolResult] = []
        for call_id, name in self._tools.items():
            if call_id not in self._answered:
                self._answered.add(call_id)
                sid = self.session_id
                items += [
                    refusal(call_id, name, reason, decided_by="backend", session_id=sid),
                    ToolResult(tool_use_id=call_id, output=reason, is_error=True, session_id=sid),
                ]
        return items

    def undecided(self) -> list[PermissionDecision]:
        """The `permission_decision` of each call announced and never answered (the run was cancelled, or the CLI
        ended, while it ran), once: docs/protocol.md promises one per call, and headless the CLI had allowed it
        (a call it refuses is answered at once, `REFUSALS`)."""
        decisions = []
        for call_id, name in self._tools.items():
            if call_id not in self._answered:
                self._answered.add(call_id)
                decisions.append(
                    PermissionDecision(
                        tool_use_id=call_id,
                        tool_name=name,
                        decision="allow",
                        decided_by="backend",
                        reason=f"{BACKEND_ALLOWED}; the run ended before its result",
                        session_id=self.session_id,
                    )
                )
        return decisions

    def _decision(self, call_id: str, error: Mapping[str, Any] | None) -> PermissionDecision:
        """The one `permission_decision` of a call (docs/protocol.md), told by its result: headless, the CLI's
        approval mode and policy decide alone and say nothing until the call's end. A call it refused (a tool it
        did not register, a policy rule, arguments that do not validate) was denied; any other ended, however it
        went, was allowed."""
        kind = str((error or {}).get("type") or "")
        name = self._tools[call_id]
        if kind == INVALID_PARAMS:
            reason: str | None = refused_unrun(str((error or {}).get("message") or "its arguments were refused"))
        else:
            refused = REFUSALS.get(kind)
            reason = None if refused is None else refused.format(name=name)
        return PermissionDecision(
            tool_use_id=call_id,
            tool_name=name,
            decision="allow" if reason is None else "deny",
            decided_by="backend",
            reason=BACKEND_ALLOWED if reason is None else reason,
            session_id=self.session_id,
        )


REFUSALS: Mapping[str, str] = {
    "tool_not_registered": "the Gemini CLI has no tool named {name!r} (headless, it registers no write or shell "
    "tools outside yolo and auto_edit)",
    "policy_violation": "the Gemini CLI's policy denied it (its approval mode or a rule of unified's policy file)",
}
"""The CLI's error types (its `ToolErrorType`) of a call it never ran: denied, not failed."""
INVALID_PARAMS = "invalid_tool_params"
"""The CLI's error type of a call whose arguments it refused before running it (a path outside the workspace, a
required one missing): denied too, its error the reason (`refused_unrun`); it was said allowed, though nothing ran."""


async def run_stream_json(launch: Launch, ctx: RunContext, cwd: Path) -> RunOutcome:
    """One `gemini -p` run in `cwd` (the run's cwd, resolved once by the backend).

    Only what the child needs at its start comes before the spawn (its argv, its environment and the files
    both name, a resume's checks and repair); what only its output needs (the translator and its capability
    snapshot, the debug-log sweep) is made after it, while node starts (~0.5 s at least)."""
    params = ctx.params
    prompt = params.prompt.encode()
    echoed = len(json.dumps(params.prompt, ensure_ascii=False).encode())
    if echoed > ECHO_MAX_BYTES:
        raise UnifiedError(
            f"the prompt is {len(prompt):,} bytes; `gemini -p` (the stream-json transport) ends without an answer "
            f"once its echo of the prompt is over {ECHO_MAX_BYTES:,} bytes",
            code="bad_request",
            hint="use the acp transport (the default), or a shorter prompt (put large inputs in files the model reads)",
        )
    # `-p ""` makes the run headless; the CLI takes its stdin, whole, as the prompt (its `input` is empty).
    argv = [*launch.node, str(launch.binary), "-p", "", "--output-format", "stream-json"]
    argv += ["--approval-mode", STREAM_JSON_MODES[params.approval_mode], *launch.directory_flags()]
    if launch.fake_responses is not None:
        argv += ["--fake-responses", str(launch.fake_responses)]
    protect = params.approval_mode != "yolo"
    roots = [cwd, *launch.include_directories]
    links = await anyio.to_thread.run_sync(protected_links, roots) if protect else []
    argv += launch.headless_policy_flags(params.approval_mode, protect_paths=protect, links=links)
    guard: ResumeGuard | None = None
    session_model = None
    leased = False
    if params.resume:
        info = ChatFiles(launch.env).resolve(params.resume, str(cwd))
        session_model = info.model
        argv += ["--resume", info.session_id]  # the CLI takes no prefix: always the full id
        guard = ResumeGuard(gemini_home(launch.env), info.session_id)
        guard.before()  # before the spawn: the CLI reads the session at its start
    argv += ["-m", launch.model_for(session_model)]  # always concrete: never the router's detour
    # The CLI's retries are told only in its debug log (`_retry_watch`): the file is made (and named in the
    # environment) before the spawn, the stale logs of crashed runs swept after it.
    env, log = debug_log_env(launch.env)

    async def warn(code: str, message: str) -> None:
        await ctx.emit(WarningEvent(code=code, message=message))

    # Both read where their files end now, before the CLI can write to them (a caller's own debug log may hold
    # another run's lines; a resumed session's chat file its earlier prompts).
    url = launch.env.get("GOOGLE_GEMINI_BASE_URL") or DEFAULT_BASE_URL
    retries = RetryWatch(log, warn, url, launch.max_retries, max_delay_s=launch.max_retry_delay_s)
    folding = Folding()  # the CLI's silent mid-stream retries (`_replays`), with the session's chat file:
    try:
        if guard is not None:  # a resume's from its end now (its earlier prompts are not this run's)
            folding.chat = ChatRecords(guard.home, guard.session_id)
            folding.chat.start()
        child = start_gemini(argv, cwd, env)
    except BaseException:
        log.remove()
        raise
    # A new session's lease, once its id comes (`_relocate.session_lease`; a resume's is the backend's).
    leases = contextlib.AsyncExitStack()
    stopped = False
    ran = 0  # of a capped run, the calls the CLI had run before the kill landed (`_ran_before_the_kill`)
    lost: MalformedLine | None = None  # the model's answer, on a line dropped unread

    async def dropped(bad: MalformedLine) -> None:
        nonlocal lost
        if _ANSWER_LINE.match(bad.head):
            lost = bad
        await ctx.emit(WarningEvent(code="malformed_line", message=f"dropped a {bad.size}-byte line: {bad.reason}"))

    try:
        sweep_debug_logs(keep=log.path.name)
        sweep_error_reports()
        home = gemini_home(launch.env)
        translator = StreamJsonTranslator(
            cwd=str(cwd), resumed=guard is not None, capabilities=snapshot(STREAM_JSON_COLUMN)
        )
        async with leases:
            done = anyio.Event()  # the ticker's end: set, not cancelled (`every`)
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(every, WATCH_INTERVAL_S, retries.tick, done)
                    tg.start_soon(_give_prompt, child, prompt)
                    try:
                        while (data := await _read_line(child, dropped)) is not None:
                            if isinstance(data, dict) and data.get("type") == "init":
                                session_id = data.get("session_id")
                                named = isinstance(session_id, str) and SESSION_ID.fullmatch(session_id) is not None
                                if named and folding.chat is None:
                                    # a new session's whole: the CLI may have written this prompt's record already
                                    folding.chat = ChatRecords(home, str(session_id))
                                if not leased and guard is None:
                                    leased = True  # before `session_started`: no one learns the id before it is held
                                    if named:
                                        await leases.enter_async_context(session_lease(home, str(session_id)))
                            else:  # `init` comes before the first request: anything after it is the model's
                                retries.progress()
                            capped = isinstance(data, dict) and translator.past_cap(data, ctx.turns, params.max_turns)
                            if capped:
                                # At once, before the line is handled (the module's docstring says why).
                                child.kill()
                            await _handle_line(ctx, translator, data, folding)
                            if capped:
                                stopped = True
                                ran = await _ran_before_the_kill(ctx, translator, child, folding)
                                for item in translator.not_run(
                                    f"not run: the run reached max_turns={params.max_turns}"
                                ):
                                    await ctx.emit(item)
                                break
                    finally:
                        done.set()
                        with anyio.CancelScope(shield=True):
                            for decision in translator.undecided():
                                await ctx.emit(decision)
            except BaseExceptionGroup as group:  # unreachable, or the retries spent (`RetryWatch.tick`)
                if all(isinstance(exc, UnifiedError) for exc in group.exceptions):
                    raise group.exceptions[0] from None
                raise
            code = await child.wait(10.0)
    finally:
        with anyio.CancelScope(shield=True):
            await child.close()
            log.remove()
            if guard is not None:
                for repair in guard.after():
                    await ctx.emit(WarningEvent(code="session_repaired", message=repair))
    if translator.usage is not None:
        ctx.add_usage(translator.usage)
    final = translator.final
    ended_well = final is not None and final.get("status") != "error" and code in (0, None)
    shown, kept_nothing = folding.end(final=ended_well)
    await _emit(ctx, shown, None)
    await ctx.end_message()
    short = short_id_of(translator.session_id) if translator.session_id else None
    if stopped:
        said = f"stopped after max_turns={params.max_turns} model requests; " + (
            f"{ran} of the last turn's calls had run before the CLI could be stopped, the rest were not run"
            if ran
            else "the last turn's calls were not run"
        )
        return RunOutcome(status="max_turns", short_id=short, error=said)
    if final is not None and final.get("status") == "error":
        raise error_from_result(as_dict(final.get("error")), code)
    if lost is not None and ended_well:
        raise answer_over_cap("the gemini CLI")
    if lost is not None and lost.reason == CUT_OFF and final is None and code == 0:
        raise BackendError(
            f"gemini -p ended (exit code 0) in the middle of its answer: {lost.size:,} bytes of the line read, the "
            "rest lost with the run's result (the CLI exits before a pipe has taken all it wrote: measured on 0.61, "
            "past 64 KiB at once)",
            hint="use the acp transport (the default), or resume the session and ask for a shorter answer",
            details={"exit_code": code},
        )
    if final is None or code not in (0, None):
        raise error_from_exit(code, child.stderr_tail(), "gemini -p ended without a result")
    return RunOutcome(status="success", short_id=short, final_text="" if kept_nothing else None)


async def _give_prompt(child: AgentSubprocess, prompt: bytes) -> None:
    """The prompt on the CLI's stdin, then its end (the CLI reads to the end before it starts). Beside the
    reading of its output: a prompt larger than the pipe waits for the CLI to read it. A CLI that ended
    before reading it is told by its exit, not here."""
    with contextlib.suppress(ConnectionError):
        await child.write(prompt)
    await child.end_input()


DRAIN_S = 5.0
"""How long a killed CLI's remaining output is read for (`_ran_before_the_kill`): the pipe ends as the process
group dies, at once but for a process that escaped it."""


async def _ran_before_the_kill(
    ctx: RunContext, translator: StreamJsonTranslator, child: AgentSubprocess, folding: Folding
) -> int:
    """The results of the calls that ran before the kill at the cap landed (the module docstring's race: the CLI ran
    them and went on while unified read the line that stopped it), read from what the killed CLI had written: such a
    call is reported as it ran, not as "not run". Only those results: the rest (a later request's answer) is the
    model's going past the cap and not shown. How many there were."""
    ran = 0
    with anyio.move_on_after(DRAIN_S):
        while (data := await _read_line(child)) is not None:
            if isinstance(data, dict) and translator.answers_a_call(data):
                await _handle_line(ctx, translator, data, folding)
                ran += 1
    return ran


async def _read_line(
    child: AgentSubprocess, dropped: Callable[[MalformedLine], Awaitable[None]] | None = None
) -> dict[str, Any] | str | None:
    """The CLI's next line, parsed (`parse_object`: the object, or why the line is none); None at the end of its
    output. A line that cannot be read (`MalformedLine`) is skipped, told to `dropped` first: the run's reading
    warns of it, the reading after the kill at the cap only wants the results that line cannot be."""
    while True:
        try:
            line = await child.receive()
        except MalformedLine as bad:
            if dropped is not None:
                await dropped(bad)
            continue
        return None if line is None else parse_object(line)


async def _handle_line(
    ctx: RunContext, translator: StreamJsonTranslator, data: dict[str, Any] | str, folding: Folding
) -> None:
    """One parsed line (`parse_object`: the object, or why the line is none) → events."""
    if isinstance(data, str):
        await ctx.emit(WarningEvent(code="malformed_line", message=f"ignored a line: {data}"))
        return
    items = translator.event(data)
    if folding.chat is not None:
        items = await _as_the_model_read_them(folding.chat, items)
    for item in items:
        if isinstance(item, TextDelta) and item.subagent_task_id is None:
            await _emit(ctx, folding.text(item), data)
            continue
        if folding.ends_message(item):
            await _emit(ctx, folding.end(final=False)[0], None)
        if isinstance(item, TurnBoundary):
            await ctx.end_message()
            ctx.turns += 1
        else:
            item.native = ctx.native(data)
            await ctx.emit(item)


async def _as_the_model_read_them(chat: ChatRecords, items: list[Item]) -> list[Item]:
    """`items` with each successful call's result as the model read it (`_as_the_model_read_it`), and a subagent's
    `result` the same text: the CLI's display of an `invoke_agent` call is empty (0.61), so its `subagent_completed`
    said nothing of what the subagent returned, where the chat file has it ("Subagent 'generalist' finished ...
    Result: ...")."""
    read = [
        await _as_the_model_read_it(chat, item) if isinstance(item, ToolResult) and not item.is_error else item
        for item in items
    ]
    outputs = {item.tool_use_id: item.output for item in read if isinstance(item, ToolResult) and not item.is_error}
    return [
        item.model_copy(update={"result": outputs[item.task_id]})
        if isinstance(item, SubagentCompleted) and isinstance(outputs.get(item.task_id), str)
        else item
        for item in read
    ]


async def _as_the_model_read_it(chat: ChatRecords, result: ToolResult) -> ToolResult:
    """A successful call's result with the function response the chat file recorded for it (what the model read)
    in place of the CLI's display; as it came when no record comes in time, at once when the session has no chat
    file to look in (the CLI's chat recording off, an unreadable file).
    A failed call's output is already its error's text, which the model read."""
    record = chat.lookup(result.tool_use_id, rescan=True)
    if record is None and not chat.tails:
        return result  # no chat file (recording off, unreadable): nothing to wait for
    pause = RECORD_FIRST_POLL_S
    with anyio.move_on_after(RECORD_GRACE_S):
        while record is None:  # no event tells a file's new line: looked at again, sooner at first
            await anyio.sleep(pause)
            pause = min(pause * 2, RECORD_POLL_S)
            record = chat.lookup(result.tool_use_id)
    answer = tool_response(record) if record is not None else None
    if answer is None:
        return result
    output, is_error = answer
    return ToolResult.model_validate({**result.model_dump(), "output": output, "data": None, "is_error": is_error})


async def _emit(ctx: RunContext, items: list[Shown], raw: dict[str, Any] | None) -> None:
    for item in items:
        if isinstance(item, MessageEnd):
            await ctx.end_message()
        else:
            item.native = ctx.native(raw)
            await ctx.emit(item)
