"""Red team, secrets (round 5): the leftovers of round 4, each a leak measured before its fix.

- worked: a stdio MCP server's stderr went straight to unified's stderr (the server inherited it):
  a server printing a key of its environment or of the run's options put it into the host's logs;
- worked: the key file claude-code's `apiKeyHelper` reads (`<home>/keys/anthropic-<digest>`) stayed
  in the home for good once its run, its spare or its pool had ended, and those of crashed runs too;
- worked: google-auth `credentials` given in the options (generate-content, interactions: Vertex AI
  with credentials of one's own) were no secret of the run: their access token, refresh token and
  client secret, echoed by a model, came out whole in the events;
- the rest: see each test.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shlex
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.adapters.claude_code.test_claude_code_run import FakeClaude, starter, text_turn
from unified import ExecuteParams
from unified._adapters.claude_code import ClaudeSparePool
from unified._execute import EventStream
from unified._redaction import REDACTED
from unified.events import Result, UnifiedEvent
from unified.testing import ScriptedBackend
from unified.tools import ToolCall, ToolRuntime
from unified.types import StdioMcpServer

pytestmark = pytest.mark.anyio

RUN_KEY = "AIzaSyD-leftovers-run-key-0123456789abcdef"
TOKEN = "svc-token-of-the-mcp-server-0123"
OPENAI = "sk-proj-" + "Ab1" * 20


# --- 1. an MCP server's stderr --------------------------------------------------------------------

MCP_STDERR_SERVER = """
import os
import sys

from mcp.server.mcpserver import MCPServer

err = sys.stderr
err.write("notice: the server starts\\n")
err.write("token=" + os.environ["SERVICE_TOKEN"] + " openai=" + os.environ["OPENAI_KEY"] + "\\n")
key = os.environ["UPSTREAM"]
err.write("half " + key[:15])  # the key split across two writes, no newline between
err.flush()
err.write(key[15:] + " end\\n")
err.write(("x" * 1000 + "\\n") * int(sys.argv[1]))  # far more than a pipe holds: it must be drained
err.flush()
server = MCPServer("noisy")


@server.tool()
def shout() -> str:
    \"\"\"Prints the key to stderr without a newline, then answers.\"\"\"
    err.write("the key again: " + key)
    err.flush()
    return "done"


server.run()
"""


async def run_the_noisy_server(ws: Path, tmp_path: Path) -> None:
    """Connects the server (300 KB of stderr before it answers: a pipe holds 64 KB) and calls its tool;
    its key given in its `env` under a name that says nothing, and in the run's secrets."""
    script = tmp_path / "noisy.py"
    script.write_text(MCP_STDERR_SERVER)
    server = StdioMcpServer(
        name="noisy",
        command=sys.executable,
        args=(str(script), "300"),
        env={"SERVICE_TOKEN": TOKEN, "OPENAI_KEY": OPENAI, "UPSTREAM": RUN_KEY},
        timeout_s=60,
    )
    async with ToolRuntime(ws, approval_mode="yolo", secrets=[RUN_KEY]) as rt:
        assert await rt.connect_mcp([server]) == []
        [outcome] = await rt.run_batch([ToolCall("m", "mcp__noisy__shout", {})])
    assert outcome.response == {"output": "done"}


@pytest.mark.e2e  # runs a real subprocess
async def test_an_mcp_server_s_stderr_reaches_ours_redacted_and_is_drained(
    ws: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    await run_the_noisy_server(ws, tmp_path)
    err = capfd.readouterr().err
    for secret in (RUN_KEY, TOKEN, OPENAI):
        assert secret not in err
        assert secret[4:14] not in err  # no piece of it either
    assert "notice: the server starts" in err  # the server's diagnostics still reach ours
    assert f"token={REDACTED} openai={REDACTED}" in err
    assert f"half {REDACTED} end" in err
    assert f"the key again: {REDACTED}" in err  # an end without a newline, shown when the server ends


@pytest.mark.e2e  # runs a real subprocess
async def test_an_mcp_server_s_stderr_past_its_bound_is_read_and_dropped(
    ws: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `MCP_STDERR_BYTES` a server's stderr is still read (it never blocks on a full pipe: its
    call is answered), but no longer shown: one notice says so."""
    from unified.tools import _mcp_transport

    monkeypatch.setattr(_mcp_transport, "MCP_STDERR_BYTES", 10_000)
    await run_the_noisy_server(ws, tmp_path)
    err = capfd.readouterr().err
    assert "notice: the server starts" in err
    assert "MCP server 'noisy' wrote over 10,000 bytes to stderr; the rest is not shown" in err
    assert err.count("x") < 11_000
    assert "the key again" not in err
    for secret in (RUN_KEY, TOKEN, OPENAI):
        assert secret not in err


@pytest.mark.e2e  # runs a real subprocess
async def test_a_host_that_never_reads_our_stderr_stalls_the_server_not_the_event_loop(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our stderr is a pipe nobody reads (an orchestrator that captures it and reads only stdout): once it
    is full, passing the server's stderr on waits in a worker thread, so the event loop still runs (here:
    this test's own task sees the full pipe and only then reads it, and the server answers). Written on
    the loop itself, the write would block every task of the run; a thread drains the pipe after a
    minute so that such a failure ends instead of hanging the worker."""
    read_end, write_end = os.pipe()
    blocked_stderr = open(write_end, "w", encoding="utf-8")  # noqa: ASYNC230, SIM115 -- a pipe; closed below
    monkeypatch.setattr(sys, "stderr", blocked_stderr)
    seen_full_from_the_loop = False
    finished = False
    rescued = threading.Event()

    def drain() -> None:
        while os.read(read_end, 65536):
            pass

    def rescue() -> None:  # only if the loop itself is blocked (then this test fails below)
        if not rescued.wait(60):
            drain()

    def full() -> bool:  # no room for another write: a writer now blocks
        return not select.select([], [write_end], [], 0)[1]

    async def reader() -> None:
        nonlocal seen_full_from_the_loop
        while not full() and not finished:  # noqa: ASYNC110 -- the pipe's fill level has no event
            await anyio.sleep(0.005)
        seen_full_from_the_loop = not finished
        rescued.set()
        await anyio.to_thread.run_sync(drain)  # until the run is over and the pipe closed

    threading.Thread(target=rescue, daemon=True).start()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await run_the_noisy_server(ws, tmp_path)
            finished = True
            monkeypatch.undo()
            blocked_stderr.close()  # the reader's end of file
    finally:
        rescued.set()
        os.close(read_end)
    assert seen_full_from_the_loop


# --- 2. claude-code's key file --------------------------------------------------------------------

ANTHROPIC_KEY = "sk-ant-api03-" + "Lk9" * 31 + "AA"


def key_files(home: Path) -> list[str]:
    folder = home / "keys"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def helper_path(fake: FakeClaude) -> Path:
    argv = list(fake.process.argv)
    helper = json.loads(argv[argv.index("--settings") + 1])["apiKeyHelper"]
    return Path(shlex.split(helper)[1])


async def claude_run(cwd: Path, home: Path, start: Callable[..., Any], **options: Any) -> list[UnifiedEvent]:
    backend_options = {"start_process": start, "home": home, "env": {"ANTHROPIC_API_KEY": ANTHROPIC_KEY}, **options}
    params = ExecuteParams(prompt="go", backend="claude-code", cwd=cwd, backend_options=backend_options)
    with anyio.fail_after(30):
        async with EventStream(params, strict=True) as stream:
            return [event async for event in stream]


def seeing_the_key(keep: list[FakeClaude], seen: list[str]) -> Callable[..., Any]:
    """A starter that notes what the key file holds when each process starts (what its helper reads)."""
    start = starter([text_turn("Hello.")], keep)

    def started(argv: Sequence[str], cwd: Path, env: Any) -> Any:
        process = start(argv, cwd, env)
        seen.append(helper_path(keep[-1]).read_text())
        return process

    return started


async def test_claude_code_the_key_file_is_there_while_its_process_runs_and_gone_after(tmp_path: Path) -> None:
    home = tmp_path / "home"
    keep: list[FakeClaude] = []
    seen: list[str] = []
    events = await claude_run(tmp_path, home, seeing_the_key(keep, seen))
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success"
    assert seen == [ANTHROPIC_KEY]
    assert keep[0].process.closed
    assert key_files(home) == []


async def test_claude_code_a_spare_keeps_the_key_file_until_the_pool_ends_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    keep: list[FakeClaude] = []
    seen: list[str] = []
    pool = ClaudeSparePool(size=1)
    start = seeing_the_key(keep, seen)
    await claude_run(tmp_path, home, start, pool=pool)
    assert len(keep) == 2
    assert keep[0].process.closed
    assert not keep[1].process.closed
    [name] = key_files(home)  # the spare's CLI may run its helper at any time
    await claude_run(tmp_path, home, start, pool=pool)  # takes the spare, leaves another
    assert key_files(home) == [name]
    await pool.aclose()
    assert all(fake.process.closed for fake in keep)
    assert seen == [ANTHROPIC_KEY] * 3
    assert key_files(home) == []


async def test_claude_code_a_key_file_another_process_holds_stays(tmp_path: Path) -> None:
    """Another process's run of the same key and home (its hold: a shared lock on the file) keeps it."""
    home = tmp_path / "home"
    keep: list[FakeClaude] = []
    await claude_run(tmp_path, home, seeing_the_key(keep, []))
    path = helper_path(keep[0])
    path.write_text(ANTHROPIC_KEY)
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # what another process's lease holds
        await claude_run(tmp_path, home, seeing_the_key(keep, []))
        assert path.read_text() == ANTHROPIC_KEY
    finally:
        os.close(fd)


async def test_claude_code_stale_key_files_of_crashed_runs_go_and_nothing_else(tmp_path: Path) -> None:
    """A crashed run left its key file (no process holds it): the next run removes it. Only files of
    ours: no symlink is followed nor removed, no other name, no FIFO waited on."""
    home = tmp_path / "home"
    folder = home / "keys"
    folder.mkdir(parents=True)
    stale = folder / "anthropic-0123456789abcdef"
    stale.write_text("sk-ant-api03-" + "crashed" * 5)
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    (folder / "anthropic-fedcba9876543210").symlink_to(outside)
    (folder / "notes").write_text("not a key file of ours")
    os.mkfifo(folder / "anthropic-00000000000000ff")
    keep: list[FakeClaude] = []
    await claude_run(tmp_path, home, seeing_the_key(keep, []))
    assert key_files(home) == ["anthropic-00000000000000ff", "anthropic-fedcba9876543210", "notes"]
    assert outside.read_text() == "keep me"


GATEWAY_TOKEN = "gateway-token-of-the-leftovers-0123456789"


@pytest.mark.parametrize(
    ("env", "moved", "left"),
    [
        ({"ANTHROPIC_AUTH_TOKEN": GATEWAY_TOKEN}, GATEWAY_TOKEN, {}),
        ({"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "ANTHROPIC_AUTH_TOKEN": ANTHROPIC_KEY}, ANTHROPIC_KEY, {}),
        (
            {"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "ANTHROPIC_AUTH_TOKEN": GATEWAY_TOKEN},
            ANTHROPIC_KEY,
            {"ANTHROPIC_AUTH_TOKEN": GATEWAY_TOKEN},  # one helper, one value: the token stays
        ),
    ],
)
def test_claude_code_a_gateway_token_goes_through_the_key_helper_too(
    tmp_path: Path, env: dict[str, str], moved: str, left: dict[str, str]
) -> None:
    """Measured with 2.1.332 and FakeAnthropic: the CLI sends its helper's value as `x-api-key` and as
    `Authorization: Bearer`, the header ANTHROPIC_AUTH_TOKEN gives; so a token alone (or the same
    value as the key) needs no variable: the model's `env` shows none."""
    from unified._adapters.claude_code._launch import Launch
    from unified._adapters.claude_code._options import claude_code_options

    home = tmp_path / "home"
    options = {"start_process": print, "home": home, "env": env}
    params = ExecuteParams(prompt="x", backend="claude-code", cwd=tmp_path, backend_options=options)
    launch = Launch.of(params, claude_code_options(params.backend_options))
    credentials = {k: v for k, v in launch.run_env().items() if k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")}
    assert credentials == left
    held = launch.lease()
    assert held is not None
    assert launch.api_key_helper is not None
    assert Path(shlex.split(launch.api_key_helper)[1]).read_text() == moved
    held.release()


# --- 3. google-auth credentials given in the options ------------------------------------------------

ACCESS_TOKEN = "access-token-of-the-leftovers-0123456789"
REFRESH_TOKEN = "refresh-token-of-the-leftovers-0123456789"
CLIENT_SECRET = "client-secret-of-the-leftovers-01234"


def _user_credentials() -> Any:
    from google.oauth2.credentials import Credentials

    return Credentials(  # type: ignore[no-untyped-call]
        token=ACCESS_TOKEN,
        refresh_token=REFRESH_TOKEN,
        client_id="leftovers.apps.googleusercontent.com",
        client_secret=CLIENT_SECRET,
        token_uri="https://oauth2.example/token",
    )


def _service_account() -> tuple[Any, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from google.oauth2 import service_account

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    info = {
        "type": "service_account",
        "client_email": "leftovers@project.iam.gserviceaccount.com",
        "private_key": pem,
        "private_key_id": "0123",
        "token_uri": "https://oauth2.example/token",
        "project_id": "project",
    }
    account = service_account.Credentials.from_service_account_info(info)  # type: ignore[no-untyped-call]
    return account, pem


def test_run_secrets_gathers_the_secrets_of_google_credentials_in_every_form() -> None:
    from unified._internal.api_options import ApiOptions
    from unified._redaction import run_secrets
    from unified.types import Fallback

    user = _user_credentials()
    account, pem = _service_account()
    as_dict = ExecuteParams(prompt="p", backend="generate-content", backend_options={"credentials": user})
    as_model = ExecuteParams(prompt="p", backend="generate-content", backend_options=ApiOptions(credentials=user))
    fallback = ExecuteParams(
        prompt="p",
        backend="generate-content",
        fallback=[Fallback(backend="interactions", backend_options={"credentials": account})],
    )
    for params in (as_dict, as_model):
        found = run_secrets(params)
        assert {ACCESS_TOKEN, REFRESH_TOKEN, CLIENT_SECRET} <= set(found), found
        assert "leftovers.apps.googleusercontent.com" not in found  # an id, not a secret
    assert pem.strip() in [v.strip() for v in run_secrets(fallback)]


async def test_a_model_echoing_the_token_of_the_run_s_credentials_shows_none_of_it() -> None:
    from unified.events import SessionStarted, TextDelta

    started = SessionStarted(backend="scripted", session_id="s1", short_id="s1", cwd="/tmp")
    echo = [TextDelta(text=f"token {ACCESS_TOKEN} refresh {REFRESH_TOKEN} secret {CLIENT_SECRET}")]
    params = ExecuteParams(prompt="p", backend="scripted", backend_options={"credentials": _user_credentials()})
    async with EventStream(params, backend=ScriptedBackend([started, *echo])) as stream:
        shown = "".join(e.text for e in [event async for event in stream] if isinstance(e, TextDelta))
    for secret in (ACCESS_TOKEN, REFRESH_TOKEN, CLIENT_SECRET):
        assert secret not in shown
    assert shown.count(REDACTED) == 3


# --- 5. a known secret in another form: base64, JSON \u escapes ------------------------------------

OBFUSCATED_KEY = "AIzaSyD-obfuscated-key-0123456789abcdefg"


def _base64_forms(secret: str) -> list[str]:
    import base64

    forms = []
    for before in ("", "k", "ke", "key="):  # every alignment of the key in the encoded bytes
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            forms.append(encode(f"{before}{secret} and more".encode()).decode())
    return forms


def _escaped_forms(secret: str) -> list[str]:
    return [
        "".join(f"\\u{ord(c):04x}" for c in secret),  # every character
        "".join(f"\\u{ord(c):04X}" for c in secret),
        f"\\u{ord(secret[0]):04x}{secret[1:]}",  # the first one only
        secret[:10] + "".join(f"\\u{ord(c):04x}" for c in secret[10:12]) + secret[12:],  # two in the middle
    ]


@pytest.mark.parametrize("form", [*_base64_forms(OBFUSCATED_KEY), *_escaped_forms(OBFUSCATED_KEY)])
def test_a_known_secret_in_base64_or_json_escapes_is_replaced(form: str) -> None:
    from unified._redaction import redactor

    clean = redactor(extra=[OBFUSCATED_KEY])
    text = f'{{"note": "{form}", "next": 1}}'
    assert clean.found_in(text)
    shown = clean(text)
    assert REDACTED in shown
    assert shown.endswith('", "next": 1}')
    for piece in [*_escaped_forms(OBFUSCATED_KEY)[:2], OBFUSCATED_KEY[4:14]]:
        assert piece not in shown


def test_ordinary_base64_and_escapes_are_left_alone() -> None:
    import base64

    from unified._redaction import redactor

    clean = redactor(extra=[OBFUSCATED_KEY])
    text = base64.b64encode(b"nothing secret in here at all, just words").decode() + " caf\\u00e9 \\u0041BC"
    assert not clean.found_in(text)
    assert clean(text) == text


async def test_a_model_echoing_the_key_base64_encoded_shows_none_of_it() -> None:
    import base64

    from unified.events import SessionStarted, TextDelta

    started = SessionStarted(backend="scripted", session_id="s1", short_id="s1", cwd="/tmp")
    encoded = base64.b64encode(f"key={OBFUSCATED_KEY}".encode()).decode()
    echo = [TextDelta(text=f"here: {encoded} done")]
    params = ExecuteParams(prompt="p", backend="scripted", backend_options={"api_key": OBFUSCATED_KEY})
    async with EventStream(params, backend=ScriptedBackend([started, *echo])) as stream:
        shown = "".join(e.text for e in [event async for event in stream] if isinstance(e, TextDelta))
    assert encoded[8:30] not in shown
    assert REDACTED in shown


def test_claude_code_a_file_system_without_locks_keeps_the_key_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where `flock` is refused (ENOLCK: some network file systems) the run still gets its key file; it is
    kept, as before leases (another process may need it), never removed blind."""
    import errno

    from unified._adapters.claude_code import _key_file

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "no locks available")

    monkeypatch.setattr("unified._adapters.claude_code._key_file.fcntl.flock", no_locks)
    files = [(_key_file.key_file(tmp_path, ANTHROPIC_KEY), ANTHROPIC_KEY.encode())]
    held = _key_file.lease(files)
    assert held.paths[0].read_text() == ANTHROPIC_KEY
    held.release()
    assert held.paths[0].read_text() == ANTHROPIC_KEY
    again = _key_file.lease(files)  # its sweep removes nothing it cannot lock either
    assert again.paths[0] == held.paths[0]
    again.release()
    assert held.paths[0].exists()


# --- 6. key shapes in diagnostics ------------------------------------------------------------------

SHAPED = "sk-ant-api03-" + "Zq7" * 12  # nobody's: not in the environment nor in the run's options


@pytest.mark.parametrize("how", ["error event", "warning event", "raised", "outcome", "raised, not ours"])
async def test_an_error_or_warning_quoting_a_key_shape_shows_none_of_it(how: str) -> None:
    """A provider's error may quote the request that held a key (a prompt, a conversation, a tool's
    output): errors, warnings and the result's `error` hide every credential shape, whoever's."""
    from unified.errors import BackendError
    from unified.events import ErrorEvent, SessionStarted, WarningEvent
    from unified.testing import Fail

    quoted = f"400: invalid value in messages[3]: '{SHAPED}'"
    started = SessionStarted(backend="scripted", session_id="s1", short_id="s1", cwd="/tmp")
    steps: list[Any] = [started]
    outcome = None
    if how == "error event":
        steps.append(ErrorEvent(code="provider_error", message=quoted, details={"body": {"echo": [SHAPED]}}))
    elif how == "warning event":
        steps.append(WarningEvent(code="stream_resumed", message=quoted))
    elif how == "raised":
        steps.append(Fail(BackendError(quoted, hint=f"the key {SHAPED}", details={"request": SHAPED})))
    elif how == "raised, not ours":
        steps.append(Fail(ValueError(quoted)))
    else:
        from unified.backends import RunOutcome

        outcome = RunOutcome(status="error", error=quoted)
    backend = ScriptedBackend(steps) if outcome is None else ScriptedBackend(steps, outcome=outcome)
    async with EventStream(ExecuteParams(prompt="p", backend="scripted"), backend=backend) as stream:
        events = [event async for event in stream]
    dumped = json.dumps([e.model_dump(mode="json") for e in events])
    assert SHAPED not in dumped
    assert SHAPED[:20] not in dumped
    assert REDACTED in dumped
    assert "invalid value in messages[3]" in dumped  # the rest of the message stays
