"""Red team, round 9: the `delegate` tool of the API backends (subagents), the files outside the workspace that
decide who can log in or what later commands run which round 8 left out, and paths the protected-path check
judged on their text (rounds 1-8 took the parser, the file tools, the bounds, the secrets and the allow rules).

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- `excluded_tools` is a list of glob patterns (`is_excluded`, "the one reading of excluded_tools, for the
  runtime and for a tool an adapter serves itself"), but the loop looked `delegate` up by equality: with
  `excluded_tools=["*"]` (every tool), `["deleg*"]` or `["del?gate"]` the run still offered `delegate` and ran
  the subagents the model asked for (measured on both API backends against FakeGemini);
- `unified run` asked a subagent's permission in the terminal exactly as it asked the main agent's (the same
  lines): the person answering could not tell the prompt came from a task the model delegated;
- a subagent's permission prompt had the `request_id` of one of the run's own: the runtime names a prompt after
  its call (`permission-call_1_1`), and a subagent's conversation counts its calls from the start as the run
  does, so on generate-content the run's first prompt and the subagent's first were both
  `permission-call_1_1` (only `tool_use_id` had the task's prefix): a caller keeping answers by request id
  would answer the subagent's write with the answer it gave the run's;
- system files that decide who can log in or what every program loads, written under a rule for `cp` (or for
  every command) with no prompt: `/etc/passwd` and `/etc/shadow` (an account with uid 0 and no password),
  `/etc/group`, `/etc/gshadow`, `/etc/subuid`, `/etc/login.defs`, `/etc/doas.conf`, `/etc/sudo.conf` (sudo's
  plugins are libraries it loads), polkit's rules, `/etc/nsswitch.conf` and `/etc/ld.so.cache` (which library
  every program loads), `/etc/bash_completion.d` (every interactive shell sources it), `/etc/resolv.conf`
  (like `/etc/hosts`, where the next install comes from), ...; `/etc/sudoers` and `/etc/sudoers.d` were
  protected already (pins);
- `~/bin`, which Debian's and Ubuntu's `.profile` put in `PATH` at the next login once it exists:
  `mkdir ~/bin; cp evil ~/bin/git` was allowed under a rule for `cp` (`~/.local/bin` was protected);
- a Go SDK's `$GOROOT/go.env` (`~/sdk/go1.22.0/go.env`, a toolchain in the module cache), which every `go`
  of that SDK reads: `GOTOOLCHAIN`, `GOPROXY` and `GOSUMDB=off` there make the next build download and run a
  toolchain from anywhere; written unasked in auto_edit and copied under a rule for `cp`;
- the system directories and the directories of `PATH` were compared in their exact case, where the patterns
  ignore it: on a case-insensitive file system (macOS's, as a rule) `cp evil /USR/LOCAL/BIN/git` replaces
  `/usr/local/bin/git`, and it was allowed under a rule for `cp`;
- a written path through a link unified may not read (`/proc/1/root/usr/local/bin/git`: another process's
  root, which a command allowed to trace it follows) was judged on its text when resolving it failed, and
  allowed: what cannot be resolved is now asked;
- the Rust toolchain's options that run a program, under a rule for the program: `cargo tree --config
  'build.rustc-wrapper="./evil"'` (a safe verb, so a safe form) ran `./evil` twice (measured: cargo asks
  rustc for the target's facts through the wrapper, in `tree` and `metadata` too; `--config x.toml` reads
  the same from a file the model wrote); `rustc -C linker=./evil`, `-L`/`--extern` (a proc-macro library
  it loads), `--sysroot`, `@file` and rustup's `rustc +/ws/tc` (measured with `cargo +/ws/tc`: the
  toolchain's own `bin/cargo` ran), `rustdoc --test` (runs the examples), and `rustup run /ws/tc cmd`
  under a rule for rustup: all allowed.

Attacks that held are kept below their section as pins: a subagent keeps the run's approval mode, tool
exclusions, workspace and `max_turns`, cannot nest, runs at most `DELEGATIONS_PER_TURN` a turn, and a key a
server quotes in its failure is redacted before it reaches the parent's model; arithmetic injections through
a loop variable, brace expansion and `/proc` spellings in shell commands; the file tools on `/dev/fd`,
`/proc/self/*` links and FIFOs.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.e2e.api_loop.conftest import backend, fake, workspace
from tests.e2e.api_loop.test_api_loop import collect, params, request_bodies, result
from tests.e2e.generate_content.gc_harness import harness
from tests.security.rules import allow_prefixes
from unified._agent_loop import DELEGATIONS_PER_TURN
from unified._cli.interactive import ask_in_terminal
from unified.conversations import Conversation, TextPart, ToolCallPart, UserTurn
from unified.conversations import ModelTurn as HistoryTurn
from unified.events import (
    SubagentCompleted,
    SubagentStarted,
    ToolResult,
    UserInputRequest,
    UserInputResponse,
    permission_request,
)
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import Fault, FunctionCall, ModelTurn
from unified.tools import Decision, Policy, ToolCall, ToolRuntime, _protected
from unified.tools import _shell_syntax as syntax

__all__ = ["backend", "fake", "harness", "workspace"]  # the API loop's fixtures, used here

pytestmark = [pytest.mark.anyio]

SHELL = "run_shell_command"
EVERY_COMMAND = '[[rule]]\nname = "user-shell"\ntoolName = "run_shell_command"\ndecision = "allow"\n'
KEY = "AIzaSyD3adB33fC0ffee0123456789abcdefABCD"


def _allowed(ws: Path, policy: Policy, command: str) -> bool:
    """The policy allows it and the protected-path check finds nothing (as the runtime decides)."""
    if policy.evaluate(SHELL, {"command": command}, "default").decision is not Decision.ALLOW:
        return False
    return _protected.shell_protected(syntax.parse(command), ws, (ws,)) is None


def _delegate(task: str = "Write x.txt", call_id: str | None = None, **more: Any) -> FunctionCall:
    return FunctionCall(name="delegate", args={"task": task, **more}, id=call_id)


def _write(name: str, content: str = "x", call_id: str | None = None) -> FunctionCall:
    return FunctionCall(name="write_file", args={"file_path": name, "content": content}, id=call_id)


# --- delegate: what the run excluded ---------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("pattern", ["*", "deleg*", "del?gate"])
async def test_an_excluded_tools_pattern_matching_delegate_offers_no_subagents(
    backend: str, fake: FakeGemini, workspace: Path, pattern: str
) -> None:
    """SUCCEEDED before: `delegate` was declared and the model's call ran a subagent (its requests, its tools)."""
    fake.add(ModelTurn(function_calls=[_delegate("say hi")]), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, excluded_tools=[pattern]))
    assert not [e for e in events if isinstance(e, SubagentStarted)]
    assert '"delegate"' not in json.dumps(request_bodies(fake, backend)[0])
    (answer,) = [e for e in events if isinstance(e, ToolResult)]
    assert answer.is_error  # the call goes to the runtime, which has no such tool
    assert len(request_bodies(fake, backend)) == 2
    assert result(events).status == "success"


@pytest.mark.e2e
async def test_a_tool_the_run_excludes_stays_excluded_for_its_subagent(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    """Pin: the subagent's declarations are the run's, and its calls go to the run's runtime."""
    fake.add(ModelTurn(function_calls=[_delegate()]), ModelTurn(function_calls=[_write("x.txt")]))
    fake.add(ModelTurn(text="could not"), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, excluded_tools=["write_file"], approval_mode="yolo"))
    assert not (workspace / "x.txt").exists()
    inner = [e for e in events if isinstance(e, ToolResult) and e.subagent_task_id is not None]
    assert [e.is_error for e in inner] == [True]
    assert "not found" in str(inner[0].output)
    assert '"write_file"' not in json.dumps(request_bodies(fake, backend)[1])


@pytest.mark.e2e
async def test_a_subagent_in_plan_mode_writes_nothing(backend: str, fake: FakeGemini, workspace: Path) -> None:
    """Pin: the delegation is allowed, the subagent's write is denied by plan mode as the run's would be."""
    fake.add(ModelTurn(function_calls=[_delegate()]), ModelTurn(function_calls=[_write("x.txt")]))
    fake.add(ModelTurn(text="denied"), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, approval_mode="plan"))
    assert not (workspace / "x.txt").exists()
    inner = next(e for e in events if isinstance(e, ToolResult) and e.subagent_task_id is not None)
    assert inner.is_error
    assert "plan" in str(inner.output)


@pytest.mark.e2e
async def test_a_subagent_reads_nothing_outside_the_workspace(backend: str, fake: FakeGemini, workspace: Path) -> None:
    """Pin: the subagent's file tools are the run's, confined to its workspace."""
    outside = workspace.parent / "secret.txt"
    outside.write_text("s3cret\n", encoding="utf-8")
    read = FunctionCall(name="read_file", args={"file_path": str(outside)})
    fake.add(ModelTurn(function_calls=[_delegate("read it")]), ModelTurn(function_calls=[read]))
    fake.add(ModelTurn(text="no"), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, approval_mode="yolo"))
    inner = next(e for e in events if isinstance(e, ToolResult) and e.subagent_task_id is not None)
    assert inner.is_error
    assert "s3cret" not in json.dumps([b for b in request_bodies(fake, backend)])


# --- delegate: bounds --------------------------------------------------------------------------------------------


@pytest.mark.e2e
async def test_no_more_than_the_bound_of_delegations_run_from_one_turn(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    """Pin: six calls in one turn run four subagents; the other two are answered "not run"."""
    calls = [_delegate(f"task {n}", description=f"t{n}") for n in range(DELEGATIONS_PER_TURN + 2)]
    fake.add(ModelTurn(function_calls=calls))
    fake.add(*(ModelTurn(text=f"done {n}") for n in range(DELEGATIONS_PER_TURN)), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace))
    assert len([e for e in events if isinstance(e, SubagentStarted)]) == DELEGATIONS_PER_TURN
    refused = [e for e in events if isinstance(e, ToolResult) and "delegations a turn" in str(e.output)]
    assert len(refused) == 2
    assert len(request_bodies(fake, backend)) == DELEGATIONS_PER_TURN + 2
    fake.assert_done()


@pytest.mark.e2e
async def test_a_subagent_keeps_the_run_s_max_turns(backend: str, fake: FakeGemini, workspace: Path) -> None:
    """Pin: with `max_turns=2` a subagent that keeps calling tools stops after two requests of its own; the run's
    own two requests are its own too (`max_turns` counts the main agent's turns, as on every backend)."""
    read = FunctionCall(name="read_file", args={"file_path": "notes.txt"})
    fake.add(ModelTurn(function_calls=[_delegate("loop")]))
    fake.add(ModelTurn(function_calls=[read]), ModelTurn(function_calls=[read]), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, max_turns=2))
    done = next(e for e in events if isinstance(e, SubagentCompleted))
    assert done.status == "max_turns"
    assert len(request_bodies(fake, backend)) == 4
    assert result(events).final_text == "ok"


@pytest.mark.e2e
async def test_a_huge_description_is_clipped_in_the_stream(backend: str, fake: FakeGemini, workspace: Path) -> None:
    """Pin: the description the user is shown is at most 200 characters, whatever the model sends."""
    fake.add(ModelTurn(function_calls=[_delegate("hi", description="d" * 100_000)]), ModelTurn(text="x"))
    fake.add(ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace))
    started = next(e for e in events if isinstance(e, SubagentStarted))
    assert started.description is not None
    assert len(started.description) <= 200


# --- delegate: prompts and secrets ---------------------------------------------------------------------------------


@pytest.mark.e2e
async def test_a_subagent_s_prompt_never_has_the_request_id_of_one_of_the_run_s(
    fake: FakeGemini, workspace: Path
) -> None:
    """SUCCEEDED before: the run's write and the subagent's write were both asked as `permission-call_1_1`
    (generate-content numbers each conversation's calls from its first turn)."""
    fake.add(ModelTurn(function_calls=[_write("a.txt"), _delegate("Write b.txt")]))
    fake.add(ModelTurn(function_calls=[_write("b.txt")]), ModelTurn(text="written"), ModelTurn(text="ok"))
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow()

    events = await collect(params("generate-content", fake, workspace, on_user_input=answer))
    assert result(events).status == "success"
    run_s, subagent_s = asked
    assert (run_s.subagent_task_id, subagent_s.subagent_task_id) == (None, "task-call_1_2")
    assert run_s.request_id != subagent_s.request_id
    assert subagent_s.request_id.startswith("task-call_1_2/")
    assert (workspace / "a.txt").exists()
    assert (workspace / "b.txt").exists()


@pytest.mark.e2e
async def test_a_subagent_s_stop_answer_stops_the_run(backend: str, fake: FakeGemini, workspace: Path) -> None:
    """Pin: "stop" on a subagent's prompt ends the run (`interrupted`), not only the subagent."""
    fake.add(ModelTurn(function_calls=[_delegate()]), ModelTurn(function_calls=[_write("x.txt")]))

    async def answer(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.stop_run("no")

    events = await collect(params(backend, fake, workspace, on_user_input=answer))
    assert result(events).status == "interrupted"
    assert not (workspace / "x.txt").exists()


@pytest.mark.e2e
async def test_a_key_quoted_in_a_subagent_s_failure_never_reaches_the_parent_s_model(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    """Pin: the failure of the subagent's request is the parent's tool output (its next request, its stored
    session); the key the server quoted is redacted there as in the stream."""
    fake.add(ModelTurn(function_calls=[_delegate("say hi")]), ModelTurn(text="ok"))
    fake.inject(Fault(kind="bad_request", message=f"API key {KEY} is not valid for this project"), at_request=1)
    events = await collect(params(backend, fake, workspace, backend_options={"api_key": KEY}))
    done = next(e for e in events if isinstance(e, SubagentCompleted))
    assert done.status == "failed"
    assert KEY not in json.dumps(request_bodies(fake, backend)[-1])
    assert KEY not in str(done.result)
    assert "[REDACTED]" in json.dumps(request_bodies(fake, backend)[-1])


@pytest.mark.e2e
async def test_calls_a_hostile_history_left_unanswered_never_run(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    """Pin: a conversation to continue whose last model turn asks for a command and a delegation (a session file
    someone handed over) runs neither, in yolo mode: the calls are answered "never ran" and the model is asked."""
    calls = [
        ToolCallPart(id="h1", name="run_shell_command", arguments={"command": "touch PWNED"}),
        ToolCallPart(id="h2", name="delegate", arguments={"task": "touch PWNED2 with the shell"}),
    ]
    history = Conversation(turns=[UserTurn(parts=[TextPart(text="hi")]), HistoryTurn(parts=[*calls])])
    fake.add(ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, "go on", history=history, approval_mode="yolo"))
    assert result(events).status == "success"
    assert not (workspace / "PWNED").exists()
    assert not [e for e in events if isinstance(e, SubagentStarted)]
    assert len(request_bodies(fake, backend)) == 1


def _terminal_prompt(request: UserInputRequest, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system=None, width=300)
    monkeypatch.setattr(console, "input", lambda prompt="": "1")
    assert ask_in_terminal(request, console).permission() == "allow_once"
    return out.getvalue().splitlines()


def test_the_terminal_prompt_says_a_subagent_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: `unified run` asked a subagent's write exactly as the main agent's (same lines): the person
    answering could not tell that it came from a task the model delegated, not from the agent they followed."""
    asked = permission_request("r", "Allow writing x.txt?", tool_use_id="task-c1/c2", tool_name="write_file")
    asked.subagent_task_id, asked.is_subagent = "task-c1", True
    main = permission_request("r", "Allow writing x.txt?", tool_use_id="c2", tool_name="write_file")
    lines = _terminal_prompt(asked, monkeypatch)
    assert lines[0] == "(asked by subagent task-c1, not the main agent)"
    assert lines[1:] == _terminal_prompt(main, monkeypatch)


def test_a_subagent_task_id_cannot_rewrite_the_terminal_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin: the task id comes from a call id (the server's); its control characters are shown, not obeyed."""
    asked = permission_request("r", "Allow?", tool_use_id="t/c", tool_name="write_file")
    asked.subagent_task_id = "task-\x1b[2K\x1b[1G? Allow running `ls`?"
    lines = _terminal_prompt(asked, monkeypatch)
    assert "\x1b" not in "\n".join(lines)
    assert [line for line in lines if line.startswith("? ")] == ["? Allow?"]


# --- who can log in, what every program loads ---------------------------------------------------------------------

LOGIN_FILES = [
    "/etc/passwd",
    "/etc/shadow",
    "/etc/group",
    "/etc/gshadow",
    "/etc/subuid",
    "/etc/login.defs",
    "/etc/doas.conf",
    "/etc/sudo.conf",
    "/etc/polkit-1/rules.d/00-evil.rules",
    "/etc/pam.conf",
    "/etc/nsswitch.conf",
    "/etc/ld.so.cache",
    "/etc/bash_completion.d/git",
    "/etc/resolv.conf",
    "/etc/fish/config.fish",
    "/etc/tmux.conf",
    "/etc/gdb/gdbinit",
    "/etc/mailcap",
    "/etc/wgetrc",
    "/etc/docker/daemon.json",
]


@pytest.mark.parametrize("target", LOGIN_FILES)
def test_a_copy_onto_a_file_deciding_logins_or_loads_is_asked(ws: Path, target: str) -> None:
    """SUCCEEDED before: allowed under a rule for `cp` and under a rule for every command."""
    assert not _allowed(ws, allow_prefixes("cp"), f"cp evil {target}")
    assert not _allowed(ws, Policy.default().with_toml(EVERY_COMMAND), f"cp evil {target}")


@pytest.mark.parametrize(
    "command",
    [
        "echo 'evil::0:0::/root:/bin/sh' | tee -a /etc/passwd",
        "sed -i 's/^root:[^:]*:/root::/' /etc/shadow",
        "sort -o /etc/passwd evil",
        "echo 'ALL ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers",
        "cp evil /etc/sudoers.d/90-evil",
        "install -D evil /etc/sudoers.d/x",
        "cp evil /etc/pam.d/su",
        "cp evil /etc/ld.so.preload",
        "cp evil /etc/./shadow",
        "cp evil //etc//passwd",
        "cp evil /usr/../etc/passwd",
        "cd /etc && cp evil passwd",
        "cp -t /etc evil passwd",
        "cp evil /proc/self/root/etc/passwd",
        "cp evil /etc/pas''swd",
        "cp evil /etc/passw?",
    ],
)
def test_a_write_of_the_login_files_in_other_spellings_is_asked(ws: Path, command: str) -> None:
    """The passwd and shadow ones SUCCEEDED before (`tee -a`, `sed -i`, `sort -o`); `/etc/sudoers`,
    `/etc/sudoers.d`, `/etc/pam.d` and `/etc/ld.so.preload` were protected already (pins), and so is every
    spelling now. A writer naming one only to read it (`awk -F: .. /etc/passwd`) is asked too now, as one
    naming `/usr/lib/os-release` was: awk and sort may write what they name."""
    policy = allow_prefixes("cp", "tee", "sed", "echo", "install", "cd", "sort")
    assert not _allowed(ws, policy, command)


def test_reading_the_login_files_is_no_write(ws: Path) -> None:
    """Pin: naming them to read them is not asked (`cut -d: -f1 /etc/passwd`)."""
    for command in ["cat /etc/passwd", "cut -d: -f1 /etc/passwd", "grep root /etc/shadow", "getent passwd root"]:
        assert _allowed(ws, allow_prefixes("cat", "cut", "grep", "getent"), command), command


# --- ~/bin and a Go SDK's go.env ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", ["cp evil {home}/bin/git", "mkdir -p {home}/bin && cp evil {home}/bin/", "tee {home}/bin/git"]
)
def test_a_program_written_into_home_bin_is_asked(isolated_home: Path, ws: Path, command: str) -> None:
    """SUCCEEDED before: allowed under rules for `cp`, `mkdir` and `tee`; the next login puts `~/bin` first in PATH,
    and `git` is the model's from then on."""
    assert not _allowed(ws, allow_prefixes("cp", "mkdir", "tee"), command.format(home=isolated_home))


@pytest.mark.parametrize("command", ["cp evil ~/bin/git", "cp evil $HOME/bin/git", "ln -s /ws/x {home}/bin/ls"])
def test_home_bin_spelled_with_a_tilde_or_home_is_asked(isolated_home: Path, ws: Path, command: str) -> None:
    """Pin: held before (a word only known at run time, for a writer; a link's tail `/bin/ls` is a system one)."""
    assert not _allowed(ws, allow_prefixes("cp", "ln"), command.format(home=isolated_home))


def test_home_bin_is_judged_whatever_home_is(tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The directory follows HOME when the call is judged, not when the data was read."""
    for home in (tmp_path / "a", tmp_path / "b"):
        monkeypatch.setenv("HOME", str(home))
        assert not _allowed(ws, allow_prefixes("cp"), f"cp evil {home}/bin/git")


def test_a_file_deeper_in_home_bin_or_beside_it_is_still_allowed(isolated_home: Path, ws: Path) -> None:
    """Pin: only a file directly in `~/bin` runs from PATH (a project in `~/bin/src/x` is no program), and
    `~/binaries` is no `~/bin`; the workspace's own `bin/` is the user's."""
    for command in ["cp evil {home}/bin/src/x/notes.txt", "cp evil {home}/binaries/x", "cp evil bin/run.sh"]:
        assert _allowed(ws, allow_prefixes("cp"), command.format(home=isolated_home)), command


async def test_auto_edit_asks_before_writing_a_go_sdk_s_go_env(ws: Path) -> None:
    """SUCCEEDED before: written unasked; `GOTOOLCHAIN`/`GOPROXY`/`GOSUMDB=off` choose the next build's toolchain."""
    async with ToolRuntime(ws, approval_mode="auto_edit") as rt:
        [outcome] = await rt.run_batch(
            [ToolCall("1", "write_file", {"file_path": "sdk/go1.22.0/go.env", "content": "GOSUMDB=off\n"})]
        )
    assert outcome.is_error
    assert "is a protected path (go.env)" in outcome.response["error"]
    assert not (ws / "sdk").exists()


@pytest.mark.parametrize(
    "target",
    ["{home}/sdk/go1.22.0/go.env", "{home}/go/pkg/mod/golang.org/toolchain@v0.0.1-go1.22.0.linux-amd64/go.env"],
)
def test_a_copy_onto_a_go_sdk_s_go_env_is_asked(isolated_home: Path, ws: Path, target: str) -> None:
    """SUCCEEDED before: allowed under a rule for `cp`."""
    assert not _allowed(ws, allow_prefixes("cp"), f"cp evil {target.format(home=isolated_home)}")


# --- the case of a system directory, a link that cannot be read -----------------------------------------------------


@pytest.mark.parametrize(
    "target", ["/USR/LOCAL/BIN/git", "/Usr/Lib/git-core/git-remote-https", "/ETC/passwd", "/etc/Init.d/evil"]
)
def test_a_system_directory_spelled_in_another_case_is_asked(ws: Path, target: str) -> None:
    """SUCCEEDED before: allowed under a rule for `cp`; on a case-insensitive file system it is the same file."""
    parts = syntax.parse(f"cp evil {target}")
    assert _protected.shell_protected(parts, ws, (ws,), "/usr/local/bin:/usr/bin") is not None


def test_a_workspace_spelled_in_another_case_is_not_unprotected(ws: Path) -> None:
    """Pin: the workspace's own files stay judged by their patterns, and a plain one allowed."""
    assert not _allowed(ws, allow_prefixes("cp"), "cp evil .GIT/hooks/pre-commit")
    assert _allowed(ws, allow_prefixes("cp"), "cp evil Notes.TXT")


def test_a_write_through_a_link_that_cannot_be_read_is_asked(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: `/proc/1/root` (pid 1's root, `/` to a command that may trace pid 1) could not be read
    by unified (EACCES), so `/proc/1/root/usr/local/bin/git` was judged on its text and allowed under `cp`."""
    real = os.path.realpath

    def realpath(path: Any, *args: Any, **kwargs: Any) -> str:
        if str(path).startswith("/proc/1/"):
            raise PermissionError(13, "Permission denied", "/proc/1/root")
        return str(real(path, *args, **kwargs))

    monkeypatch.setattr(os.path, "realpath", realpath)
    for command in ["cp evil /proc/1/root/usr/local/bin/git", "cp evil /proc/1/cwd/x"]:
        reason = _protected.shell_protected(syntax.parse(command), ws, (ws,), "/usr/local/bin:/usr/bin")
        assert reason is not None
        assert "cannot be read" in reason


def test_a_write_through_the_own_root_link_is_judged_where_it_leads(ws: Path) -> None:
    """Pin: `/proc/self/root` and `/proc/thread-self/root` resolve, to `/`."""
    for command in ["cp evil /proc/self/root/usr/local/bin/git", "cp evil /proc/thread-self/root/etc/profile.d/x"]:
        assert _protected.shell_protected(syntax.parse(command), ws, (ws,), "/usr/local/bin:/usr/bin") is not None


# --- shell parse differences: pins --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "for x in 'a[$(touch PWNED)]'; do echo $((x)); done",
        "for x in 'a[$(touch PWNED)]'; do echo ${!x}; done",
        "for x in 'a[$(touch PWNED)]'; do echo ${y:x}; done",
        "for x in 'a[$(touch PWNED)]'; do [[ $x -eq 1 ]]; done",
        "select x in 'a[$(touch PWNED)]'; do echo $((x)); break; done </dev/null",
        "read x <<< 'a[$(touch PWNED)]'; echo $((x))",
        "printf -v x %s 'a[$(touch PWNED)]'; echo $((x))",
        "mapfile -t x <<< 'a[$(touch PWNED)]'; echo $((x))",
        "getopts x 'a[$(touch PWNED)]'; echo $((OPTARG))",
        "for x in '$(touch PWNED)'; do echo ${x@P}; done",
    ],
)
def test_a_value_bash_evaluates_again_is_not_allowed(ws: Path, command: str) -> None:
    """Pin: a value set without an assignment (a loop variable, `read`, `printf -v`, `mapfile`, `getopts`) and
    evaluated as arithmetic, an array index, an indirect name or a prompt string runs its `$(..)`: asked under
    rules for the harmless commands that set and show it."""
    policy = allow_prefixes("echo", "read", "printf", "mapfile", "getopts", "[[", "break")
    assert not _allowed(ws, policy, command)


@pytest.mark.parametrize("command", ["{cp,evil,.bashrc}", "cp evil .bash{rc,_x}", "cp evil .git{,}/config"])
def test_brace_expansion_onto_a_protected_path_is_asked(ws: Path, command: str) -> None:
    """Pin: brace expansion makes words the text does not show (`{cp,evil,.bashrc}` is `cp evil .bashrc`)."""
    assert not _allowed(ws, allow_prefixes("cp"), command)
    assert not _allowed(ws, Policy.default().with_toml(EVERY_COMMAND), command)


# --- the file tools on /dev and /proc: pins ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"file_path": "/dev/fd/0"}),
        ("read_file", {"file_path": "fd/0"}),
        ("read_file", {"file_path": "environ"}),
        ("read_file", {"file_path": "selfroot/etc/passwd"}),
        ("write_file", {"file_path": "fd/1", "content": "x"}),
        ("write_file", {"file_path": "environ", "content": "x"}),
        ("edit_file", {"file_path": "environ", "old_string": "", "new_string": "x"}),
        ("list_dir", {"dir_path": "fd"}),
    ],
)
async def test_links_into_proc_lead_outside_the_workspace(ws: Path, tool: str, args: dict[str, Any]) -> None:
    """Pin: a link the model made to `/proc/self/fd`, `/proc/self/environ` or `/proc/self/root` is judged where
    it leads (outside), as `/dev/fd/0` is."""
    (ws / "fd").symlink_to("/proc/self/fd")
    (ws / "environ").symlink_to("/proc/self/environ")
    (ws / "selfroot").symlink_to("/proc/self/root")
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        [outcome] = await rt.run_batch([ToolCall("1", tool, args)])
    assert outcome.is_error
    assert "not in workspace" in outcome.response["error"]


async def test_the_workspace_through_proc_self_root_keeps_its_protected_paths(ws: Path) -> None:
    """Pin: `/proc/self/root/<ws>/.git/config` is `.git/config`, asked in auto_edit."""
    (ws / ".git").mkdir()
    path = f"/proc/self/root{ws}/.git/config"
    async with ToolRuntime(ws, approval_mode="auto_edit") as rt:
        [outcome] = await rt.run_batch([ToolCall("1", "write_file", {"file_path": path, "content": "x"})])
    assert outcome.is_error
    assert "protected path" in outcome.response["error"]
    assert not (ws / ".git" / "config").exists()


# --- the Rust toolchain's options that run a program ----------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "command"),
    [
        ("cargo tree", """cargo tree --config 'build.rustc-wrapper="./evil"'"""),
        ("cargo tree", "cargo tree --config x.toml"),
        ("cargo metadata", "cargo metadata --format-version 1 --config=build.rustc=./evil"),
        ("cargo", "cargo fetch -Zunstable-options"),
        ("rustc", "rustc -C linker=./evil x.rs"),
        ("rustc", "rustc -Clinker=./evil x.rs"),
        ("rustc", "rustc --codegen=link-arg=-fuse-ld=./evil x.rs"),
        ("rustc", "rustc -L . x.rs"),
        ("rustc", "rustc --extern m=./libm.so x.rs"),
        ("rustc", "rustc --sysroot=./sys x.rs"),
        ("rustc", "rustc @args x.rs"),
        ("rustc", "rustc +/ws/tc --version"),
        ("rustdoc", "rustdoc --test x.rs"),
        ("rustup", "rustup run /ws/tc cargo tree"),
        ("rustup", "rustup toolchain link x /ws/tc"),
        ("rustup", "rustup override set /ws/tc"),
    ],
)
def test_a_rust_tool_option_that_runs_a_program_is_asked(ws: Path, prefix: str, command: str) -> None:
    """SUCCEEDED before: allowed under a rule for the tool; the `cargo tree` one ran `./evil` (measured)."""
    assert not _allowed(ws, allow_prefixes(prefix), command)


@pytest.mark.parametrize(
    ("prefix", "command"),
    [
        ("cargo tree", "cargo tree -e normal"),
        ("cargo", "cargo fmt --check"),
        ("cargo", "cargo +nightly tree"),
        ("cargo", "cargo --config=x tree"),
        ("rustc", "rustc --version"),
        ("rustc", "rustc --edition 2021 -O x.rs"),
        ("rustup", "rustup show"),
        ("rustup", "rustup toolchain list"),
        ("rustup", "rustup --version"),
    ],
)
def test_the_rust_tools_plain_forms_stay_as_they_were(ws: Path, prefix: str, command: str) -> None:
    """Pin: the forms that run nothing are still allowed; `+toolchain` and a global `--config` on cargo were
    asked before (no known subcommand, no known global option)."""
    expected = "+" not in command and "--config" not in command
    assert _allowed(ws, allow_prefixes(prefix), command) is expected
