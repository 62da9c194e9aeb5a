"""ACP as `gemini --acp` speaks it, on the shared layer: a JSON-RPC connection routed by session, its
`initialize` handshake, and the pool of warm processes.

One `gemini --acp` process hosts many ACP sessions, each with its own cwd, mode, model and MCP
servers, so a run leases a process, opens its own session, and gives the process back. A cold
start to the first answer takes about 1.8 s; `session/new` + a prompt in a running process about
50 ms. The pool key is the argv, the environment and the starter (`_backend.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from unified._adapters.gemini_cli._error_reports import sweep_error_reports
from unified._adapters.gemini_cli._outcome import error_from_exit
from unified._adapters.gemini_cli._retry_watch import DebugLog, debug_log_env, sweep_debug_logs
from unified._binary.jsonrpc import ConnectionClosed, JsonRpcConnection, Message, RpcError, as_dict, stream_ended
from unified._binary.pool import DEFAULT_IDLE_TTL, DEFAULT_SIZE, ProcessWide, WarmPool
from unified._binary.process import ProcessStarter
from unified.backends import AgentProcess
from unified.errors import BackendError

__all__ = ["AcpConnection", "AcpPool", "connect", "default_pool", "initialize_params", "session_of"]

PROTOCOL_VERSION = 1
START_EXIT_GRACE_S = 2.0
"""How long a process that failed `initialize` may take to exit before its code is read."""
INITIALIZE_TIMEOUT_S = 60.0
"""How long `gemini --acp` may take to answer `initialize` (a cold start takes about 2 s): a CLI stuck at its
start fails the run here, as codex's and claude's do, not only at the idle timeout (never, with that off)."""
MAX_SESSIONS_PER_PROCESS = 8


def initialize_params() -> dict[str, Any]:
    """What `initialize` says of the client (also what the benchmarks' minimal client sends)."""
    # Never advertise fs capabilities: with them the 0.61 CLI cannot create new files.
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
    }


def session_of(message: Message) -> str | None:
    """The ACP session a notification or request is about: its `params.sessionId`."""
    session_id = as_dict(message.get("params")).get("sessionId")
    return session_id if isinstance(session_id, str) else None


class AcpConnection(JsonRpcConnection):
    """A JSON-RPC connection to one `gemini --acp` process, with what its `initialize` said."""

    agent_info: dict[str, Any]
    can_load: bool
    """Whether the agent offers `session/load` (its `agentCapabilities.loadSession`)."""

    def __init__(self, process: AgentProcess, debug_log: DebugLog | None = None) -> None:
        super().__init__(process, name="gemini", route=session_of)
        self.agent_info = {}
        self.can_load = False
        self.debug_log = debug_log
        """Where the process writes its debug log (its retries: `_retry_watch`); removed with it if unified made it."""

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            if self.debug_log is not None:
                self.debug_log.remove()

    def kill(self) -> None:
        super().kill()
        if self.debug_log is not None:
            self.debug_log.remove()


async def connect(start: ProcessStarter, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> AcpConnection:
    """Start the agent (with a debug log of its own: `_retry_watch`) and `initialize` it; a process that fails to
    is a typed error with its exit."""
    env, log = debug_log_env(env)  # the crashed runs' logs are swept once the process is started
    try:
        process = start(argv, cwd, env)
    except BaseException:
        log.remove()
        raise
    connection = AcpConnection(process, log)
    try:
        sweep_debug_logs(keep=log.path.name)  # while node starts, before it can read `initialize`
        sweep_error_reports()
        with anyio.fail_after(INITIALIZE_TIMEOUT_S):
            info = await connection.request("initialize", initialize_params())
    except TimeoutError:
        tail = connection.process.stderr_tail()
        with anyio.CancelScope(shield=True):
            await connection.close()
        raise BackendError(
            f"gemini --acp did not answer initialize within {INITIALIZE_TIMEOUT_S:g} s",
            retryable=True,
            hint="run `unified doctor`; the CLI's stderr is in this error's details",
            details={"stderr_tail": tail},
        ) from None
    except ConnectionClosed as exc:
        ended = await stream_ended(
            connection.process, "gemini --acp", "before it answered initialize", exc, START_EXIT_GRACE_S
        )
        await connection.close()
        raise error_from_exit(*ended) from exc
    except RpcError as exc:  # it answered initialize with an error
        code = await connection.process.wait(START_EXIT_GRACE_S)
        tail = connection.process.stderr_tail()
        await connection.close()
        raise error_from_exit(code, tail, f"gemini --acp failed to start ({exc})") from exc
    except BaseException:  # cancelled before it answered (Ctrl-C while the CLI starts): the process goes too
        with anyio.CancelScope(shield=True):
            await connection.close()
        raise
    connection.agent_info = as_dict(info.get("agentInfo"))
    connection.can_load = as_dict(info.get("agentCapabilities")).get("loadSession") is True
    return connection


class AcpPool(WarmPool[AcpConnection]):
    """Warm `gemini --acp` processes (`unified._binary.pool`), up to 8 sessions each."""

    def __init__(self, size: int = DEFAULT_SIZE, idle_ttl: float = DEFAULT_IDLE_TTL) -> None:
        super().__init__(size, idle_ttl, max_leases=MAX_SESSIONS_PER_PROCESS)


default_pool = ProcessWide(AcpPool)
"""The process-wide pool, ended at interpreter exit."""
