"""Red team, round 41: the Claude Code and Codex backends against a hostile model and a hostile workspace (unit cases;
the real binaries in test_red_team_round41_e2e.py).

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- after an allowed `EnterWorktree` the CLI's commands ran in the worktree (`.claude/worktrees/<name>`, or an existing
  worktree anywhere `git worktree list` names one) while unified judged their relative paths against the workspace;
  so did an isolated subagent's. Now the bridge judges them where the CLI says it works (`_permissions._folder`, from
  the call's result), asks while that is not known yet, and asks every call when it lies outside the workspace or
  cannot be known (a subagent's worktree);
- a prompt starting with `/` ran as a slash command (`_run.literal_content`);
- the Claude Code home's own user settings (`settings.json`: hooks, env), memory, rules, agents, skills and output
  styles were read by every run (`--setting-sources user`), put there by whatever wrote the home (now refused as
  Codex's `rules/` are: `_launch.HOME_OVERRIDES`);
- Codex: the model's `write_stdin` landed in a terminal the user allowed before unified saw it (no terminal outside
  yolo now: `_thread_config`); a Codex home inside the workspace was written unasked in auto_edit (a binary's home is
  a protected path from the run's start: `_protected.binary_home`); a home's `hooks.json` was not refused; an MCP
  approval matching no open call was decided with no event (allowed unseen in yolo).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from tests.security.test_permission_type_confusion import Context, Wire
from tests.security.test_red_team_round37 import _Session
from tests.security.test_red_team_round38 import _launch
from unified._adapters.claude_code._conversation import conversation_from_lines
from unified._adapters.claude_code._run import ClaudeRun, literal_content
from unified._adapters.codex._approvals import ApprovalBridge
from unified._adapters.codex._translate import AppServerTranslator
from unified.errors import ConfigurationError
from unified.events import PermissionDecision, UserInputResponse, WarningEvent
from unified.tools import Policy, _protected
from unified.tools._policy import Decision, Rule
from unified.types import ApprovalMode, ExecuteParams

pytestmark = pytest.mark.anyio


# --- the folder the CLI works in ------------------------------------------------------------------------------------


def _shell_allowed() -> Policy:
    rule = Rule(tool_names=("run_shell_command",), decision=Decision.ALLOW, priority=500.0, name="caller-allows")
    return Policy.default().with_rules([rule])


def _result(session: _Session, call: int, data: dict[str, Any], *, is_error: bool = False) -> None:
    """The CLI's `tool_result` line of the session's `call`-th call."""
    block = {"type": "tool_result", "tool_use_id": f"toolu_{call}", "content": "ok", "is_error": is_error}
    session.bridge.translator.line(
        {"type": "user", "message": {"role": "user", "content": [block]}, "tool_use_result": data}
    )


def _worktree_session(tmp_path: Path) -> _Session:
    """The user allows the first call (an `EnterWorktree`) and denies the rest; shell commands allowed by rule."""
    return _Session(tmp_path, "auto_edit", [UserInputResponse.allow()], _shell_allowed())


async def test_a_command_is_asked_while_an_allowed_worktree_call_has_not_ended(tmp_path: Path) -> None:
    """SUCCEEDED before: allowed by the caller's rule, judged in the workspace, while the CLI was moving elsewhere."""
    session = _worktree_session(tmp_path)
    await session.call("EnterWorktree", {"name": "wt1"})
    body, decision = await session.call("Bash", {"command": "echo x > f"})
    assert body["behavior"] == "deny"
    assert decision.rule == "unjudged"
    assert "not known yet" in session.asked[-1].questions[0].prompt


async def test_a_command_after_entering_a_worktree_outside_the_workspace_is_asked(tmp_path: Path) -> None:
    """SUCCEEDED before: `echo x > f` judged as `<workspace>/f` and allowed, while the CLI ran it in the worktree."""
    (workspace := tmp_path / "ws").mkdir()
    (elsewhere := tmp_path / "elsewhere").mkdir()
    session = _worktree_session(workspace)
    await session.call("EnterWorktree", {"path": str(elsewhere)})
    _result(session, 1, {"worktreePath": str(elsewhere)})
    body, decision = await session.call("Bash", {"command": "echo x > f"})
    assert body["behavior"] == "deny"
    assert decision.rule == "unjudged"
    assert "outside the workspace" in session.asked[-1].questions[0].prompt


async def test_a_command_in_a_worktree_inside_the_workspace_is_judged_there(tmp_path: Path) -> None:
    """SUCCEEDED before: allowed as a write of `<workspace>/f`; it wrote `.claude/worktrees/wt1/f` (protected).
    Leaving the worktree (`ExitWorktree`'s `restoredCwd`) judges commands in the workspace again."""
    answers = [UserInputResponse.allow(), UserInputResponse.deny(), UserInputResponse.allow()]
    session = _Session(tmp_path, "auto_edit", answers, _shell_allowed())
    await session.call("EnterWorktree", {"name": "wt1"})
    (tree := tmp_path / ".claude" / "worktrees" / "wt1").mkdir(parents=True)
    _result(session, 1, {"worktreePath": str(tree)})
    body, decision = await session.call("Bash", {"command": "echo x > f"})
    assert (body["behavior"], decision.rule) == ("deny", "protected-paths")
    await session.call("ExitWorktree", {"action": "keep"})
    _result(session, 3, {"restoredCwd": str(tmp_path)})
    body, decision = await session.call("Bash", {"command": "echo x > f"})
    assert (body["behavior"], decision.rule) == ("allow", "caller-allows")


async def test_a_worktree_call_that_failed_moves_nothing(tmp_path: Path) -> None:
    """Pin: a failed `EnterWorktree` (its result an error) leaves the CLI where it was, and the judgement with it."""
    session = _worktree_session(tmp_path)
    await session.call("EnterWorktree", {"name": "wt1"})
    _result(session, 1, {}, is_error=True)
    body, decision = await session.call("Bash", {"command": "echo x > f"})
    assert (body["behavior"], decision.rule) == ("allow", "caller-allows")


async def test_a_worktree_result_naming_no_folder_leaves_every_call_asked(tmp_path: Path) -> None:
    """Fail closed: a successful worktree call whose result names no folder: where the CLI works is not known."""
    session = _worktree_session(tmp_path)
    await session.call("EnterWorktree", {"name": "wt1"})
    _result(session, 1, {"message": "moved"})
    body, decision = await session.call("Bash", {"command": "ls"})
    assert (body["behavior"], decision.rule) == ("deny", "unjudged")


async def test_the_calls_of_an_isolated_subagent_are_asked(tmp_path: Path) -> None:
    """SUCCEEDED before: the user allowed `Agent(isolation="worktree")`; its subagent's commands, run in a worktree
    of its own, were judged in the workspace and allowed by the caller's rule."""
    session = _worktree_session(tmp_path)
    agent = {"description": "d", "prompt": "p", "subagent_type": "general-purpose", "isolation": "worktree"}
    await session.call("Agent", agent)
    translator = session.bridge.translator
    started = {"type": "system", "subtype": "task_started", "task_id": "t1", "tool_use_id": "toolu_1"}
    translator.line({**started, "task_type": "local_agent", "subagent_type": "general-purpose"})
    assert "t1" in translator.tasks
    request = {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "echo x > f"}, "agent_id": "t1"}
    run = SimpleNamespace(connection=session.wire, stopping=False, _emit=session.ctx.emit)
    message = {"type": "control_request", "request_id": "r-9", "request": {**request, "tool_use_id": "toolu_9"}}
    await ClaudeRun._control_request(cast(Any, run), session.bridge, message)
    assert session.wire.answers()[-1][2]["behavior"] == "deny"
    assert "worktree of its own" in session.asked[-1].questions[0].prompt


# --- prompts starting with `/` --------------------------------------------------------------------------------------


@pytest.mark.parametrize("prompt", ["/cost", "/evil do it", "  /login", "\n/compact"])
def test_a_prompt_starting_with_a_slash_ends_with_an_empty_block(prompt: str) -> None:
    """SUCCEEDED before: sent as the string, which the CLI ran as a slash command (measured, e2e)."""
    assert literal_content(prompt) == [{"type": "text", "text": prompt}, {"type": "text", "text": ""}]


def test_a_prompt_with_images_and_a_slash_ends_with_an_empty_block() -> None:
    """SUCCEEDED before: the text block `/cost` and an image went as they were."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}
    blocks: list[dict[str, Any]] = [{"type": "text", "text": "/cost"}, image]
    assert literal_content(blocks) == [*blocks, {"type": "text", "text": ""}]


@pytest.mark.parametrize("prompt", ["hello", "a /path", "", "\u200b/cost"])
def test_other_prompts_go_as_they_are(prompt: str) -> None:
    """Pin: only words the CLI reads as a command change shape (`\u200b/cost` it sent as text, measured)."""
    assert literal_content(prompt) == prompt


def test_the_empty_block_is_no_part_of_an_exported_turn() -> None:
    """SUCCEEDED before: the session's prompt exported with an empty text part (another backend may refuse it)."""
    line = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "s",
        "message": {"role": "user", "content": [{"type": "text", "text": "/cost"}, {"type": "text", "text": ""}]},
    }
    [turn] = conversation_from_lines([line], origin=None).turns
    assert [part.model_dump()["text"] for part in turn.parts] == ["/cost"]


# --- Codex: its home, its terminal, its MCP approvals --------------------------------------------------------------


@pytest.mark.parametrize("planted", ["hooks.json", "hooks/hooks.json", "skills/evil/SKILL.md"])
def test_a_codex_home_holding_hooks_is_refused(tmp_path: Path, planted: str) -> None:
    """SUCCEEDED before (each): the run started with the home's hooks, commands Codex runs at its own events, or its
    own skill, which Codex lists to the model with `project_instructions` on (e2e)."""
    home, ws = tmp_path / "codex-home", tmp_path / "ws"
    ws.mkdir()
    (home / planted).parent.mkdir(parents=True)
    (home / planted).write_text('{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "id"}]}]}}')
    with pytest.raises(ConfigurationError) as refused:
        _launch(home, ws)
    assert "is in the codex backend's home" in str(refused.value)


@pytest.mark.parametrize("name", ["codex", "claude-code"])
def test_a_binary_s_home_is_a_protected_path_once_a_run_records_it(tmp_path: Path, name: str) -> None:
    """SUCCEEDED before: a path in it was protected only by the patterns (`rules/evil.rules` was not); a sibling
    folder whose name starts the same is not in it."""
    (home := tmp_path / "ws" / "agent-home").mkdir(parents=True)
    _protected.credential_home(name, home)
    assert _protected.protected_path(home / "rules" / "evil.rules") == f"the {name} home ({home})"
    assert _protected.protected_path(home) is not None
    assert _protected.protected_path(tmp_path / "ws" / "agent-home2" / "x") is None
    assert _protected.protected_path(tmp_path / "ws" / "notes.txt") is None


@pytest.mark.parametrize(("mode", "off"), [("default", True), ("auto_edit", True), ("plan", True), ("yolo", False)])
def test_no_terminal_session_outside_yolo(tmp_path: Path, mode: ApprovalMode, off: bool) -> None:
    """SUCCEEDED before (all but yolo, a pin): Codex started terminal sessions, whose stdin the model's `write_stdin`
    typed into before anyone saw it (e2e)."""
    from tests.adapters.codex.test_codex_launch_and_run import _thread_config

    config = _thread_config(tmp_path, approval_mode=mode)
    assert config.get("features", {}).get("unified_exec_tty") is (False if off else None)


async def test_an_mcp_approval_matching_no_open_call_is_declined_and_said(tmp_path: Path) -> None:
    """SUCCEEDED before: in yolo, an MCP approval naming a server's tool no open call of the run matches was accepted,
    with no event at all (its decision names a call: none was emitted)."""
    translator = AppServerTranslator(main_thread="T", cwd=str(tmp_path))
    translator.start_turn("U")
    ctx, wire = Context(ExecuteParams(prompt="p", cwd=tmp_path, approval_mode="yolo"), None), Wire()
    meta = {"codex_approval_kind": "mcp_tool_call", "tool_name": "delete_repo", "tool_params": {"repo": "x"}}
    params = {"threadId": "T", "turnId": "U", "serverName": "srv", "message": "Run it?", "_meta": meta}
    await ApprovalBridge(cast(Any, ctx), cast(Any, wire), translator).answer(
        {"method": "mcpServer/elicitation/request", "id": 7, "params": params}
    )
    [(_, _, body)] = wire.answers()
    assert body["action"] == "decline"
    [warning] = [e for e in ctx.events if isinstance(e, WarningEvent)]
    assert "matches no MCP tool call Codex started" in warning.message
    assert not [e for e in ctx.events if isinstance(e, PermissionDecision) and e.decision == "allow"]


# --- Claude Code: its home ------------------------------------------------------------------------------------------


def _claude_launch(home: Path, cwd: Path, *, slash_commands: bool = False) -> object:
    from unified._adapters.claude_code._launch import Launch
    from unified._adapters.claude_code._options import claude_code_options

    options = claude_code_options({"home": home, "start_process": lambda *a: None, "slash_commands": slash_commands})
    return Launch.of(ExecuteParams(prompt="p", cwd=cwd, backend="claude-code"), options)


@pytest.mark.parametrize(
    "planted",
    [
        ".claude/settings.json",
        ".claude/CLAUDE.md",
        ".claude/rules/r.md",
        ".claude/agents/a.md",
        ".claude/skills/s/SKILL.md",
        ".claude/output-styles/o.md",
        "link:.claude/settings.json",
    ],
)
def test_a_claude_home_holding_what_the_cli_reads_as_its_user_s_is_refused(tmp_path: Path, planted: str) -> None:
    """SUCCEEDED before (each): the run started; the CLI ran the settings' hooks and told the model the rest (e2e)."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    path = home / planted.removeprefix("link:")
    path.parent.mkdir(parents=True)
    if planted.startswith("link:"):
        path.symlink_to(tmp_path / "elsewhere.json")  # dangling: the CLI would read it once it is there
    else:
        path.write_text("{}\n")
    with pytest.raises(ConfigurationError) as refused:
        _claude_launch(home, ws)
    assert "is in the claude-code backend's home" in str(refused.value)
    assert "remove it" in str(refused.value.hint)


def test_a_claude_home_as_the_cli_leaves_it_is_not_refused(tmp_path: Path) -> None:
    """Held: what the CLI itself writes in its home (its config, backups, plugins' store, sessions) is no reason to
    refuse; nor is a command file when the caller opts into slash commands (they live there)."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    for name in ("backups", "plugins/store", "sessions", "shell-snapshots", "projects/-ws"):
        (home / ".claude" / name).mkdir(parents=True)
    (home / ".claude" / ".claude.json").write_text("{}")
    assert _claude_launch(home, ws) is not None
    (home / ".claude" / "commands").mkdir()
    (home / ".claude" / "commands" / "c.md").write_text("x")
    with pytest.raises(ConfigurationError, match="slash commands, which the CLI lists to the model"):
        _claude_launch(home, ws)  # SUCCEEDED before: the command's description reached every request (e2e)
    assert _claude_launch(home, ws, slash_commands=True) is not None
