"""Warm `codex app-server` processes: the connection a run leases, its end of a run, and the pool.

One app-server hosts many threads, so a run leases a process (`unified._binary.pool`), opens its
own thread, and gives the process back: a cold start to the first output takes ~0.15-0.4 s, a
thread and a turn in a running process a few milliseconds more than the model's answer. One run
at a time per process (`max_leases=1`): the approval bridge answers every request of the process,
and the end of a run ends every process the app-server started, which is only sound while the
process serves one run.

A process goes back to the pool only after a run whose turn ended by itself (completed, or failed
on the provider's side) and whose end (`CodexConnection.end_run`) succeeded: its background
terminals cleaned, its threads unsubscribed and remembered as ended (a late message of theirs
never reaches the next run: `route`), every process it started ended. Anything else (a cancel, a
stop, a deadline, a protocol error, a crash) retires it, and the pool closes it
(`CodexConnection.close`: the process and every process it started).

The key is the argv (with the `-c` overrides), the environment, the process's cwd and the starter
(`_run.CodexRun`); the per-process marker (`_processes.MARKER`) is added to the environment after
the key is made.
"""

from __future__ import annotations

from collections.abc import Iterable

import anyio

from unified._binary.jsonrpc import Inbox, JsonRpcConnection, Message, RpcError, as_dict, reject_request
from unified._binary.pool import DEFAULT_IDLE_TTL, DEFAULT_SIZE, ProcessWide, WarmPool
from unified._binary.proctable import Process, descendants
from unified._binary.strays import end_all, find_marked
from unified.backends import AgentProcess

__all__ = ["ROUTE", "CodexConnection", "CodexPool", "default_pool", "thread_of"]

ROUTE = "run"
"""The inbox of the run that holds the process (one at a time)."""
EOF_GRACE_S = 0.5
"""How long app-server may take to exit by itself once its stdin is closed after the turn (~20-25 ms) before
it is ended with signals (a hang guard: it always has in our runs)."""
END_RUN_TIMEOUT_S = 5.0
"""A hang guard for the end of a run on a process that stays warm (each answer takes about a millisecond)."""
_ENDING = ("thread/backgroundTerminals/clean", "thread/unsubscribe")
"""What ends each thread of a run on a warm process that called a tool or had an MCP server."""
_UNSUBSCRIBING = ("thread/unsubscribe",)
"""... and of a run that did neither: it left no background terminal."""
ENDED_KEPT = 64
"""Threads of earlier runs whose late messages are dropped: after `thread/unsubscribe` Codex sends none, so
only the last few runs' threads can still have one on the way."""


def thread_of(message: Message) -> str | None:
    """The thread a message is about: `params.threadId`, or `params.thread.id` (`thread/started`)."""
    params = as_dict(message.get("params"))
    thread = params.get("threadId")
    if thread is None:
        thread = as_dict(params.get("thread")).get("id")
    return thread if isinstance(thread, str) else None


class CodexConnection(JsonRpcConnection):
    """A JSON-RPC connection to one `codex app-server` process, and what its runs leave on it."""

    def __init__(self, process: AgentProcess, marker: str, login: bytes | None = None) -> None:
        """`login` is the ChatGPT login copied in when it was spawned."""
        super().__init__(process, name="codex app-server", route=self._route, jsonrpc_field=False)
        self.marker = marker
        self.login = login
        """The auth.json our home and the user's share (what `ChatgptLogin.copy_back` compares with)."""
        self.initialized = False
        self.input_ended = False
        """Whether its stdin was closed after the turn (it is then exiting by itself)."""
        self.remembered: dict[int, str] = {}
        """Every process it started that was seen alive during the current run: pid → start time."""
        self.ended: dict[str, None] = {}
        """The last `ENDED_KEPT` of them, oldest first: a dict, not a deque, because every message's route asks
        whether its thread is one (a deque is searched end to end: 64 ids of one prefix, the same few
        microseconds for each of a run's ~25 messages)."""
        self._closed_for_good = False

    def _route(self, message: Message) -> str | None:
        """The current run's inbox, unless the message is about a thread of an earlier run (then nobody's:
        a late notification is kept in `unrouted`, a late request refused)."""
        thread = thread_of(message)
        return None if thread is not None and thread in self.ended else ROUTE

    def _end(self, threads: Iterable[str]) -> None:
        """Remember `threads` as ended (`ended`), forgetting the oldest beyond `ENDED_KEPT`."""
        ended = self.ended
        for thread in threads:
            ended.pop(thread, None)  # ended again (a resumed thread): it is the newest now
            ended[thread] = None
        while len(ended) > ENDED_KEPT:
            del ended[next(iter(ended))]

    def adopt(self, thread: str) -> None:
        """A thread of an earlier run that this run resumes: its messages are this run's again (Codex sent the
        last of its earlier ones before it answered `thread/unsubscribe`, which `end_run` awaited)."""
        self.ended.pop(thread, None)

    async def end_run(self, threads: Iterable[str], *, started: bool = True) -> None:
        """The end of a run whose process stays warm: what the exit of a run's own process did. Its threads'
        background terminals are cleaned and the threads unsubscribed (the requests sent at once), and the run
        waits until Codex has unloaded each (`thread/closed`: our config.toml sets `thread_unload_delay_secs =
        0`), so a later resume reads the rollout again; then every process the app-server started is ended (the
        marked ones, and its descendants: an MCP server runs without the mark), looked up while Codex unloads:
        only this run used the process. `started=False`: the run called no tool and had no MCP server, so it
        started no process and none is looked for (a scan of every process on the machine, 2-3 ms on a loaded
        one, a third of a text-only run's end), and it left no background terminal to clean (a thread's earlier
        runs cleaned theirs as they ended, or ended with their process): only the unsubscribe is sent. Raises
        `ConnectionClosed`, `RpcError` or `TimeoutError` when the process is not fit for another run."""
        inbox = self.open_inbox(ROUTE)
        answers = Inbox()
        asked: dict[int, tuple[str, str]] = {}
        closing: set[str] = set()
        found: list[Process] = []
        own = self.process.pid

        async def look_up() -> None:
            if own is not None:
                found.extend(await anyio.to_thread.run_sync(descendants, own))
            found.extend(await find_marked(self.marker))

        async def unloaded() -> None:
            for _ in range(len(asked)):
                answer = await self.receive(answers)
                assert isinstance(answer, dict)  # an answer inbox holds answers only
                method, thread = asked[answer["id"]]
                if isinstance(answer.get("error"), dict):
                    raise RpcError(method, answer["error"])
                if as_dict(answer.get("result")).get("status") == "unsubscribed":
                    closing.add(thread)  # its last subscriber: Codex unloads it now
            while closing:
                message = await self.receive(inbox)
                if not isinstance(message, dict):
                    continue
                if "id" in message and "method" in message:  # a request of the ending thread's: never left pending
                    await reject_request(self, message)  # (Codex waited on it, and the warm process was lost)
                elif message.get("method") == "thread/closed":
                    closing.discard(thread_of(message) or "")

        try:
            with anyio.fail_after(END_RUN_TIMEOUT_S):
                ending = _ENDING if started else _UNSUBSCRIBING
                for thread in threads:
                    for method in ending:
                        asked[await self.start_request(method, {"threadId": thread}, answers)] = (method, thread)
                if started or self.remembered:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(look_up)
                        await unloaded()
                else:  # nothing to look up beside it: no task group (its scope and exit cost a loop iteration)
                    await unloaded()
        except BaseExceptionGroup as group:
            raise group.exceptions[0] from None
        finally:
            for request in asked:
                self.forget(request)
        self._end(thread for _, thread in asked.values())
        self.close_inbox(ROUTE)
        self.remembered.update(found)
        self.remembered.pop(own or 0, None)
        strays, self.remembered = list(self.remembered.items()), {}
        if strays:
            await anyio.to_thread.run_sync(end_all, strays)

    async def close(self) -> None:
        """End the process and every process it started. `AgentProcess.close` itself lists the process's
        descendants before it signals and kills those that outlive it, so they are not listed here a second
        time; what this adds is what `close` cannot know: the processes remembered during the run (orphaned
        before the end, by a crash or a SIGKILL) and, after the exit, the marked ones, each killed and waited
        for until gone.

        After a turn that ended on a process that is not kept, with stdin closed, app-server is already shutting
        down (and ends its commands itself, as on SIGTERM): it is given `EOF_GRACE_S` to exit before `close`,
        which then has nothing to signal nor descendants to list. Any other end is `close`'s at once."""
        if self._closed_for_good:
            return
        self._closed_for_good = True
        self.closed = True
        if self.input_ended:
            await self.process.wait(EOF_GRACE_S)
        await self.process.close()
        self.remembered.update(await find_marked(self.marker))
        if self.remembered:
            await anyio.to_thread.run_sync(end_all, list(self.remembered.items()))


class CodexPool(WarmPool[CodexConnection]):
    """Warm `codex app-server` processes (`unified._binary.pool`), one run at a time each."""

    def __init__(self, size: int = DEFAULT_SIZE, idle_ttl: float = DEFAULT_IDLE_TTL) -> None:
        super().__init__(size, idle_ttl, max_leases=1)


default_pool = ProcessWide(CodexPool)
"""The process-wide pool, ended at interpreter exit."""
