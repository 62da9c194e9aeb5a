"""The interactions backend: the agent loop over `client.aio.interactions`.

One model turn is one interaction. The loop creates it (streaming), feeds every event to the
translator, and acts on how it ended: `requires_action` runs the function calls through the
local tool runtime and sends their results as the next interaction's input, chained with
`previous_interaction_id` (or, with `store=false`, by resending the whole conversation);
`requires_continuation` continues with the token; the terminal statuses end the run. A dropped
stream reconnects with `get(id, stream=True, last_event_id=...)`, skipping event ids already
seen, so consumers get every event exactly once. Background agents are created, then streamed or
polled; they appear as one subagent task whose progress events carry the status.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import anyio

from unified._errors import BackendError
from unified._internal.backend import RunContext, RunOutcome
from unified._internal.session_store import default_store
from unified.adapters.interactions._client import InteractionsClient, is_api_error, is_connection_error, to_unified
from unified.adapters.interactions._options import DEFAULT_MODEL, Settings, resolve_settings, unknown_options
from unified.adapters.interactions._sessions import BACKEND, append_interaction, chain
from unified.adapters.interactions._translate import (
    TERMINAL_STATUSES,
    FunctionCall,
    Signal,
    StatusChange,
    StreamFailure,
    Translator,
)
from unified.events import (
    SessionStarted,
    SubagentCompleted,
    SubagentProgress,
    SubagentStarted,
    ToolResult,
    WarningEvent,
)
from unified.sessions import SessionStore, StoredSession
from unified.tools import EventForwarder, ToolCall, ToolOutcome, ToolRuntime, model_family
from unified.types import ExecuteParams, ThinkingConfig

_ENDED = TERMINAL_STATUSES | {"requires_action", "requires_continuation"}
"""Statuses after which the current stream has nothing more to say."""


def thinking_level(thinking: ThinkingConfig) -> str | None:
    """The Interactions API takes a level only: a budget is mapped to the nearest one."""
    if thinking.level is not None:
        return thinking.level
    if thinking.budget is None or thinking.budget == -1:
        return None
    if thinking.budget == 0:
        return "minimal"
    return "low" if thinking.budget <= 1024 else "medium" if thinking.budget <= 8192 else "high"


class InteractionsBackend:
    name = BACKEND

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params

    def unsupported_options(self, params: ExecuteParams) -> list[tuple[str, str, bool]]:
        problems = [(option, why, False) for option, why in unknown_options(params.backend_options)]
        agent = params.backend_options.get("agent")
        if params.thinking is not None and params.thinking.budget is not None:
            level = thinking_level(params.thinking) or "the model's default"
            problems.append(("thinking.budget", f"the Interactions API takes a level; sent as {level}", False))
        if agent:
            if params.model:
                problems.append(("model", f"an agent run ({agent}) uses no model; it is ignored", False))
            if params.thinking is not None:
                problems.append(("thinking", "agents take no generation config; it is ignored", False))
        return problems

    async def run(self, ctx: RunContext) -> RunOutcome:
        settings = resolve_settings(ctx.params)
        store = ctx.params.session_store or default_store()
        if ctx.params.resume:
            session = await store.load(BACKEND, (await store.resolve(BACKEND, ctx.params.resume)).session_id)
        else:
            session = StoredSession.new(
                BACKEND,
                model=settings.agent or ctx.params.model or DEFAULT_MODEL,
                cwd=str(ctx.params.cwd),
                first_prompt=ctx.params.prompt,
            )
            session.state["store"] = settings.store
        async with store.lease(BACKEND, session.session_id):
            return await _Run(ctx, settings, store, session).run()


class _Run:
    """The state of one run: translator, seen event ids, the session being extended."""

    def __init__(self, ctx: RunContext, settings: Settings, store: SessionStore, session: StoredSession) -> None:
        self.ctx = ctx
        self.params = ctx.params
        self.settings = settings
        self.store = store
        self.session = session
        self.resumed = bool(ctx.params.resume)
        self.store_mode = bool(session.state.get("store", True))
        self.model = settings.agent or self.params.model or session.model or DEFAULT_MODEL
        self.translator = Translator()
        self.seen: set[str] = set()
        self.failure: StreamFailure | None = None
        self.task_id: str | None = None

    async def warn(self, code: str, message: str) -> None:
        await self.ctx.emit(WarningEvent(code=code, message=message))

    async def run(self) -> RunOutcome:
        await self.ctx.emit(
            SessionStarted(
                session_id=self.session.session_id,
                backend=BACKEND,
                model=self.model,
                short_id=self.session.short_id,
                resumed=self.resumed,
                cwd=str(self.params.cwd),
                transport="http",
            )
        )
        client = InteractionsClient(self.settings, on_retry=lambda message: self.warn("retry", message))
        runtime = ToolRuntime(
            self.params.cwd,
            include_directories=self.params.include_directories,
            approval_mode=self.params.approval_mode,
            excluded_tools=self.params.excluded_tools,
            user_input=self.ctx.ask_user if self.params.on_user_input is not None else None,
        )
        try:
            async with runtime:
                for problem in await runtime.connect_mcp(self.params.mcp_servers):
                    await self.warn("mcp_unavailable", problem.message)
                return await self._loop(client, runtime)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._cancel_open(client)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await self.store.save(self.session)
                await client.aclose()

    async def _cancel_open(self, client: InteractionsClient) -> None:
        """A run stopped mid-interaction cancels it server-side (best effort, bounded)."""
        iid, status = self.translator.interaction_id, self.translator.status
        if iid is None or status in _ENDED:
            return
        with anyio.move_on_after(5):
            try:
                await client.cancel(iid)
            except Exception as exc:
                if not is_api_error(exc):
                    raise

    # -- the loop ---------------------------------------------------------------------------------

    async def _loop(self, client: InteractionsClient, runtime: ToolRuntime) -> RunOutcome:
        ids = chain(self.session)
        previous = ids[-1] if ids and self.store_mode else None
        history: list[dict[str, Any]] = list(self.session.state.get("steps") or [])
        pending: list[dict[str, Any]] = [{"type": "user_input", "content": self._prompt_content()}]
        continuation: str | None = None
        short_id = self.session.short_id
        while True:
            self.ctx.turns += 1
            if not self.store_mode:
                history += pending
            body = self._body(runtime, previous, history if not self.store_mode else pending, continuation)
            status = await self._interaction(client, body)
            iid = self.translator.interaction_id
            self.ctx.add_usage(self.translator.usage)
            await self.ctx.end_message()
            self.session.usage = self.session.usage + self.translator.usage
            self.session.turns += 1
            if iid is not None:
                append_interaction(self.session, iid)
            if not self.store_mode:
                history += self.translator.model_steps()
                self.session.state["steps"] = history
            await self.store.save(self.session)
            await self._finish_task(status)
            if self.failure is not None:
                raise BackendError(
                    f"the interaction failed: {self.failure.message}",
                    code="backend_error",
                    details={"code": self.failure.code, "interaction_id": iid},
                )
            previous = iid if self.store_mode else None
            continuation = None
            pending = []
            if status == "requires_continuation":
                continuation = self.translator.continuation_token
                continue
            if status == "requires_action":
                calls = list(self.translator.calls)
                if not calls:
                    raise BackendError("the interaction requires action but asked for no function call")
                if self.params.max_turns is not None and self.ctx.turns >= self.params.max_turns:
                    return RunOutcome(status="max_turns", short_id=short_id)
                pending = await self._run_calls(runtime, calls)
                continue
            if status == "completed":
                return RunOutcome(status="success", short_id=short_id)
            if status == "cancelled":
                return RunOutcome(status="cancelled", short_id=short_id)
            if status == "incomplete":
                await self.warn("incomplete", "the interaction stopped early (e.g. max output tokens)")
                return RunOutcome(status="success", short_id=short_id)
            if status == "budget_exceeded":
                return RunOutcome(status="error", error="the interaction exceeded its budget", short_id=short_id)
            raise BackendError(f"the interaction ended with status {status!r}", details={"interaction_id": iid})

    def _prompt_content(self) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = [{"type": "text", "text": self.params.prompt}]
        for image in self.params.images:
            data = base64.b64encode(image.data).decode("ascii")
            content.append({"type": "image", "data": data, "mime_type": image.mime_type})
        return content

    def _body(
        self, runtime: ToolRuntime, previous: str | None, steps: list[dict[str, Any]], continuation: str | None
    ) -> dict[str, Any]:
        settings = self.settings
        body: dict[str, Any] = {}
        if steps:
            body["input"] = steps
        if settings.agent:
            body["agent"] = settings.agent
            if settings.agent_config:
                body["agent_config"] = settings.agent_config
        else:
            body["model"] = self.model
            config = self._generation_config()
            if config:
                body["generation_config"] = config
        tools: list[dict[str, Any]] = [{"type": name} for name in settings.server_tools]
        if settings.local_tools and not settings.agent:
            family = model_family(self.model)
            tools += [{"type": "function", **declaration} for declaration in runtime.declarations(family)]
        if tools:
            body["tools"] = tools
        if previous is not None:
            body["previous_interaction_id"] = previous
        if continuation is not None:
            body["continuation_token"] = continuation
        if self.params.system_instruction:
            body["system_instruction"] = self.params.system_instruction
        if not self.store_mode:
            body["store"] = False
        if settings.background:
            body["background"] = True
        return body

    def _generation_config(self) -> dict[str, Any]:
        thinking = self.params.thinking
        if thinking is None:
            return {}
        config: dict[str, Any] = {"thinking_summaries": "auto" if thinking.include_thoughts else "none"}
        level = thinking_level(thinking)
        if level is not None:
            config["thinking_level"] = level
        return config

    async def _run_calls(self, runtime: ToolRuntime, calls: list[FunctionCall]) -> list[dict[str, Any]]:
        """Run one turn's calls under the policy; their results are the next interaction's input."""
        batch = [ToolCall(call.id, call.name, call.arguments) for call in calls]
        outcomes = await runtime.run_batch(batch, EventForwarder(self.ctx.emit))
        results: list[dict[str, Any]] = []
        for outcome in outcomes:
            response = outcome.response
            output = response.get("error") if outcome.is_error else response.get("output", response)
            await self.ctx.emit(ToolResult(tool_use_id=outcome.call_id, output=output, is_error=outcome.is_error))
            results.append(_function_result(outcome))
        return results

    # -- one interaction --------------------------------------------------------------------------

    async def _interaction(self, client: InteractionsClient, body: dict[str, Any]) -> str | None:
        """Create one interaction and follow it to its end; returns its final status."""
        self.translator.begin_interaction()
        self.failure = None
        if not self.settings.background:
            await self._follow(client, await client.create_stream(body))
            return self.translator.status
        created = await client.create(body)
        await self._apply(self.translator.feed_interaction(created), created)
        iid = self.translator.interaction_id
        if iid is None:
            raise BackendError("the background interaction came back without an id")
        if self.task_id is None:
            self.task_id = iid
            description = self.params.prompt[:200]
            agent = self.settings.agent or self.model
            await self.ctx.emit(SubagentStarted(task_id=iid, agent_name=agent, description=description))
            await self._progress(self.translator.status)
        if self.settings.stream:
            await self._follow(client, await client.resume_stream(iid, None))
        else:
            while self.translator.status not in _ENDED and self.failure is None:
                await anyio.sleep(self.settings.poll_interval_s)
                resource = await client.get(iid)
                await self._apply(self.translator.feed_interaction(resource), resource)
        return self.translator.status

    async def _follow(self, client: InteractionsClient, events: AsyncGenerator[dict[str, Any], None]) -> None:
        """Consume a stream to its end, reconnecting after a drop from the last event id seen."""
        resumes = 0
        last_event_id: str | None = None
        while True:
            dropped: BaseException | None = None
            try:
                async with aclosing(events):
                    async for raw in events:
                        event_id = raw.get("event_id")
                        if isinstance(event_id, str):
                            if event_id in self.seen:
                                continue  # replayed after a reconnect: already delivered
                            self.seen.add(event_id)
                            last_event_id = event_id
                        await self._apply(self.translator.feed(raw), raw)
                        if self.failure is not None:
                            return
            except Exception as exc:
                if not is_connection_error(exc):
                    if is_api_error(exc):
                        raise to_unified(exc, "the interaction stream") from exc
                    raise
                dropped = exc
            if dropped is None and self.translator.status in _ENDED:
                return
            iid = self.translator.interaction_id
            why = f"{type(dropped).__name__}: {dropped}" if dropped else "it ended before the interaction did"
            if iid is None or resumes >= self.settings.max_stream_resumes:
                raise BackendError(
                    f"the interaction stream dropped ({why}) and could not be resumed",
                    hint="retry the run; with a session, resume it",
                    retryable=True,
                    details={"interaction_id": iid, "resumes": resumes},
                )
            resumes += 1
            await self.warn("stream_resumed", f"the stream dropped ({why}); reconnecting after event {last_event_id}")
            events = await client.resume_stream(iid, last_event_id)

    async def _apply(self, signals: list[Signal], raw: dict[str, Any]) -> None:
        native = self.ctx.native(raw)
        for signal in signals:
            if isinstance(signal, FunctionCall):
                continue  # collected by the translator; run once the interaction asks for action
            if isinstance(signal, StatusChange):
                await self._progress(signal.status)
                continue
            if isinstance(signal, StreamFailure):
                self.failure = signal
                continue
            if native is not None:
                signal.native = native
            await self.ctx.emit(signal)

    async def _progress(self, status: str | None) -> None:
        if self.task_id is not None and status is not None and status not in TERMINAL_STATUSES:
            await self.ctx.emit(SubagentProgress(task_id=self.task_id, status=status, message=f"interaction {status}"))

    async def _finish_task(self, status: str | None) -> None:
        if self.task_id is None:
            return
        task, self.task_id = self.task_id, None
        ended = {"completed": "completed", "cancelled": "cancelled"}.get(status or "", "failed")
        await self.ctx.emit(SubagentCompleted(task_id=task, status=ended, agent_name=self.settings.agent))


def _function_result(outcome: ToolOutcome) -> dict[str, Any]:
    """A tool outcome as a `function_result` input step; attached media go beside the JSON response."""
    result: Any = outcome.response
    if outcome.inline_data:
        result = [{"type": "text", "text": json.dumps(outcome.response, ensure_ascii=False)}]
        result += [
            {"type": "image", "data": base64.b64encode(part.data).decode("ascii"), "mime_type": part.mime_type}
            for part in outcome.inline_data
        ]
    item: dict[str, Any] = {
        "type": "function_result",
        "call_id": outcome.call_id,
        "name": outcome.name,
        "result": result,
    }
    if outcome.is_error:
        item["is_error"] = True
    return item
