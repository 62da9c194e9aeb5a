"""Opening the run's ACP session in a leased process: `session/new`, or `session/load` for a resume.

Then the model and approval mode are set. A load's history replay is consumed here (it is the
past, not this run's events) and the chat files are guarded against the CLI's resume bugs
(`_chat_files.ResumeGuard`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio

from unified._adapters.gemini_cli._acp import AcpConnection
from unified._adapters.gemini_cli._chat_files import ChatFiles, ResumeGuard, gemini_home, read_chat, replay_count
from unified._adapters.gemini_cli._launch import CLI_MODES, SYSTEM_SETTINGS_ENV, Launch
from unified._adapters.gemini_cli._outcome import error_from_acp
from unified._adapters.gemini_cli._retry_watch import DebugLog
from unified._binary.jsonrpc import Inbox, RpcError, as_dict
from unified._binary.proctable import descendants, has_proc, read_proc
from unified._files import read_regular
from unified._internal.reach import display_url
from unified._redaction import clip
from unified._urls import PROXY_VARIABLES
from unified.backends import RunContext
from unified.errors import BackendError
from unified.events import WarningEvent
from unified.types import HttpMcpServer, McpServer, SseMcpServer, StdioMcpServer

__all__ = [
    "OpeningStalled",
    "SessionSetup",
    "acp_from_mcp_server",
    "command_problem",
    "logged_mcp_failures",
    "mcp_allowlist",
    "opening_limit",
    "session_model",
    "unreachable",
]

REPLAY_QUIET_S = 2.0
"""How long the history replay of `session/load` may pause before we stop waiting for the rest."""
_REPLAYED = frozenset({"user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call"})
MCP_CONNECT_S = 5.0
"""How long the look at an HTTP MCP server's port may wait for a connection (it runs beside `session/new`)."""
MCP_OPENING_SLACK_S = 30.0
"""What the session's opening may take beyond the slowest `timeout_s` of the run's MCP servers. 0.61 answers
`session/new` (and `session/load`) only once every MCP server has listed its tools, and waits 10 minutes
(`MCP_DEFAULT_TIMEOUT_MSEC`; ACP cannot set a server's timeout) for a server that took the connection and then
stopped answering: measured, a stdio server that answered `initialize` and never `tools/list` held the opening
until the run's idle timeout (180 s) said only "no event". The slack covers the CLI's own work in the opening
(about 1 s on a cold process)."""
_MCP_LOG_MAX_CHARS = 4 << 20
"""Most of the CLI's debug log read for the opening's MCP failures (its lines of one opening are a few KB)."""


class OpeningStalled(BackendError):
    """The CLI held the session's opening past `opening_limit`: the process is of no more use (`AcpRun` retires
    it), and the run ends with this error."""


def acp_from_mcp_server(server: McpServer) -> dict[str, Any]:
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


def command_problem(command: str, cwd: Path, env: Mapping[str, str]) -> str | None:
    """Why the CLI could not spawn `command` (it runs MCP servers with the session's cwd), None when it could: not
    there, a directory, or a file without its `x` bit (each was "was not found", or, for a directory, nothing
    until the CLI's own spawn failed)."""
    if os.sep in command:
        path = cwd / Path(command).expanduser()
        if path.is_dir():
            return "is a directory, not a program"
        if path.exists() and not os.access(path, os.X_OK):
            return "is not executable (`chmod +x` it, or name the program that runs it)"
        if os.access(path, os.X_OK):
            return None
    elif shutil.which(command, path=env.get("PATH")) is not None:
        return None
    return f"was not found (PATH of the gemini process, relative paths from {cwd})"


def mcp_allowlist(env: Mapping[str, str], cwd: Path) -> list[str]:
    """The MCP servers the CLI's settings allow (`mcp.allowed` of the system, user or workspace settings, the
    last that sets it); empty when they allow every server (0.61 `McpClientManager.isBlockedBySettings`)."""
    home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home())
    files = [Path(env.get(SYSTEM_SETTINGS_ENV) or "/etc/gemini-cli/settings.json"), home / ".gemini" / "settings.json"]
    files.append(cwd / ".gemini" / "settings.json")
    allowed: list[str] = []
    for path in files:
        try:
            settings = json.loads(read_regular(path, max_bytes=1 << 20))
        except (OSError, ValueError, RecursionError):
            continue
        mcp = settings.get("mcp") if isinstance(settings, dict) else None
        names = mcp.get("allowed") if isinstance(mcp, dict) else None
        if isinstance(names, list):
            allowed = [str(name) for name in names]
    return allowed


async def unreachable(url: str) -> str | None:
    """Why no TCP connection to the host and port of `url` could be made (refused, a name that does not
    resolve, none in `MCP_CONNECT_S`), or None when one was: a look at the port only, nothing is sent."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        return f"its URL cannot be read ({exc})"
    if not host:
        return "its URL names no host"
    try:
        with anyio.fail_after(MCP_CONNECT_S):
            stream = await anyio.connect_tcp(host, port)
    except TimeoutError:
        return f"no connection to {host}:{port} in {MCP_CONNECT_S:g} s"
    except OSError as exc:
        return f"no connection to {host}:{port} ({exc.strerror or exc})"
    await stream.aclose()
    return None


def opening_limit(servers: Sequence[McpServer]) -> float | None:
    """How long the session's opening may take with `servers` (each given its own `timeout_s`, then
    `MCP_OPENING_SLACK_S`); None without servers: then the run's idle timeout alone bounds it."""
    if not servers:
        return None
    return max(server.timeout_s for server in servers) + MCP_OPENING_SLACK_S


_MCP_LOG_FAILURES = (
    (re.compile(r"\[MCP info\] MCP server '(?P<name>[^']+)' requires authentication\b"), None),
    (re.compile(r"\[MCP error\] Error during discovery for MCP server '(?P<name>[^']+)': (?P<why>.*)"), "why"),
)
"""What 0.61's debug log (`_retry_watch.DebugLog`) says of an MCP server that took the connection and then failed
while the session opened, and nowhere else: an HTTP or SSE server that answered 401 ("requires authentication"),
and one that answered 403, 404, 500 or a body that is no JSON, or whose listing failed otherwise ("Error during
discovery"). The CLI drops such a server; the model just lacks its tools."""


_CONNECTION_CLOSED = "MCP error -32000: Connection closed"
"""What 0.61 logs of a stdio server whose process ended (or closed its stdout) before its tools were listed: right
at its start or right after it answered `initialize` alike, followed by the error's name and the same text again."""


def logged_mcp_failures(text: str, names: Sequence[str], stdio: Collection[str] = ()) -> dict[str, str]:
    """Why each of the servers `names` failed, per the CLI's debug log lines in `text` (`_MCP_LOG_FAILURES`),
    said as a warning's message; the first line on a server counts. A stdio server (among `stdio`) whose connection
    closed is said to have stopped: "listing its tools failed: ... Connection closed" sent the user to its tools."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        for pattern, group in _MCP_LOG_FAILURES:
            match = pattern.search(line)
            if match is None or match["name"] not in names or match["name"] in found:
                continue
            if group is None:
                why = "it requires authentication (it answered 401): the headers given carry no credentials it takes"
            elif match["name"] in stdio and match[group].startswith(_CONNECTION_CLOSED):
                why = (
                    "its process ended (or closed its output) before it listed its tools, at its start or right "
                    "after initialize; gemini 0.61 does not say with what exit status: run its command alone to see "
                    "why it stops"
                )
            else:
                why = f"listing its tools failed: {clip(match[group].strip(), 300)}"
            found[match["name"]] = why
    return found


def session_model(messages: list[dict[str, Any]]) -> str | None:
    """The model of a session's last answer (the CLI records it on every `gemini` message)."""
    for message in reversed(messages):
        if message.get("type") == "gemini" and isinstance(message.get("model"), str) and message["model"]:
            return str(message["model"])
    return None


class SessionSetup:
    """Opens one ACP session; `session_id` and `inbox` are set once it is known."""

    def __init__(
        self,
        connection: AcpConnection,
        ctx: RunContext,
        launch: Launch,
        load: str | None = None,
    ) -> None:
        self.connection = connection
        self.own_servers: list[dict[str, Any]] = []
        """ACP entries of unified's own MCP servers for this session (the ask_user server, `_ask_server.py`)."""
        self.params = ctx.params
        self.load = load or self.params.resume
        """What `session/load` opens (a resume's ref, or the session a continued conversation was written as);
        None: `session/new`."""
        self.launch = launch
        self._ctx = ctx
        self.session_id = ""
        self.model = launch.model_for()
        """The model the session runs on, set on it after `session/new` or `session/load`."""
        self.inbox = Inbox()
        self.mcp_warned: set[str] = set()
        """The run's MCP servers a `mcp_unavailable` warning has named: one warning a server."""

    async def warn(self, code: str, message: str) -> None:
        """A warning of the run, with the session's id once it is known. The setup's own, not a method of the
        run handed to it: the run holds the setup, and a setup holding the run's method made a reference cycle
        that kept every finished run (its guard, its events) until the cycle collector came."""
        await self._ctx.emit(WarningEvent(code=code, message=message, session_id=self.session_id or None))

    async def open(self, cwd: Path) -> str:
        if self.load:
            await self._load(cwd, self.load)
        else:
            await self._new(cwd)
        return self.session_id

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return await self.connection.request(method, params)
        except RpcError as exc:
            raise error_from_acp(exc, self.connection.process.stderr_tail()) from exc

    async def _new(self, cwd: Path) -> None:
        await self._warn_unstartable_mcp(cwd)
        await self._warn_blocked_own_servers(cwd)
        result = await self._opening("session/new", {"cwd": str(cwd), "mcpServers": self._mcp_servers()})
        self._opened(str(result["sessionId"]))
        await self._configure()

    async def _opening(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """`_looked_at_opening`, then a warning for each MCP server the CLI's debug log says failed meanwhile
        (`logged_mcp_failures`)."""
        log = self.connection.debug_log
        start = log.size() if log is not None and self.params.mcp_servers else None
        answer = await self._looked_at_opening(method, params)
        if log is not None and start is not None:
            await self._warn_logged_mcp(log, start)
        return answer

    async def _warn_logged_mcp(self, log: DebugLog, start: int) -> None:
        """Warn about the run's MCP servers that the CLI's debug log, from `start` on, says failed while the
        session opened (it logs them before it answers the opening): 0.61 says it nowhere else."""
        text, offset = log.read(start)
        while offset < log.size() and len(text) < _MCP_LOG_MAX_CHARS:
            more, after = log.read(offset)
            if after == offset:
                break
            text, offset = text + more, after
        servers = {server.name: server for server in self.params.mcp_servers}
        stdio = [server.name for server in self.params.mcp_servers if isinstance(server, StdioMcpServer)]
        for name, why in logged_mcp_failures(text, list(servers), stdio).items():
            if name in self.mcp_warned:
                continue
            server = servers[name]
            where = f" at {display_url(server.url)}" if isinstance(server, HttpMcpServer | SseMcpServer) else ""
            message = f"MCP server {name!r}{where} failed as the gemini CLI connected: {why}; its tools will be missing"
            await self.warn_mcp(name, message)

    async def warn_mcp(self, name: str, message: str) -> None:
        """`mcp_unavailable` about the run's MCP server `name`, once."""
        self.mcp_warned.add(name)
        await self.warn("mcp_unavailable", message)

    async def _looked_at_opening(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """`_bounded_opening`, while the HTTP MCP servers are looked at (`_warn_unreachable_mcp`); its error
        raised as itself, not inside an ExceptionGroup."""
        if not any(isinstance(s, HttpMcpServer | SseMcpServer) for s in self.params.mcp_servers):
            return await self._bounded_opening(method, params)
        answer: list[dict[str, Any]] = []
        failed: list[Exception] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._warn_unreachable_mcp)
            try:
                answer.append(await self._bounded_opening(method, params))
            except Exception as exc:  # raised after the group: the look is of no use once the opening failed
                failed.append(exc)
                tg.cancel_scope.cancel()
        if failed:
            raise failed[0]
        return answer[0]

    async def _bounded_opening(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """`request` of the session's opening, given up after `opening_limit` of the run's MCP servers: the CLI
        holds it for as long as one of them does not answer (`MCP_OPENING_SLACK_S`), and says which to nobody.
        The process is retired then (its opening still hangs in it): `OpeningStalled` names every server."""
        limit = opening_limit(self.params.mcp_servers)
        if limit is None:
            return await self.request(method, params)
        with anyio.move_on_after(limit):
            return await self.request(method, params)
        ended = [server.name for server in self.params.mcp_servers if not self._runs(server)]
        if ended:
            names = ", ".join(repr(name) for name in ended)
            raise OpeningStalled(
                f"the gemini CLI did not open the session within {limit:g} s: the process of MCP server {names} "
                "ended after the CLI started it, and gemini 0.61 missed its end and waited for it (it says nothing "
                "of it, nor with what exit status it ended)",
                hint="run the server's command alone to see why it stops (its stderr says), or run without it",
                details={"mcp_servers": [server.name for server in self.params.mcp_servers], "ended": ended},
            )
        names = ", ".join(repr(server.name) for server in self.params.mcp_servers)
        raise OpeningStalled(
            f"the gemini CLI did not open the session within {limit:g} s: it opens one only once every MCP server "
            f"of the run ({names}) has listed its tools, so one of them took the connection and then did not "
            "answer (gemini 0.61 waits 10 minutes for it and says nothing over ACP)",
            hint="check that each of these servers answers initialize and tools/list (start it alone, e.g. with "
            "the MCP inspector); raise its timeout_s if it is only slow to start, or run without it",
            details={"mcp_servers": [server.name for server in self.params.mcp_servers], "limit_s": limit},
        )

    def _runs(self, server: McpServer) -> bool:
        """Whether a process of the CLI's runs the stdio `server` (its command, then its args, in a descendant's
        command line); True for any other server, and where /proc cannot tell (no /proc, no pid). Measured with
        0.61: a stdio server that exited right after it answered `initialize` was seen ("Connection closed") in 2
        of 6 openings; in the other 4 the CLI waited on without a log line, as for a server that does not answer."""
        pid = self.connection.process.pid
        if not isinstance(server, StdioMcpServer) or pid is None or not has_proc():
            return True
        program, args = os.path.basename(server.command), list(server.args)
        for child, _ in descendants(pid):
            words = [os.fsdecode(word) for word in (read_proc(child, "cmdline") or b"").split(b"\0")[:-1]]
            head = len(words) - len(args)
            if head > 0 and words[head:] == args and any(os.path.basename(word) == program for word in words[:head]):
                return True
        return False

    def _mcp_servers(self) -> list[dict[str, Any]]:
        return [acp_from_mcp_server(server) for server in self.params.mcp_servers] + self.own_servers

    async def _warn_unstartable_mcp(self, cwd: Path) -> None:
        """Warn about stdio MCP servers whose command cannot run (`command_problem`) or that the CLI will not start
        in a folder it does not trust (`Launch.folder_trusted`).

        0.61 does not report a failed MCP server over ACP (one stderr line at exit, naming no server),
        so the failure we can see beforehand is ours to report.
        """
        for server in self.params.mcp_servers:
            if isinstance(server, StdioMcpServer) and not self.launch.folder_trusted:
                await self.warn_mcp(  # measured with 0.61: not offered, not a word over ACP or in its debug log
                    server.name,
                    f"MCP server {server.name!r} is not started: the Gemini CLI starts stdio MCP servers only in a "
                    f"folder it trusts, and it does not trust {cwd} (trust it in `gemini`, /permissions, or run "
                    "the server over HTTP); its tools will be missing",
                )
                continue
            problem = (
                command_problem(server.command, cwd, self.launch.env) if isinstance(server, StdioMcpServer) else None
            )
            if isinstance(server, StdioMcpServer) and problem is not None:
                await self.warn_mcp(
                    server.name,  # `mcp_unavailable`, as every backend says of an MCP server that does not start
                    f"MCP server {server.name!r} cannot start: command {server.command!r} {problem}; its tools will "
                    "be missing",
                )

    async def _warn_unreachable_mcp(self) -> None:
        """Warn about HTTP and SSE MCP servers whose port takes no connection (a server that is down): the CLI
        says nothing of them over ACP either, and the model would just lack their tools. Each is looked at
        while the CLI opens the session (it connects to them then too), so a server that is up costs no wait.
        Not through a proxy: with one configured the CLI may reach what this process cannot, so no look."""
        if any(self.launch.env.get(name) for name in PROXY_VARIABLES):
            return
        servers = [s for s in self.params.mcp_servers if isinstance(s, HttpMcpServer | SseMcpServer)]
        found: dict[str, str] = {}

        async def look(server: HttpMcpServer | SseMcpServer) -> None:
            why = await unreachable(server.url)
            if why is not None:
                found[server.name] = f"MCP server {server.name!r} at {display_url(server.url)} cannot be reached: {why}"

        async with anyio.create_task_group() as tg:
            for server in servers:
                tg.start_soon(look, server)
        for server in servers:  # in the order given
            if server.name in found:
                await self.warn_mcp(server.name, f"{found[server.name]}; its tools will be missing")

    async def _warn_blocked_own_servers(self, cwd: Path) -> None:
        """Warn when the CLI's settings allow only named MCP servers (`mcp.allowed`): 0.61 then blocks unified's
        own (the ask_user server, whose name is random) without a word over ACP, and the model cannot ask."""
        if not self.own_servers:
            return
        allowed = mcp_allowlist(self.launch.env, cwd)
        if allowed:
            names = ", ".join(repr(name) for name in allowed[:5])
            await self.warn(
                "mcp_server_unavailable",
                f"the Gemini CLI's settings allow only the MCP servers {names} (mcp.allowed), so it blocks "
                "unified's ask_user server: the model cannot ask the user in this run",
            )

    def _opened(self, session_id: str) -> None:
        self.session_id = session_id
        self.inbox = self.connection.open_inbox(session_id)

    async def _configure(self) -> None:
        # Always a concrete model: without one the CLI's router would pick one with calls of its own.
        await self.request("session/set_model", {"sessionId": self.session_id, "modelId": self.model})
        mode = CLI_MODES[self.params.approval_mode]
        if mode != "default":
            await self.request("session/set_mode", {"sessionId": self.session_id, "modeId": mode})

    async def _load(self, cwd: Path, ref: str) -> None:
        """`session/load` by short id, its history replay skipped, guarded against the CLI's resume bugs."""
        info = ChatFiles(self.launch.env).resolve(ref, str(cwd))
        messages = read_chat(Path(str(info.path))).messages
        replayed = replay_count(messages)
        self.model = self.launch.model_for(session_model(messages) or info.model)
        guard = ResumeGuard(gemini_home(self.launch.env), info.session_id)
        guard.before()
        self._opened(info.session_id)
        await self._warn_unstartable_mcp(cwd)
        await self._warn_blocked_own_servers(cwd)
        try:
            await self._opening(
                "session/load",
                {"sessionId": info.session_id, "cwd": str(cwd), "mcpServers": self._mcp_servers()},
            )
        finally:
            # Right away, not at the end of the run: the empty duplicate must not outlive the load.
            for repair in guard.after():
                await self.warn("session_repaired", repair)
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
            if not isinstance(message, dict):
                continue  # a line the process could not give: not part of the replay
            update = as_dict(as_dict(message.get("params")).get("update"))
            if message.get("method") == "session/update" and update.get("sessionUpdate") in _REPLAYED:
                seen += 1
