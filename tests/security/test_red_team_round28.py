"""Red team, round 28: follow-ups of round 26 (hard links, caller-chosen homes and stores).

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a caller's own file session store (`ExecuteParams.session_store=FileSessionStore(root)`, or
  `UNIFIED_SESSION_STORE_URL=file:///root`) held no credential file, as the default store has since round 26: in a
  workspace holding its root, Claude Code's Read, Codex's `cat` and unified's read_file of another session's history ran
  unasked. Now each run records the root as it starts (`_execute._protect_store`, `_protected.credential_home`);
- a save killed between its write and its rename leaves the whole session in a hidden temporary file beside it
  (`.<id>.json.<pid>.<token>.tmp`, swept an hour later), in the default store and a caller's: a `*` of the data file's
  patterns matches no hidden name, and a Read or `cat` of it ran unasked (now its own patterns).

Left, measured (docs/tools.md): a Claude Code Grep of a *folder* holding a hard link, and the Gemini CLI's reads of a
hard link that is no credential file. The CLI's Grep runs ripgrep with `--hidden --no-follow --glob !.git` and
without `--no-ignore` (read from Claude Code's binary), so it passes by what `.gitignore` names; a project's hard links
are exactly there (uv's `.venv` linked from its cache, pnpm's `node_modules` from its store, a local clone's
`.git/objects`: 4,157 of 24,750 entries in this project's main checkout). A walk of ours cannot tell what ripgrep
ignores without being a second gitignore reader, so asking at any hard link would ask nearly every Grep of such a
project (and deny them where nobody can be asked); the Gemini CLI's rules name a file only by the last part of its path
(any spelling of a path ends so), so each hard-linked `__init__.py` of a `.venv` would have every `__init__.py` asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.test_red_team_round7 import _claude_answer, _codex_command
from unified._execute import EventStream
from unified.sessions import FileSessionStore, MemorySessionStore
from unified.tools import ToolCall, ToolRuntime, _protected
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.unit]

STORED = "store/claude-code/ab/abcdef.json"
FLAT = "store/claude-code/cdef01.json"


@pytest.fixture
def store_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace holding the root of a caller's own file store (`store`), with a session of another run in it
    (sharded and legacy flat); the default store is elsewhere."""
    monkeypatch.setenv("UNIFIED_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("UNIFIED_SESSION_STORE_URL", raising=False)
    monkeypatch.setattr(_protected, "_credential_cache", None)
    ws = tmp_path / "ws"
    (ws / "store" / "claude-code" / "ab").mkdir(parents=True)
    (ws / STORED).write_text('{"header": {}, "state": "my password is hunter2"}')
    (ws / FLAT).write_text('{"header": {}, "state": "hunter2"}')
    (ws / "plain.json").write_text("{}")
    return ws


def _start(ws: Path, store: object = None) -> None:
    """What a run's start does with the parameters (no backend runs: the stream is never iterated)."""
    EventStream(ExecuteParams(prompt="hi", backend="claude-code", cwd=ws, session_store=store))


@pytest.mark.parametrize("which", [STORED, FLAT])
async def test_a_claude_code_read_of_a_caller_s_store_is_refused(store_ws: Path, which: str) -> None:
    """SUCCEEDED before: the CLI's Read of another session's file in the caller's store ran unasked."""
    _start(store_ws, FileSessionStore(store_ws / "store"))
    body, decision = await _claude_answer(store_ws, "Read", {"file_path": which})
    assert body["behavior"] == "deny", body
    assert "credential file" in str(decision.reason)


async def test_a_codex_read_and_unified_s_read_of_a_caller_s_store_are_refused(store_ws: Path) -> None:
    """SUCCEEDED before: `cat` of a session file of the caller's store ran unasked, and unified's read_file read it."""
    _start(store_ws, FileSessionStore(store_ws / "store"))
    actions = [{"type": "read", "command": f"cat {STORED}", "name": "abcdef.json", "path": STORED}]
    answer, _ = await _codex_command(store_ws, f"cat {STORED}", store_ws, actions)
    assert answer == "decline"
    async with ToolRuntime(store_ws) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "read_file", {"file_path": STORED})])
    assert outcome.is_error
    assert "hunter2" not in str(outcome.response)


async def test_the_store_a_file_url_names_is_protected(store_ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: with `UNIFIED_SESSION_STORE_URL=file:///<root>` a Read of its sessions ran unasked."""
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", (store_ws / "store").as_uri())
    _start(store_ws)
    body, decision = await _claude_answer(store_ws, "Read", {"file_path": STORED})
    assert body["behavior"] == "deny", body
    assert "credential file" in str(decision.reason)


async def test_other_files_and_other_stores_are_left_alone(store_ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin: a file beside the store stays readable; a memory store records nothing; a URL naming no store is not
    refused at the start (the run's own opening of the store says why, as before)."""
    _start(store_ws, FileSessionStore(store_ws / "store"))
    body, _ = await _claude_answer(store_ws, "Read", {"file_path": "plain.json"})
    assert body["behavior"] == "allow", body
    _protected._homes.clear()
    _start(store_ws, MemorySessionStore())
    assert "session-store home" not in _protected._homes
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", "file://relative/dir")
    _start(store_ws)
    assert "session-store home" not in _protected._homes


async def test_searches_of_a_caller_s_store_are_asked_and_the_gemini_cli_names_its_files(store_ws: Path) -> None:
    """SUCCEEDED before: Claude Code's Grep of the store's folder, Codex's `grep -r` over it ran unasked, and the Gemini
    CLI's rules named none of its files (its read_file of one ran unasked)."""
    _start(store_ws, FileSessionStore(store_ws / "store"))
    body, decision = await _claude_answer(store_ws, "Grep", {"pattern": "hunter2", "path": "store"})
    assert body["behavior"] == "deny", body
    assert "credential file" in str(decision.reason)
    command = "grep -r hunter2 store"
    actions = [{"type": "search", "command": command, "query": "hunter2", "path": "store"}]
    answer, _ = await _codex_command(store_ws, command, store_ws, actions)
    assert answer == "decline"
    assert set(_protected.credential_aliases([store_ws]) or ()) >= {STORED, FLAT}


@pytest.mark.parametrize(
    "which",
    [
        "store/claude-code/ab/.abcdef.json.4242.0f3c9a1b.tmp",
        "store/claude-code/.cdef01.json.4242.0f3c9a1b.tmp",
        "store/claude-code/ab/.abcdef.json.4242.tmp",
    ],
)
async def test_a_dead_save_s_temporary_file_is_refused(store_ws: Path, which: str) -> None:
    """SUCCEEDED before: a save killed between its write and its rename leaves the whole session in a hidden
    temporary file beside it (`_files.temporary_beside`), swept only after an hour (`STALE_TEMPORARY_SECONDS`); the
    `*` of the store's patterns matches no hidden name, and a Read of it ran unasked."""
    (store_ws / which).write_text('{"header": {}, "state": "my password is hunter2"}')
    _start(store_ws, FileSessionStore(store_ws / "store"))
    body, decision = await _claude_answer(store_ws, "Read", {"file_path": which})
    assert body["behavior"] == "deny", body
    assert "credential file" in str(decision.reason)


async def test_a_dead_save_s_temporary_file_in_the_default_store_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: in a home workspace, a dead save's temporary file of unified's default store (round 26
    protected its `<id>.json` files only) was read unasked by Claude Code's Read and Codex's `cat`."""
    home = tmp_path / "user"
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_DATA_HOME", "UNIFIED_DATA_DIR", "UNIFIED_SESSION_STORE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_protected, "_credential_cache", None)
    which = ".local/share/unified/sessions/codex/ab/.ab12.json.77.0f3c9a1b.tmp"
    (home / which).parent.mkdir(parents=True)
    (home / which).write_text('{"state": "hunter2"}')
    body, _ = await _claude_answer(home, "Read", {"file_path": which})
    assert body["behavior"] == "deny", body
    actions = [{"type": "read", "command": f"cat {which}", "name": which.rsplit("/", 1)[1], "path": which}]
    answer, _ = await _codex_command(home, f"cat {which}", home, actions)
    assert answer == "decline"


def test_a_postgresql_store_is_not_opened_at_the_start(store_ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin: a run's start records a file store's root only; a PostgreSQL URL's store (its driver's import, which
    may fail) is left to where the run opens it."""
    opened: list[str] = []
    monkeypatch.setattr("unified._sessions.config._postgres_store", opened.append)
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", "postgresql://u@localhost/db")
    _start(store_ws)
    assert opened == []
    assert "session-store home" not in _protected._homes
