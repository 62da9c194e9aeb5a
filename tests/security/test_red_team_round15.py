"""Red team, round 15: the caller's path rules against what a call reaches past its path arguments (walks, a shell
command's words), files that run code, mass kills, and new attacks on the policy's readers.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a search, glob or tree of `.` (unified's own; Claude Code's Grep and Glob without a path; the Gemini CLI's
  grep_search; `rg x`, `grep -r x .`, `find .` in a shell, which Codex runs unasked as reads) walked into
  `secrets/` past a deny of `secrets/`, directly or through a link in the workspace: unified's walks now leave out
  what the call could not name (`_reach.Veto`, said in the answer, never named), a walk a program does itself is
  judged entry by entry first (`_reach.tree_verdict`);
- a path inside a shell command was read as text: `cat docs/l/key` (`docs/l -> ../secrets`), `cat k`, `cat <
  docs/l/key`, `cd docs && cat l/key`, `head secrets/../secrets/key` under a prefix rule, `cat /ws/secrets/key`;
  each word is now judged as the path it reaches too (`_reach.shell_reach`), and a path its own process resolves
  (`/proc/self/cwd/..`, `/dev/fd/N`) is asked;
- files that run later were not protected: `.venv/bin/activate` and `.venv/bin/*`, `pyvenv.cfg`,
  `node_modules/.bin/*`, other agents' instructions and settings (`.cursorrules`, `.github/copilot-instructions.md`,
  `.windsurfrules`, `.clinerules`, `.continue/`, `.vscode/mcp.json`, ...): auto_edit wrote them unasked;
- an allow rule for `kill` (a prefix or a pattern) allowed `kill -9 -1`, `kill 0`, `pkill -f .`, `pkill -u me`: a
  mass kill is now asked unless a prefix spells it (`_policy.kills_all`).

New attacks (section 5 on): a rule for read_file did not hold on a search that prints the file's lines; the Gemini
CLI's read_many_files under an allow rule; Claude Code's Read of `/proc/self/cwd/..` (resolved in unified's process);
the stream-json `--policy` file read the text of `file_path` while the CLI writes through a repository's link to
`.envrc`. Against this round's own first judges: a NUL in `$'..'` ending the argument, a value after more than 8
option letters, `/proc/./self` and a link to `/proc`, `dd if=`, `7z`/`bsdtar`/`ugrep`/`egrep -r`/`ls --recursive`, a
word known at run time hiding its part, and a pkill pattern that backtracked for over a minute in `re`. Held (pins):
here-strings, process substitution, variables, globs, braces, `bash -c`, a file swapped for a link mid-walk.

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any, cast

import pytest

from tests.security.test_permission_type_confusion import Context, Wire
from tests.security.test_red_team_round7 import _auto_edit, _claude_answer
from tests.security.test_red_team_round13 import DENY_SECRETS, _linked_workspace
from unified import ExecuteParams
from unified.events import PermissionDecision
from unified.tools import Policy, ToolCall, ToolRuntime

pytestmark = [pytest.mark.anyio]

READS = DENY_SECRETS.with_toml(
    '[[rule]]\nname = "reads"\ntoolName = "run_shell_command"\n'
    'commandPrefix = ["cat", "head", "cp", "rg", "grep", "find", "ls", "tree", "cd"]\ndecision = "allow"\n'
)
"""A caller who lets commands that read run unasked, and denies `secrets/`."""


def _workspace(tmp_path: Path) -> Path:
    ws = _linked_workspace(tmp_path)
    (ws / "docs" / "a.md").write_text("TOP of the docs\n")
    return ws


# --- 1. a walk of `.` past a deny rule -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        pytest.param("search", {"query": "TOP"}, id="search-no-path"),
        pytest.param("search", {"query": "TOP", "path": "."}, id="search-dot"),
        pytest.param("search", {"query": "TOP", "path": "docs/.."}, id="search-dot-dot"),
        pytest.param("glob", {"pattern": "**/*"}, id="glob"),
        pytest.param("glob", {"pattern": "**/key"}, id="glob-key"),
        pytest.param("tree", {"path": ".", "depth": 4}, id="tree"),
    ],
)
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the walk runs in a worker thread (`_safe_io.in_worker`)
async def test_a_walk_of_the_workspace_leaves_out_what_a_deny_rule_covers(
    tmp_path: Path, tool: str, args: dict[str, Any]
) -> None:
    """SUCCEEDED before: `search` of `.` printed `secrets/key:1: TOPSECRET` (and `k:1: TOPSECRET` through the link
    `k -> secrets/key`), glob and tree listed `secrets/key`, though a search of `secrets` itself was denied."""
    ws = _workspace(tmp_path)
    async with ToolRuntime(ws, policy=DENY_SECRETS) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", tool, args)])
    text = json.dumps(outcome.response)
    assert "TOPSECRET" not in text
    assert "secrets/key" not in text  # a glob or tree may list the name `k` (a link): a name says nothing of it
    assert "left out: the policy does not allow this call to read them (rule no-secrets)" in text
    if tool == "search":
        assert "docs/a.md:1: TOP of the docs" in text


async def test_a_walk_under_a_policy_without_path_rules_says_nothing_more(tmp_path: Path) -> None:
    """The pin beside it: the shipped table reads no arguments, so nothing is judged entry by entry."""
    ws = _workspace(tmp_path)
    async with ToolRuntime(ws) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "search", {"query": "TOP"})])
    text = json.dumps(outcome.response)
    assert "secrets/key:1: TOPSECRET" in text
    assert "left out" not in text


async def test_an_ask_rule_for_a_folder_is_not_answered_by_allowing_a_search_above_it(tmp_path: Path) -> None:
    """An ask of `secrets/` by the caller is left out of a search the `read-only` row allowed (nobody was asked
    about `secrets/`), while a file another rule asks for, the one that asked for the call, stays in."""
    ws = _workspace(tmp_path)
    policy = Policy.default().with_toml(
        '[[rule]]\nname = "ask-secrets"\ntoolName = "*"\nargsPattern = "secrets/"\ndecision = "ask_user"\n'
    )
    async with ToolRuntime(ws, policy=policy) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "search", {"query": "TOP"})])
    text = json.dumps(outcome.response)
    assert "TOPSECRET" not in text
    assert "rule ask-secrets" in text


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        pytest.param("Grep", {"pattern": "TOP"}, id="grep-no-path"),
        pytest.param("Grep", {"pattern": "TOP", "path": "{ws}"}, id="grep-workspace"),
        pytest.param("Glob", {"pattern": "**/*"}, id="glob-no-path"),
        pytest.param("Glob", {"pattern": "**/*", "path": "{ws}"}, id="glob-workspace"),
    ],
)
async def test_a_claude_code_walk_of_the_workspace_is_denied_under_a_deny_rule(
    tmp_path: Path, tool: str, tool_input: dict[str, Any]
) -> None:
    """SUCCEEDED before: Claude Code's Grep without a path (its cwd, the workspace) was allowed by `read-only`, and
    its ripgrep read `secrets/key` past the caller's deny of `secrets/`. Unified cannot filter what the CLI finds,
    so the walk is judged first: an entry the rule denies denies the call, with the reason (narrow the path)."""
    ws = _workspace(tmp_path)
    filled = json.loads(json.dumps(tool_input).replace("{ws}", str(ws)))
    body, decision = await _claude_answer(ws, tool, filled, DENY_SECRETS)
    assert body["behavior"] == "deny", body
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")
    assert "name a folder that does not hold it" in (decision.reason or "")


async def test_a_claude_code_grep_of_a_folder_holding_nothing_denied_is_still_allowed(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("x = 1\n")
    body, decision = await _claude_answer(ws, "Grep", {"pattern": "x", "path": str(ws / "src")}, DENY_SECRETS)
    assert body == {"behavior": "allow"}
    assert decision.rule == "read-only"


async def test_a_claude_code_walk_too_large_to_judge_is_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder with more entries than are judged (`POLICY_WALK_MAX_ENTRIES`) cannot be vouched for: asked (denied
    with nobody to answer)."""
    from unified import _limits

    monkeypatch.setattr(_limits, "POLICY_WALK_MAX_ENTRIES", 3)
    ws = _workspace(tmp_path)
    (ws / "many").mkdir()
    for index in range(5):
        (ws / "many" / f"f{index}").write_text("x")
    body, decision = await _claude_answer(ws, "Grep", {"pattern": "x", "path": str(ws / "many")}, DENY_SECRETS)
    assert body["behavior"] == "deny"
    assert "too many entries" in (decision.reason or "")


async def test_a_gemini_cli_grep_of_the_workspace_is_denied_under_a_deny_rule(tmp_path: Path) -> None:
    """SUCCEEDED before: the CLI's grep_search without a dir_path (asked of unified because a caller's rule names
    every tool) was allowed by `read-only`; the CLI then read `secrets/key`."""
    ws = _workspace(tmp_path)
    async with ToolRuntime(ws, policy=DENY_SECRETS) as runtime:
        decision = await runtime.decide(ToolCall("c1", "grep_search", {"pattern": "TOP"}))
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")


async def codex_read(
    ws: Path, command: str, actions: list[dict[str, Any]], policy: Policy | None = None, *, mode: str = "auto_edit"
) -> tuple[dict[str, Any], Any]:
    """Codex's approval request for a command it parses as reads (run unasked when unified agrees), answered by the
    bridge in `mode` under `policy` (None: the shipped one): the answer's body and unified's decision."""
    from unified._adapters.codex._approvals import ApprovalBridge
    from unified._adapters.codex._translate import AppServerTranslator

    translator = AppServerTranslator(main_thread="T", cwd=str(ws))
    translator.start_turn("U")
    ctx = (
        _auto_edit(ws) if mode == "auto_edit" else Context(ExecuteParams(prompt="p", cwd=ws, approval_mode=mode), None)
    )
    wire = Wire()
    params = {
        "threadId": "T",
        "turnId": "U",
        "itemId": "call_read",
        "command": f"/bin/bash -lc {shlex.quote(command)}",
        "cwd": str(ws),
        "commandActions": actions,
    }
    request = {"method": "item/commandExecution/requestApproval", "id": 0, "params": params}
    await ApprovalBridge(cast(Any, ctx), cast(Any, wire), translator, policy).answer(request)
    [(_, _, body)] = wire.answers()
    [decision] = [e for e in ctx.events if isinstance(e, PermissionDecision)]
    return body, decision


@pytest.mark.parametrize(
    ("command", "actions"),
    [
        pytest.param("rg TOP", [{"type": "search", "command": "rg TOP", "query": "TOP", "path": None}], id="rg"),
        pytest.param(
            "grep -rn TOP .", [{"type": "search", "command": "grep -rn TOP .", "query": "TOP", "path": "."}], id="grep"
        ),
        pytest.param("find .", [{"type": "listFiles", "command": "find .", "path": "."}], id="find"),
        pytest.param("ls -R", [{"type": "listFiles", "command": "ls -R", "path": None}], id="ls-R"),
        pytest.param(
            "cat docs/l/key", [{"type": "read", "command": "cat docs/l/key", "name": "key", "path": "docs/l/key"}]
        ),
        pytest.param("cat k", [{"type": "read", "command": "cat k", "name": "k", "path": "k"}]),
    ],
)
async def test_a_codex_read_that_reaches_a_denied_folder_is_declined(
    tmp_path: Path, command: str, actions: list[dict[str, Any]]
) -> None:
    """SUCCEEDED before: Codex's read-only commands run unasked in every mode when unified's parse agrees, and the
    caller's rule read the command's text: `rg TOP` printed `secrets/key:TOPSECRET`, `cat docs/l/key` the key."""
    ws = _workspace(tmp_path)
    answer, decision = await codex_read(ws, command, actions, DENY_SECRETS)
    assert answer["decision"] == "decline"
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")


async def test_a_codex_read_of_a_folder_holding_nothing_denied_still_runs_unasked(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    actions = [{"type": "search", "command": "rg TOP docs/a.md", "query": "TOP", "path": "docs/a.md"}]
    answer, _ = await codex_read(ws, "rg TOP docs/a.md", actions, DENY_SECRETS)
    assert answer["decision"] == "accept"


# --- 2. a path inside a shell command, read as text -----------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cat docs/l/key",
        "cat k",
        "cp docs/l/key out",
        "cat < docs/l/key",
        "cd docs && cat l/key",
        "cat ./docs/../docs/l/key",
        "cat -- docs/l/key",
        "cat {ws}/docs/l/key",
        "rg TOP",
        "grep -r TOP .",
        "grep -rn TOP",
        "find .",
        "tree",
        "rg TOP docs",
    ],
)
async def test_a_shell_command_reaching_a_denied_path_is_denied_under_an_allow_rule(
    tmp_path: Path, command: str
) -> None:
    """SUCCEEDED before: a caller's allow rule for `cat` ran `cat docs/l/key` (`docs/l -> ../secrets`) past its own
    deny of `secrets/`: the rule read the command's text, not the path its words reach."""
    ws = _workspace(tmp_path)
    async with ToolRuntime(ws, policy=READS) as runtime:
        call = ToolCall("c1", "run_shell_command", {"command": command.format(ws=ws)})
        decision = await runtime.decide(call)
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")


@pytest.mark.parametrize(
    "command", ["head secrets/../secrets/key", "cat ./secrets/key", "cat docs/l/key", "cat {ws}/secrets/key"]
)
async def test_a_prefix_deny_of_a_path_holds_however_the_path_is_spelled(tmp_path: Path, command: str) -> None:
    """SUCCEEDED before: a prefix rule `cat secrets/key` matched the word as written, so `cat ./secrets/key` and
    `head secrets/../secrets/key` were allowed by the caller's rule for `cat` and `head`."""
    ws = _workspace(tmp_path)
    policy = Policy.default().with_toml(
        '[[rule]]\nname = "no-key"\ntoolName = "run_shell_command"\n'
        'commandPrefix = ["cat secrets/key", "head secrets/key"]\ndecision = "deny"\n'
        '[[rule]]\nname = "reads"\ntoolName = "run_shell_command"\ncommandPrefix = ["cat", "head"]\n'
        'decision = "allow"\n'
    )
    async with ToolRuntime(ws, policy=policy) as runtime:
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": command.format(ws=ws)}))
    assert (decision.decision, decision.rule) == ("deny", "no-key")


@pytest.mark.parametrize(
    "command",
    [
        "cat /proc/self/cwd/x/key",
        "cat /dev/fd/3",
        "cat /proc/thread-self/root/etc/x",
        "cat /proc/./self/cwd/x/key",
        "cat //proc/../proc/self/cwd/x/key",
        "cat pp/self/cwd/x/key",
        "cat < pp/self/cwd/x/key",
        "cat docs/../pp/self/cwd/x",
    ],
)
async def test_a_path_the_commands_own_process_resolves_is_asked(tmp_path: Path, command: str) -> None:
    """SUCCEEDED before: `/proc/self/cwd` in the command is the shell's cwd, but unified resolved it as its own
    (another folder): `cat /proc/self/cwd/secrets/key` spelled without `secrets/` ran under an allow rule. Spelled
    with `.` or `..` on the way, or through a link to `/proc` (`pp`), it SUCCEEDED on this round's first judge,
    which matched the text."""
    ws = _workspace(tmp_path)
    os.symlink("/proc", ws / "pp")
    async with ToolRuntime(ws, policy=READS) as runtime:
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": command}))
    assert decision.decision == "deny"
    assert "own process" in (decision.reason or "")


@pytest.mark.parametrize("command", ["cat docs/a.md", "ls", "ls docs", "grep TOP docs/a.md", "cd docs && cat a.md"])
async def test_a_shell_read_reaching_nothing_denied_is_still_allowed(tmp_path: Path, command: str) -> None:
    ws = _workspace(tmp_path)
    async with ToolRuntime(ws, policy=READS) as runtime:
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": command}))
    assert (decision.decision, decision.rule) == ("allow", "reads")


EXACT = DENY_SECRETS.with_toml(
    '[[rule]]\nname = "exact"\ntoolName = "run_shell_command"\n'
    'commandPrefix = ["git status", "git log -1", "wc -l a.md", "rg TOP ."]\ndecision = "allow"\n'
)
"""A caller who allows a few commands by their exact text, and denies `secrets/`."""


@pytest.mark.parametrize(
    ("command", "folder"),
    [
        ("git status", "docs"),
        ("git log -1", "docs"),
        ("wc -l a.md", "docs"),
        ("rg TOP .", "docs"),
        ("rg TOP .", "."),
    ],
)
async def test_an_allow_rule_for_a_commands_text_holds_in_a_subfolder_and_over_its_walk(
    tmp_path: Path, command: str, folder: str
) -> None:
    """Broke on this round's first judge (a fresh-clone CI found it in round 3's `git status` test): a command run
    in `docs/` was also judged as its words rewritten to the paths they reach (`git docs/status`), and an entry of
    its walk as the call naming it (`rg TOP docs/a.md`); those texts match no allow rule, so the shipped
    `shell-asks` asked, and the stricter verdict lost the caller's allow rule. Only a rule that reads arguments (or
    a denial) refuses a rewritten call now."""
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "a.md").write_text("TOP\n")
    async with ToolRuntime(ws, policy=EXACT) as runtime:
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": command, "dir_path": folder}))
    assert (decision.decision, decision.rule) == ("allow", "exact")


async def test_a_shell_command_through_a_link_does_not_print_the_key(tmp_path: Path) -> None:
    """The whole run: the runtime's shell never starts `cat docs/l/key`."""
    ws = _workspace(tmp_path)
    async with ToolRuntime(ws, policy=READS) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "run_shell_command", {"command": "cat docs/l/key"})])
    assert "TOPSECRET" not in json.dumps(outcome.response)
    assert outcome.decision is not None
    assert outcome.decision.rule == "no-secrets"


async def test_claude_code_bash_reaching_a_denied_path_is_denied(tmp_path: Path) -> None:
    """SUCCEEDED before: Claude Code's Bash `cat docs/l/key` under the caller's allow rule for `cat`."""
    ws = _workspace(tmp_path)
    body, decision = await _claude_answer(ws, "Bash", {"command": "cat docs/l/key"}, READS)
    assert body["behavior"] == "deny"
    assert decision.rule == "no-secrets"


def test_the_link_in_the_fixture_is_what_the_tests_think(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    assert os.path.realpath(ws / "docs" / "l" / "key") == str(ws / "secrets" / "key")


# --- 3. files that run code, and other agents' instructions -------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        ".venv/bin/activate",
        ".venv/bin/pytest",
        "venv/bin/python3",
        "sub/.venv/bin/ruff",
        ".venv/pyvenv.cfg",
        "node_modules/.bin/prettier",
        "web/node_modules/.bin/eslint",
        ".cursorrules",
        ".github/copilot-instructions.md",
        ".github/instructions/python.instructions.md",
        ".windsurfrules",
        ".windsurf/rules/style.md",
        ".clinerules",
        ".clinerules/style.md",
        ".roorules",
        ".roo/rules/a.md",
        ".amazonq/rules/a.md",
        ".junie/guidelines.md",
        ".continue/config.yaml",
        ".aider.conf.yml",
        ".vscode/mcp.json",
        ".zed/settings.json",
        ".zed/tasks.json",
    ],
)
async def test_a_write_of_a_file_that_runs_later_is_asked_in_auto_edit(tmp_path: Path, path: str) -> None:
    """SUCCEEDED before: auto_edit wrote these unasked. `.venv/bin/activate` is sourced into the user's shell and
    `.venv/bin/*`, `node_modules/.bin/*` run by name (`uv run`, `npx`, an activated venv's PATH), `pyvenv.cfg`'s
    `home` chooses the interpreter a venv starts; the others are the instructions or settings (MCP servers, lint
    and test commands) the next run of another agent obeys, as `AGENTS.md` and `CLAUDE.md` (protected already)."""
    async with ToolRuntime(tmp_path, approval_mode="auto_edit") as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "write_file", {"file_path": path, "content": "x"})])
    assert outcome.decision is not None
    assert (outcome.decision.decision, outcome.decision.rule) == ("deny", "protected-paths")
    assert not (tmp_path / path).exists()


@pytest.mark.parametrize("path", ["src/bin/tool.py", "node_modules/lib/index.js", ".github/workflows/ci.yml", "bin/x"])
async def test_ordinary_files_beside_them_are_still_written_unasked(tmp_path: Path, path: str) -> None:
    """The pins beside it: a project's own `bin`, a dependency's module (it runs when a command that runs code,
    asked, imports it), a workflow (it runs on a server after a push the user makes)."""
    async with ToolRuntime(tmp_path, approval_mode="auto_edit") as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "write_file", {"file_path": path, "content": "x"})])
    assert outcome.decision is not None
    assert outcome.decision.decision == "allow"


# --- 4. a mass kill under an allow rule for `kill` -------------------------------------------------------------

KILLS = Policy.default().with_toml(
    '[[rule]]\nname = "kills"\ntoolName = "run_shell_command"\ncommandPrefix = ["kill", "pkill", "killall"]\n'
    'decision = "allow"\n'
    '[[rule]]\nname = "kill-pattern"\ntoolName = "run_shell_command"\nargsPattern = \'"command": "(kill|pkill) \'\n'
    'decision = "allow"\nmodes = ["auto_edit"]\n'
)


@pytest.mark.parametrize("mode", ["default", "auto_edit"])
@pytest.mark.parametrize(
    "command",
    [
        "kill -9 -1",
        "kill -- -1",
        "kill -KILL -1",
        "kill -s KILL -1",
        "kill -n 9 -1",
        "kill -9 -01",
        "kill 0",
        "/bin/kill -9 -1",
        "env kill -9 -1",
        "timeout 5 kill -9 -1",
        "busybox kill -9 -1",
        "echo -1 | xargs kill -9",
        "kill -9 $PID",
        "pkill -f .",
        "pkill -9 -f '.*'",
        "pkill -u me",
        "killall -u me",
        "killall5 -9",
    ],
)
def test_a_mass_kill_is_not_covered_by_an_allow_rule_for_kill(command: str, mode: str) -> None:
    """SUCCEEDED before: a caller's rule for `kill` (a prefix, or an argsPattern) allowed `kill -9 -1`, which
    signals every process the user may (unified's host, the user's shell and editor, other agents), and `pkill -f
    .`. A rule for `kill` means a process the model names; a mass kill is asked (denied with nobody to answer).
    `xargs kill` and `killall5` held before (not named by the rules): pins."""
    verdict = KILLS.evaluate("run_shell_command", {"command": command}, cast(Any, mode))
    assert verdict.decision.value == "ask_user", verdict


@pytest.mark.parametrize(
    "command", ["kill 1234", "kill -9 1234", "kill -TERM 1234 5678", "kill -1 1234", "pkill -x node", "killall node"]
)
def test_a_kill_of_named_processes_is_still_allowed(command: str) -> None:
    assert KILLS.evaluate("run_shell_command", {"command": command}, "default").decision.value == "allow"


def test_a_prefix_that_spells_the_mass_kill_covers_it() -> None:
    """The caller who means it says so: a prefix `kill -9 -1` allows `kill -9 -1`."""
    policy = Policy.default().with_toml(
        '[[rule]]\nname = "all"\ntoolName = "run_shell_command"\ncommandPrefix = "kill -9 -1"\ndecision = "allow"\n'
    )
    assert policy.evaluate("run_shell_command", {"command": "kill -9 -1"}, "default").decision.value == "allow"


# --- 5. new attacks on the judges (this round's own and the older ones) ---------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("cat $'docs/l/key\\x00zzz'", id="nul-escape-ends-the-argument"),
        pytest.param("cat $'docs/l/key\\0'", id="nul-octal"),
        pytest.param("cat < $'docs/l/key\\0'", id="nul-in-a-redirection"),
        pytest.param("grep -" + "i" * 20 + "fdocs/l/key x", id="value-after-a-long-cluster"),
        pytest.param("cat -" + "A" * 70 + "docs/l/key", id="cluster-longer-than-judged"),
    ],
)
async def test_a_word_bash_reads_otherwise_than_its_text_is_judged_as_bash_reads_it(
    tmp_path: Path, command: str
) -> None:
    """SUCCEEDED before (on this round's first judge of shell words): `$'docs/l/key\\0zzz'` is `docs/l/key` to the
    program (bash hands it a C string), but resolving the text failed on the NUL and the word was passed over; a
    value attached after more than 8 option letters (`grep -iiii...fdocs/l/key`) was not tried as a path. A
    cluster longer than 64 letters is asked."""
    ws = _workspace(tmp_path)
    async with ToolRuntime(ws, policy=READS) as runtime:
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": command}))
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("cat <<< $(cat docs/l/key)", id="here-string-of-a-substitution"),
        pytest.param("cat <(cat docs/l/key)", id="process-substitution"),
        pytest.param('cat "$PWD/docs/l/key"', id="variable"),
        pytest.param("cat ~/../x/secrets/key", id="tilde"),
        pytest.param("cat docs/l/*", id="glob"),
        pytest.param("cat {docs/l,x}/key", id="brace"),
        pytest.param("cd docs; cd l; cat key", id="two-cds"),
        pytest.param("pushd docs/l; cat key", id="pushd"),
        pytest.param("bash -c 'cat docs/l/key'", id="bash-c"),
        pytest.param("cat /proc/self/root{ws}/docs/l/key", id="proc-self-root"),
    ],
)
async def test_other_spellings_of_a_denied_path_in_a_command_are_never_allowed(tmp_path: Path, command: str) -> None:
    """SUCCEEDED before (6ba2aec) for the here-string, the two `cd`s, `pushd`, `bash -c` and `/proc/self/root`
    (the words inside were read as text); the variable, `~`, the glob and the brace held (words only known at run
    time make a deny rule a doubt: asked, denied with nobody to answer)."""
    ws = _workspace(tmp_path)
    policy = READS.with_toml(
        '[[rule]]\nname = "b"\ntoolName = "run_shell_command"\ncommandPrefix = "bash"\ndecision = "allow"\n'
    )
    async with ToolRuntime(ws, policy=policy) as runtime:
        decision = await runtime.decide(
            ToolCall("c1", "run_shell_command", {"command": command.replace("{ws}", str(ws))})
        )
    assert decision.decision == "deny"
    assert decision.rule == "no-secrets"


async def test_a_file_swapped_for_a_link_after_the_walk_judged_it_is_not_read(tmp_path: Path) -> None:
    """Pin. A deterministic race on unified's own search: right after the veto judged `docs/a.md` (allowed), it becomes
    a link to `secrets/key`. Pin: the walk opens what it judged without following a link (`O_NOFOLLOW`), so the
    swapped name is skipped; the key is never printed."""
    from unified.tools import _reach

    ws = _workspace(tmp_path)
    judged = _reach.Veto.left_out

    def swapping(self: _reach.Veto, path: Path, is_dir: bool, is_link: bool) -> bool:
        left = judged(self, path, is_dir, is_link)
        if path.name == "a.md" and not path.is_symlink():
            path.unlink()
            path.symlink_to(ws / "secrets" / "key")
        return left

    async with ToolRuntime(ws, policy=DENY_SECRETS) as runtime:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_reach.Veto, "left_out", swapping)
            [outcome] = await runtime.run_batch([ToolCall("c1", "search", {"query": "TOP"})])
    assert (ws / "docs" / "a.md").is_symlink()
    assert "TOPSECRET" not in json.dumps(outcome.response)


@pytest.mark.parametrize("spelling", ["/proc/self/root{ws}/docs/l/key", "/proc/self/root{ws}/secrets/../k"])
async def test_a_direct_read_through_proc_self_root_is_denied(tmp_path: Path, spelling: str) -> None:
    """Pin: unified's own read_file resolves `/proc/self/root` in its own process, where it is `/` too."""
    ws = _workspace(tmp_path)
    async with ToolRuntime(ws, policy=DENY_SECRETS) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "read_file", {"file_path": spelling.format(ws=ws)})])
    assert "TOPSECRET" not in json.dumps(outcome.response)
    assert outcome.decision is not None
    assert outcome.decision.decision == "deny"


async def test_claude_code_read_of_a_process_relative_path_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: Claude Code's Read of `/proc/self/cwd/s/key` is `<its cwd, the workspace>/s/key`, the key
    (`s -> secrets`); unified resolved it in its own process, whose cwd was `docs`: `docs/s/key`, no file, allowed
    by `read-only`. A path a process resolves for itself is asked when a rule reads paths."""
    ws = _workspace(tmp_path)
    os.symlink("secrets", ws / "s")
    monkeypatch.chdir(ws / "docs")
    body, decision = await _claude_answer(ws, "Read", {"file_path": "/proc/self/cwd/s/key"}, DENY_SECRETS)
    assert body["behavior"] == "deny"
    assert decision.decision == "deny"


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        # the folder holding the link SUCCEEDED before (6ba2aec); the others held (round 14's glob prefix, the text)
        pytest.param("Glob", {"pattern": "{ws}/docs/l/*"}, id="absolute-pattern-through-a-link"),
        pytest.param("Glob", {"pattern": "**/key", "path": "{ws}/docs"}, id="folder-holding-the-link"),
        pytest.param("Glob", {"pattern": "**/*", "path": "{ws}/docs"}, id="everything-under-the-link"),
        pytest.param("Grep", {"pattern": "TOP", "glob": "secrets/**"}, id="grep-glob-filter"),
    ],
)
async def test_claude_code_walks_by_other_spellings_are_denied(
    tmp_path: Path, tool: str, tool_input: dict[str, Any]
) -> None:
    ws = _workspace(tmp_path)
    filled = json.loads(json.dumps(tool_input).replace("{ws}", str(ws)))
    body, decision = await _claude_answer(ws, tool, filled, DENY_SECRETS)
    assert body["behavior"] == "deny", body
    assert decision.rule == "no-secrets"


READ_RULE = Policy.default().with_toml(
    '[[rule]]\nname = "no-reading-secrets"\ntoolName = "read_file"\nargsPattern = \'"file_path": "secrets/\'\n'
    'decision = "deny"\n'
)


@pytest.mark.parametrize("path", [".", "secrets", "secrets/key", "docs/l", "k"])
async def test_a_search_does_not_read_what_a_rule_for_read_file_denies(tmp_path: Path, path: str) -> None:
    """SUCCEEDED before: a caller's rule that denies read_file of `secrets/` (another tool's name, not `*`) did not
    stop a search from printing the lines of `secrets/key`: the search reads each file it meets, so each is judged
    as read_file too (`_reach.ALSO_JUDGED`)."""
    ws = _workspace(tmp_path)
    async with ToolRuntime(ws, policy=READ_RULE) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "search", {"query": "TOP", "path": path})])
    assert "TOPSECRET" not in json.dumps(outcome.response)


async def test_a_claude_code_grep_does_not_read_what_a_rule_for_read_file_denies(tmp_path: Path) -> None:
    """SUCCEEDED before: the same for Claude Code's Grep (the policy's `search`) of the workspace."""
    ws = _workspace(tmp_path)
    body, decision = await _claude_answer(ws, "Grep", {"pattern": "TOP"}, READ_RULE)
    assert body["behavior"] == "deny"
    assert decision.rule == "no-reading-secrets"


# --- the Gemini CLI's stream-json policy file: protected paths through a link ----------------------------------


def test_the_stream_json_policy_denies_an_edit_through_a_link_to_a_protected_path(tmp_path: Path) -> None:
    """SUCCEEDED before: stream-json cannot ask, so its `--policy` file denies `write_file`/`replace` of a protected
    path by the text of `file_path`; the CLI writes through a link, so with `docs/e -> ../.envrc` (a repository may
    hold one) its autoEdit wrote `.envrc` as `docs/e`. The links the workspace holds are named too."""
    import re
    import tomllib

    from unified._adapters.gemini_cli._launch import linked_protected_rules, protected_path_rules
    from unified.tools._protected import protected_links

    (tmp_path / ".vscode").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    os.symlink("../.envrc", tmp_path / "docs" / "e")
    os.symlink("../.vscode", tmp_path / "docs" / "v")
    os.symlink("../notes.txt", tmp_path / "docs" / "n")
    links = protected_links([tmp_path])
    assert links is not None
    assert sorted(links) == ["docs/e", "docs/v"]
    text = protected_path_rules() + linked_protected_rules(links)
    patterns = [str(rule["argsPattern"]) for rule in tomllib.loads(text)["rule"]]

    def denied(path: str) -> bool:
        arguments = json.dumps({"file_path": path, "content": "x"}, separators=(",", ":"))
        return any(re.search(pattern, arguments) for pattern in patterns)

    assert denied(f"{tmp_path}/docs/e")
    assert denied("docs/e")
    assert denied(f"{tmp_path}/docs/v/tasks.json")
    assert not denied(f"{tmp_path}/docs/n")
    assert not denied(f"{tmp_path}/docs/else.md")


def test_a_workspace_too_large_to_check_for_links_gets_no_unasked_edit(tmp_path: Path) -> None:
    import tomllib

    from unified._adapters.gemini_cli._launch import linked_protected_rules
    from unified.tools._protected import protected_links

    for index in range(5):
        (tmp_path / f"f{index}").write_text("x")
    assert protected_links([tmp_path], limit=3) is None
    [rule] = tomllib.loads(linked_protected_rules(None))["rule"]
    assert (rule["decision"], "argsPattern" in rule) == ("deny", False)


@pytest.mark.parametrize(
    ("pattern", "decision"),
    [
        pytest.param("(a)\\1", "ask_user", id="backreference-unreadable"),
        pytest.param("(?:(?:.*)*)*(?:(?:.*)*)*(?:(?:.*)*)*!", "allow", id="catastrophic-for-backtracking"),
    ],
)
def test_a_pkill_pattern_is_read_in_linear_time(pattern: str, decision: str) -> None:
    """SUCCEEDED before (on this round's first mass-kill judge, which compiled the model's pattern with `re`):
    `pkill '(?:(?:.*)*)*...!'` under an allow rule for pkill held the event loop for over a minute (measured: the
    policy is evaluated on it). The pattern is read by RE2 now (`_regex.compile_pattern`, linear); one RE2 cannot
    read (a backreference, which `re` took and found matching no name: allowed) is asked as possibly every name."""
    verdict = KILLS.evaluate("run_shell_command", {"command": f"pkill '{pattern}'"}, "default")
    assert verdict.decision.value == decision


ARCHIVERS = DENY_SECRETS.with_toml(
    '[[rule]]\nname = "tools"\ntoolName = "run_shell_command"\n'
    'commandPrefix = ["dd", "7z", "bsdtar", "ugrep", "egrep", "ls", "cat"]\ndecision = "allow"\n'
)


@pytest.mark.parametrize(
    "command",
    ["dd if=docs/l/key", "7z a x.7z .", "bsdtar -cf x.tar .", "ugrep -r TOP", "egrep -r TOP", "ls --recursive"],
)
async def test_more_readers_that_reach_a_denied_folder_are_denied(tmp_path: Path, command: str) -> None:
    """SUCCEEDED before (on this round's first shell judge): `dd if=docs/l/key` (an operand `name=path` was not
    read as a path), 7z, bsdtar and ugrep archiving or searching `.` (not known as recursive readers), `egrep -r`
    and `ls --recursive` (only grep's and ls's short forms were)."""
    ws = _workspace(tmp_path)
    async with ToolRuntime(ws, policy=ARCHIVERS) as runtime:
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": command}))
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")


async def test_dd_of_an_ordinary_file_is_still_allowed(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    async with ToolRuntime(ws, policy=ARCHIVERS) as runtime:
        command = "dd if=docs/a.md of=/dev/null"
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": command}))
    assert (decision.decision, decision.rule) == ("allow", "tools")


async def test_a_word_known_at_run_time_does_not_hide_a_linked_word_beside_it(tmp_path: Path) -> None:
    """SUCCEEDED before (on this round's first shell judge, which passed over a part with a word only known at run
    time): `cat docs/l/key "$X"` under a prefix deny of `cat secrets/key` and an allow of `cat`."""
    ws = _workspace(tmp_path)
    policy = Policy.default().with_toml(
        '[[rule]]\nname = "no-key"\ntoolName = "run_shell_command"\ncommandPrefix = "cat secrets/key"\n'
        'decision = "deny"\n[[rule]]\nname = "cat"\ntoolName = "run_shell_command"\ncommandPrefix = "cat"\n'
        'decision = "allow"\n'
    )
    async with ToolRuntime(ws, policy=policy) as runtime:
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": 'cat docs/l/key "$X"'}))
    assert (decision.decision, decision.rule) == ("deny", "no-key")


async def test_the_gemini_clis_read_many_files_under_an_allow_rule_does_not_reach_a_denied_folder(
    tmp_path: Path,
) -> None:
    """SUCCEEDED before: a caller who allows the Gemini CLI's read_many_files (asked by default) and denies
    `secrets/` had `{"include": ["**/*"]}` allowed: the rule read the globs' text. The workspace it reads from is
    judged entry by entry now (its globs are not read: any denied entry denies it)."""
    ws = _workspace(tmp_path)
    policy = DENY_SECRETS.with_toml('[[rule]]\nname = "many"\ntoolName = "read_many_files"\ndecision = "allow"\n')
    async with ToolRuntime(ws, policy=policy) as runtime:
        decision = await runtime.decide(ToolCall("c1", "read_many_files", {"include": ["**/*"]}))
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")
