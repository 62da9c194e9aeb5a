"""Red team, round 5: the shell tool and its policy (network redirections, resource bounds, commands
that run commands under an allow rule for a harmless one).

Each section says what the attack was and what happened before its fix (every test here fails on
the code before that fix):

- a redirection that opens a socket, under an allow rule for a reader: `cat < /dev/tcp/1.2.3.4/80`,
  `true < /dev/udp/h/53`, `head -c0 < /dev/tcp/..` (with quotes, escapes, `$'..'`, `//dev/./tcp`, in
  a subshell, a group, a function body, a loop, after a here-string, inside `bash -c`), and one whose
  target is only known at run time (`cat < /dev/${x}/h/80`, `cat < "$f"`): allowed, as only writes
  were looked at (a read was no reason to doubt), and the e2e case connected to a listener; "allow
  always" on `cat < notes.txt` and an `argsPattern` allow rule for `cat ` covered them too; worked;
- `$(< /dev/tcp/h/80)` and `$(> f)` (tree-sitter-bash gives the substitution the redirection with no
  command): under an allow rule for `echo`, `echo $(> .bashrc)` emptied `.bashrc` with no prompt
  and `echo $(< /dev/tcp/..)` connected; worked;
- `man -P CMD` / `--pager=CMD` / `-H` / `-C FILE` under an allow rule for `man`: allowed (man runs
  the pager it is given: any command);
- less's key files: `less --lesskey-src=keys x` (or `-k`) under an allow rule for `less`, with a
  `keys` the model wrote (`#env` / `LESSOPEN=|touch PWNED; cat %s`), ran the command (e2e), and
  `cp keys ~/.lesskey` under a rule for cp was allowed: every later `less` runs it; worked;
- go: `go vet -vettool=./evil`, `go build -toolexec=./evil`, `go test -exec ./evil` under rules for
  those subcommands, and `go env -w GOFLAGS=-toolexec=./evil` under a rule for `go env` (go's
  environment file then runs `./evil` in every later allowed build; `cp x ~/.config/go/env` the
  same): allowed;
- `git log|diff|show --output=FILE` under an allow rule for `git diff`: allowed, and it overwrites any
  file with the diff (`--output=src/main.py`), where `git diff > src/main.py` is asked;
- words after a redirection (`git >/dev/null push --force`, `rm 2>/dev/null -rf .git`,
  `cp >/dev/null evil ~/.bashrc`, `git <<EOF push`): tree-sitter-bash files them under the
  redirection (as more "destinations"), and the parse dropped them: a yolo deny rule for `git push`
  let `git >/dev/null push --force` through, and under allow rules for `rm`/`cp` the protected-path
  check never saw `.git` or `.bashrc` (the e2e case deleted `.git`); and a target cut by a line
  continuation (`>.bash\\<newline>rc`, which bash writes as `.bashrc`) was read as its first
  piece only (`.bash`); `export >/dev/null BASH_ENV=./evil; bash -c true` was read as `export`
  alone and allowed under rules for `export` and `bash`; worked;
- a closing redirection and a named descriptor: `git 3>&- push` (tree-sitter-bash takes `push` for
  the target of `>&-`, which has none) and `git {fd}>/dev/null push`, `x=1 {fd}>/dev/null git push`
  (bash's named descriptor read as a word): a yolo deny rule for `git push` let them through;
- resource bounds: a command's processes could allocate all of the host's memory (no bound but the
  OOM killer) and fork without limit (the user's RLIMIT_NPROC, 96,369 here); a command writing for
  ever (`yes`, a loop printing) ran for ever, as every byte restarts the inactivity timeout.
"""

from __future__ import annotations

import os
import resource
import shlex
import shutil
import socket
import sys
from pathlib import Path

import anyio
import pytest

from tests.security.rules import allow_prefixes
from unified import _limits as limits
from unified.tools import Policy, ToolCall, ToolRuntime, _shell
from unified.tools import _shell_syntax as syntax
from unified.tools._policy import session_rule

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet_git")]


def _verdict(policy: Policy, command: str) -> str:
    return policy.evaluate("run_shell_command", {"command": command}, "default").decision.value


# --- redirections that open a socket -------------------------------------------------------------

NETWORK = [
    "cat </dev/tcp/1.2.3.4/80",
    "cat < /dev/tcp/1.2.3.4/80",
    "cat 0</dev/tcp/1.2.3.4/80",
    "cat 3</dev/tcp/1.2.3.4/80",
    "true </dev/udp/10.0.0.1/53",
    "head -c0 </dev/tcp/example.com/443",
    "cat </dev/tc''p/h/80",
    'cat <"/dev/tcp/h/80"',
    "cat <$'/dev/tcp/h/80'",
    "cat <$'\\x2fdev/tcp/h/80'",
    "cat <\\/dev/tcp/h/80",
    "cat <//dev/tcp/h/80",
    "cat </dev/./tcp/h/80",
    "cat </dev/../dev/tcp/h/80",
    "cat </DEV/TCP/h/80",
    "(cat </dev/tcp/h/80)",
    "{ cat; } </dev/tcp/h/80",
    "if true; then cat; fi </dev/tcp/h/80",
    "cat <<<x </dev/tcp/h/80",
    "cat </dev/tcp/h/80 | cat",
    "true; </dev/tcp/h/80",
    "bash -c 'cat </dev/tcp/h/80'",
    "eval 'cat </dev/tcp/h/80'",
    "cat() { true; } </dev/tcp/h/80; cat",
    # a target only known at run time may be a socket
    "cat </dev/${x}/h/80",
    'cat < "$f"',
    "cat </dev/tcp/{a,b}/80",
    "cat <~/x",
    # bash reads the file itself for `$(< f)`, with no command to carry the redirection
    "echo $(</dev/tcp/h/80)",
    'echo "$(</dev/tcp/h/80)"',
    "echo `</dev/tcp/h/80`",
]


@pytest.mark.parametrize("command", NETWORK)
def test_a_redirection_that_opens_a_socket_is_not_covered_by_an_allow_rule(command: str) -> None:
    """SUCCEEDED before: allowed under a rule for the reader; bash connected to the host."""
    assert _verdict(allow_prefixes("cat", "true", "head", "echo", "bash", "eval"), command) == "ask_user"


def test_a_socket_shows_in_the_parse_and_plain_reads_stay_allowed() -> None:
    """What the prompt shows and what the allow rule still covers (a file, /dev/null, a duplication)."""
    [part] = syntax.parse("cat </dev/tc''p/h/80")
    assert part.opens == ("/dev/tcp/h/80",)
    assert part.display() == "cat < /dev/tcp/h/80"
    policy = allow_prefixes("cat", "echo")
    for command in ("cat < notes.txt", 'cat < "notes.txt"', "cat </dev/null", "echo hi 2>&1", "cat <&0"):
        assert _verdict(policy, command) == "allow", command


def test_allow_always_on_a_plain_read_does_not_cover_a_socket() -> None:
    """SUCCEEDED before: `cat < /dev/tcp/h/80` had the shape of the approved `cat < notes.txt`."""
    rule = session_rule("run_shell_command", {"command": "cat < notes.txt"}, "default")
    policy = Policy.default().with_rules([rule])
    assert _verdict(policy, "cat < notes.txt") == "allow"
    assert _verdict(policy, "cat < /dev/tcp/h/80") == "ask_user"


def test_an_args_pattern_allow_rule_does_not_cover_a_socket() -> None:
    """SUCCEEDED before: `argsPattern = '"command": "cat\\b'` allowed `cat < /dev/tcp/h/80`."""
    rule = '[[rule]]\ntoolName = "run_shell_command"\nargsPattern = \'"command": "cat\\b\'\ndecision = "allow"\n'
    policy = Policy.default().with_toml(rule + "priority = 100\n")
    assert _verdict(policy, "cat notes.txt") == "allow"
    assert _verdict(policy, "cat < /dev/tcp/h/80") == "ask_user"


@pytest.mark.e2e  # runs bash against a listener on 127.0.0.1
@pytest.mark.parametrize("template", ["head -c0 </dev/tcp/127.0.0.1/{port}", "echo $(</dev/tcp/127.0.0.1/{port})"])
async def test_e2e_an_allowed_reader_does_not_connect(ws: Path, template: str) -> None:
    """SUCCEEDED before: under a rule for `head` (or `echo`) bash connected; the listener's backlog held it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        command = template.format(port=listener.getsockname()[1])
        async with ToolRuntime(ws, policy=allow_prefixes("head", "echo"), shell_timeout_s=30) as rt:
            [outcome] = await rt.run_batch([ToolCall("1", "run_shell_command", {"command": command})])
        assert outcome.decision is not None
        assert outcome.decision.decision == "deny"  # asked, and nobody can answer
        with pytest.raises(BlockingIOError):  # a connection made would be in the backlog by now
            listener.accept()


@pytest.mark.parametrize("command", ["echo $(> notes.txt)", "echo $(2> notes.txt)", "x=$(> notes.txt)"])
def test_a_bare_redirection_in_a_substitution_is_a_write(command: str) -> None:
    """SUCCEEDED before: allowed under a rule for `echo`; bash created or emptied the file."""
    assert _verdict(allow_prefixes("echo"), command) == "ask_user"
    assert any(part.writes == ("notes.txt",) for part in syntax.parse(command))


@pytest.mark.e2e  # runs bash
async def test_e2e_an_allowed_echo_does_not_empty_a_protected_file(ws: Path) -> None:
    """SUCCEEDED before: `echo $(> .bashrc)` under a rule for `echo` emptied `.bashrc`."""
    (ws / ".bashrc").write_text("alias ls='ls -F'\n")
    async with ToolRuntime(ws, policy=allow_prefixes("echo")) as rt:
        [outcome] = await rt.run_batch([ToolCall("1", "run_shell_command", {"command": "echo $(> .bashrc)"})])
    assert outcome.decision is not None
    assert outcome.decision.decision == "deny"
    assert (ws / ".bashrc").read_text() == "alias ls='ls -F'\n"


# --- programs that run a command their options name ------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "man -P 'touch PWNED' ls",
        "man -Ptouch ls",
        "man --pager=./evil ls",
        "man --pag=./evil ls",
        "man -aP x ls",
        "man -H ls",
        "man --html=./evil ls",
        "man -C evil.conf ls",
    ],
)
async def test_man_with_a_pager_or_browser_is_asked_under_a_rule_for_man(ws: Path, command: str) -> None:
    """SUCCEEDED before: allowed; man runs the pager it is given (`sh -c`), so any command."""
    async with ToolRuntime(ws, policy=allow_prefixes("man")) as rt:
        decision = await rt.decide(ToolCall("1", "run_shell_command", {"command": command}))
        plain = await rt.decide(ToolCall("2", "run_shell_command", {"command": "man 5 crontab"}))
    assert decision.decision == "deny"
    assert decision.rule == "protected-paths"
    assert plain.decision == "allow"


@pytest.mark.parametrize(
    ("prefix", "command", "target"),
    [
        ("git diff", "git diff --output=src/main.py", "src/main.py"),
        ("git diff", "git diff --output src/main.py", "src/main.py"),
        ("git diff", "git diff --outp=src/main.py", "src/main.py"),
        ("git log", "git log -p --output=README.md", "README.md"),
        ("git show", "git show HEAD --output=x.py", "x.py"),
        ("git diff", 'git diff --output="$F"', "?"),
    ],
)
def test_git_output_is_a_write(prefix: str, command: str, target: str) -> None:
    """SUCCEEDED before: allowed under a rule for the reading subcommand; git overwrote the file."""
    assert _verdict(allow_prefixes(prefix), command) == "ask_user"
    [part] = syntax.parse(command)
    assert part.writes == (target,)
    assert _verdict(allow_prefixes(prefix), f"{command.split(' --')[0]} -- --output=x") == "allow"  # a path after --


# --- resource bounds -------------------------------------------------------------------------------


def _capability(bit: int) -> bool:
    """Whether this process holds a capability (CAP_SYS_ADMIN 21, CAP_SYS_RESOURCE 24)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return os.geteuid() == 0
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> bit & 1)
    return os.geteuid() == 0


CAN_RAISE_LIMITS = _capability(24)
SPARED_FROM_NPROC = _capability(21) or CAN_RAISE_LIMITS
PYTHON = shlex.quote(sys.executable)


async def _run(ws: Path, command: str) -> str:
    async with ToolRuntime(ws, approval_mode="yolo", shell_timeout_s=60) as rt:
        [outcome] = await rt.run_batch([ToolCall("1", "run_shell_command", {"command": command})])
    assert not outcome.is_error, outcome.response
    return str(outcome.response["output"])


@pytest.mark.e2e  # runs bash and python
async def test_e2e_an_allocation_past_the_bound_fails_and_the_result_says_why(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: a process of a command could allocate any amount (512 MiB here, all of it)."""
    monkeypatch.setattr(limits, "SHELL_MAX_MEMORY_BYTES", 256 * 1024 * 1024)
    output = await _run(ws, f"{PYTHON} -c 'b = bytearray(512 << 20); print(\"got\", len(b))'")
    assert "MemoryError" in output
    assert "got" not in output
    assert "Limits: each process of a command may allocate 256 MiB" in output
    small = await _run(ws, f"{PYTHON} -c 'b = bytearray(64 << 20); print(\"got\", len(b))'")
    assert "got 67108864" in small
    assert "Limits:" not in small


@pytest.mark.e2e  # runs bash and python
@pytest.mark.skipif(CAN_RAISE_LIMITS, reason="a process with CAP_SYS_RESOURCE may raise a hard limit")
async def test_e2e_a_command_cannot_lift_the_memory_bound(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: there was no bound to lift."""
    monkeypatch.setattr(limits, "SHELL_MAX_MEMORY_BYTES", 256 * 1024 * 1024)
    lift = "ulimit -d unlimited; ulimit -HSd unlimited; prlimit --pid $$ --data=unlimited 2>/dev/null; "
    output = await _run(ws, f"{lift}{PYTHON} -c 'b = bytearray(512 << 20); print(\"got\", len(b))'")
    assert "MemoryError" in output
    assert "got" not in output


@pytest.mark.e2e  # runs bash
@pytest.mark.skipif(
    resource.getrlimit(resource.RLIMIT_NPROC)[1] not in (resource.RLIM_INFINITY,)
    and resource.getrlimit(resource.RLIMIT_NPROC)[1] < 1000,
    reason="the host's own process limit is tighter",
)
async def test_e2e_the_process_bound_is_a_hard_limit_of_the_command(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: a command inherited the user's limit (96,369 here, often unlimited): a fork
    bomb's forks did not fail."""
    monkeypatch.setattr(limits, "SHELL_MAX_PROCESSES", 1000)
    monkeypatch.setattr(_shell, "_tasks_now", lambda: 0, raising=False)
    output = await _run(ws, "ulimit -Hu; ulimit -Su")
    assert output.splitlines()[0] == "Output: 1000"
    assert output.splitlines()[1] == "1000"


@pytest.mark.e2e  # runs bash and python
@pytest.mark.skipif(SPARED_FROM_NPROC, reason="the kernel does not apply RLIMIT_NPROC to this process")
async def test_e2e_forks_past_the_process_bound_fail(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: all 300 forks of the loop succeeded (a fork bomb's would too)."""
    monkeypatch.setattr(limits, "SHELL_MAX_PROCESSES", 50)
    script = (
        "import os\n"
        "r, w = os.pipe()\n"
        "made = 0\n"
        "try:\n"
        "    while made < 300:\n"
        "        if os.fork() == 0:\n"
        "            os.close(w); os.read(r, 1); os._exit(0)\n"
        "        made += 1\n"
        "except OSError as exc:\n"
        "    print('stopped', made, exc)\n"
        "    raise SystemExit(1)\n"
        "print('made', made)\n"
    )
    output = await _run(ws, f"{PYTHON} -c {shlex.quote(script)}")
    assert "stopped" in output
    assert "made 300" not in output
    assert "Limits:" in output


@pytest.mark.e2e  # runs bash
async def test_e2e_a_command_that_never_stops_writing_is_stopped(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: output restarts the inactivity timeout, so the loop ran for ever (the guard
    below ends the test then)."""
    monkeypatch.setattr(limits, "SHELL_MAX_RUN_S", 0.5)
    async with ToolRuntime(ws, approval_mode="yolo", shell_timeout_s=60) as rt:
        with anyio.fail_after(120):  # a guard for the code before the fix, not a measurement
            [outcome] = await rt.run_batch(
                [
                    ToolCall(
                        "1", "run_shell_command", {"command": "echo pid=$$; while :; do echo tick; sleep 0.05; done"}
                    )
                ]
            )
    assert outcome.is_error
    error = outcome.response["error"]
    assert "Command was automatically cancelled because it ran longer than 0.5 seconds" in error
    assert "its processes were killed" in error
    pid = int(error.split("pid=", 1)[1].split()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.parametrize("command", ["git diff $(echo --output=src/main.py)", "git diff $OPTS", "git log `cat opts`"])
def test_a_git_word_only_known_at_run_time_may_be_its_output_option(command: str) -> None:
    """SUCCEEDED before: allowed under rules for `git diff`/`git log` and `echo`/`cat`."""
    assert _verdict(allow_prefixes("git diff", "git log", "echo", "cat"), command) == "ask_user"


# --- words after a redirection ----------------------------------------------------------------------


def _deny_git_push() -> Policy:
    rule = '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "git push"\ndecision = "deny"\npriority = 100\n'
    return Policy.default().with_toml(rule)


@pytest.mark.parametrize(
    "command",
    [
        "git >/dev/null push --force",
        "git 2>/dev/null push",
        "git 2>&1 >/dev/null push --force",
        "git >&2 push",
        "! git >/dev/null push",
        "time git >/dev/null push",
        "x=1 git >/dev/null push",
        "git >/dev/null push | cat",
        "git <<EOF push\nx\nEOF",
        "git <<EOF >/dev/null push\nx\nEOF",
    ],
)
def test_a_yolo_deny_rule_sees_the_words_after_a_redirection(command: str) -> None:
    """SUCCEEDED before: allowed in yolo mode (the parse read `git` alone)."""
    verdict = _deny_git_push().evaluate("run_shell_command", {"command": command}, "yolo")
    assert verdict.decision.value == "deny"


def test_the_words_after_a_redirection_are_the_commands_in_order() -> None:
    [part] = syntax.parse("git >x a 2>y b")
    assert part.words == ("git", "a", "b")
    assert part.writes == ("x", "y")
    # a continuation glued inside a word also makes the command unknown (round 10); the part still reads it
    [part] = [p for p in syntax.parse("echo x >.bash\\\nrc") if p.unknown is None]
    assert part.writes == (".bashrc",)
    [part] = [p for p in syntax.parse("true </dev\\\n/tcp/h/80") if p.unknown is None]
    assert part.opens == ("/dev/tcp/h/80",)


@pytest.mark.parametrize("command", ["{ echo; } > a push", "f() { :; } > a b"])
def test_words_after_a_compound_commands_redirection_are_unknown(command: str) -> None:
    """bash refuses them (a syntax error); the grammar accepted them and the parse dropped them."""
    assert any(part.unknown for part in syntax.parse(command))


@pytest.mark.parametrize(
    ("prefix", "command"),
    [
        ("rm", "rm 2>/dev/null -rf .git"),
        ("rm", "rm >/dev/null -rf .git/hooks"),
        ("cp", "cp >/dev/null evil .bashrc"),
        ("cp", "cp 2>&1 >/dev/null evil .envrc"),
        ("mv", "mv </dev/null evil .git/hooks/pre-commit"),
    ],
)
async def test_an_allowed_writer_with_its_target_after_a_redirection_is_asked(
    ws: Path, prefix: str, command: str
) -> None:
    """SUCCEEDED before: allowed; the protected-path check saw `rm`, `cp` or `mv` with no argument."""
    async with ToolRuntime(ws, policy=allow_prefixes(prefix)) as rt:
        decision = await rt.decide(ToolCall("1", "run_shell_command", {"command": command}))
    assert decision.decision == "deny"
    assert decision.rule == "protected-paths"


@pytest.mark.parametrize("command", ["echo x >.bash\\\nrc", "echo x >.profil\\\ne"])
async def test_a_target_cut_by_a_line_continuation_is_judged_whole(ws: Path, command: str) -> None:
    """SUCCEEDED before: under a rule allowing every shell command, the write was judged as `.bash`
    (no protected name) and allowed; bash wrote `.bashrc`."""
    rule = '[[rule]]\ntoolName = "run_shell_command"\ndecision = "allow"\npriority = 100\n'
    async with ToolRuntime(ws, policy=Policy.default().with_toml(rule)) as rt:
        decision = await rt.decide(ToolCall("1", "run_shell_command", {"command": command}))
    assert decision.decision == "deny"
    assert decision.rule == "protected-paths"


@pytest.mark.e2e  # runs bash and rm
async def test_e2e_an_allowed_rm_does_not_delete_git_behind_a_redirection(ws: Path) -> None:
    """SUCCEEDED before: `rm 2>/dev/null -rf .git` under a rule for `rm` deleted the repository."""
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "build").mkdir()
    async with ToolRuntime(ws, policy=allow_prefixes("rm")) as rt:
        outcomes = await rt.run_batch(
            [
                ToolCall("1", "run_shell_command", {"command": "rm 2>/dev/null -rf .git"}),
                ToolCall("2", "run_shell_command", {"command": "rm 2>/dev/null -rf build"}),
            ]
        )
    assert [o.decision.decision for o in outcomes if o.decision] == ["deny", "allow"]
    assert (ws / ".git" / "HEAD").exists()
    assert not (ws / "build").exists()


# --- less's key files --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "less --lesskey-src=keys x",
        "less --lesskey-s=keys x",
        "less -k keys x",
        "less -Nkkeys x",
        "less --lesskey-file=k x",
    ],
)
async def test_less_with_a_key_file_is_asked_under_a_rule_for_less(ws: Path, command: str) -> None:
    """SUCCEEDED before: allowed; a key file the model wrote (`#env` / `LESSOPEN=|cmd %s`) made less
    run its command (tried: less 590 ran `touch`)."""
    async with ToolRuntime(ws, policy=allow_prefixes("less")) as rt:
        decision = await rt.decide(ToolCall("1", "run_shell_command", {"command": command}))
        plain = await rt.decide(ToolCall("2", "run_shell_command", {"command": "less -N x"}))
    assert decision.decision == "deny"
    assert decision.rule == "protected-paths"
    assert plain.decision == "allow"


@pytest.mark.parametrize("name", [".lesskey", ".less", ".config/lesskey", ".config/less", ".lessfilter"])
async def test_a_copy_onto_less_start_up_files_is_asked(ws: Path, name: str) -> None:
    """SUCCEEDED before: allowed under a rule for cp; less reads `~/.lesskey` at every start and runs
    the `LESSOPEN` command its `#env` section sets (tried: less 590)."""
    async with ToolRuntime(ws, policy=allow_prefixes("cp")) as rt:
        decision = await rt.decide(ToolCall("1", "run_shell_command", {"command": f"cp keys /home/u/{name}"}))
    assert decision.decision == "deny"
    assert decision.rule == "protected-paths"


@pytest.mark.e2e  # runs bash and less
async def test_e2e_an_allowed_less_does_not_run_a_key_files_command(ws: Path) -> None:
    """SUCCEEDED before: under a rule for `less`, `less --lesskey-src=keys x` ran `touch PWNED`."""
    if shutil.which("less") is None:
        pytest.skip("needs less")
    (ws / "x").write_text("hi\n")
    (ws / "keys").write_text(f"#env\nLESSOPEN=|touch {ws}/PWNED; cat %s\n")
    async with ToolRuntime(ws, policy=allow_prefixes("less")) as rt:
        [outcome] = await rt.run_batch([ToolCall("1", "run_shell_command", {"command": "less --lesskey-src=keys x"})])
    assert outcome.decision is not None
    assert outcome.decision.decision == "deny"
    assert not (ws / "PWNED").exists()


# --- go's options that run a program -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "command"),
    [
        ("go vet", "go vet -vettool=./evil ./..."),
        ("go vet", "go vet -vettool ./evil ./..."),
        ("go vet", "go vet --vettool=./evil ./..."),
        ("go build", "go build -toolexec=./evil ."),
        ("go test", "go test -exec ./evil ./..."),
        ("go env", "go env -w GOFLAGS=-toolexec=./evil"),
        ("go env", "go env -w=true CC=./evil"),
        ("cp", "cp x /home/u/.config/go/env"),
    ],
)
async def test_go_running_a_program_it_is_given_is_asked(ws: Path, prefix: str, command: str) -> None:
    """SUCCEEDED before: allowed under a rule for the subcommand (or for cp)."""
    async with ToolRuntime(ws, policy=allow_prefixes(prefix)) as rt:
        decision = await rt.decide(ToolCall("1", "run_shell_command", {"command": command}))
        plain = await rt.decide(
            ToolCall("2", "run_shell_command", {"command": "go build -v -race ./..." if prefix != "cp" else "cp x y"})
        )
    assert decision.decision == "deny"
    assert decision.rule == "protected-paths"
    assert plain.decision == ("allow" if prefix in ("go build", "cp") else "deny")


# --- closing redirections and named descriptors -----------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["git 3>&- push", "git >&- push", "git {fd}>/dev/null push", "x=1 {fd}>/dev/null git push"],
)
def test_a_yolo_deny_rule_sees_past_a_closed_or_named_descriptor(command: str) -> None:
    """SUCCEEDED before: allowed in yolo mode; bash ran `git push`."""
    verdict = _deny_git_push().evaluate("run_shell_command", {"command": command}, "yolo")
    assert verdict.decision.value == "deny"


def test_a_named_descriptor_sets_its_variable() -> None:
    """`{fd}>f` sets fd (an allow rule does not cover a command that sets a variable); `{PATH}>f` sets PATH."""
    [part] = syntax.parse("git {fd}>/dev/null push")
    assert part.words == ("git", "push")
    assert part.assigns == ("fd",)
    assert any(p.unknown for p in syntax.parse("true {PATH}>/dev/null"))


@pytest.mark.parametrize(
    "command",
    ["export >/dev/null BASH_ENV=./evil; bash -c true", "declare 2>/dev/null -x PATH=.; true", "unset >/dev/null x"],
)
def test_a_declaration_with_its_words_after_a_redirection_is_asked(command: str) -> None:
    """SUCCEEDED before: allowed under rules for `export`/`declare`/`unset` and `true` (the parse read
    `export` alone); bash set BASH_ENV and the next bash ran ./evil."""
    assert _verdict(allow_prefixes("export", "declare", "unset", "true", "bash"), command) == "ask_user"


# --- a deny rule past the program's own options -----------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "git -C . push --force",
        "git --no-pager push",
        "git -c core.sshCommand=ssh push",
        "git -c user.name=x -C /tmp --no-pager push origin",
        "git --git-dir=.git --work-tree=. push",
        "GIT=1 git -P push",
        "git -C push push",
        "sudo git -C . push",
        "git -C . push | cat",
    ],
)
def test_a_deny_rule_sees_past_the_programs_own_options(command: str) -> None:
    """SUCCEEDED before: allowed in yolo mode, a deny rule for `git push` compared the word after `git` alone."""
    verdict = _deny_git_push().evaluate("run_shell_command", {"command": command}, "yolo")
    assert verdict.decision.value == "deny"


@pytest.mark.parametrize(
    "command",
    ["git log --grep push", "git commit -m push", "git -C . status", "git -C . log -- push", "git pushy"],
)
def test_a_deny_rule_past_options_still_names_one_subcommand(command: str) -> None:
    verdict = _deny_git_push().evaluate("run_shell_command", {"command": command}, "yolo")
    assert verdict.decision.value == "allow"


def test_a_run_time_word_among_the_options_may_be_the_subcommand() -> None:
    verdict = _deny_git_push().evaluate("run_shell_command", {"command": 'git -C . "$x"'}, "yolo")
    assert verdict.decision.value != "allow"


# --- the PATH of the commands, not of unified ------------------------------------------------------


async def test_a_write_into_a_directory_of_the_shell_envs_path_is_asked(ws: Path) -> None:
    """SUCCEEDED before: a runtime whose `shell_env` puts a workspace `tools/` first on PATH took a new `git` there
    unasked (write_file in auto_edit, or `cp` under a rule for cp): the check read unified's own PATH, not the one
    the commands run with."""
    path = f"{ws / 'tools'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    (ws / "tools").mkdir()
    async with ToolRuntime(ws, approval_mode="auto_edit", shell_env={"PATH": path}) as rt:
        [written] = await rt.run_batch([ToolCall("1", "write_file", {"file_path": "tools/git", "content": "x\n"})])
    assert written.is_error
    assert "a directory of PATH" in written.response["error"]
    assert not (ws / "tools" / "git").exists()
    async with ToolRuntime(ws, policy=allow_prefixes("cp"), shell_env={"PATH": path}) as rt:
        decision = await rt.decide(ToolCall("2", "run_shell_command", {"command": "cp evil tools/git"}))
    assert decision.decision == "deny"
    assert decision.rule == "protected-paths"
