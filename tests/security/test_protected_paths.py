"""Writes that change what runs later are always asked (issue 24, "Protected paths"; docs/tools.md).

A prompt-injected model in auto_edit mode (edits allowed, nothing asked) tries to write what a
later, allowed command or the next agent run executes: git's config and hooks, the agents' own
settings, `.env` files the CLIs load, shell start-up files, editor tasks. Every such write must be
put to the user in every mode but yolo, on every backend, whatever rule allows it, by a file tool or
by a shell command. Each case checks the victim file, not only the decision.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from unified import ExecuteParams, UserInputRequest, UserInputResponse
from unified._execute import EventStream
from unified.events import PermissionDecision, ToolResult, ToolUse, UnifiedEvent
from unified.testing._fake_acp import FakeAcp, Finish, Permission, text, tool_done
from unified.tools import PermissionAnswer, PermissionRequest, Policy, ToolCall, ToolRuntime, _protected, protected_path
from unified.tools import _shell_syntax as syntax
from unified.types import ApprovalMode

pytestmark = pytest.mark.anyio

PROTECTED = [
    ".git/config",
    ".git/hooks/pre-commit",
    ".git/hooks/post-checkout",
    ".git/info/attributes",
    "vendor/lib/.git/config",
    ".gitmodules",
    ".gitattributes",
    ".gemini/settings.json",
    ".gemini/policies/mine.toml",
    ".gemini/.env",
    "pkg/.gemini/settings.json",
    ".claude/settings.json",
    ".codex/config.toml",
    ".cursor/mcp.json",
    ".mcp.json",
    "GEMINI.md",
    "AGENTS.md",
    "sub/CLAUDE.md",
    ".env",
    "services/api/.env",
    ".envrc",
    ".bashrc",
    ".bash_profile",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".config/fish/config.fish",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    ".devcontainer/devcontainer.json",
    ".npmrc",
    ".husky/pre-commit",
    ".pre-commit-config.yaml",
    ".ssh/authorized_keys",
    ".Git/Config",
    ".ENV",
]
SPELLINGS = [
    "./.git/config",
    ".git/../.git/config",
    "sub/../.git/hooks/pre-push",
    "@.env",
    "./.gemini//settings.json",
]
FREE = ["src/main.py", ".gitignore", "git.md", "config", "docs/env.md", ".github/workflows/ci.yml", "notes/.git-info"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "sub").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    return root


def _content(ws: Path, path: str) -> str | None:
    """The victim's content now (None: it does not exist)."""
    target = Path(os.path.normpath(ws / path.removeprefix("@")))
    return target.read_text() if target.exists() else None


async def _write(ws: Path, path: str, mode: ApprovalMode = "auto_edit", **runtime: Any) -> Any:
    async with ToolRuntime(ws, approval_mode=mode, **runtime) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "write_file", {"file_path": path, "content": "pwned\n"})])
    return outcome


@pytest.mark.parametrize("path", [*PROTECTED, *SPELLINGS])
async def test_auto_edit_asks_before_a_protected_write_and_nobody_answers(ws: Path, path: str) -> None:
    before = _content(ws, path)
    outcome = await _write(ws, path)
    assert outcome.is_error
    assert "protected path" in outcome.response["error"]
    assert outcome.decision.rule == "protected-paths"
    assert _content(ws, path) == before


async def test_the_file_url_and_a_link_into_git_are_protected_too(ws: Path) -> None:
    (ws / "link").symlink_to(ws / ".git" / "config")
    (ws / "hooks").symlink_to(ws / ".git" / "hooks")
    for path in [f"file://{ws}/.git/config", "link", "hooks/pre-commit"]:
        outcome = await _write(ws, path)
        assert outcome.is_error, path
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()


async def test_edit_file_is_asked_too(ws: Path) -> None:
    (ws / ".env").write_text("KEY=1\n")
    async with ToolRuntime(ws, approval_mode="auto_edit") as tools:
        calls = [
            ToolCall("1", "edit_file", {"file_path": ".env", "old_string": "KEY=1", "new_string": "KEY=2"}),
            ToolCall("2", "replace", {"file_path": ".git/config", "old_string": "[core]", "new_string": "[x]"}),
        ]
        outcomes = await tools.run_batch(calls)
    assert [o.is_error for o in outcomes] == [True, True]
    assert (ws / ".env").read_text() == "KEY=1\n"
    assert (ws / ".git" / "config").read_text() == "[core]\n"


@pytest.mark.parametrize("path", FREE)
async def test_other_files_are_written_without_asking_in_auto_edit(ws: Path, path: str) -> None:
    outcome = await _write(ws, path)
    assert not outcome.is_error, outcome.response
    assert (ws / path).read_text() == "pwned\n"


async def test_the_user_is_asked_with_the_reason_and_decides(ws: Path) -> None:
    asked: list[PermissionRequest] = []
    answers: list[PermissionAnswer] = ["deny", "allow_once"]

    async def ask(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return answers.pop(0)

    denied = await _write(ws, ".git/hooks/pre-commit", ask=ask)
    assert denied.is_error
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    allowed = await _write(ws, ".git/hooks/pre-commit", ask=ask)
    assert not allowed.is_error
    assert len(asked) == 2
    assert "It writes a protected path: .git/hooks/pre-commit is a protected path (.git/**)" in asked[0].summary


async def test_no_rule_and_no_session_answer_lets_a_protected_write_through(ws: Path) -> None:
    """A user's allow rule for write_file, and an earlier "allow always", still leave it asked."""
    asked: list[str] = []

    async def ask(request: PermissionRequest) -> PermissionAnswer:
        asked.append(str(request.call.args["file_path"]))
        return "allow_always" if len(asked) == 1 else "deny"

    policy = Policy.default().with_toml('[[rule]]\ntoolName = "write_file"\ndecision = "allow"\npriority = 999\n')
    async with ToolRuntime(ws, approval_mode="default", policy=policy, ask=ask) as tools:
        outcomes = await tools.run_batch(
            [
                ToolCall("1", "write_file", {"file_path": ".envrc", "content": "x"}),
                ToolCall("2", "write_file", {"file_path": ".gemini/settings.json", "content": "{}"}),
                ToolCall("3", "write_file", {"file_path": "ok.txt", "content": "fine"}),
            ]
        )
    assert [o.is_error for o in outcomes] == [False, True, False]
    assert asked == [".envrc", ".gemini/settings.json"]
    assert not (ws / ".gemini" / "settings.json").exists()


async def test_yolo_writes_protected_paths_without_asking(ws: Path) -> None:
    outcome = await _write(ws, ".git/config", mode="yolo")
    assert not outcome.is_error
    assert (ws / ".git" / "config").read_text() == "pwned\n"


async def test_plan_mode_still_denies(ws: Path) -> None:
    outcome = await _write(ws, "GEMINI.md", mode="plan")
    assert outcome.is_error
    assert not (ws / "GEMINI.md").exists()


# --- the shell -------------------------------------------------------------------------------------

WRITERS = [
    "tee",
    "cp",
    "mv",
    "ln",
    "dd",
    "sed",
    "git",
    "install",
    "chmod",
    "truncate",
    "touch",
    "cat",
    "printf",
    "echo",
]
ALLOW_WRITERS = (
    f'[[rule]]\nname = "writers"\ntoolName = "run_shell_command"\ncommandPrefix = {WRITERS!r}\n'.replace("'", '"')
    + 'decision = "allow"\n'
)
SHELL_WRITES = [
    "printf '[core]\\n\\tfsmonitor = touch pwned\\n' | tee .git/config",
    "echo x | tee -a services/.env",
    "cp evil .git/hooks/pre-commit",
    "mv evil .gemini/settings.json",
    "ln -sf evil .git/hooks/post-checkout",
    "dd if=evil of=.git/config",
    "sed -i s/a/b/ .git/config",
    "install -m 755 evil .git/hooks/pre-push",
    "chmod +x .git/hooks/pre-commit",
    "truncate -s 0 .gitattributes",
    "touch .mcp.json",
    "git config core.fsmonitor 'touch pwned'",
    "git config --global alias.st '!touch pwned'",
    "git config --unset core.hooksPath",
    "git -C . config core.pager 'touch pwned'",
    "git remote add o 'ext::sh -c touch% pwned'",
    "git submodule add ./evil",
    "git init --template=evil again",
    'cp evil "$TARGET"',
    "tee ~/.bashrc < evil",
    "cp evil sub/../.envrc",
    "cat evil > .git/config",
    "echo x >> .bashrc",
]


@pytest.mark.parametrize("command", SHELL_WRITES)
async def test_an_allow_rule_does_not_let_the_shell_write_a_protected_path(ws: Path, command: str) -> None:
    """Nobody to ask: denied before bash starts (a unit test cannot start one; the victims stay)."""
    policy = Policy.default().with_toml(ALLOW_WRITERS)
    async with ToolRuntime(ws, approval_mode="auto_edit", policy=policy) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "run_shell_command", {"command": command})])
    assert outcome.is_error
    assert outcome.decision is not None
    assert outcome.decision.decision == "deny"
    assert (ws / ".git" / "config").read_text() == "[core]\n"


@pytest.mark.parametrize(
    "command",
    [
        "tee out.txt < in.txt",
        "cp a b",
        "mv build/x dist/x",
        "git status",
        "git config --get user.name",
        "git config user.email",
        "git config --list",
        "sed -i s/a/b/ src/main.py",
        "echo hi",
    ],
)
def test_ordinary_writes_are_not_flagged(ws: Path, command: str) -> None:
    (ws / "build").mkdir()
    (ws / "build" / "x").write_text("")  # a source mv moves that does not exist yet is asked
    assert _protected.shell_protected(syntax.parse(command), ws, (ws,)) is None


def test_a_link_to_a_protected_file_is_seen_through(ws: Path) -> None:
    (ws / "innocent").symlink_to(ws / ".git" / "config")
    reason = _protected.shell_protected(syntax.parse("cp evil innocent"), ws, (ws,))
    assert reason is not None
    assert ".git/config" in reason


def test_protected_path_is_judged_on_the_whole_path(tmp_path: Path) -> None:
    """A workspace that itself lives in a protected folder (`.config/gcloud/`) is protected whole (round 36: judged
    relative to the root alone, `git/config` of an include directory `~/.config` was written unasked); one that only
    lives under a holder of protected paths (`.config/`) is not."""
    root = tmp_path / ".config" / "gcloud" / "project"
    assert protected_path(root / "main.py") == ".config/gcloud/**"
    assert protected_path(tmp_path / ".config" / "project" / "main.py") is None
    assert protected_path(tmp_path / ".config" / "project" / ".env") == ".env"


# --- gemini-cli's own tools ------------------------------------------------------------------------


def _edit_call(call_id: str, path: Path) -> dict[str, Any]:
    return {
        "toolCallId": call_id,
        "status": "pending",
        "title": f"Writing to {path.name}",
        "kind": "edit",
        "content": [{"type": "diff", "path": str(path), "oldText": "", "newText": "x"}],
        "locations": [{"path": str(path)}],
    }


def _two_edits(ws: Path, protected: str) -> list[Any]:
    return [
        Permission(
            _edit_call("write_file__1", ws / protected), if_allowed=[tool_done("write_file__1", "ok", kind="edit")]
        ),
        Permission(
            _edit_call("write_file__2", ws / "ok.txt"), if_allowed=[tool_done("write_file__2", "ok", kind="edit")]
        ),
        text("done"),
        Finish(),
    ]


async def _gemini(ws: Path, fake: FakeAcp, **fields: Any) -> list[UnifiedEvent]:
    options = {"start_process": fake, "pool_size": 0}
    params = ExecuteParams(prompt="go", backend="gemini-cli", cwd=ws, backend_options=options, **fields)
    async with EventStream(params, strict=True) as stream:
        return [event async for event in stream]


@pytest.mark.parametrize("protected", [".gemini/settings.json", ".env", ".git/hooks/pre-commit", "GEMINI.md"])
async def test_gemini_cli_auto_edit_asks_for_its_own_protected_writes(ws: Path, protected: str) -> None:
    fake = FakeAcp(_two_edits(ws, protected))
    events = await _gemini(ws, fake, approval_mode="auto_edit")
    decisions = [e for e in events if isinstance(e, PermissionDecision)]
    # unified's policy decides, as on the API backends: the protected write is its rule's, the other the mode's
    assert [(d.decision, d.decided_by, d.rule) for d in decisions] == [
        ("deny", "policy", "protected-paths"),
        ("allow", "approval_mode", "auto-edit"),
    ]
    assert "protected path" in (decisions[0].reason or "")
    assert fake.permission_answers == [
        {"outcome": "selected", "optionId": "cancel"},
        {"outcome": "selected", "optionId": "proceed_once"},
    ]
    assert [e.is_error for e in events if isinstance(e, ToolResult)] == [True, False]
    # the CLI runs in its default mode, so its own autoEdit cannot approve an edit unseen
    assert not [m for m in fake.received if m.get("method") == "session/set_mode"]


async def test_gemini_cli_judges_the_diffs_path_not_the_titles(ws: Path) -> None:
    """The CLI's title shows a shortened path (`Writing to settings.json`); the policy judges the diff's."""
    fake = FakeAcp(_two_edits(ws, ".claude/settings.json"))
    events = await _gemini(ws, fake, approval_mode="auto_edit")
    first = next(e for e in events if isinstance(e, ToolUse))
    assert first.input["file_path"] == str(ws / ".claude" / "settings.json")
    assert [e.decision for e in events if isinstance(e, PermissionDecision)] == ["deny", "allow"]


async def test_gemini_cli_puts_only_the_protected_write_to_the_user(ws: Path) -> None:
    asked: list[UserInputRequest] = []

    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.deny()

    fake = FakeAcp(_two_edits(ws, ".claude/settings.json"))
    events = await _gemini(ws, fake, approval_mode="auto_edit", on_user_input=on_user_input)
    assert len(asked) == 1
    assert "It writes a protected path" in (asked[0].questions[0].prompt if asked[0].questions else "")
    assert [e.decision for e in events if isinstance(e, PermissionDecision)] == ["deny", "allow"]


async def test_gemini_cli_yolo_does_not_ask(ws: Path) -> None:
    fake = FakeAcp(_two_edits(ws, ".git/config"))
    events = await _gemini(ws, fake, approval_mode="yolo")
    assert [e.decision for e in events if isinstance(e, PermissionDecision)] == ["allow", "allow"]
