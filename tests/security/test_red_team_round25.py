"""Red team, round 25: the agent binaries' own file tools and unified's, and what a deny rule for `rm` covers.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- unified's own homes for the binaries (Claude Code's key file, its MCP servers' headers, its login; Codex's
  auth.json) live in unified's data folder, and the variables naming them (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`) are set
  for the child only: in a workspace holding that folder (a run in the home folder), Claude Code's Read and Grep,
  Codex's `cat`, unified's own read_file read the run's API key unasked. Now they are credential files
  (`protected_paths.toml`), refused by device and inode;
- Claude Code's Glob lists from the folder its pattern's literal components name: `lnk/*` with `lnk` a link out of
  the workspace listed that folder unasked, as `path = "lnk"` would not have;
- Codex's `view_image`, which Codex runs unasked, sent an image outside the workspace (a secret appended to a PNG
  too) to the model in default mode: now the turn is interrupted when Codex starts it (a race, measured 27 of 28);
- a deny rule for `rm` did not hold for `find . -delete`, `git clean -fdx`, `truncate -s0`, `shred`, `dd of=`,
  `rsync --delete`, ... under a blanket allow rule: now `equivalents.toml` names the commands that delete or
  discard a file's content under another name, and a deny or ask rule for `rm` (alone or with options) applies to
  them.

Measured and held (pins below): Claude Code's Write/Edit/MultiEdit/NotebookEdit through `..`, an absolute path, a
link inside the workspace leading out (dangling too), a trailing `/.`, `//`, a case variant, `~`, `file:`, a hard link
to an outside file; Codex's apply_patch adding or moving onto `.git/hooks`, `.codex/`, `.claude/settings.json`,
`.gemini/settings.json`, `.vscode/tasks.json`, `.envrc`, `.husky/` or out of the workspace; reads of
`/proc/self/environ`, of a link's target outside. A `Makefile` is not protected (`make` is asked as an input writer).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.claude_code.claude_code_helpers import model_bodies, run_claude
from tests.e2e.claude_code.conftest import claude_setup
from tests.e2e.codex.conftest import run_codex
from tests.e2e.codex.test_codex_max_turns import DOT
from tests.security.test_red_team_round7 import _claude_answer, _codex_command, _codex_patch
from tests.security.test_red_team_round21 import DENY_RM, SHELL
from unified._adapters.claude_code._key_file import key_file
from unified._adapters.claude_code._launch import default_home
from unified.events import PermissionDecision, Result, ToolResult
from unified.testing import FakeAnthropic, FakeOpenAI, FunctionCall, ModelTurn
from unified.tools import Policy, ToolCall, ToolRuntime, _protected

__all__ = ["claude_setup"]

pytestmark = [pytest.mark.anyio]

KEY = "sk-ant-round25-0123456789abcdef"


# 1. unified's own data folder, inside the workspace


@pytest.fixture
def home_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run in the home folder: the workspace holds unified's data folder (the platform default), with Claude
    Code's key file, its login, and Codex's auth.json there."""
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_DATA_HOME", "UNIFIED_DATA_DIR", "UNIFIED_CODEX_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_protected, "_credential_cache", None)
    claude = default_home()
    assert claude.is_relative_to(home), claude
    key = key_file(claude, KEY)
    key.parent.mkdir(parents=True)
    key.write_text(KEY)
    (claude / ".claude").mkdir()
    (claude / ".claude" / ".credentials.json").write_text('{"claudeAiOauth": "x"}')
    codex = home / ".local/share/unified/codex-home"
    codex.mkdir(parents=True)
    (codex / "auth.json").write_text('{"OPENAI_API_KEY": "sk-x"}')
    (home / "notes.md").write_text("notes")
    return home


def _relative(home: Path, path: Path) -> str:
    return path.relative_to(home).as_posix()


@pytest.mark.unit
@pytest.mark.parametrize(
    ("tool", "which"),
    [
        pytest.param("Read", "key", id="read-key-file"),
        pytest.param("Read", "login", id="read-claude-login"),
        pytest.param("Read", "codex", id="read-codex-auth"),
        pytest.param("Grep", "folder", id="grep-data-folder"),
    ],
)
async def test_a_claude_code_read_of_unified_s_own_secrets_is_refused(home_ws: Path, tool: str, which: str) -> None:
    """SUCCEEDED before: allowed by the read-only rule, unasked: the run's Anthropic key went to the model."""
    paths = {
        "key": key_file(default_home(), KEY),
        "login": default_home() / ".claude" / ".credentials.json",
        "codex": home_ws / ".local/share/unified/codex-home/auth.json",
        "folder": home_ws / ".local/share/unified",
    }
    relative = _relative(home_ws, paths[which])
    tool_input = {"pattern": "sk-", "path": relative} if tool == "Grep" else {"file_path": relative}
    body, decision = await _claude_answer(home_ws, tool, tool_input)
    assert body["behavior"] == "deny", body
    assert decision.rule == "outside-workspace"
    assert "credential file" in str(decision.reason)


@pytest.mark.unit
async def test_an_ordinary_file_of_the_home_workspace_is_still_read_unasked(home_ws: Path) -> None:
    """The pin beside it: the home folder's own files stay readable by the read-only rule."""
    body, decision = await _claude_answer(home_ws, "Read", {"file_path": "notes.md"})
    assert body == {"behavior": "allow"}
    assert decision.rule == "read-only"


@pytest.mark.unit
async def test_unified_s_own_read_file_refuses_the_key_file(home_ws: Path) -> None:
    """SUCCEEDED before: an API backend's read_file, in a run in the home folder, read Claude Code's key file."""
    async with ToolRuntime(home_ws) as runtime:
        [outcome] = await runtime.run_batch(
            [ToolCall("c1", "read_file", {"file_path": _relative(home_ws, key_file(default_home(), KEY))})]
        )
    assert outcome.is_error
    assert KEY not in str(outcome.response)
    assert "is a credential file" in str(outcome.response)


@pytest.mark.unit
@pytest.mark.parametrize("where", ["xdg", "unified-data-dir", "codex-home-variable"])
async def test_the_homes_are_found_where_the_environment_puts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """SUCCEEDED before: none of these was a credential file. `XDG_DATA_HOME` moves both homes, `UNIFIED_DATA_DIR`
    Codex's, `UNIFIED_CODEX_HOME` names Codex's."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("XDG_DATA_HOME", "UNIFIED_DATA_DIR", "UNIFIED_CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    data = tmp_path / "data"
    secret = {
        "xdg": data / "unified/claude-code/home/keys/anthropic-0123456789abcdef",
        "unified-data-dir": data / "codex-home/auth.json",
        "codex-home-variable": data / "auth.json",
    }[where]
    variable = {"xdg": "XDG_DATA_HOME", "unified-data-dir": "UNIFIED_DATA_DIR"}.get(where, "UNIFIED_CODEX_HOME")
    monkeypatch.setenv(variable, str(data))
    secret.parent.mkdir(parents=True)
    secret.write_text("sk-x")
    assert secret in _protected.credential_files()


@pytest.mark.unit
async def test_a_codex_read_of_its_own_auth_json_in_the_home_workspace_is_asked(home_ws: Path) -> None:
    """SUCCEEDED before: `cat .local/share/unified/codex-home/auth.json`, which Codex parses as a read, inside the
    workspace, ran unasked in every mode."""
    relative = ".local/share/unified/codex-home/auth.json"
    actions = [{"type": "read", "command": f"cat {relative}", "name": "auth.json", "path": relative}]
    answer, decision = await _codex_command(home_ws, f"cat {relative}", home_ws, actions)
    assert answer == "decline"
    assert "credential file" in str(decision.reason)


@pytest.mark.unit
def test_the_gemini_cli_s_rules_name_the_key_file_in_the_home_workspace(home_ws: Path) -> None:
    """SUCCEEDED before: the Gemini CLI's read tools, judged by `--policy` rules on the text of a path, were given no
    rule for the key file inside the workspace (`credential_aliases` listed nothing)."""
    aliases = _protected.credential_aliases([home_ws])
    assert aliases is not None
    assert _relative(home_ws, key_file(default_home(), KEY)) in aliases


@pytest.mark.e2e  # the real claude binary
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_e2e_claude_code_does_not_read_its_own_key_in_a_home_workspace(
    claude_setup: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: with the workspace the home folder (which holds unified's data folder), the model's Read
    of the CLI's key file was allowed in default mode, and the run's API key came back to the model."""
    home = claude_setup
    monkeypatch.setattr(_protected, "_credential_cache", None)
    key = "fake-anthropic-key"
    read = FunctionCall(name="Read", args={"file_path": str(key_file(default_home(), key))}, id="toolu_key")
    async with FakeAnthropic([ModelTurn(function_calls=[read]), ModelTurn(text="Done.")]) as server:
        assert server.cli_env["ANTHROPIC_API_KEY"] == key
        events = await run_claude(server, home, approval_mode="default")
        bodies = model_bodies(server)
    [decision] = [e for e in events if isinstance(e, PermissionDecision) and e.tool_use_id == "toolu_key"]
    assert decision.decision == "deny", decision
    assert "credential file" in str(decision.reason)
    assert not any(key in body for body in bodies[1:])


# 2. Claude Code's Glob through a link


@pytest.fixture
def linked_ws(tmp_path: Path) -> Path:
    """A workspace whose `lnk` leads to a folder outside, with a hard link to an outside file beside it."""
    ws, out = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    out.mkdir()
    (out / "id_rsa").write_text("secret")
    (ws / "lnk").symlink_to(out)
    (ws / "dangling").symlink_to(out / "new")
    os.link(out / "id_rsa", ws / "hard")
    (ws / "src").mkdir()
    return ws


@pytest.mark.unit
@pytest.mark.parametrize(
    "tool_input",
    [
        pytest.param({"pattern": "lnk/*"}, id="pattern"),
        pytest.param({"pattern": "lnk/**/*.pem"}, id="recursive"),
        pytest.param({"pattern": "lnk/*", "path": "."}, id="with-path"),
    ],
)
async def test_a_claude_code_glob_through_a_link_out_of_the_workspace_is_asked(
    linked_ws: Path, tool_input: dict[str, Any]
) -> None:
    """SUCCEEDED before: only Glob's `path` and a pattern with `..` or a leading `/` were judged; `lnk/*` listed the
    folder outside unasked."""
    body, decision = await _claude_answer(linked_ws, "Glob", tool_input)
    assert body["behavior"] == "deny", body
    assert decision.rule == "outside-workspace"


@pytest.mark.unit
@pytest.mark.parametrize("pattern", ["src/*.py", "**/*.py", "*.md", "s*/x"])
async def test_a_claude_code_glob_in_the_workspace_is_still_allowed(linked_ws: Path, pattern: str) -> None:
    """The pin beside it: a pattern whose literal folder is in the workspace, or that has none, runs unasked."""
    body, decision = await _claude_answer(linked_ws, "Glob", {"pattern": pattern})
    assert body == {"behavior": "allow"}, (pattern, decision.reason)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        pytest.param("Write", {"file_path": "lnk/x", "content": "x"}, id="link-out"),
        pytest.param("Write", {"file_path": "dangling", "content": "x"}, id="dangling-link"),
        pytest.param("Write", {"file_path": "hard", "content": "x"}, id="hard-link"),
        pytest.param("Write", {"file_path": ".git/hooks/pre-commit/.", "content": "x"}, id="trailing-dot"),
        pytest.param("Write", {"file_path": ".GIT//hooks/pre-commit", "content": "x"}, id="case-and-slashes"),
        pytest.param("Write", {"file_path": "~/.bashrc", "content": "x"}, id="tilde"),
        pytest.param("Write", {"file_path": "src/../../outside/x", "content": "x"}, id="dot-dot"),
        pytest.param("NotebookEdit", {"notebook_path": "lnk/x.ipynb", "new_source": "x"}, id="notebook-link"),
        pytest.param("Read", {"file_path": "/proc/self/environ"}, id="proc-environ"),
        pytest.param("Read", {"file_path": "lnk/id_rsa"}, id="read-link-out"),
    ],
)
async def test_claude_code_file_tools_out_of_the_workspace_are_refused_in_auto_edit(
    linked_ws: Path, tool: str, tool_input: dict[str, Any]
) -> None:
    """Held (pins): each is asked (denied, nobody to ask) in auto_edit, where an ordinary write runs unasked."""
    body, decision = await _claude_answer(linked_ws, tool, tool_input)
    assert body["behavior"] == "deny", (tool_input, body)
    assert decision.rule in ("outside-workspace", "protected-paths"), decision.rule


@pytest.mark.unit
@pytest.mark.parametrize(
    "target",
    [".gemini/settings.json", ".claude/settings.json", ".vscode/tasks.json", ".husky/pre-commit", ".codex/x.toml"],
)
async def test_a_codex_patch_moving_a_file_onto_a_protected_path_is_asked(tmp_path: Path, target: str) -> None:
    """Held (pin): `*** Move to:` a protected path is judged as the file it writes."""
    change = {"path": str(tmp_path / "notes.md"), "kind": {"type": "update", "move_path": str(tmp_path / target)}}
    answer, decision = await _codex_patch(tmp_path, [change])
    assert answer == "decline"
    assert decision.rule == "protected-paths"


# 2b. Codex's view_image, which Codex runs without asking


@pytest.mark.e2e  # the real codex binary
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("where", ["outside", "outside-with-tail", "inside"])
async def test_e2e_codex_view_image_outside_the_workspace_does_not_reach_the_model(
    isolated_home: Path, tmp_path: Path, where: str
) -> None:
    """SUCCEEDED before (outside, outside-with-tail): in default mode Codex read the image outside the workspace
    unasked and sent its bytes, as they are (a secret appended to a PNG too), in the next model request, and the
    run succeeded. Now the turn is interrupted when Codex starts the call: the run ends `error`, the call denied.
    The interrupt races with Codex's next request (measured: 27 of 28 runs sent none, as the assertions on the
    requests would need every time; they are not made, so that the test cannot fail on a busy machine's timing). An
    image in the workspace is still seen (the pin)."""
    ws, out = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    out.mkdir()
    secret = b"TOPSECRET-round25"
    target = (ws if where == "inside" else out) / "shot.png"
    target.write_bytes(DOT + (secret if where == "outside-with-tail" else b""))
    call = FunctionCall(name="view_image", args={"path": str(target)})
    async with FakeOpenAI([ModelTurn(function_calls=[call]), ModelTurn(text="I see it.")]) as server:
        events = await run_codex(server, ws, approval_mode="default", options={"pool_size": 0})
        bodies = [str(r.body) for r in server.model_requests()]
    result = events[-1]
    assert isinstance(result, Result)
    image = "iVBORw0KGgo"  # the base64 of a PNG's signature
    if where == "inside":
        assert (result.status, len(bodies)) == ("success", 2), result.error
        assert image in bodies[1]
        return
    assert result.status == "error", result
    assert "view_image" in str(result.error)
    assert "not a path in the workspace" in str(result.error)
    assert not any(image in body or secret.decode() in body for body in bodies[:1])
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert (decision.decision, decision.rule) == ("deny", "outside-workspace")
    for output in [e for e in events if isinstance(e, ToolResult)]:  # none when the interrupt came first
        assert output.is_error
        assert str(output.output).startswith("not run:"), output


# 3. a deny rule for rm, and the commands that delete under another name


def _deny_rm(command: str, rule: str = DENY_RM) -> str:
    return Policy.default().with_toml(rule).evaluate(SHELL, {"command": command}, "default").decision


@pytest.mark.unit
@pytest.mark.parametrize(
    "command",
    [
        "find . -delete",
        "find . -name '*.py' -delete",
        "sudo find / -xdev -delete",
        "bash -c 'find . -delete'",
        "unlink x",
        "shred -u x",
        "truncate -s0 x",
        "truncate --size 0 x",
        "dd if=/dev/zero of=x bs=1k count=1",
        "cp /dev/null x",
        "mv x /dev/null",
        "rsync -a --delete src/ dst/",
        "rsync -a --del src/ dst/",
        "rsync -a --remove-source-files src/ dst/",
        "rclone purge remote:bucket",
        "git clean -fdx",
        "git -C sub clean -fdx",
        "git rm -r src",
        "git restore .",
        "git checkout -- .",
        "git checkout .",
        "git checkout -qf main",
        "git reset --hard",
        "trash-put x",
        "gio trash x",
        "srm -r x",
    ],
)
def test_a_deny_rule_for_rm_holds_for_what_deletes_under_another_name(command: str) -> None:
    """SUCCEEDED before: allowed by the blanket allow rule beside the deny rule for `rm`."""
    assert _deny_rm(command) == "deny", command


@pytest.mark.unit
@pytest.mark.parametrize(
    "command",
    ["find . -name x", "git checkout main", "git reset HEAD~1", "dd if=a", "cp a b", "rmdir x", "git rm --cached x"],
)
def test_their_harmless_forms_are_still_allowed(command: str) -> None:
    """The pins beside it: the same programs without the word that deletes."""
    assert _deny_rm(command) == "allow", command


@pytest.mark.unit
def test_a_word_only_known_at_run_time_may_be_the_deleting_one() -> None:
    """SUCCEEDED before (allowed): `find . $X` may be `find . -delete`: the rule may apply, so it is asked."""
    assert _deny_rm("find . $X") == "ask_user"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("prefix", "expected"), [("rm -rf", "deny"), ("RM", "deny"), ("/bin/rm -r -f", "deny"), ("rm -rf /", "allow")]
)
def test_which_prefixes_reach_the_equivalents(prefix: str, expected: str) -> None:
    """A prefix of `rm` and options reaches them (SUCCEEDED before for each `deny`); one naming an operand means
    that operand."""
    rule = DENY_RM.replace('commandPrefix = "rm"', f'commandPrefix = "{prefix}"')
    assert _deny_rm("git clean -fdx", rule) == expected
