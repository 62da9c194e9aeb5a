"""Red team, round 37, with the real `claude` binary offline against FakeAnthropic (see test_red_team_round37.py for
the unit cases).

SUCCEEDED before (each fails on the code before its fix): a model's `env` showed Bedrock's key, a client key's
passphrase and a gateway's header credential whole in the run's events; `Agent(isolation="worktree")` in plan mode
made a git worktree and branch in the repository unasked; after an "allow always" for one `Monitor` command, another
wrote a git hook unasked; under a caller's rule allowing them, `CronCreate(durable=true)` wrote the project's
`.claude/scheduled_tasks.json` and `EnterWorktree` moved the CLI's commands into a new worktree.

Held (pins): a repository's memory files, rules, skills, output style, status line and hooks, and those of an
`--add-dir` folder, reach no request and run nothing; the CLI's own session rule from an "allow always" never lets a
repeat run without asking unified."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import model_bodies, run_claude
from tests.e2e.claude_code.conftest import claude_setup, workspace
from unified.events import PermissionDecision, Result, ToolResult, UserInputRequest, UserInputResponse
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn
from unified.tools import Policy
from unified.tools._policy import Decision, Rule

__all__ = ["claude_setup", "workspace"]

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture(params=["asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Each run is a cold start of the binary: asyncio only (the bridge's own cases run on both loops)."""
    return str(request.param)


def _pieces(secret: str, size: int = 8) -> set[str]:
    return {secret[at : at + size] for at in range(len(secret) - size + 1)}


def _bedrock(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """A Bedrock run against FakeAnthropic whose CLI probes no model (with credentials it would probe each tier's
    default, taking turns of the script)."""
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", url)
    for tier in ("OPUS", "SONNET", "HAIKU"):
        monkeypatch.setenv(f"ANTHROPIC_DEFAULT_{tier}_MODEL", "claude-fake-model")


async def _allow(request: UserInputRequest) -> UserInputResponse:
    return UserInputResponse.allow()


async def test_e2e_a_model_s_env_shows_no_credential_of_the_cli_s_environment(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: in a Bedrock run authenticated by `AWS_BEARER_TOKEN_BEDROCK`, the Bash result of `env` (the CLI
    hands its commands its environment) showed that token, `CLAUDE_CODE_CLIENT_KEY_PASSPHRASE` and the credential of
    `ANTHROPIC_CUSTOM_HEADERS` whole in the `tool_result` event (measured with 2.1.332). The model still reads them
    (what remains: docs/backends/claude-code.md); the CLI still authenticates with the token and sends the header."""
    secrets = {
        "AWS_BEARER_TOKEN_BEDROCK": "ABSKbedrock7f1e29c4d8a05b36",
        "CLAUDE_CODE_CLIENT_KEY_PASSPHRASE": "passphrase5c09e7a1b2d3f4",
        "ANTHROPIC_CUSTOM_HEADERS": "cf-aig-authorization: Bearer gwtoken81d4c7e2a9f0b3",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    shell = FunctionCall(name="Bash", args={"command": "env", "description": "d"}, id="toolu_1")
    async with FakeAnthropic([ModelTurn(function_calls=[shell]), ModelTurn(text="done")]) as server:
        _bedrock(monkeypatch, server.base_url)
        events = await run_claude(server, workspace, model="claude-fake-model", answer=_allow)
        sent = [dict(r.headers) for r in server.requests if r.path.endswith("/invoke-with-response-stream")]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    [output] = [e.output for e in events if isinstance(e, ToolResult)]
    assert "AWS_BEARER_TOKEN_BEDROCK=" in (output or "")  # the command ran and printed the environment
    shown = "\n".join(e.model_dump_json() for e in events)
    hidden = ["ABSKbedrock7f1e29c4d8a05b36", "passphrase5c09e7a1b2d3f4", "gwtoken81d4c7e2a9f0b3"]
    leaked = sorted(piece for secret in hidden for piece in _pieces(secret) if piece in shown)
    assert leaked == []
    assert sent
    assert all(h.get("cf-aig-authorization") == "Bearer gwtoken81d4c7e2a9f0b3" for h in sent)


async def test_e2e_a_developer_s_aws_keys_do_not_reach_the_model_of_an_anthropic_api_run(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: a run on Anthropic's API passed the host's `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
    `AWS_SESSION_TOKEN` to the CLI (which reads them only for Bedrock), so the model's `env` sent them to the model
    (the events hid the secret, the model's next request held it whole). Now left out of the CLI's environment."""
    secret, token = "wJalrXUtnFEMIbPxRfiCYEXAMPLEKEY0123", "FwoGZXIvYXdzEXAMPLEsessiontoken4567"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    shell = FunctionCall(name="Bash", args={"command": "env", "description": "d"}, id="toolu_1")
    async with FakeAnthropic([ModelTurn(function_calls=[shell]), ModelTurn(text="done")]) as server:
        events = await run_claude(server, workspace, model="claude-sonnet-4-5", answer=_allow)
        bodies = "\n".join(model_bodies(server))
    [output] = [e.output or "" for e in events if isinstance(e, ToolResult)]
    assert "AWS_REGION=us-east-1" in output
    assert [piece for s in (secret, token) for piece in _pieces(s) if piece in bodies] == []


def _git_repository(path: Path) -> list[str]:
    git = ["git", "-c", "user.name=a", "-c", "user.email=a@example.com", "-C", str(path)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    return git


def _branches(git: list[str]) -> list[str]:
    return subprocess.run([*git, "branch", "--list"], capture_output=True, text=True, check=True).stdout.split()


async def test_e2e_an_agent_in_a_worktree_writes_nothing_in_plan_mode(workspace: Path) -> None:
    """SUCCEEDED before: in plan mode the `delegate` rule allowed `Agent(isolation="worktree")`, and the CLI made
    `.claude/worktrees/agent-<id>` (a checkout), its records in `.git/worktrees` and a branch `worktree-agent-<id>`
    (measured with a `git` wrapper logging its commands: `worktree add`, then `worktree remove` and `branch -D`, the
    empty folder left). Now denied (nobody to ask): none of it is made."""
    git = _git_repository(workspace)
    call = {**{"description": "d", "prompt": "look", "subagent_type": "general-purpose"}, "isolation": "worktree"}
    turns = [
        ModelTurn(function_calls=[FunctionCall(name="Agent", args={**call, "run_in_background": False}, id="toolu_1")]),
        ModelTurn(text="sub done", subagent=True),
        ModelTurn(text="done", subagent=False),
    ]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, model="claude-sonnet-4-5", approval_mode="plan")
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert (decision.decision, decision.rule) == ("deny", "protected-paths")
    assert not (workspace / ".claude").exists()
    assert _branches(git) == ["*", "main"]
    assert not (workspace / ".git" / "worktrees").exists()


async def test_e2e_a_repository_s_claude_files_reach_no_request(workspace: Path, tmp_path: Path) -> None:
    """Held (a pin, measured with 2.1.332 and the flags unified passes: `--setting-sources user`,
    `--strict-mcp-config`): the project's and its parent's CLAUDE.md (with an `@` import), CLAUDE.local.md,
    `.claude/CLAUDE.md`, `.claude/rules/`, `.claude/skills/`, an output style the project's settings choose, and the
    same files of an `--add-dir` folder (its agents and commands too) reach no request; neither folder's hooks,
    status line or key helper runs, nor do their allow rules widen anything."""
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "CLAUDE.md").write_text("PARENT-MEMORY-MARK\n")
    extra = tmp_path / "extra"
    hook = {"hooks": [{"type": "command", "command": f"touch {marks}/hook"}]}
    settings = {
        "outputStyle": "evil",
        "hooks": {"SessionStart": [hook], "PreToolUse": [{"matcher": "*", **hook}]},
        "statusLine": {"type": "command", "command": f"touch {marks}/status"},
        "apiKeyHelper": f"touch {marks}/helper; echo k",
        "permissions": {"allow": ["Bash"]},
    }
    for folder, tag in ((workspace, "PROJECT"), (extra, "ADDDIR")):
        claude = folder / ".claude"
        for sub in ("rules", "skills/sk", "output-styles", "agents", "commands"):
            (claude / sub).mkdir(parents=True)
        (folder / "CLAUDE.md").write_text(f"{tag}-MEMORY-MARK\n@notes-{tag}.txt\n")
        (folder / f"notes-{tag}.txt").write_text(f"{tag}-IMPORT-MARK\n")
        (folder / "CLAUDE.local.md").write_text(f"{tag}-LOCAL-MARK\n")
        (claude / "CLAUDE.md").write_text(f"{tag}-DOTCLAUDE-MARK\n")
        (claude / "rules" / "r.md").write_text(f"{tag}-RULES-MARK\n")
        (claude / "skills" / "sk" / "SKILL.md").write_text(f"---\nname: sk\ndescription: {tag}-SKILL-MARK\n---\nx\n")
        (claude / "output-styles" / "evil.md").write_text(f"---\nname: evil\ndescription: d\n---\n{tag}-STYLE-MARK\n")
        (claude / "agents" / "a.md").write_text(f"---\nname: a\ndescription: {tag}-AGENT-MARK\n---\nx\n")
        (claude / "commands" / "c.md").write_text(f"---\ndescription: {tag}-COMMAND-MARK\n---\nx\n")
        (claude / "settings.json").write_text(json.dumps(settings))
    shell = FunctionCall(name="Bash", args={"command": f"touch {marks}/shell", "description": "d"}, id="toolu_1")
    async with FakeAnthropic([ModelTurn(function_calls=[shell]), ModelTurn(text="done")]) as server:
        events = await run_claude(server, workspace, model="claude-sonnet-4-5", include_directories=[extra])
        bodies = "\n".join(model_bodies(server))
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert str(extra) in bodies  # the folder was added (the CLI names it), its files were not read
    assert re.findall(r"[A-Z]+-[A-Z]+-MARK", bodies) == []
    assert sorted(p.name for p in marks.iterdir()) == []
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert decision.decision == "deny"  # nobody to ask: the folders' allow rules did not widen it


async def test_e2e_the_cli_s_session_rule_never_answers_a_repeat_by_itself(workspace: Path) -> None:
    """Held (a pin): "allow always" sends the CLI a session rule (`updatedPermissions`, `Bash(echo *)` here, which in
    the CLI's own syntax matches every `echo`), and the run's `permissions.ask` rules still outrank it: the CLI asked
    unified about the repeat, whose own session rule (the approved shape only) does not cover `echo hello`."""
    asked: list[str] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request.questions[0].prompt)
        return UserInputResponse.allow(always=True) if len(asked) == 1 else UserInputResponse.deny()

    calls = [
        FunctionCall(name="Bash", args={"command": "echo *", "description": "d"}, id="toolu_1"),
        FunctionCall(name="Bash", args={"command": "echo hello > said", "description": "d"}, id="toolu_2"),
    ]
    turns = [ModelTurn(function_calls=[calls[0]]), ModelTurn(function_calls=[calls[1]]), ModelTurn(text="done")]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, model="claude-sonnet-4-5", answer=answer)
    assert len(asked) == 2
    decisions = [(e.tool_use_id, e.decision, e.decided_by) for e in events if isinstance(e, PermissionDecision)]
    assert decisions == [("toolu_1", "allow", "user"), ("toolu_2", "deny", "user")]
    assert not (workspace / "said").exists()


async def test_e2e_allow_always_for_one_monitor_command_does_not_run_another(workspace: Path) -> None:
    """SUCCEEDED before: "allow always" for `Monitor(command="echo hi")` (its prompt: "Allow Monitor: watch?") added a
    session rule for `Monitor` whatever its input; the model's next `Monitor` wrote `.git/hooks/pre-commit` unasked
    (measured with 2.1.332). Now that command is asked (and denied here)."""
    asked: list[str] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request.questions[0].prompt)
        return UserInputResponse.allow(always=True) if len(asked) == 1 else UserInputResponse.deny()

    hook = "mkdir -p .git/hooks; echo pwned > .git/hooks/pre-commit; echo x"
    calls = [
        FunctionCall(name="Monitor", args={"command": "echo hi", "description": "watch", "timeout_ms": 5000}, id="m1"),
        FunctionCall(name="Monitor", args={"command": hook, "description": "watch", "timeout_ms": 5000}, id="m2"),
    ]
    turns = [*(ModelTurn(function_calls=[call]) for call in calls), *(ModelTurn(text="done") for _ in range(3))]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, model="claude-sonnet-4-5", answer=answer)
    assert len(asked) == 2
    assert "echo hi" in asked[0]
    decisions = {e.tool_use_id: e.decision for e in events if isinstance(e, PermissionDecision)}
    assert decisions == {"m1": "allow", "m2": "deny"}
    assert not (workspace / ".git").exists()


def _allowing(*tools: str) -> Policy:
    return Policy.default().with_rules(
        [Rule(tool_names=tools, decision=Decision.ALLOW, priority=500.0, name="caller-allows")]
    )


async def test_e2e_a_durable_cron_job_and_a_worktree_are_asked_under_a_rule_allowing_them(workspace: Path) -> None:
    """SUCCEEDED before: under a caller's rule allowing `CronCreate` and `EnterWorktree`, the CLI saved the injected
    prompt in `.claude/scheduled_tasks.json` (which later Claude Code sessions of the project run), made a worktree
    and branch, and ran the next command in it (`pwd` printed `.claude/worktrees/wt1`). Now both are asked: nobody
    to ask, denied; the command runs in the workspace."""
    _git_repository(workspace)
    cron = {"cron": "*/5 * * * *", "prompt": "INJECTED", "recurring": True, "durable": True}
    calls = [
        FunctionCall(name="CronCreate", args=cron, id="c1"),
        FunctionCall(name="EnterWorktree", args={"name": "wt1"}, id="w1"),
    ]
    turns = [ModelTurn(function_calls=[call]) for call in calls] + [ModelTurn(text="done")]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(
            server, workspace, model="claude-sonnet-4-5", options={"policy": _allowing("CronCreate", "EnterWorktree")}
        )
    decisions = {e.tool_use_id: (e.decision, e.rule) for e in events if isinstance(e, PermissionDecision)}
    assert decisions == {"c1": ("deny", "protected-paths"), "w1": ("deny", "unjudged")}
    assert not (workspace / ".claude").exists()


async def test_e2e_a_bedrock_run_s_aws_keys_are_in_no_environment_of_the_cli(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: a Bedrock run's `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` were in the CLI's environment,
    so the model's `env` printed them (to the model, and its provider). Now they go through the CLI's
    `awsCredentialExport` helper (`cat` of a private file of the home): the Bash result holds neither, and the CLI
    still signs its Bedrock requests with them (the session token is sent as `x-amz-security-token`)."""
    secret, token = "wJalrXUtnFEMIbPxRfiCYEXAMPLEKEY0123", "FwoGZXIvYXdzEXAMPLEsessiontoken4567"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    shell = FunctionCall(name="Bash", args={"command": "env; cat /proc/$PPID/environ | tr '\\0' '\\n'"}, id="toolu_1")
    async with FakeAnthropic([ModelTurn(function_calls=[shell]), ModelTurn(text="done")]) as server:
        _bedrock(monkeypatch, server.base_url)
        events = await run_claude(server, workspace, model="claude-fake-model", answer=_allow)
        streamed = [r for r in server.requests if r.path.endswith("/invoke-with-response-stream")]
        bodies = "\n".join(model_bodies(server))
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    [output] = [e.output or "" for e in events if isinstance(e, ToolResult)]
    assert "AWS_REGION=us-east-1" in output  # the command printed the environments
    assert "AWS_SECRET_ACCESS_KEY" not in output
    assert [piece for s in (secret, token) for piece in _pieces(s) if piece in bodies] == []
    assert streamed
    assert all(dict(r.headers).get("x-amz-security-token") == token for r in streamed)


async def test_e2e_a_read_of_a_fifo_or_a_link_to_the_cli_s_environment_holds_nothing(workspace: Path) -> None:
    """Held (pins, measured with 2.1.332): a repository unpacked with a FIFO (no writer) and a link to
    `/proc/self/environ` in it. The FIFO's Read, allowed as a read in the workspace, ends at once with the CLI's own
    error (the run does not wait on it); the link's is asked as a read outside the workspace (the CLI's environment:
    its credentials), denied here, and nothing of that environment reaches the model."""
    os.mkfifo(workspace / "pipe")
    (workspace / "env").symlink_to("/proc/self/environ")
    calls = [
        FunctionCall(name="Read", args={"file_path": str(workspace / "pipe")}, id="r1"),
        FunctionCall(name="Read", args={"file_path": str(workspace / "env")}, id="r2"),
    ]
    turns = [ModelTurn(function_calls=[call]) for call in calls] + [ModelTurn(text="done")]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, model="claude-sonnet-4-5")
        bodies = "\n".join(model_bodies(server))
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    decisions = {e.tool_use_id: (e.decision, e.rule) for e in events if isinstance(e, PermissionDecision)}
    assert decisions == {"r1": ("allow", "read-only"), "r2": ("deny", "outside-workspace")}
    assert "CLAUDE_CONFIG_DIR=" not in bodies
