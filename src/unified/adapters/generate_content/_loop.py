"""The agent loop: stream a turn, run its function calls locally, send the results back, repeat.

google-genai's automatic function calling and automatic continuation are off; this loop owns
every request, so it can stream, ask permissions, retry with RetryInfo, stop on a runaway loop
and persist the exact history (thought signatures included) after every turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from google.genai import types

from unified import capabilities
from unified._errors import UnifiedError
from unified._internal.backend import RunContext, RunOutcome
from unified._internal.session_store import default_store
from unified.adapters.generate_content._client import generation_config, make_client, open_http
from unified.adapters.generate_content._failures import classify
from unified.adapters.generate_content._options import DEFAULT_MODEL, Settings, plan_thinking
from unified.adapters.generate_content._sessions import BACKEND
from unified.adapters.generate_content._translate import LocalCall, TurnTranslator, call_key
from unified.events import SessionStarted, ToolResult, Usage, WarningEvent
from unified.sessions import StoredSession
from unified.tools import EventForwarder, ToolCall, ToolOutcome, ToolRuntime, model_family

if TYPE_CHECKING:
    from google import genai

_CANCELLED_CALL = "this call never ran: the previous run ended before it could"


async def _close(stream: AsyncIterator[Any]) -> None:
    """Close the SDK's stream generator now (releasing the HTTP response), not when it is collected."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True):
            await aclose()


def _dump(content: types.Content) -> dict[str, Any]:
    return content.model_dump(mode="json", exclude_none=True)


def _repair(contents: list[types.Content]) -> None:
    """A run that stopped between a model's calls and their answers left calls unanswered; the API
    would reject that history, so answer each with an error saying the call never ran."""
    if not contents or contents[-1].role != "model":
        return
    calls = [p.function_call for p in contents[-1].parts or [] if p.function_call is not None]
    if calls:
        contents.append(
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=c.id, name=c.name, response={"error": _CANCELLED_CALL}
                        )
                    )
                    for c in calls
                ],
            )
        )


class Loop:
    """One run of the generate-content backend."""

    def __init__(self, ctx: RunContext, settings: Settings) -> None:
        self.ctx = ctx
        self.params = ctx.params
        self.settings = settings
        self.store = self.params.session_store or default_store()
        self.session: StoredSession | None = None
        self.contents: list[types.Content] = []
        self.taken_ids: set[str] = set()
        self.model = self.params.model or DEFAULT_MODEL

    async def run(self) -> RunOutcome:
        params = self.params
        if params.resume:
            session = await self.store.load(BACKEND, (await self.store.resolve(BACKEND, params.resume)).session_id)
            self.model = params.model or session.model or DEFAULT_MODEL
            self.contents = [types.Content.model_validate(c) for c in session.state.get("contents", [])]
            _repair(self.contents)
        else:
            session = StoredSession.new(BACKEND, model=self.model, cwd=str(params.cwd), first_prompt=params.prompt)
        session.model = self.model
        self.session = session
        async with self.store.lease(BACKEND, session.session_id), self._http() as http:
            await self.ctx.emit(
                SessionStarted(
                    session_id=session.session_id,
                    backend=BACKEND,
                    model=self.model,
                    short_id=session.short_id,
                    resumed=params.resume is not None,
                    cwd=str(params.cwd),
                    transport="http",
                    capabilities=capabilities.snapshot(BACKEND),
                )
            )
            parts = [types.Part(text=params.prompt)]
            parts += [types.Part(inline_data=types.Blob(mime_type=i.mime_type, data=i.data)) for i in params.images]
            self.contents.append(types.Content(role="user", parts=parts))
            try:
                client = make_client(self.settings, http)
                if not self.settings.local_tools:
                    return await self._converse(client, None)
                async with ToolRuntime(
                    params.cwd,
                    include_directories=params.include_directories,
                    approval_mode=params.approval_mode,
                    excluded_tools=params.excluded_tools,
                    user_input=self.ctx.ask_user if params.on_user_input is not None else None,
                ) as tools:
                    for problem in await tools.connect_mcp(params.mcp_servers):
                        await self.ctx.emit(WarningEvent(code="mcp_unavailable", message=problem.message))
                    return await self._converse(client, tools)
            finally:
                with anyio.CancelScope(shield=True):
                    await self._save()

    @contextlib.asynccontextmanager
    async def _http(self) -> AsyncIterator[Any]:
        http = open_http(self.settings)
        try:
            yield http
        finally:
            with anyio.CancelScope(shield=True):
                await http.aclose()

    async def _save(self) -> None:
        session = self.session
        assert session is not None
        session.state["contents"] = [_dump(c) for c in self.contents]
        await self.store.save(session)

    async def _converse(self, client: genai.Client, tools: ToolRuntime | None) -> RunOutcome:
        declarations = tools.declarations(model_family(self.model)) if tools is not None else []
        config = generation_config(
            self.settings,
            system_instruction=self.params.system_instruction,
            declarations=declarations,
            thinking=plan_thinking(self.model, self.params.thinking),
            server_side_invocations=model_family(self.model) == "gemini-3",
        )
        session = self.session
        assert session is not None
        last_keys: list[str] = []
        repeats = botched = 0
        max_turns = self.params.max_turns
        while True:
            if max_turns is not None and self.ctx.turns >= max_turns:
                return RunOutcome(status="max_turns", error=f"stopped after max_turns={max_turns} model turns")
            self.ctx.turns += 1
            turn = await self._stream_turn(client, config)
            usage = turn.usage or Usage()
            self.ctx.add_usage(usage)
            await self.ctx.end_message()
            session.usage = session.usage + usage
            session.turns += 1
            if turn.botched:
                botched += 1
                if botched > self.settings.max_retries:
                    return RunOutcome(
                        status="error", error=f"the model's turn ended malformed {botched} times in a row"
                    )
                continue
            botched = 0
            if turn.parts:
                self.contents.append(turn.content())
            if turn.fatal is not None:
                return RunOutcome(status="error", error=turn.fatal)
            if not turn.calls:
                return RunOutcome(status="success")
            keys = sorted(call_key(c) for c in turn.calls)
            repeats = repeats + 1 if keys == last_keys else 1
            last_keys = keys
            if repeats >= self.settings.loop_threshold:
                await self._refuse(turn.calls, "not run: the same call was repeated too often (runaway loop)")
                raise UnifiedError(
                    f"runaway loop: the model made the same call ({turn.calls[0].name} with the same arguments) "
                    f"{repeats} turns in a row, so the run was stopped",
                    code="runaway_loop",
                    hint="rephrase the task, or raise backend_options.loop_threshold if the repetition is intended",
                )
            outcomes = await self._run_calls(tools, turn.calls)
            self.contents.append(self._responses(turn.calls, outcomes))
            await self._save()

    async def _run_calls(self, tools: ToolRuntime | None, calls: list[LocalCall]) -> list[ToolOutcome]:
        if tools is None:
            message = "no local tools are available in this run (backend_options.local_tools is false)"
            outcomes = [ToolOutcome(c.tool_use_id, c.name, {"error": message}, True) for c in calls]
        else:
            batch = [ToolCall(c.tool_use_id, c.name, c.args) for c in calls]
            outcomes = await tools.run_batch(batch, EventForwarder(self.ctx.emit))
        for call, outcome in zip(calls, outcomes, strict=True):
            shown = outcome.response.get("error" if outcome.is_error else "output", outcome.response)
            await self.ctx.emit(ToolResult(tool_use_id=call.tool_use_id, output=shown, is_error=outcome.is_error))
        return outcomes

    async def _refuse(self, calls: list[LocalCall], message: str) -> None:
        outcomes = [ToolOutcome(c.tool_use_id, c.name, {"error": message}, True) for c in calls]
        for call in calls:
            await self.ctx.emit(ToolResult(tool_use_id=call.tool_use_id, output=message, is_error=True))
        self.contents.append(self._responses(calls, outcomes))

    @staticmethod
    def _responses(calls: list[LocalCall], outcomes: list[ToolOutcome]) -> types.Content:
        """Function responses matched by the model's call id (none when the model gave none)."""
        parts = [
            types.Part(function_response=types.FunctionResponse(id=c.call_id, name=c.name, response=o.response))
            for c, o in zip(calls, outcomes, strict=True)
        ]
        parts += [
            types.Part(inline_data=types.Blob(mime_type=d.mime_type, data=d.data))
            for o in outcomes
            for d in o.inline_data
        ]
        return types.Content(role="user", parts=parts)

    async def _stream_turn(self, client: genai.Client, config: types.GenerateContentConfig) -> TurnTranslator:
        """One model turn, retried while nothing of it has been shown yet."""
        settings = self.settings
        attempt = 0
        while True:
            turn = TurnTranslator(
                turn=self.ctx.turns, taken_ids=self.taken_ids, include_native=self.params.include_native
            )
            try:
                stream = await client.aio.models.generate_content_stream(
                    model=self.model, contents=list(self.contents), config=config
                )
                try:
                    async for chunk in stream:
                        for event in turn.feed(chunk):
                            await self.ctx.emit(event)
                finally:
                    await _close(stream)
                for event in turn.finish():
                    await self.ctx.emit(event)
                return turn
            except Exception as exc:
                failure = classify(exc, self.model)
                if failure is None:
                    raise
                retryable = failure.kind != "fatal" and turn.emitted == 0 and attempt < settings.max_retries
                delay = failure.retry_delay_s if failure.retry_delay_s is not None else min(2.0**attempt, 30.0)
                if failure.kind == "rate_limit" and delay > settings.max_retry_delay_s:
                    retryable = False
                if not retryable:
                    raise failure.error from exc
                attempt += 1
                await self.ctx.emit(
                    WarningEvent(
                        code="retrying",
                        message=f"{failure.error.message}; retry {attempt}/{settings.max_retries} in {delay:g}s",
                    )
                )
                await anyio.sleep(delay * settings.retry_delay_scale)
