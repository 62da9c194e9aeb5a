"""How the codex backend starts Codex (argv, environment, home) and the run loop on an in-process stand-in
app-server (`FakeAgentProcess`): a crash, a malformed or huge line, an unknown request, a thread Codex
does not have. No binary, no subprocess."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from tests.adapters.host_hiding import HIDING_CASES, record_hiding
from tests.hang_guard import HANG_GUARD_S
from unified._adapters.codex import _run as codex_run
from unified._adapters.codex._launch import (
    CONFIG_TOML,
    ENV_POLICY,
    ChatgptLogin,
    Launch,
    codex_home,
    home_is_prepared,
    native_binary,
    prepare_home,
    toml_value,
)
from unified._adapters.codex._options import codex_options
from unified._adapters.codex._pool import CodexPool
from unified._adapters.codex._run import collaboration_mode
from unified._execute import EventStream
from unified._internal.stream import StreamGuard
from unified.errors import BackendUnavailable, ConfigurationError
from unified.events import ErrorEvent, Result, SessionStarted, TextDelta, ToolUse, UnifiedEvent, WarningEvent
from unified.testing import FakeAgentProcess
from unified.tools import _runtime as tools_runtime
from unified.types import ExecuteParams, HttpMcpServer, StdioMcpServer

pytestmark = pytest.mark.anyio

THREAD = "01a23294-50ab-7e70-b9b8-89066707762a"
TURN = "01a23294-50c7-7173-a6d6-58715a56c0e8"


def launch(tmp_path: Path, env: dict[str, str], **fields: Any) -> Launch:
    options = fields.pop("options", {})
    params = ExecuteParams(prompt="x", backend="codex", cwd=tmp_path, **fields)
    return Launch.of(params, codex_options({"start_process": lambda *a: None, **options}), parent=env)


def test_a_key_and_a_base_url_become_our_own_provider(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin", "HOME": str(tmp_path), "OPENAI_API_KEY": "sk-abc", "OPENAI_BASE_URL": "http://h:1/v1/"}
    started = launch(tmp_path, env, model="gpt-5.5")
    argv = started.argv()
    assert argv[:3] == ["codex", "app-server", "--strict-config"]
    overrides = dict(arg.split("=", 1) for arg in argv[4::2])
    assert overrides["model_provider"] == '"unified"'
    assert '"base_url" = "http://h:1/v1"' in overrides["model_providers.unified"]
    assert '"requires_openai_auth" = true' in overrides["model_providers.unified"]
    assert "env_key" not in overrides["model_providers.unified"]
    assert overrides["cli_auth_credentials_store"] == '"ephemeral"'
    assert '"request_max_retries" = 0' in overrides["model_providers.unified"]
    assert overrides["model"] == '"gpt-5.5"'
    assert started.auth == "base_url"
    assert "sk-abc" not in " ".join(argv), "the key travels by account/login/start only"
    assert "OPENAI_API_KEY" not in started.env
    assert started.api_key == "sk-abc"
    assert "sk-abc" not in repr(started)


def test_the_environment_is_an_allowlist(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "HTTPS_PROXY": "http://proxy:3128",
        "OPENAI_API_KEY": "sk-abc",
        "GEMINI_API_KEY": "gemini-secret",
        "UNIFIED_SESSION_STORE_URL": "postgresql://user:pw@db/x",
        "AWS_SECRET_ACCESS_KEY": "aws",
        "MY_PROJECT_SETTING": "1",
    }
    child = launch(tmp_path, env, options={"env": {"GIVEN": "yes"}}).env
    expected = {"PATH", "HOME", "LANG", "HTTPS_PROXY", "GIVEN", "CODEX_HOME", "GIT_CONFIG_PARAMETERS"}
    assert set(child) == expected  # the key goes by login
    assert ENV_POLICY.admits("SSL_CERT_FILE")
    assert not ENV_POLICY.admits("UNIFIED_SESSION_STORE_URL")


def test_the_home_is_ours_never_the_users(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "OPENAI_API_KEY": "k", "UNIFIED_DATA_DIR": str(tmp_path / "data")}
    assert codex_home(codex_options({}), env) == (tmp_path / "data" / "codex-home").resolve()
    with pytest.raises(ConfigurationError, match="your own Codex home"):
        launch(tmp_path, env, options={"codex_home": tmp_path / ".codex"})
    prepare_home(tmp_path / "h")
    assert (tmp_path / "h" / "config.toml").read_text() == CONFIG_TOML
    assert 'sandbox_mode = "danger-full-access"' in CONFIG_TOML
    assert '"*KEY*"' in CONFIG_TOML


def test_no_credentials_and_a_base_url_without_a_key_are_told_apart(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match="no credentials"):
        launch(tmp_path, {"HOME": str(tmp_path)})
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        launch(tmp_path, {"HOME": str(tmp_path), "OPENAI_BASE_URL": "http://h/v1"})


def test_a_base_url_option_without_a_key_names_the_option_not_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="the base_url option is set but no key is") as raised:
        launch(tmp_path, {"HOME": str(tmp_path)}, options={"base_url": "http://h/v1"})
    assert raised.value.hint is not None
    assert "unset the base_url option" in raised.value.hint


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("not a url", "it has no http:// or https://"),
        ("ftp://h/v1", "its scheme is 'ftp'"),
        ("http://127.0.0.1:99999/v1", "its port is not a number"),
        ("http://[::1/v1", "is not closed"),
    ],
)
@pytest.mark.parametrize("source", ["option", "environment"])
def test_a_base_url_codex_cannot_send_to_is_refused_before_codex_starts(
    tmp_path: Path, url: str, why: str, source: str
) -> None:
    """Codex took such a URL, started, and failed the turn as `stream_interrupted` ("builder error"), which
    said neither what was wrong nor where it came from."""
    env = {"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-abc"}
    options = {"base_url": url} if source == "option" else {}
    if source == "environment":
        env["OPENAI_BASE_URL"] = url
    named = "the base_url option" if source == "option" else "OPENAI_BASE_URL"
    with pytest.raises(ConfigurationError, match=f"the base URL in {named} is not one") as raised:
        launch(tmp_path, env, options=options)
    assert why in str(raised.value)
    assert raised.value.hint is not None
    assert f"set {named} to an http:// or https:// URL" in raised.value.hint


def test_mcp_servers_are_the_thread_s_and_always_ask(tmp_path: Path) -> None:
    """The tables go to each thread (`thread/start`'s `config`) with their secrets as values: neither the
    command line nor the environment (which the model's commands read) holds them."""
    stdio = StdioMcpServer(name="echo", command="python3", args=("server.py",), env={"ECHO_TOKEN": "s3cret-stdio"})
    remote = HttpMcpServer(
        name="remote", url="https://mcp.example/mcp", headers={"Authorization": "Bearer s3cret-http"}
    )
    started = launch(tmp_path, {"HOME": str(tmp_path), "OPENAI_API_KEY": "k"}, mcp_servers=(stdio, remote))
    from unified._adapters.codex._launch import RESOURCES_RELAY

    assert started.mcp_servers == {
        "echo": {  # behind the relay that takes its resources away (default mode: Codex reads them unasked)
            "command": sys.executable,
            "args": ["-I", "-S", str(RESOURCES_RELAY), "--", "python3", "server.py"],
            "env": {"ECHO_TOKEN": "s3cret-stdio"},
            "startup_timeout_sec": 30,
            "default_tools_approval_mode": "prompt",
        },
        "remote": {  # behind the relay too, its URL and headers in the relay's environment alone
            "command": sys.executable,
            "args": ["-I", "-S", str(RESOURCES_RELAY), "--http"],
            "env": {
                "UNIFIED_MCP_RELAY_URL": "https://mcp.example/mcp",
                "UNIFIED_MCP_RELAY_HEADERS": '{"Authorization": "Bearer s3cret-http"}',
            },
            "startup_timeout_sec": 30,
            "default_tools_approval_mode": "prompt",
        },
    }
    argv = " ".join(started.argv())
    assert "mcp_servers" not in argv
    assert "s3cret" not in argv, "no value that may be secret on the command line"
    assert not any("s3cret" in value for value in started.env.values()), "nor in the environment"
    assert "s3cret" not in repr(started)


def test_a_projects_mcp_servers_are_turned_off_and_one_named_like_the_runs_refused(tmp_path: Path) -> None:
    """Codex starts a repository's `[mcp_servers.*]` (e2e: test_codex_project_config.py): each is turned off in the
    thread's config, from the cwd's `.codex/config.toml` and those above it up to the project's root (never the
    user's home's); a name the run's servers use too is refused (Codex would merge the file's table, its `env` say,
    into the caller's server)."""
    home = tmp_path / "home"
    cwd = home / "outer" / "repo" / "sub"
    cwd.mkdir(parents=True)
    (home / "outer" / "repo" / ".git").mkdir()
    folders = {cwd: "near", cwd.parent: "far", home / "outer": "beyond_the_root", home: "users_own"}
    for folder, name in folders.items():
        (folder / ".codex").mkdir()
        (folder / ".codex" / "config.toml").write_text(f'[mcp_servers.{name}]\nurl = "http://127.0.0.1:9/mcp"\n')
    env = {"HOME": str(home), "OPENAI_API_KEY": "k"}
    started = launch(cwd, env)
    off = {"enabled": False, "command": "true"}
    assert started.project_servers_off == {"near": off, "far": off}
    mine = StdioMcpServer(name="far", command="python3")
    with pytest.raises(ConfigurationError, match=r"defines MCP server 'far', which the run's mcp_servers name too"):
        launch(cwd, env, mcp_servers=(mine,))
    (cwd / ".codex" / "config.toml").write_text("#" * (1 << 20) + "\n[mcp_servers.hidden]\ncommand = 'sh'\n")
    with pytest.raises(ConfigurationError, match="is over 1 MiB"):
        launch(cwd, env)


def test_toml_values() -> None:
    assert toml_value({"a": [1, True, "x\n"]}) == '{"a" = [1, true, "x\\n"]}'


def test_the_npm_launcher_leads_to_the_native_binary(tmp_path: Path) -> None:
    package = tmp_path / "node_modules" / "@openai" / "codex"
    (package / "bin").mkdir(parents=True)
    launcher = package / "bin" / "codex.js"
    launcher.write_text("#!/usr/bin/env node\n")
    native = tmp_path / "node_modules" / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl" / "bin"
    native.mkdir(parents=True)
    (native / "codex").write_bytes(b"\x7fELF")
    import platform
    import sys

    if (sys.platform, platform.machine()) != ("linux", "x86_64"):
        pytest.skip("the fixture is laid out for linux x86_64")
    assert native_binary(launcher) == (native / "codex").resolve()
    assert native_binary(native / "codex") == (native / "codex").resolve()
    (native / "codex").unlink()
    with pytest.raises(BackendUnavailable, match="platform package"):
        native_binary(launcher)


def test_the_native_binary_is_looked_for_again_once_a_file_changes(tmp_path: Path) -> None:
    """`native_binary` remembers its answer only while the launcher and the binary are the very files
    it found: a reinstall (a new platform package), or a launcher replaced by a native binary, is seen."""
    import platform
    import sys

    if (sys.platform, platform.machine()) != ("linux", "x86_64"):
        pytest.skip("the fixture is laid out for linux x86_64")
    scope = tmp_path / "node_modules" / "@openai"
    (scope / "codex" / "bin").mkdir(parents=True)
    launcher = scope / "codex" / "bin" / "codex.js"
    launcher.write_text("#!/usr/bin/env node\n")
    link = tmp_path / "codex"
    link.symlink_to(launcher)

    def install(triple: str) -> Path:
        native = scope / "codex-linux-x64" / "vendor" / triple / "bin"
        native.mkdir(parents=True)
        (native / "codex").write_bytes(b"\x7fELF")
        return (native / "codex").resolve()

    first = install("b-unknown-linux-musl")
    assert native_binary(link) == first
    assert native_binary(link) == first  # remembered, and still right
    first.unlink()  # npm replaced the platform package: another vendor directory
    second = install("a-unknown-linux-musl")
    assert native_binary(link) == second
    standalone = tmp_path / "standalone-codex"
    standalone.write_bytes(b"\x7fELF")
    link.unlink()
    link.symlink_to(standalone)  # the link now leads to a native binary of its own
    assert native_binary(link) == standalone.resolve()


# --- the run loop on a stand-in app-server --------------------------------------------------------------


def app_server(
    after_turn: Callable[[FakeAgentProcess], Iterable[str | bytes]],
    *,
    resume_error: str | None = None,
    closing: int = 0,
    kind: type[FakeAgentProcess] = FakeAgentProcess,
) -> Any:
    """A stand-in `codex app-server`: answers the handshake, opens the thread, starts the turn, then
    writes what `after_turn` gives. `thread/resume` is refused (`resume_error`), or answered `closing`
    times that the thread is still closing, then opened."""

    def make(process: FakeAgentProcess) -> Callable[[str], list[str | bytes]]:
        still_closing = [closing]

        def answer(line: str) -> list[str | bytes]:
            message = json.loads(line)
            method, mid = message.get("method"), message.get("id")
            if method == "initialize":
                return [json.dumps({"id": mid, "result": {"userAgent": "stand-in"}})]
            if method == "thread/start":
                return [json.dumps({"id": mid, "result": {"thread": {"id": THREAD, "cwd": "/w"}, "model": "gpt-5.5"}})]
            if method == "thread/resume" and still_closing[0] > 0:
                still_closing[0] -= 1
                closed = f"thread {THREAD} is closing; retry thread/resume after the thread is closed"
                return [json.dumps({"id": mid, "error": {"code": -32600, "message": closed}})]
            if method == "thread/resume" and closing:
                return [json.dumps({"id": mid, "result": {"thread": {"id": THREAD, "cwd": "/w"}, "model": "gpt-5.5"}})]
            if method == "thread/resume":
                return [json.dumps({"id": mid, "error": {"code": -32600, "message": resume_error or "no"}})]
            if method == "turn/start":
                return [json.dumps({"id": mid, "result": {"turn": {"id": TURN}}}), *after_turn(process)]
            if mid is not None and method is not None:
                return [json.dumps({"id": mid, "result": {}})]
            return []

        return answer

    return kind.starter(make)


def notify(method: str, **params: Any) -> str:
    return json.dumps({"method": method, "params": {"threadId": THREAD, "turnId": TURN, **params}})


def finished(text: str = "done") -> list[str]:
    return [
        notify("item/agentMessage/delta", itemId="m", delta=text),
        notify("item/completed", item={"type": "agentMessage", "id": "m", "text": text}),
        notify("turn/completed", turn={"id": TURN, "status": "completed"}),
    ]


async def run(tmp_path: Path, starter: Any, options: dict[str, Any] | None = None, **fields: Any) -> list[UnifiedEvent]:
    params = ExecuteParams(
        prompt="hello",
        backend="codex",
        cwd=tmp_path,
        backend_options={"start_process": starter, "api_key": "k", "codex_home": tmp_path / "home", **(options or {})},
        **fields,
    )
    async with EventStream(params) as stream:
        return [event async for event in stream]


async def test_a_clean_turn(tmp_path: Path) -> None:
    events = await run(tmp_path, app_server(lambda process: finished("hi there")))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hi there"]
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"
    assert final.usage.estimated, "Codex reported no usage: the guard estimates it, flagged"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_process_watch_starts_at_its_first_look_not_with_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On asyncio the ticker that remembers the app-server's processes is started by a timer at its first look: a
    run over before starts no task at all, and a longer one is looked at from `WATCH_S` on, every `WATCH_S`."""
    from unified._adapters.codex import _run
    from unified._binary.loops import every as real_every

    tickers: list[object] = []
    looks: list[float] = []

    def every(*args: Any) -> Any:
        tickers.append(args)
        return real_every(*args)

    async def remember(self: Any) -> None:
        looks.append(anyio.current_time())

    monkeypatch.setattr(_run, "every", every)
    monkeypatch.setattr(_run.CodexRun, "_remember", remember)
    await run(tmp_path, app_server(lambda process: finished()))
    assert (tickers, looks) == ([], []), "a run shorter than WATCH_S started the ticker"

    monkeypatch.setattr(_run, "WATCH_S", 0.02)
    processes: list[FakeAgentProcess] = []

    def held_open(process: FakeAgentProcess) -> list[str]:
        processes.append(process)
        return []  # the turn goes on until `finish` ends it

    async def finish() -> None:
        await anyio.sleep(0.2)
        processes[0].emit(*finished())

    started = anyio.current_time()
    async with anyio.create_task_group() as tg:
        tg.start_soon(finish)
        events = await run(tmp_path, app_server(held_open))
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"
    assert len(looks) >= 3, looks
    assert looks[0] - started >= 0.02


def test_a_login_refreshed_in_a_warm_process_goes_back_after_each_run(tmp_path: Path) -> None:
    """The login is copied in once, when the process starts; what `copy_back` returns is what the next run of that
    process compares with, so a refresh in its second run goes back too, and a login the user changed meanwhile
    is never overwritten."""
    user, home = tmp_path / "user", tmp_path / "codex-home"
    user.mkdir()
    home.mkdir()
    (user / "auth.json").write_bytes(b"v1")
    login = ChatgptLogin(user / "auth.json")
    baseline = login.copy_in(home)
    assert login.copy_back(home, baseline) == b"v1"  # nothing refreshed
    (home / "auth.json").write_bytes(b"v2")  # Codex refreshed the tokens in the first run
    baseline = login.copy_back(home, baseline)
    assert ((user / "auth.json").read_bytes(), baseline) == (b"v2", b"v2")
    (home / "auth.json").write_bytes(b"v3")  # and again in the second
    baseline = login.copy_back(home, baseline)
    assert ((user / "auth.json").read_bytes(), baseline) == (b"v3", b"v3")
    (user / "auth.json").write_bytes(b"theirs")  # the user logged in again meanwhile
    (home / "auth.json").write_bytes(b"v4")
    assert login.copy_back(home, baseline) == b"v3"
    assert (user / "auth.json").read_bytes() == b"theirs"


def test_a_prepared_home_is_known_by_its_config_until_that_file_changes(tmp_path: Path) -> None:
    home = tmp_path / "h"
    config = home / "config.toml"
    assert not home_is_prepared(home)
    prepare_home(home)
    assert home_is_prepared(home)
    with config.open("a") as edit:  # an edit in place
        edit.write('model = "theirs"\n')
    assert not home_is_prepared(home)
    prepare_home(home)
    assert config.read_text() == CONFIG_TOML
    assert home_is_prepared(home)
    config.unlink()
    assert not home_is_prepared(home)
    other = tmp_path / "other"  # written by another process: found current by a read
    other.mkdir()
    (other / "config.toml").write_text(CONFIG_TOML)
    prepare_home(other)
    assert home_is_prepared(other)


async def test_each_run_restores_a_config_changed_since_the_last(tmp_path: Path) -> None:
    config = tmp_path / "home" / "config.toml"
    await run(tmp_path, app_server(lambda process: finished()))
    assert home_is_prepared(tmp_path / "home")
    config.write_text('sandbox_mode = "read-only"\n')
    events = await run(tmp_path, app_server(lambda process: finished()))
    assert isinstance(events[-1], Result)
    assert config.read_text() == CONFIG_TOML
    config.unlink()
    await run(tmp_path, app_server(lambda process: finished()))
    assert config.read_text() == CONFIG_TOML


class EndsInput(FakeAgentProcess):
    """A stand-in that notes when its stdin is closed and when it is closed."""

    steps: ClassVar[list[str]] = []

    async def end_input(self) -> None:
        self.steps.append(f"end_input after {len(self.received)} lines")

    async def wait(self, grace: float) -> int | None:
        self.steps.append("wait")
        return await super().wait(grace)

    async def close(self) -> None:
        self.steps.append("close")
        await super().close()


async def test_stdin_is_closed_once_the_turn_is_over_and_the_exit_waited_for_before_close(tmp_path: Path) -> None:
    """app-server then shuts down by itself while the run sends its last events; the run waits for that exit (so
    `close` has nothing to signal nor any descendant to look up) and `close` still ends it for sure."""
    EndsInput.steps = []
    events = await run(tmp_path, app_server(lambda process: finished(), kind=EndsInput), {"pool_size": 0})
    assert isinstance(events[-1], Result)
    # initialize, initialized, account/login/start, thread/start, turn/start
    assert EndsInput.steps == ["end_input after 5 lines", "wait", "close"]


def threads_in_turn(process: FakeAgentProcess, *, command: bool = False) -> Callable[[str], list[str | bytes]]:
    """A stand-in app-server that opens a new thread (`t1`, `t2`, ...) for each `thread/start` and finishes each
    turn at once (after running `ls`, with `command`); every request it does not know is answered `{}`."""
    opened: list[str] = []

    def answer(line: str) -> list[str | bytes]:
        message = json.loads(line)
        method, mid = message.get("method"), message.get("id")
        if method == "thread/start":
            opened.append(f"t{len(opened) + 1}")
            return [json.dumps({"id": mid, "result": {"thread": {"id": opened[-1]}}})]
        if method == "turn/start":
            thread = opened[-1]
            late = [json.dumps({"method": "item/agentMessage/delta", "params": {"threadId": "t1", "delta": "late"}})]
            item = {"type": "commandExecution", "id": f"c-{thread}", "command": "ls", "status": "completed"}
            ran = [
                json.dumps({"method": f"item/{stage}", "params": {"threadId": thread, "item": item}})
                for stage in ("started", "completed")
            ]
            return [
                json.dumps({"id": mid, "result": {"turn": {"id": TURN}}}),
                *(late if len(opened) > 1 else []),  # from the first run's thread, read by the second run
                *(ran if command else []),
                json.dumps({"method": "item/agentMessage/delta", "params": {"threadId": thread, "delta": thread}}),
                json.dumps(
                    {
                        "method": "turn/completed",
                        "params": {"threadId": thread, "turn": {"id": TURN, "status": "completed"}},
                    }
                ),
            ]
        if method == "thread/unsubscribe":  # Codex unloads it at once (thread_unload_delay_secs = 0)
            closed = {"method": "thread/closed", "params": {"threadId": message["params"]["threadId"]}}
            return [json.dumps({"id": mid, "result": {"status": "unsubscribed"}}), json.dumps(closed)]
        return [json.dumps({"id": mid, "result": {}})] if mid is not None else []

    return answer


async def test_a_kept_process_serves_the_next_run_warm_and_closes_only_with_its_pool(tmp_path: Path) -> None:
    """A process the pool keeps is not told to exit after the turn: the run ends what it started (its thread's
    background terminals, its subscription) and the next run opens its thread on it without `initialize`; a late
    message of the first run's thread never reaches the second."""
    EndsInput.steps = []
    pool = CodexPool(size=1)
    starter = EndsInput.starter(threads_in_turn)
    try:
        texts = []
        for _ in range(2):
            events = await run(tmp_path, starter, {"pool": pool})
            assert isinstance(events[-1], Result)
            assert events[-1].status == "success"
            texts.append([e.text for e in events if isinstance(e, TextDelta)])
        assert texts == [["t1"], ["t2"]]
        assert pool.spawned == 1
        assert EndsInput.steps == []
        (entry,) = pool._entries
        process = entry.resource.process
        assert isinstance(process, EndsInput)
        methods = [str(json.loads(line).get("method")) for line in process.received]
        end = ["thread/unsubscribe"]  # a text-only run left no background terminal to clean
        assert methods == [
            "initialize",
            "initialized",
            "account/login/start",  # once per process: a warm one stays logged in
            "thread/start",
            "turn/start",
            *end,
            "thread/start",
            "turn/start",
            *end,
        ]
    finally:
        await pool.aclose()
    assert EndsInput.steps == ["close"]


async def test_a_run_that_called_a_tool_on_a_kept_process_cleans_its_background_terminals(tmp_path: Path) -> None:
    """A command the model ran may leave a background terminal on the thread: the run cleans them before it
    unsubscribes (a text-only run, above, has none to clean and sends only the unsubscribe)."""
    EndsInput.steps = []
    pool = CodexPool(size=1)
    try:
        events = await run(tmp_path, EndsInput.starter(partial(threads_in_turn, command=True)), {"pool": pool})
        assert [e.name for e in events if isinstance(e, ToolUse)] == ["exec_command"]
        assert isinstance(events[-1], Result)
        (entry,) = pool._entries
        process = entry.resource.process
        assert isinstance(process, EndsInput)
        methods = [str(json.loads(line).get("method")) for line in process.received]
        assert methods[-2:] == ["thread/backgroundTerminals/clean", "thread/unsubscribe"]
    finally:
        await pool.aclose()


class DiesUnseen(FakeAgentProcess):
    """A stand-in whose exit the pool cannot see before it is used (a multi-threaded process is a zombie for a
    moment before it can be reaped): it says it runs until a line sent to it fails."""

    made: ClassVar[list[DiesUnseen]] = []

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.made.append(self)

    @property
    def returncode(self) -> int | None:
        return None


async def test_a_warm_process_found_dead_before_the_thread_opens_is_replaced(tmp_path: Path) -> None:
    DiesUnseen.made = []
    pool = CodexPool(size=1)
    starter = DiesUnseen.starter(threads_in_turn)
    try:
        await run(tmp_path, starter, {"pool": pool})
        DiesUnseen.made[0].exit(137)  # while idle in the pool
        events = await run(tmp_path, starter, {"pool": pool})
        assert not [e for e in events if isinstance(e, ErrorEvent)]
        assert [e.text for e in events if isinstance(e, TextDelta)] == ["t1"]  # the new process's first thread
        assert (pool.spawned, len(DiesUnseen.made)) == (2, 2)
    finally:
        await pool.aclose()


async def test_a_run_that_fails_before_its_turn_ends_closes_at_once(tmp_path: Path) -> None:
    EndsInput.steps = []
    events = await run(tmp_path, EndsInput.starter(refusing_the_turn))
    assert isinstance(events[-1], Result)
    assert events[-1].status == "error"
    assert EndsInput.steps == ["close"]


class NotesSent(FakeAgentProcess):
    """A stand-in that notes the method of every line it is sent."""

    sent: ClassVar[list[str]] = []

    async def send(self, line: str) -> None:
        self.sent.append(str(json.loads(line).get("method")))
        await super().send(line)


async def test_the_session_is_announced_once_the_turn_is_requested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`turn/start` goes out as soon as the thread is open; the consumer's handling of `session_started` never
    holds it back. The event still comes first."""
    NotesSent.sent = []
    sent_at_announce: list[list[str]] = []
    accept = StreamGuard.accept

    async def noting(guard: StreamGuard, event: UnifiedEvent) -> None:
        if isinstance(event, SessionStarted):
            sent_at_announce.append(list(NotesSent.sent))
        await accept(guard, event)

    monkeypatch.setattr(StreamGuard, "accept", noting)
    events = await run(tmp_path, app_server(lambda process: finished(), kind=NotesSent))
    assert sent_at_announce == [["initialize", "initialized", "account/login/start", "thread/start", "turn/start"]]
    assert isinstance(events[0], SessionStarted)
    assert isinstance(events[-1], Result)


def refusing_the_turn(process: FakeAgentProcess) -> Callable[[str], list[str | bytes]]:
    """A stand-in app-server that opens the thread and refuses the turn."""

    def answer(line: str) -> list[str | bytes]:
        message = json.loads(line)
        method, mid = message.get("method"), message.get("id")
        if method == "thread/start":
            return [json.dumps({"id": mid, "result": {"thread": {"id": THREAD}}})]
        if method == "turn/start":
            return [json.dumps({"id": mid, "error": {"code": -32600, "message": "no turn for you"}})]
        return [json.dumps({"id": mid, "result": {}})] if mid is not None else []

    return answer


async def test_a_turn_codex_refuses_still_announces_the_session_first(tmp_path: Path) -> None:
    events = await run(tmp_path, FakeAgentProcess.starter(refusing_the_turn))
    assert isinstance(events[0], SessionStarted)
    assert any(isinstance(e, ErrorEvent) and "no turn for you" in e.message for e in events)
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"
    assert "no turn for you" in (final.error or "")


async def test_malformed_and_huge_lines_are_warnings_not_crashes(tmp_path: Path) -> None:
    huge = b"{" + b"x" * (9 * 1024 * 1024) + b"}"
    events = await run(tmp_path, app_server(lambda process: ["not json", b"\xff\xfe", huge, "[1, 2]", *finished()]))
    warnings = [e for e in events if isinstance(e, WarningEvent) and e.code == "malformed_line"]
    assert len(warnings) == 4
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"


async def test_notifications_with_fields_of_the_wrong_type_are_read_past(tmp_path: Path) -> None:
    """An item whose `type` is a list, a spawn whose receivers are a number, a summary index that is text (the
    type-confusion fuzz, tests/security): once a TypeError inside the translator (`internal_error`), now nothing."""
    odd = [
        notify("item/started", item={"type": ["commandExecution"], "id": "c1"}),
        notify("item/completed", item={"type": {"k": "v"}, "id": "c1"}),
        notify("item/reasoning/summaryPartAdded", itemId="r", summaryIndex="x"),
        notify("item/completed", item={"type": "reasoning", "id": "r", "summary": 3}),
        notify(
            "item/completed",
            item={"type": "collabAgentToolCall", "id": "s", "tool": "spawnAgent", "receiverThreadIds": 7},
        ),
    ]
    events = await run(tmp_path, app_server(lambda process: [*odd, *finished("fine")]))
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"
    assert final.final_text == "fine"


async def test_a_crash_mid_turn_is_a_typed_error(tmp_path: Path) -> None:
    def crash(process: FakeAgentProcess) -> list[str]:
        process.write_stderr("thread 'main' panicked at codex-rs/core: boom\n")
        process.exit(101)
        return [notify("item/agentMessage/delta", itemId="m", delta="half")]

    events = await run(tmp_path, app_server(crash))
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "backend_error"
    assert "exit status 101" in error.message
    assert "panicked" in error.message


class Interruptible(FakeAgentProcess):
    """A stand-in that ends the turn `interrupted` when asked to (`turn/interrupt`), and counts the asks."""

    interrupted: ClassVar[anyio.Event]
    interrupts: ClassVar[int] = 0

    async def send(self, line: str) -> None:
        await super().send(line)
        if json.loads(line).get("method") == "turn/interrupt":
            Interruptible.interrupts += 1
            Interruptible.interrupted.set()
            self.emit(notify("turn/completed", turn={"id": TURN, "status": "interrupted"}))


async def test_a_call_past_the_cap_read_while_a_check_runs_interrupts_the_turn_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex runs a `view_image` unasked and asks the model again within milliseconds: the call of request
    `max_turns` may come while the run still checks the previous one (`read_outside`, a thread hop). Before, nothing
    was read during the check and the interrupt came after it (up to 5 requests more for `max_turns=2` with 4 runs
    at once on 2 cores); here the check ends only once the interrupt came, which the old code never sent (it hung
    until the hang guard)."""
    Interruptible.interrupted, Interruptible.interrupts = anyio.Event(), 0
    checked: list[bool] = []

    async def slow_check(workspace: object, paths: object, *, trees: bool = False) -> str | None:
        with anyio.move_on_after(HANG_GUARD_S):
            await Interruptible.interrupted.wait()
        checked.append(Interruptible.interrupted.is_set())
        return None

    monkeypatch.setattr(tools_runtime, "read_outside", slow_check)

    def viewed(call: str, tokens: int) -> list[str]:
        item = {"type": "imageView", "id": call, "path": "dot.png"}  # in the stand-in's cwd
        total = {"inputTokens": tokens, "outputTokens": 1, "totalTokens": tokens + 1}
        usage = {"total": total, "last": {"inputTokens": 5, "outputTokens": 1, "totalTokens": 6}}
        return [
            notify("item/started", item=item),
            notify("item/completed", item=item),
            notify("thread/tokenUsage/updated", tokenUsage=usage),
        ]

    starter = app_server(lambda process: [*viewed("call_1", 5), *viewed("call_2", 10)], kind=Interruptible)
    events = await run(tmp_path, starter, {"pool_size": 0}, max_turns=2)
    assert checked == [True], "the check of request 1's call ended before the turn was interrupted"
    assert Interruptible.interrupts == 1, "once: the loop does not interrupt again at the call read ahead"
    assert [e.tool_use_id for e in events if isinstance(e, ToolUse)] == ["call_1", "call_2"]
    final = events[-1]
    assert isinstance(final, Result)
    assert (final.status, final.turns) == ("max_turns", 2), final.error


async def test_a_request_nobody_handles_is_answered_so_codex_never_waits(tmp_path: Path) -> None:
    answers: list[dict[str, Any]] = []

    def ask_then_finish(process: FakeAgentProcess) -> list[str]:
        original = process.handler

        def record(line: str) -> Any:
            message = json.loads(line)
            if message.get("id") == 77:
                answers.append(message)
            return original(line) if original else None

        process.handler = record
        return [json.dumps({"id": 77, "method": "account/chatgptAuthTokens/refresh", "params": {}}), *finished()]

    events = await run(tmp_path, app_server(ask_then_finish))
    assert answers
    assert answers[0]["error"]["code"] == -32601
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"


async def test_a_thread_still_closing_is_resumed_once_codex_has_closed_it(tmp_path: Path) -> None:
    """The process that ran a thread unloads it after the run (after a failed turn, on a loaded machine: seen once
    in the e2e retry tests); resumed meanwhile, Codex answers "thread ... is closing; retry thread/resume after the
    thread is closed", and the run asks again until it opens."""
    from datetime import UTC, datetime

    from unified._adapters.codex._conversation import rollout_from_conversation
    from unified._adapters.codex._rollouts import Rollouts
    from unified.conversations import Conversation, TextPart, UserTurn

    text = rollout_from_conversation(
        Conversation(turns=[UserTurn(parts=[TextPart(text="q")])]), thread_id=THREAD, cwd="/w", provider="unified"
    )
    Rollouts(tmp_path / "home").write(THREAD, datetime.now(UTC), text)
    starter = app_server(lambda process: finished("resumed"), closing=3)
    events = await run(tmp_path, starter, resume=THREAD[-8:])
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["resumed"]


async def test_a_thread_codex_does_not_have_is_session_not_found(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from unified._adapters.codex._conversation import rollout_from_conversation
    from unified._adapters.codex._rollouts import Rollouts
    from unified.conversations import Conversation, TextPart, UserTurn

    # our listing knows it (a file), Codex refuses it: the error is session_not_found, never a new thread
    text = rollout_from_conversation(
        Conversation(turns=[UserTurn(parts=[TextPart(text="q")])]), thread_id=THREAD, cwd="/w", provider="unified"
    )
    Rollouts(tmp_path / "home").write(THREAD, datetime.now(UTC), text)
    starter = app_server(lambda process: finished(), resume_error=f"no rollout found for thread id {THREAD}")
    events = await run(tmp_path, starter, resume=THREAD[-8:])
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "session_not_found"


@pytest.mark.parametrize(
    ("approval_mode", "thread_mode", "sent"),
    [
        ("plan", None, "plan"),  # a new thread (thread/start says no mode: the default)
        ("plan", "default", "plan"),
        ("plan", "plan", None),  # already in plan mode: left as it is
        ("default", None, None),  # the common case: nothing sent
        ("auto_edit", "default", None),
        ("default", "plan", "default"),  # a plan thread resumed by a run that is not one: put back
        ("yolo", "plan", "default"),
    ],
)
def test_the_collaboration_mode_follows_the_approval_mode(
    tmp_path: Path, approval_mode: str, thread_mode: str | None, sent: str | None
) -> None:
    params = ExecuteParams(prompt="hi", backend="codex", cwd=tmp_path, approval_mode=approval_mode)
    answer: dict[str, object] = {"model": "gpt-5.5", "reasoningEffort": "high", "thread": {"id": "t"}}
    if thread_mode is not None:
        answer["collaborationMode"] = {"mode": thread_mode, "settings": {"model": "gpt-5.5"}}
    mode = collaboration_mode(params, answer)
    if sent is None:
        assert mode is None
    else:
        assert mode == {"mode": sent, "settings": {"model": "gpt-5.5", "reasoning_effort": "high"}}


def _thread_config(tmp_path: Path, *, subagents: bool = True, **fields: Any) -> dict[str, Any]:
    from unified._adapters.codex._thread_config import thread_config

    env = {"PATH": "/usr/bin", "HOME": str(tmp_path), "OPENAI_API_KEY": "sk-abc"}
    options = fields.pop("options", {})
    params = ExecuteParams(prompt="x", backend="codex", cwd=tmp_path, **fields)
    parsed = codex_options({"start_process": lambda *a: None, **options})
    return thread_config(params, parsed, Launch.of(params, parsed, parent=env), subagents=subagents)


def test_a_thread_reads_no_repository_instructions_unless_asked(tmp_path: Path) -> None:
    """A repository's AGENTS.md and skills reached the model before (no key was set)."""
    assert _thread_config(tmp_path, approval_mode="yolo") == {
        "project_doc_max_bytes": 0,
        "skills": {"include_instructions": False},
    }
    assert _thread_config(tmp_path, options={"project_instructions": True}, approval_mode="yolo") == {}


@pytest.mark.parametrize(
    ("excluded", "switched"),
    [
        (("view_image",), {"features": {"view_image": False}}),
        (("run_shell_command",), {"features": {"shell_tool": False}}),
        (("write_stdin",), {"features": {"shell_tool": False}}),
        (("update_goal",), {"features": {"goals": False}}),
        (("ask_user",), {"tools": {"experimental_request_user_input": {"enabled": False}}}),
        (("spawn_agent",), {"features": {"multi_agent": False}}),
        (("write_file", "read_file"), {}),  # no key: apply_patch stays, refused per call; Codex has no read_file
        (
            ("*",),
            {
                "features": {"shell_tool": False, "view_image": False, "goals": False, "multi_agent": False},
                "tools": {"experimental_request_user_input": {"enabled": False}},
            },
        ),
    ],
)
def test_each_excluded_tool_is_switched_off_in_the_threads_config(
    tmp_path: Path, excluded: tuple[str, ...], switched: dict[str, Any]
) -> None:
    config = _thread_config(
        tmp_path, excluded_tools=excluded, options={"project_instructions": True}, approval_mode="yolo"
    )
    assert config == switched


def test_a_policy_refusing_subagents_and_an_excluded_shell_share_the_features_table(tmp_path: Path) -> None:
    config = _thread_config(tmp_path, subagents=False, excluded_tools=("exec_command",))
    assert config["features"] == {"shell_tool": False, "unified_exec_tty": False, "multi_agent": False}


def _servers() -> tuple[StdioMcpServer, ...]:
    return tuple(StdioMcpServer(name=name, command="true") for name in ("res", "res__x"))


@pytest.mark.parametrize(
    ("excluded", "disabled"),
    [
        (("mcp__res__peek",), {"res": ["peek"]}),
        (("mcp__res__x__poke", "mcp__res__peek"), {"res__x": ["poke"], "res": ["x__poke", "peek"]}),
        (("mcp__res__pe*", "mcp__*", "mcp__other__peek", "mcp__res__"), {}),  # patterns, another server's, no tool
    ],
)
def test_an_mcp_tool_named_exactly_is_its_servers_disabled_tools(
    tmp_path: Path, excluded: tuple[str, ...], disabled: dict[str, list[str]]
) -> None:
    """Before: no server's table had `disabled_tools` (the tool was offered, refused per call)."""
    config = _thread_config(tmp_path, excluded_tools=excluded, mcp_servers=_servers())
    tables = config["mcp_servers"]
    assert {name: table["disabled_tools"] for name, table in tables.items() if "disabled_tools" in table} == disabled
    untouched = _thread_config(tmp_path, mcp_servers=_servers())["mcp_servers"]
    assert all("disabled_tools" not in table for table in untouched.values())  # the launch's tables stay as they were


def test_only_mcp_patterns_are_warned_about_as_refused_per_call(tmp_path: Path) -> None:
    from unified._adapters.codex._thread_config import refused_per_call

    params = ExecuteParams(
        prompt="x", backend="codex", cwd=tmp_path, mcp_servers=_servers(), excluded_tools=("mcp__res__peek", "mcp__*")
    )
    assert refused_per_call(params) == ["mcp__*"]


def test_included_directories_are_the_threads_writable_roots(tmp_path: Path) -> None:
    """Before: no key (a warning said the folders were not added)."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    config = _thread_config(tmp_path, include_directories=(tmp_path / "sub", tmp_path / "link"))
    expected = [str((tmp_path / "sub").resolve()), str((tmp_path / "real").resolve())]
    assert config["sandbox_workspace_write"] == {"writable_roots": expected}


def _unsupported(tmp_path: Path, **fields: Any) -> dict[str, str]:
    from unified._adapters.codex._backend import CodexBackend

    options = {"start_process": lambda *a: None, "api_key": "sk-abc", "pool_size": 0}
    params = ExecuteParams(prompt="x", backend="codex", cwd=tmp_path, backend_options=options, **fields)
    return {problem.option: problem.explanation for problem in CodexBackend(params).unsupported_options(params)}


@pytest.mark.parametrize("mode", ["default", "auto_edit", "plan", "yolo"])
def test_no_mcp_server_s_resources_are_a_warning(tmp_path: Path, mode: str) -> None:
    """Before: a warning outside yolo that an HTTP server's resources were read unasked. Every server, stdio or
    streamable HTTP, runs behind `_resources_relay` outside yolo now, its resources off: nothing to warn about."""
    web = HttpMcpServer(name="web", url="https://mcp.example.com/mcp")
    assert "mcp_servers" not in _unsupported(tmp_path, mcp_servers=(*_servers(), web), approval_mode=mode)
    assert "mcp_servers" not in _unsupported(tmp_path, approval_mode=mode)


@pytest.mark.parametrize("mode", ["default", "yolo"])
def test_an_http_server_runs_behind_the_resources_relay_outside_yolo(tmp_path: Path, mode: str) -> None:
    from unified._adapters.codex._launch import RESOURCES_RELAY, _mcp_table

    server = HttpMcpServer(name="web", url="https://mcp.example.com/mcp", headers={"X-Key": "k3y"})
    table = _mcp_table(server, resources_off=mode != "yolo")
    if mode == "yolo":
        assert (table["url"], table["http_headers"], "command" in table) == (server.url, {"X-Key": "k3y"}, False)
    else:
        assert (table["command"], table["args"]) == (sys.executable, ["-I", "-S", str(RESOURCES_RELAY), "--http"])
        assert table["env"] == {"UNIFIED_MCP_RELAY_URL": server.url, "UNIFIED_MCP_RELAY_HEADERS": '{"X-Key": "k3y"}'}


@pytest.mark.parametrize("mode", ["default", "auto_edit", "plan", "yolo"])
def test_a_stdio_server_runs_behind_the_resources_relay_outside_yolo(tmp_path: Path, mode: str) -> None:
    from unified._adapters.codex._launch import RESOURCES_RELAY, _mcp_table

    server = StdioMcpServer(name="res", command="/usr/bin/srv", args=("--flag", "x y"), env={"TOKEN": "t"})
    table = _mcp_table(server, resources_off=mode != "yolo")
    if mode == "yolo":
        assert (table["command"], table["args"]) == ("/usr/bin/srv", ["--flag", "x y"])
    else:
        relay = ["-I", "-S", str(RESOURCES_RELAY), "--", "/usr/bin/srv", "--flag", "x y"]
        assert (table["command"], table["args"]) == (sys.executable, relay)
        assert RESOURCES_RELAY.is_file()
    assert table["env"] == {"TOKEN": "t"}  # a value of the table, as ever: never on argv or in Codex's environment


def test_include_directories_is_no_longer_unsupported(tmp_path: Path) -> None:
    assert "include_directories" not in _unsupported(tmp_path, include_directories=(tmp_path,))


@HIDING_CASES
async def test_the_host_is_made_undumpable_before_the_app_server_starts_unless_opted_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: dict[str, bool], order: list[str]
) -> None:
    """A command Codex runs could read unified's keys in `/proc/<unified's pid>/environ` (docs/backends/codex.md,
    "The process and its home"): the host is hidden first, unless the caller said no."""
    seen, start = record_hiding(monkeypatch, codex_run, app_server(lambda process: finished()))
    events = await run(tmp_path, start, {"pool_size": 0, **given})
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success"
    assert seen == order
