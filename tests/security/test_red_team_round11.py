"""Red team round 11: what the caller's policy and the tool runtime hold against a prompt-injected model.

Part 1, one policy on every backend: the Gemini CLI and Codex took no user policy, so a deny rule for their
subagent tools could not be written; where a backend does not show a call's arguments (ACP's permission requests
for reads and delegations), a rule that reads them must not be passed by (`Policy.evaluate(unseen=True)`). The
real binaries' behaviour is in tests/e2e/gemini_cli/test_gemini_cli_user_policy.py and
tests/e2e/codex/test_codex_user_policy.py. Part 2: attacks on the local tool runtime (each says whether it held).
"""

from __future__ import annotations

import os
import tomllib
import tracemalloc
from pathlib import Path

import pytest

from tests.harness.raw_http import answering
from unified._adapters.codex._approvals import subagents_refused
from unified._adapters.gemini_cli._launch import Launch, never_asked_denials, policy_rules, user_rule_tools
from unified._redaction import run_secrets
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


def test_the_launch_writes_the_denial_into_the_policy_file(monkeypatch: pytest.MonkeyPatch) -> None:
    launch = Launch(
        binary=Path("/bin/true"),
        env={},
        model=None,
        fake_responses=None,
        fake_responses_strict=True,
        include_directories=(),
        excluded_tools=(),
        policy=DENY_SUBAGENTS,
    )
    text = Path(launch.policy_flags()[1]).read_text()
    (denial,) = [r for r in tomllib.loads(text)["rule"] if r.get("toolName") == "invoke_agent"]
    assert (denial["decision"], denial["name"]) == ("deny", "unified: no-subagents")
    assert "argsPattern" not in denial  # 0.61 in yolo runs a delegation past a deny rule with arguments


@pytest.mark.parametrize("mode", ["default", "auto_edit", "plan", "yolo"])
def test_codex_subagents_are_off_when_the_policy_may_refuse_them(mode: ApprovalMode) -> None:
    assert subagents_refused(DENY_SUBAGENTS, mode) == "no-subagents"
    assert subagents_refused(_user('[[rule]]\nname = "s"\ntoolName = "spawn_agent"\ndecision = "deny"\n'), mode) == "s"
    assert subagents_refused(Policy.default(), mode) is None


# --- part 2: bounded resources ----------------------------------------------------------------------------------


async def test_a_glob_over_a_huge_directory_keeps_only_what_it_shows(tmp_path: Path) -> None:
    """HOLE: glob kept every hit (path and mtime) to sort them, though it shows 1,000: 300,000 matching entries
    added 170 MB to the process per call (measured; a turn's calls run at once, up to 1,000,000 entries each).
    Now the list is cut back to the newest 1,000 whenever it doubles. 20,000 hits: 10.2 MB traced before, 3.7 now
    (what remains is the walk's own)."""
    folder = tmp_path / "d"
    folder.mkdir()
    for i in range(20_000):
        os.close(os.open(folder / f"f{i:06d}", os.O_CREAT | os.O_WRONLY))
    runtime = ToolRuntime(tmp_path, approval_mode="yolo")
    try:
        await runtime.run_batch([ToolCall("warm", "glob", {"pattern": "x"})])
        tracemalloc.start()
        try:
            (outcome,) = await runtime.run_batch([ToolCall("c", "glob", {"pattern": "d/*"})])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        await runtime.aclose()
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
