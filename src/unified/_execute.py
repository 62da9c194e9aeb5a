"""`execute()`: one call, any backend, one stream of UnifiedEvents."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Iterator
from types import TracebackType
from typing import Any

from anyio.from_thread import start_blocking_portal

from unified._exports import publish
from unified._internal.stream import GuardedStream, StreamGuard, announce_unsupported_options
from unified.backends import Backend, RunContext, RunOutcome, UnsupportedOption, load_backend_factory
from unified.errors import ConfigurationError, RoutingError, UnifiedError
from unified.events import UnifiedEvent
from unified.types import ExecuteParams

__all__ = ["EventStream", "check_params", "execute", "execute_sync"]


class _Unavailable:
    """Stands in for a backend that could not be chosen or loaded, so the stream still explains why."""

    def __init__(self, name: str, failure: UnifiedError) -> None:
        self.name = name
        self._failure = failure

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        return []

    async def run(self, ctx: RunContext) -> RunOutcome:
        raise self._failure


class _SessionOwner:
    """`backend="auto"` with `resume`: the backend that owns the session runs it.

    Which backend owns a short id is known only by asking every backend's sessions (the API
    backends' through `params.session_store`, which may be a database), so it is found when the
    run starts; routing then only checks that this backend can run with the credentials present.
    """

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params
        self.name = "auto"

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        return []  # the owner's are announced once it is known, in `run`

    async def run(self, ctx: RunContext) -> RunOutcome:
        from unified import sessions
        from unified._routing import select_backend_for

        store = self.params.session_store
        info = await sessions.resolve(str(self.params.resume), store=store)
        # A backend that scopes sessions by project (gemini-cli) says here where this one lives.
        where = str(self.params.cwd.expanduser().resolve())
        await sessions.resolve(info.session_id, backend=info.backend, cwd=where, store=store)
        try:
            select_backend_for(self.params, only=info.backend)
        except RoutingError as exc:
            raise RoutingError(
                f"session {info.short_id} belongs to the {info.backend} backend, which cannot run here: {exc.message}",
                hint=exc.hint,
            ) from None
        backend = load_backend_factory(info.backend)(self.params)
        self.name = backend.name
        await announce_unsupported_options(backend, self.params, ctx.emit)
        return await backend.run(ctx)


def check_params(params: ExecuteParams) -> None:
    """Reject what no backend can run, the same way on every backend, before anything starts.

    Raises `ConfigurationError` for a `cwd` that is missing or not a directory and for a blank
    prompt (a prompt of images only is allowed).
    """
    cwd = params.cwd.expanduser()
    if not cwd.exists():
        raise ConfigurationError(f"cwd {cwd} does not exist", hint="pass an existing directory as cwd")
    if not cwd.is_dir():
        raise ConfigurationError(f"cwd {cwd} is not a directory", hint="pass a directory as cwd, not a file")
    if not params.prompt.strip() and not params.images:
        raise ConfigurationError("the prompt is empty", hint="say what the agent should do")


def _make_backend(params: ExecuteParams) -> Backend:
    name: str = params.backend
    try:
        if name == "auto" and params.resume:
            return _SessionOwner(params)
        if name == "auto":
            from unified._routing import select_backend_for

            name = select_backend_for(params).backend
        return load_backend_factory(name)(params)
    except UnifiedError as exc:
        return _Unavailable(name, exc)


class EventStream(AsyncIterator[UnifiedEvent]):
    """The events of one run. Iterate it; `cancel()` ends the run early with `result(cancelled)`.

    Raises `ConfigurationError` at once for parameters no backend can run (see `check_params`).

    Prefer `async with execute(params) as events:` so the run is cleaned up even when you stop
    reading early; bare `async for` works too when you read to the end from one task.
    """

    def __init__(self, params: ExecuteParams, *, backend: Backend | None = None, strict: bool = False) -> None:
        check_params(params)
        self.params = params
        chosen = backend if backend is not None else _make_backend(params)
        self._stream = GuardedStream(lambda send: StreamGuard(params, chosen, send, strict=strict))

    @property
    def backend(self) -> str:
        return self._stream.guard.backend.name

    def cancel(self, *, interrupted: bool = False) -> None:
        """End the run: the backend is stopped, its processes ended, and `result` still arrives."""
        self._stream.guard.stop("interrupted" if interrupted else "cancelled")

    def __aiter__(self) -> EventStream:
        return self

    def __anext__(self) -> Awaitable[UnifiedEvent]:
        return self._stream.next()  # the stream's own coroutine: one per event, not two

    async def aclose(self) -> None:
        await self._stream.close()

    async def __aenter__(self) -> EventStream:
        await self._stream.start(managed=True)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def execute(params: ExecuteParams | None = None, /, **fields: Any) -> EventStream:
    """Run one task on a backend and stream its events.

    Pass an `ExecuteParams` or its fields: `execute(prompt="hi", backend="gemini-cli")`.
    Nothing heavy is imported until the chosen backend runs.
    """
    if params is None:
        params = ExecuteParams(**fields)
    elif fields:
        params = params.model_copy(update=fields)
    return EventStream(params)


def execute_sync(params: ExecuteParams | None = None, /, **fields: Any) -> Iterator[UnifiedEvent]:
    """`execute()` for synchronous code: events arrive as they happen, from an event loop in a worker thread.

    Closing the iterator early cancels the run (its processes are ended before `close()` returns).
    """
    stream_params = params if params is not None else ExecuteParams(**fields)
    check_params(stream_params)  # raised here, in the caller's thread, not inside the worker's loop
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(EventStream(stream_params)) as stream:
        finished = False
        try:
            while True:
                try:
                    event = portal.call(stream.__anext__)
                except StopAsyncIteration:
                    finished = True
                    return
                yield event
        finally:
            if not finished:
                portal.call(stream.cancel)


publish("unified", ["EventStream", "execute", "execute_sync"], globals())
