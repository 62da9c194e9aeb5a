"""Red team round 11: what the caller's policy and the tool runtime hold against a prompt-injected model.

Part 1, one policy on every backend: the Gemini CLI and Codex took no user policy, so a deny rule for their
subagent tools could not be written; where a backend does not show a call's arguments (ACP's permission requests
for reads and delegations), a rule that reads them must not be passed by (`Policy.evaluate(unseen=True)`). The
real binaries' behaviour is in tests/e2e/gemini_cli/test_gemini_cli_user_policy.py and
tests/e2e/codex/test_codex_user_policy.py. Part 2: attacks on the local tool runtime (each says whether it held).
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
import tracemalloc
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.codex.test_codex_launch_and_run import THREAD, app_server, finished
from tests.adapters.codex.test_codex_launch_and_run import run as codex_run
from tests.harness.raw_http import answering
from unified._adapters.codex._approvals import subagents_refused
from unified._adapters.gemini_cli._launch import Launch, never_asked_denials, policy_rules, user_rule_tools
from unified._redaction import run_secrets
from unified.testing import FakeAgentProcess
from unified.tools import Decision, Policy, ToolCall, ToolRuntime
from unified.types import ApprovalMode, ExecuteParams, HttpMcpServer, SseMcpServer

pytestmark = pytest.mark.anyio


def _user(text: str) -> Policy:
    return Policy.default().with_toml(text)


DENY_ENV_READS = _user(
    '[[rule]]\nname = "no-env"\ntoolName = "read_file"\nargsPattern = "\\\\.env"\ndecision = "deny"\n'
)


# --- one policy, arguments a backend does not show ------------------------------------------------------------


def test_a_read_whose_arguments_are_unseen_is_asked_under_a_rule_reading_them() -> None:
    """ACP shows no arguments for a read: evaluated on `{}`, a deny rule for `.env` matched nothing and the
    shipped read-only rule allowed the read (it could have been `.env`). Now it is a doubt: asked."""
    verdict = DENY_ENV_READS.evaluate("read_file", {}, "default", unseen=True)
    assert verdict.decision is Decision.ASK_USER
    assert verdict.rule is not None
    assert verdict.rule.name == "no-env"
    assert "does not show" in (verdict.doubt or "")


def test_seen_arguments_are_judged_as_before() -> None:
    assert DENY_ENV_READS.evaluate("read_file", {"file_path": "a.py"}, "default").decision is Decision.ALLOW
    assert DENY_ENV_READS.evaluate("read_file", {"file_path": ".env"}, "default").decision is Decision.DENY


def test_an_allow_rule_reading_arguments_does_not_allow_a_call_whose_arguments_are_unseen() -> None:
    policy = _user('[[rule]]\nname = "app"\ntoolName = "write_file"\nargsPattern = "app/"\ndecision = "allow"\n')
    assert policy.evaluate("write_file", {}, "default", unseen=True).decision is Decision.ASK_USER
    assert policy.evaluate("write_file", {"file_path": "app/x"}, "default").decision is Decision.ALLOW


async def test_the_runtime_decides_an_unseen_call_by_asking_and_nobody_answers(tmp_path: Path) -> None:
    runtime = ToolRuntime(tmp_path, policy=DENY_ENV_READS)
    try:
        decision = await runtime.decide(ToolCall("c1", "read_file", {}), unseen=True)
    finally:
        await runtime.aclose()
    assert (decision.decision, decision.rule) == ("deny", "no-env")


# --- the Gemini CLI's --policy file under a user policy ----------------------------------------------------------

DENY_SUBAGENTS = _user('[[rule]]\nname = "no-subagents"\ntoolName = "invoke_agent"\ndecision = "deny"\n')


def test_the_cli_never_asks_about_a_delegation_so_a_refusing_policy_denies_it_in_the_policy_file() -> None:
    assert never_asked_denials(DENY_SUBAGENTS) == {"invoke_agent": ("no-subagents", ("default", "plan", "yolo"))}
    assert never_asked_denials(Policy.default()) == {}
    assert never_asked_denials(None) == {}


def test_an_ask_rule_for_some_delegations_denies_them_where_it_holds() -> None:
    """Nobody can be asked about a delegation the CLI runs unasked: fail closed, in the rule's modes only."""
    policy = _user(
        '[[rule]]\nname = "ask-gen"\ntoolName = "invoke_*"\nargsPattern = "generalist"\n'
        'decision = "ask_user"\nmodes = ["yolo"]\n'
    )
    assert never_asked_denials(policy) == {"invoke_agent": ("ask-gen", ("yolo",))}


def test_user_rules_that_may_refuse_make_the_cli_ask_in_every_mode() -> None:
    assert user_rule_tools(DENY_ENV_READS) == ("read_file",)
    assert user_rule_tools(_user('[[rule]]\ntoolName = "edit_file"\ndecision = "ask_user"\n')) == ("replace",)
    assert user_rule_tools(_user('[[rule]]\ntoolName = "mcp__*"\ndecision = "deny"\n')) == ("*",)
    assert user_rule_tools(_user('[[rule]]\ntoolName = "read_file"\ndecision = "allow"\n')) == ()
    assert user_rule_tools(Policy.default()) == ()
    (asked,) = [r for r in tomllib.loads(policy_rules((), ("read_file",)))["rule"] if "caller" in r.get("name", "")]
    assert asked["modes"] == ["default", "autoEdit", "plan", "yolo"]
    assert asked["argsPattern"] == "."  # or the CLI's safe-command heuristics would turn the ask into an allow
    assert asked["priority"] > 380  # above the read-only allow


def _policy_file(policy: Policy, excluded_tools: tuple[str, ...] = ()) -> str:
    """The `--policy` file a gemini-cli launch with `policy` writes."""
    launch = Launch(
        binary=Path("/bin/true"),
        env={},
        model=None,
        fake_responses=None,
        fake_responses_strict=True,
        include_directories=(),
        excluded_tools=excluded_tools,
        policy=policy,
    )
    return Path(launch.policy_flags()[1]).read_text(encoding="utf-8")


def test_the_launch_writes_the_denial_into_the_policy_file() -> None:
    text = _policy_file(DENY_SUBAGENTS)
    (denial,) = [r for r in tomllib.loads(text)["rule"] if r.get("toolName") == "invoke_agent"]
    assert (denial["decision"], denial["name"]) == ("deny", "unified: no-subagents")
    assert "argsPattern" not in denial  # 0.61 in yolo runs a delegation past a deny rule with arguments


@pytest.mark.parametrize("mode", ["default", "auto_edit", "plan", "yolo"])
def test_codex_subagents_are_off_when_the_policy_may_refuse_them(mode: ApprovalMode) -> None:
    assert subagents_refused(DENY_SUBAGENTS, mode) == "no-subagents"
    assert subagents_refused(_user('[[rule]]\nname = "s"\ntoolName = "spawn_agent"\ndecision = "deny"\n'), mode) == "s"
    assert subagents_refused(Policy.default(), mode) is None


# --- part 2: bounded resources ----------------------------------------------------------------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the walk runs in a worker thread, not on the loop
async def test_a_glob_over_a_huge_directory_keeps_only_what_it_shows(tmp_path: Path) -> None:
    """HOLE: glob kept every hit (path and mtime) to sort them, though it shows 1,000: 300,000 matching entries
    added 170 MB to the process per call (measured; a turn's calls run at once, up to 1,000,000 entries each).
    Now the list is cut back to the newest 1,000 whenever it doubles. 20,000 hits: 8.9-10.2 MB traced before, 3.7 now
    (what remains is the walk's own); 40,000: ~21 MB before. 20,000 rather than 40,000: the traced walk of 40,000 took
    56 s on a loaded machine (the suite's workers beside it), past glob's own 30 s budget, which cut the list."""
    folder = tmp_path / "d"
    folder.mkdir()
    for i in range(20_000):
        os.close(os.open(folder / f"f{i:06d}", os.O_CREAT | os.O_WRONLY))
    runtime = ToolRuntime(tmp_path, approval_mode="yolo")
    try:
        # a first call untraced: what a first call allocates once (the worker thread, caches: 7.7 MB more under trio
        # in the unit tier) is no part of what a call holds; ten hits do it as well as the whole walk did
        await runtime.run_batch([ToolCall("warm", "glob", {"pattern": "d/f00000*"})])
        # pathlib interns every name it parses: with the names already interned (and kept), the interpreter's
        # table of interned strings does not grow during the call (in a worker that ran many tests, its resize
        # was one allocation of 7.5 MB, traced as the call's)
        interned = [sys.intern(name) for name in os.listdir(folder)]
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()  # a peak from before (tracing already on) is no part of this call's
            base = tracemalloc.get_traced_memory()[0]
            (outcome,) = await runtime.run_batch([ToolCall("c", "glob", {"pattern": "d/*"})])
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
    finally:
        await runtime.aclose()
    del interned
    output = outcome.response["output"]
    assert output.startswith('Found 20000 file(s) matching "d/*"')
    assert "[19000 more not shown; narrow the pattern]" in output
    assert output.count("\n") == 1001
    assert peak < 6_000_000


# --- part 2: secrets in error texts ------------------------------------------------------------------------------

QUERY_TOKEN = "mcp-query-token-0123456789"


@pytest.mark.parametrize("transport", ["sse", "http"])
async def test_an_mcp_servers_query_token_is_not_quoted_by_its_connection_error(tmp_path: Path, transport: str) -> None:
    """HOLE: an SSE server's URL with its credential in the query (`?token=`) was quoted whole by the warning
    of a failed start (`HTTPStatusError: Client error '401 Unauthorized' for url '...?token=...'`): the URL's
    query was no secret of the run, of the server or of a repr. Now a query parameter named like a credential
    (key, token, secret, password, auth, signature, session, ...) is one, everywhere the run's secrets are hidden."""
    with answering(401, b"no") as (base, _):
        server: HttpMcpServer | SseMcpServer = (SseMcpServer if transport == "sse" else HttpMcpServer)(
            name="s", url=f"{base}/mcp?page=2&access_token={QUERY_TOKEN}", timeout_s=10
        )
        runtime = ToolRuntime(tmp_path)
        try:
            (error,) = await runtime.connect_mcp([server])
        finally:
            await runtime.aclose()
    assert QUERY_TOKEN not in error.message
    assert error.message.startswith("MCP server 's' failed to start")
    assert QUERY_TOKEN not in repr(server)
    assert QUERY_TOKEN in run_secrets(ExecuteParams(prompt="p", mcp_servers=(server,)))
    assert "page=2" in repr(server)  # what is no credential stays readable


# --- part 2: attacks the defences held against (pinned) ---------------------------------------------------------


async def test_held_a_hard_link_to_a_file_outside_is_not_written_through(tmp_path: Path) -> None:
    """HELD: a hard link in the workspace to a file outside (made earlier by anyone): write_file replaces the link (a
    new file by rename), so the outside file is never changed, even in yolo; edit_file, which would read the outside
    file's text into the workspace, refuses it (round 26: a file with other names is no tool's to read)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("original\n")
    os.link(outside, ws / "h.txt")
    async with ToolRuntime(ws, approval_mode="yolo") as runtime:
        (wrote,) = await runtime.run_batch([ToolCall("1", "write_file", {"file_path": "h.txt", "content": "new\n"})])
        os.unlink(ws / "h.txt")
        os.link(outside, ws / "h.txt")
        args = {"file_path": "h.txt", "old_string": "original", "new_string": "edited"}
        (edited,) = await runtime.run_batch([ToolCall("2", "edit_file", args)])
    assert not wrote.is_error
    assert edited.is_error
    assert "hard links" in str(edited.response)
    assert outside.read_text() == "original\n"
    assert (ws / "h.txt").read_text() == "original\n"


@pytest.mark.parametrize("spelling", ["/proc/self/root{outside}", "/proc/self/cwd/../../{name}", "/dev/fd/0"])
async def test_held_proc_and_fd_spellings_of_a_path_outside_are_refused(tmp_path: Path, spelling: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    path = spelling.format(outside=outside, name=outside.name)
    async with ToolRuntime(ws, approval_mode="yolo") as runtime:
        (read,) = await runtime.run_batch([ToolCall("1", "read_file", {"file_path": path})])
    assert read.is_error
    assert "Path not in workspace" in read.response["error"]


async def test_held_hostile_names_neither_break_the_tools_nor_reach_past_their_bounds(tmp_path: Path) -> None:
    """HELD: a name of invalid UTF-8, a name with a newline, a name of 255 bytes and a file 40 directories of 200
    bytes deep (8,000 characters of path): each tool answers (the deep one: "Path too long", refused unread)."""
    (tmp_path / os.fsdecode(b"bad\xff\xfe.txt")).write_bytes(b"hello bad\n")
    (tmp_path / "two\nlines.txt").write_text("hello nl\n")
    (tmp_path / ("x" * 255)).write_text("hello long\n")
    fd = os.open(tmp_path, os.O_RDONLY)
    for _ in range(40):
        os.mkdir("d" * 200, dir_fd=fd)
        deeper = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(fd)
    deep = "/".join(["d" * 200] * 40) + "/f.txt"
    calls = [
        ToolCall("1", "list_dir", {"dir_path": "."}),
        ToolCall("2", "glob", {"pattern": "**/*"}),
        ToolCall("3", "search", {"query": "hello"}),
        ToolCall("4", "read_file", {"file_path": "bad\udcff\udcfe.txt"}),
        ToolCall("5", "write_file", {"file_path": deep, "content": "x"}),
    ]
    async with ToolRuntime(tmp_path, approval_mode="yolo") as runtime:
        listed, globbed, searched, read, wrote = await runtime.run_batch(calls)
    assert "'two\\nlines.txt'" in listed.response["output"]  # escaped: it cannot fake a line of the listing
    assert "Found 3 file(s)" in globbed.response["output"]
    assert "Found 3 match(es)" in searched.response["output"]
    assert read.response == {"output": "hello bad\n"}
    assert wrote.is_error
    assert "Path too long" in wrote.response["error"]


async def test_held_a_file_of_one_endless_line_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """HELD: 64 MiB without a newline: read_file answers a capped piece, search one capped match line."""
    (tmp_path / "one.txt").write_bytes(b"a" * (64 << 20))
    async with ToolRuntime(tmp_path, approval_mode="yolo") as runtime:
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            read, found = await runtime.run_batch(
                [ToolCall("1", "read_file", {"file_path": "one.txt"}), ToolCall("2", "search", {"query": "a$"})]
            )
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
    assert len(read.response["output"]) < 100_000
    assert len(found.response["output"]) < 100_000
    assert peak < 32 * 1024 * 1024


DENY_RM = _user('[[rule]]\nname = "no-rm"\ntoolName = "run_shell_command"\ncommandPrefix = "rm"\ndecision = "deny"\n')


@pytest.mark.parametrize(
    "command",
    [
        "x='$(rm -rf victim)'; echo \"${x@P}\"",  # prompt expansion runs the command substitution (bash 5, measured)
        "PS4='$(rm -rf victim)'; set -x; true",  # xtrace expands PS4 as a prompt before each command
        "{rm,-rf,victim}",  # brace expansion makes the command word
        "e{cho,} hi; {r,}m -rf victim",
        'x=(rm -rf victim); "${x[@]}"',
        'set -- rm -rf victim; "$@"',
    ],
)
def test_held_a_yolo_deny_rule_is_not_passed_by_expansions_bash_makes_at_run_time(command: str) -> None:
    """HELD: each is asked (a doubt), never allowed by yolo past the deny rule for rm."""
    assert DENY_RM.evaluate("run_shell_command", {"command": command}, "yolo").decision is Decision.ASK_USER


def test_a_policy_without_the_shipped_read_only_row_makes_the_cli_ask_about_reads() -> None:
    """The CLI's `--policy` file let it run its read-only tools unasked on the shipped table's word; a caller's
    policy without that row (`Policy().with_toml`) allows no read unasked, so they are asked (fails on the code
    before: the user rule names only the shell)."""
    policy = Policy().with_toml('[[rule]]\ntoolName = "run_shell_command"\ndecision = "deny"\n')
    assert user_rule_tools(policy) == ("glob", "grep_search", "list_directory", "read_file", "run_shell_command")


def test_names_beyond_the_bmp_reach_the_clis_policy_file_as_toml_can_read_them() -> None:
    """JSON's `\\ud83e\\udd16` escapes are no TOML: the CLI dropped each such rule (an exclusion, a denial)."""
    policy = _user('[[rule]]\nname = "no \U0001f916"\ntoolName = "invoke_agent"\ndecision = "deny"\n')
    text = _policy_file(policy, excluded_tools=("mcp_\U0001f916_x",))
    assert "\\ud83e" not in text
    names = [rule.get("toolName") for rule in tomllib.loads(text)["rule"]]
    assert "mcp_\U0001f916_x" in names
    assert "invoke_agent" in names


async def test_a_codex_mcp_approval_naming_no_tool_is_asked_under_a_rule_for_one_of_the_servers_tools(
    tmp_path: Path,
) -> None:
    """Codex's MCP approval may carry only the arguments (`_meta.tool_params`, the tool's name in its prose): read as
    `mcp__<server>__`, it matched no user rule for that server's tools, and yolo's table allowed it past a user deny
    rule for `mcp__srv__delete_repo`. Now a user rule for any tool of the server may apply: asked, and declined with
    nobody to answer, naming the rule."""
    answers: list[dict[str, Any]] = []
    request = {
        "id": 99,
        "method": "mcpServer/elicitation/request",
        "params": {
            "threadId": THREAD,
            "serverName": "srv",
            "message": "Allow the srv tool to run?",
            "_meta": {"codex_approval_kind": "mcp_tool_call", "tool_params": {"repo": "x"}},
        },
    }

    def after_turn(process: object) -> list[str]:
        return [json.dumps(request), *finished()]

    inner = app_server(after_turn)

    def start(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> FakeAgentProcess:
        process: FakeAgentProcess = inner(argv, cwd, env)
        answer = process.handler
        assert answer is not None

        def record(line: str) -> Any:
            message = json.loads(line)
            if message.get("id") == 99 and "method" not in message:
                answers.append(message)
            return answer(line)

        process.handler = record
        return process

    policy = _user('[[rule]]\nname = "no-delete"\ntoolName = "mcp__srv__delete_repo"\ndecision = "deny"\n')
    await codex_run(tmp_path, start, {"policy": policy}, approval_mode="yolo")
    assert [a["result"]["action"] for a in answers] == ["decline"]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("list_dir", {"ignore": ["*" * 100_000]}),
        ("list_dir", {"ignore": ["{" * 5_000 + "a" + "}" * 5_000]}),
        ("glob", {"pattern": "{" * 5_000 + "f1" + "}" * 5_000}),
        ("glob", {"pattern": "*a" * 20_000}),
    ],
)
async def test_held_hostile_glob_patterns_are_answered(tmp_path: Path, tool: str, args: dict[str, Any]) -> None:
    """HELD: patterns of 100,000 stars, 5,000 nested braces or 20,000 `*a` compile through the bounded regex engine
    (no recursion, no backtracking) and the call answers (a list, or the pattern's error), never a crash."""
    for i in range(20):
        (tmp_path / f"f{i}").write_text("x")
    async with ToolRuntime(tmp_path, approval_mode="yolo") as runtime:
        (outcome,) = await runtime.run_batch([ToolCall("1", tool, args)])
    text = json.dumps(outcome.response)
    assert "RecursionError" not in text
    assert "internal" not in text.lower()
    assert set(outcome.response) <= {"output", "error"}
