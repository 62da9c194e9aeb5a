"""Red team, round 26: file confinement and credential files, on every backend that judges paths.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a hard link in the workspace to a file outside it that is no credential file (`ln ~/.bash_history notes`) was read
  unasked by Claude Code's Read, Codex's `cat` (and `cat n*`), and unified's own read_file, search and edit: only
  credential files were checked by device and inode. Now a regular file with other names is read only when asked
  (`_protected.other_names`, one rule for `credential_reach`, `credential_read` and `_safe_io.check_regular`);
- Claude Code's Glob judged only its pattern's literal leading folders: a link out of the workspace that a wildcard
  folder matches (`*/lnk/x`, `**/lnk/*`, `{src,x}/lnk/*`) was not judged (`_protected.glob_links_out`);
- a caller's own `home` (claude-code) or `codex_home` (codex) outside unified's data folder held no credential file:
  in a workspace holding it, its key file and auth.json were read unasked (`_protected.credential_home`);
- unified's session store (every session's history) was read unasked in a workspace holding the data folder.

Measured and held (pins below): reads through `/proc/self/root`, `/proc/self/cwd`, `/dev/fd`, `/proc/<pid>/fd`, a
path longer than PATH_MAX, a NUL byte, `..` after a link; a write over a hard link by unified's own write_file (a new
file renamed over the name: the other name keeps its content); a link swapped between judgement and open.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_red_team_round7 import _claude_answer, _codex_command, _codex_patch
from unified._adapters.claude_code._key_file import key_file
from unified._adapters.codex._launch import Launch
from unified._adapters.codex._options import CodexOptions
from unified.tools import ToolCall, ToolRuntime, _protected
from unified.tools._base import ToolError
from unified.tools._paths import Workspace
from unified.tools._protected import shell_protected
from unified.tools._shell_syntax import parse
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.unit]

SECRET = "round26-outside-secret"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with `notes` a hard link to a file outside it (no credential file), `lnk` a link to a folder
    outside, `src/lnk` and `a/b/lnk` too, and an ordinary file."""
    monkeypatch.setattr(_protected, "_credential_cache", None)
    ws, out = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    out.mkdir()
    (out / "history").write_text(SECRET)
    os.link(out / "history", ws / "notes")
    (ws / "lnk").symlink_to(out)
    (ws / "src").mkdir()
    (ws / "src" / "lnk").symlink_to(out)
    (ws / "src" / "main.py").write_text("print(1)\n")
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "lnk").symlink_to(out)
    (ws / "plain.md").write_text("plain")
    return ws


# 1. a hard link to a file outside the workspace


async def test_a_claude_code_read_of_a_hard_link_to_an_outside_file_is_asked(ws: Path) -> None:
    """SUCCEEDED before: allowed by the read-only rule, unasked: the outside file's text went to the model."""
    body, decision = await _claude_answer(ws, "Read", {"file_path": "notes"})
    assert body["behavior"] == "deny", body
    assert decision.rule == "outside-workspace"
    assert "hard links" in str(decision.reason)


@pytest.mark.parametrize("command", ["cat notes", "cat plain.md notes", "head -n 5 notes"])
async def test_a_codex_read_of_a_hard_link_to_an_outside_file_is_asked(ws: Path, command: str) -> None:
    """SUCCEEDED before: Codex's read-only command of the hard link ran unasked."""
    actions = [{"type": "read", "command": command, "name": "notes", "path": "notes"}]
    answer, decision = await _codex_command(ws, command, ws, actions)
    assert answer == "decline"
    assert "hard links" in str(decision.reason)


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        pytest.param("read_file", {"file_path": "notes"}, id="read"),
        pytest.param("search", {"query": "round26"}, id="search"),
        pytest.param("edit_file", {"file_path": "notes", "old_string": "round26", "new_string": "x"}, id="edit"),
    ],
)
async def test_unified_s_own_tools_do_not_read_a_hard_link_to_an_outside_file(
    ws: Path, tool: str, args: dict[str, Any]
) -> None:
    """SUCCEEDED before: read_file returned the outside file's text, the search its line, the edit changed it."""
    async with ToolRuntime(ws, approval_mode="yolo") as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", tool, args)])
    assert SECRET not in str(outcome.response), outcome.response
    assert (ws.parent / "outside" / "history").read_text() == SECRET
    if tool != "search":
        assert outcome.is_error
        assert "hard links" in str(outcome.response)


async def test_unified_s_write_file_over_a_hard_link_leaves_the_outside_file(ws: Path) -> None:
    """Held (pin): write_file writes a new file and renames it over the name; the outside name keeps its text."""
    async with ToolRuntime(ws, approval_mode="yolo") as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "write_file", {"file_path": "notes", "content": "new"})])
    assert not outcome.is_error, outcome.response
    assert (ws / "notes").read_text() == "new"
    assert (ws.parent / "outside" / "history").read_text() == SECRET


async def test_an_ordinary_file_is_still_read_unasked(ws: Path) -> None:
    """The pin beside them: a file of one name is read by the read-only rule."""
    body, decision = await _claude_answer(ws, "Read", {"file_path": "plain.md"})
    assert body == {"behavior": "allow"}, decision.reason
    async with ToolRuntime(ws) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "read_file", {"file_path": "plain.md"})])
    assert "plain" in str(outcome.response)


# 2. Claude Code's Glob through a link a wildcard folder matches


@pytest.mark.parametrize(
    "tool_input",
    [
        pytest.param({"pattern": "*/lnk/*"}, id="star-then-link"),
        pytest.param({"pattern": "**/lnk/*"}, id="globstar-then-link"),
        pytest.param({"pattern": "s*/lnk/*.pem"}, id="partial-wildcard"),
        pytest.param({"pattern": "{src,x}/lnk/*"}, id="brace-list"),
        pytest.param({"pattern": "a/*/lnk/**"}, id="literal-then-star"),
        pytest.param({"pattern": "*/*/*", "path": "a"}, id="with-path"),
    ],
)
async def test_a_claude_code_glob_through_a_link_a_wildcard_matches_is_asked(
    ws: Path, tool_input: dict[str, Any]
) -> None:
    """SUCCEEDED before: only the literal leading folders were judged (round 25): these ran unasked."""
    body, decision = await _claude_answer(ws, "Glob", tool_input)
    assert body["behavior"] == "deny", (tool_input, body)
    assert decision.rule == "outside-workspace"
    assert "link out of the workspace" in str(decision.reason)


@pytest.mark.parametrize("pattern", ["**/*.py", "src/*.py", "*.md", "s*/main.py", "a/*/x", "**/b/*", "*/bin/*"])
async def test_a_claude_code_glob_past_no_link_is_still_allowed(ws: Path, pattern: str, tmp_path: Path) -> None:
    """The pin beside it: a pattern whose wildcard folders match no link out runs unasked (`**` alone matches the
    last component's folder only here: `**/*.py` names no folder of its own)."""
    clean = tmp_path / "clean"
    (clean / "src").mkdir(parents=True)
    (clean / "a" / "b").mkdir(parents=True)
    (clean / "src" / "main.py").write_text("x")
    (clean / ".venv" / "bin").mkdir(parents=True)
    (clean / ".venv" / "bin" / "python3").symlink_to(tmp_path / "python3.11")  # a link to a file is no way through
    (tmp_path / "python3.11").write_text("")
    body, decision = await _claude_answer(clean, "Glob", {"pattern": pattern})
    assert body == {"behavior": "allow"}, (pattern, decision.reason)


# 3. a caller's own homes for the binaries


@pytest.fixture
def own_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace holding the caller's own claude-code `home` and codex `codex_home`, outside unified's data folder."""
    monkeypatch.setattr(_protected, "_credential_cache", None)
    monkeypatch.setattr(_protected, "_homes", {}, raising=False)
    ws = tmp_path / "ws"
    (ws / "claude-home" / ".claude").mkdir(parents=True)
    key = key_file(ws / "claude-home", "sk-ant-round26")
    key.parent.mkdir(parents=True)
    key.write_text("sk-ant-round26")
    (ws / "claude-home" / ".claude" / ".credentials.json").write_text("{}")
    (ws / "codex-home").mkdir()
    (ws / "codex-home" / "auth.json").write_text('{"OPENAI_API_KEY": "sk-round26"}')
    return ws


async def test_a_claude_code_read_of_the_caller_s_own_home_key_is_refused(own_homes: Path) -> None:
    """SUCCEEDED before: with `home` in the workspace, the CLI's Read of its key file ran unasked."""
    from tests.security.test_red_team_round7 import _auto_edit
    from unified._adapters.claude_code._permissions import PermissionBridge

    ctx = _auto_edit(own_homes)
    PermissionBridge(ctx, None, None, None, home=own_homes / "claude-home")  # type: ignore[arg-type]
    relative = key_file(own_homes / "claude-home", "sk-ant-round26").relative_to(own_homes).as_posix()
    body, decision = await _claude_answer(own_homes, "Read", {"file_path": relative})
    assert body["behavior"] == "deny", body
    assert "credential file" in str(decision.reason)
    body, decision = await _claude_answer(own_homes, "Read", {"file_path": "claude-home/.claude/.credentials.json"})
    assert body["behavior"] == "deny", body


async def test_a_codex_read_of_the_caller_s_own_codex_home_is_asked(own_homes: Path) -> None:
    """SUCCEEDED before: `cat codex-home/auth.json` with `codex_home` in the workspace ran unasked."""
    params = ExecuteParams(prompt="p", cwd=own_homes)
    Launch.of(params, CodexOptions(codex_home=own_homes / "codex-home"), {"OPENAI_API_KEY": "sk-round26"})
    command = "cat codex-home/auth.json"
    actions = [{"type": "read", "command": command, "name": "auth.json", "path": "codex-home/auth.json"}]
    answer, decision = await _codex_command(own_homes, command, own_homes, actions)
    assert answer == "decline"
    assert "credential file" in str(decision.reason)


async def test_unified_s_read_file_refuses_a_caller_s_home_key(own_homes: Path) -> None:
    """SUCCEEDED before: an API backend's read_file read a recorded home's auth.json."""
    _protected.credential_home("codex", own_homes / "codex-home")
    async with ToolRuntime(own_homes) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "read_file", {"file_path": "codex-home/auth.json"})])
    assert outcome.is_error
    assert "sk-round26" not in str(outcome.response)


def test_the_latest_recorded_homes_are_kept_and_one_recorded_again_is_the_latest() -> None:
    """An orchestrator giving each run a home of its own in a temporary folder: each lookup globbed every home the
    process ever recorded. The latest `HOMES_KEPT` of each kind are kept; a home recorded again (a run started again
    there) is the latest, whether or not it exists yet (a store root a run creates later)."""
    homes = [f"/nonexistent/run-{i}" for i in range(_protected.HOMES_KEPT + 10)]
    for home in homes:
        _protected.credential_home("codex", Path(home))
    _protected.credential_home("codex", Path(homes[10]))
    kept = _protected._homes["codex home"]
    assert len(kept) == _protected.HOMES_KEPT
    assert kept[-1] == homes[10]
    assert homes[11] in kept
    assert homes[9] not in kept


# 4. unified's session store


@pytest.fixture
def store_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run in the home folder, whose data folder holds a session of another run (sharded and legacy flat)."""
    home = tmp_path / "user"
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_DATA_HOME", "UNIFIED_DATA_DIR", "UNIFIED_CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_protected, "_credential_cache", None)
    sessions = home / ".local/share/unified/sessions/claude-code"
    (sessions / "ab").mkdir(parents=True)
    (sessions / "ab" / "abcdef.json").write_text('{"header": {}, "state": "my password is hunter2"}')
    (sessions / "cdef01.json").write_text('{"header": {}, "state": "hunter2"}')
    return home


STORED = ".local/share/unified/sessions/claude-code/ab/abcdef.json"


@pytest.mark.parametrize("which", [STORED, ".local/share/unified/sessions/claude-code/cdef01.json"])
async def test_a_claude_code_read_of_a_stored_session_is_refused(store_ws: Path, which: str) -> None:
    """SUCCEEDED before: the CLI's Read of another session's file in a home workspace ran unasked."""
    body, decision = await _claude_answer(store_ws, "Read", {"file_path": which})
    assert body["behavior"] == "deny", body
    assert "credential file" in str(decision.reason)


async def test_a_codex_read_and_unified_s_read_of_a_stored_session_are_refused(store_ws: Path) -> None:
    """SUCCEEDED before: `cat` of a session file ran unasked, and unified's read_file read it."""
    actions = [{"type": "read", "command": f"cat {STORED}", "name": "abcdef.json", "path": STORED}]
    answer, _ = await _codex_command(store_ws, f"cat {STORED}", store_ws, actions)
    assert answer == "decline"
    async with ToolRuntime(store_ws) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "read_file", {"file_path": STORED})])
    assert outcome.is_error
    assert "hunter2" not in str(outcome.response)


@pytest.mark.parametrize("variable", ["UNIFIED_DATA_DIR", "XDG_DATA_HOME"])
def test_the_session_store_is_found_where_the_environment_puts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """SUCCEEDED before: no session file was a credential file."""
    monkeypatch.setenv(variable, str(tmp_path))
    prefix = "sessions" if variable == "UNIFIED_DATA_DIR" else "unified/sessions"
    stored = tmp_path / prefix / "codex" / "ab" / "ab12.json"
    stored.parent.mkdir(parents=True)
    stored.write_text("{}")
    assert stored in _protected.credential_files()


# 5. path tricks (pins)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/proc/self/root{out}/history", id="proc-self-root"),
        pytest.param("/proc/self/cwd/../outside/history", id="proc-self-cwd"),
        pytest.param("/dev/fd/0", id="dev-fd"),
        pytest.param("/proc/1/fd/0", id="proc-pid-fd"),
        pytest.param("src/lnk/../../../outside/history", id="dot-dot-after-link"),
        pytest.param("lnk/./history", id="link-dot"),
        pytest.param("lnk//history", id="link-double-slash"),
        pytest.param("x/" * 2100 + "history", id="longer-than-path-max"),
        pytest.param("{out}/history/", id="trailing-slash"),
        pytest.param("file://{out}/history", id="file-url"),
    ],
)
async def test_claude_code_reads_by_path_tricks_are_asked(ws: Path, path: str) -> None:
    """Held (pins): each names a file outside the workspace, or no path in it, and is asked. SUCCEEDED before
    (proc-pid-fd): a link the process may not read (`/proc/1/fd/0`, EACCES) made `realpath` raise, and the
    permission request crashed instead of being answered (`Workspace.real_path` now says it cannot resolve it)."""
    body, decision = await _claude_answer(ws, "Read", {"file_path": path.format(out=ws.parent / "outside")})
    assert body["behavior"] == "deny", (path, body)
    assert decision.rule == "outside-workspace"


@pytest.mark.parametrize(
    "command", ["cat /proc/self/root{out}/history", "cat lnk/history", "cat /dev/fd/3", "grep -r x lnk"]
)
async def test_codex_reads_by_path_tricks_are_asked(ws: Path, command: str) -> None:
    """Held (pins): Codex's read-only commands of an outside file by another spelling are asked."""
    command = command.format(out=ws.parent / "outside")
    path = command.split()[-1]
    answer, _ = await _codex_command(ws, command, ws, [{"type": "read", "command": command, "name": "h", "path": path}])
    assert answer == "decline", command


async def test_a_link_swapped_in_after_the_judgement_is_not_followed(ws: Path) -> None:
    """Held (pin, TOCTOU): the folder judged is replaced by a link out before the open; the open walks from the root
    without following a link and refuses it."""
    from unified.tools import _safe_io

    workspace = Workspace(ws)
    (ws / "d").mkdir()
    (ws / "d" / "history").write_text("inside")
    real = await workspace.resolve("d/history")
    (ws / "d" / "history").unlink()
    (ws / "d").rmdir()
    (ws / "d").symlink_to(ws.parent / "outside")
    with pytest.raises(ToolError):
        _safe_io.open_file(workspace, real, "d/history", "read")


async def test_a_nul_byte_does_not_hide_the_hard_link(ws: Path) -> None:
    """SUCCEEDED before (the hard link's hole): `no\\0tes` is judged as `notes`, as the policy spells it, and asked."""
    body, _ = await _claude_answer(ws, "Read", {"file_path": "no\x00tes"})
    assert body["behavior"] == "deny", body


# 6. more reads of a hard link, and what the backends' tools reach through links (pins but the first two)


async def test_a_claude_code_grep_of_a_hard_link_to_an_outside_file_is_asked(ws: Path) -> None:
    """SUCCEEDED before: Grep with `path` the hard link searched the outside file unasked."""
    body, decision = await _claude_answer(ws, "Grep", {"pattern": "round26", "path": "notes"})
    assert body["behavior"] == "deny", body
    assert "hard links" in str(decision.reason)


@pytest.mark.parametrize("command", ["grep round26 notes", "wc -c notes"])
async def test_a_codex_search_of_a_hard_link_to_an_outside_file_is_asked(ws: Path, command: str) -> None:
    """SUCCEEDED before: a read-only search or count of the hard link ran unasked."""
    actions = [{"type": "search", "command": command, "query": "round26", "path": "notes"}]
    answer, decision = await _codex_command(ws, command, ws, actions)
    assert answer == "decline"
    assert "hard links" in str(decision.reason)


@pytest.mark.parametrize(
    "command",
    [
        "tar xf a.tar",
        "tar -xf a.tar -C sub",
        "bsdtar -xf a.tar",
        "unzip a.zip",
        "7z x a.7z",
        "cpio -id < a.cpio",
        "git apply x.patch",
        "git apply --unsafe-paths x.patch",
        "git am x.patch",
        "patch -p1 < x.patch",
        "patch -p1 -i x.patch",
        "git checkout-index -a",
    ],
)
def test_an_archive_or_patch_that_may_write_a_hook_is_a_protected_write(ws: Path, command: str) -> None:
    """Held (pins): what an archive or a diff names is not known before it runs (`.git/hooks/pre-commit`,
    `../.bashrc`): each extraction or application is asked as a protected write."""
    assert "may write a protected path" in str(shell_protected(parse(command), ws, [ws]))


@pytest.mark.parametrize(
    ("command", "answer"),
    [
        pytest.param("grep -r round26 .", "accept", id="grep-r-follows-no-link"),
        pytest.param("grep -R round26 .", "decline", id="grep-R-follows"),
        pytest.param("rg -L round26", "decline", id="rg-follow"),
        pytest.param("ls -la lnk/", "decline", id="list-link-out"),
        pytest.param("cat lnk/../plain.md", "decline", id="dot-dot-after-link"),
    ],
)
async def test_codex_searches_through_links(tmp_path: Path, command: str, answer: str) -> None:
    """Held (pins): a search that follows links (`-R`, `-L`) or names one out is asked; `grep -r`, which follows
    none below its operands, runs unasked in a workspace whose link leads out."""
    ws, out = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    out.mkdir()
    (out / "history").write_text(SECRET)
    (ws / "lnk").symlink_to(out)
    (ws / "plain.md").write_text("plain")
    actions = [{"type": "search", "command": command, "query": "round26", "path": "."}]
    given, _ = await _codex_command(ws, command, ws, actions)
    assert given == answer, command


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        pytest.param("list_dir", {"dir_path": "lnk"}, id="list-link-out"),
        pytest.param("write_file", {"file_path": "lnk/new", "content": "x"}, id="write-through-link"),
        pytest.param("glob", {"pattern": "*/lnk/*"}, id="glob-wildcard-then-link"),
        pytest.param("glob", {"pattern": "**/history"}, id="globstar"),
        pytest.param("search", {"query": "round26", "path": "src"}, id="search-past-link"),
    ],
)
async def test_unified_s_own_tools_do_not_reach_through_a_link_out(ws: Path, tool: str, args: dict[str, Any]) -> None:
    """Held (pins): unified's own tools refuse or pass by a link out of the workspace, in yolo too."""
    async with ToolRuntime(ws, approval_mode="yolo") as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", tool, args)])
    assert SECRET not in str(outcome.response)
    assert "lnk/history" not in str(outcome.response), outcome.response
    assert not (ws.parent / "outside" / "new").exists()


async def test_a_claude_code_grep_with_a_glob_naming_a_link_is_allowed(ws: Path) -> None:
    """Held (pin): Grep's `glob` filters the files of its `path` (here the workspace), and the CLI's ripgrep follows
    no link while it walks, so `lnk/*` as a filter reads nothing outside: allowed by the read-only rule."""
    body, _ = await _claude_answer(ws, "Grep", {"pattern": "round26", "path": ".", "glob": "lnk/*"})
    assert body == {"behavior": "allow"}


# 7. the binaries' own session transcripts


@pytest.mark.parametrize(
    "which",
    [
        ".local/share/unified/claude-code/home/.claude/projects/-ws/0f3c.jsonl",
        ".local/share/unified/codex-home/sessions/2026/12/05/rollout-2026-12-05T10-00-00-0f3c.jsonl",
        ".gemini/tmp/0f3c/chats/session-2026-12-05T10-00-0f3c.json",
    ],
)
async def test_a_read_of_a_binary_s_session_transcript_is_refused(store_ws: Path, which: str) -> None:
    """SUCCEEDED before: in a home workspace, the CLI's Read of another run's transcript (Claude Code's, Codex's
    rollout, the Gemini CLI's chat) ran unasked, and unified's read_file read it."""
    transcript = store_ws / which
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"text": "my password is hunter2"}\n')
    body, decision = await _claude_answer(store_ws, "Read", {"file_path": which})
    assert body["behavior"] == "deny", body
    assert "credential file" in str(decision.reason)
    async with ToolRuntime(store_ws) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "read_file", {"file_path": which})])
    assert outcome.is_error
    assert "hunter2" not in str(outcome.response)


# 8. Codex's patches through links and into what runs later (pins)


@pytest.mark.parametrize(
    ("target", "kind"),
    [
        pytest.param("hk/pre-commit", "add", id="folder-link-to-hooks"),
        pytest.param("dangling", "add", id="dangling-link-to-a-hook"),
        pytest.param("notes", "update", id="hard-link-outside"),
        pytest.param("node_modules/.bin/jest", "add", id="node-bin"),
        pytest.param(".venv/bin/python3", "add", id="venv-bin"),
    ],
)
async def test_a_codex_patch_through_a_link_or_into_what_runs_later_is_asked(ws: Path, target: str, kind: str) -> None:
    """Held (pins): a patch's file through a link to `.git/hooks` (a folder, a dangling file link), in place into a
    hard link, or into a folder of programs that run later, is asked in auto_edit."""
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / "hk").symlink_to(".git/hooks")
    (ws / "dangling").symlink_to(".git/hooks/pre-push")
    change = {"path": str(ws / target), "kind": {"type": kind}, "diff": "touch PWNED\n"}
    answer, decision = await _codex_patch(ws, [change])
    assert answer == "decline", target
    assert decision.rule in ("protected-paths", "outside-workspace"), decision
