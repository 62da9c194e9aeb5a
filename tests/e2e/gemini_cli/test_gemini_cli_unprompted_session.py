"""What an ACP `session/new` of the real `gemini` 0.61 does before any prompt (why no session is opened ahead).

A warm run's first event waits for `session/new` (~60-80 ms here, against ~2 ms for `session/set_model`).
Opening the next run's session ahead, when a process goes back to the pool, would save that, but
`session/new` is not a cheap, empty handle:

- it writes the session's chat file at once (a header and the `<session_context>` message), which
  stays after the process ends; neither unified's listing nor the CLI's shows it, nor does a short id
  resolve to it, so it is removable clutter, not a visible session;
- it takes its snapshot of the workspace then, not at the first prompt: the directory listing the
  model is told about and the GEMINI.md memory are those of the moment of `session/new`, so a session
  opened ahead would tell the model of a workspace that may have changed since (an exact check of
  "nothing `session/new` read has changed" would mean redoing the CLI's own discovery);
- it starts the session's MCP servers at once (and waits for them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified._adapters.gemini_cli._acp import AcpConnection, connect
from unified._adapters.gemini_cli._chat_files import ChatFiles, gemini_home, prompt_text, read_chat
from unified._adapters.gemini_cli._launch import gemini_env, start_gemini
from unified.errors import SessionNotFound
from unified.testing import FakeGemini, ModelTurn
from unified.testing._fake_gemini import CLI_MODEL

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def _gemini(tmp_path: Path, extra_env: dict[str, str] | None = None) -> tuple[AcpConnection, dict[str, str]]:
    """A `gemini --acp` process in a neutral cwd of its own (its startup session is filed there)."""
    env = gemini_env(extra_env)
    workdir = tmp_path / "workdir"
    workdir.mkdir(exist_ok=True)
    binary = os.environ["UNIFIED_GEMINI_BIN"]  # set by the gemini_setup fixture
    return await connect(start_gemini, [binary, "--acp"], workdir, env), env


def _project_files(env: dict[str, str], cwd: Path) -> list[str]:
    """The files under the CLI's project directory for `cwd` (`tmp/<slug>/`), relative to it."""
    projects = json.loads((gemini_home(env) / "projects.json").read_text())["projects"]
    project = gemini_home(env) / "tmp" / projects[str(cwd.resolve())]
    return sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file())


async def test_an_unprompted_session_leaves_a_chat_file_no_listing_shows(workspace: Path, tmp_path: Path) -> None:
    connection, env = await _gemini(tmp_path)
    try:
        opened = await connection.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    finally:
        await connection.close()
    session_id = str(opened["sessionId"])
    files = _project_files(env, workspace)
    assert len(files) == 2, files  # no lock nor anything else of the session's besides its chat file
    assert files[0] == ".project_root"
    assert files[1].startswith("chats/session-")
    assert files[1].endswith(f"-{session_id[:8]}.jsonl")
    chat_path = next((gemini_home(env) / "tmp").glob(f"*/{files[1]}"))
    chat = read_chat(chat_path)
    assert chat.header["sessionId"] == session_id  # written at `session/new`, kept after the process ended
    assert chat.messages, "the CLI records its <session_context> message at once"
    assert [prompt_text(m) for m in chat.messages] == [None] * len(chat.messages), "no real prompt"
    assert "<session_context>" in json.dumps(chat.messages)

    sessions = ChatFiles(env)
    assert [s.session_id for s in sessions.list_sessions(str(workspace))] == []
    assert session_id not in [s.session_id for s in sessions.list_sessions()]
    with pytest.raises(SessionNotFound):
        sessions.resolve(session_id[:8], str(workspace))

    # The CLI's own listing (a `generateContent` line in case it wanted to summarize one: none is asked for).
    summary = {"candidates": [{"content": {"parts": [{"text": "s"}], "role": "model"}, "index": 0}]}
    fake = tmp_path / "list.responses"
    fake.write_text(json.dumps({"method": "generateContent", "response": summary}) + "\n")
    argv = [os.environ["UNIFIED_GEMINI_BIN"], "--list-sessions", "--fake-responses-non-strict", str(fake)]
    with anyio.fail_after(HANG_GUARD_S):
        listed = await anyio.run_process([*argv, "-m", CLI_MODEL], cwd=workspace, env=env)
    assert "No previous sessions found" in listed.stdout.decode(), listed.stdout


async def test_session_new_takes_the_workspace_and_memory_as_they_are_then(workspace: Path, tmp_path: Path) -> None:
    """The session opened before a file and a GEMINI.md appear is prompted after: its request knows of neither."""
    async with FakeGemini([ModelTurn(text="one"), ModelTurn(text="two")]) as server:
        connection, _ = await _gemini(tmp_path, server.cli_env)
        try:
            early = await connection.request("session/new", {"cwd": str(workspace), "mcpServers": []})
            (workspace / "added-later.txt").write_text("x\n")
            (workspace / "GEMINI.md").write_text("Always answer MEMORY-MARKER-7d1.\n")
            late = await connection.request("session/new", {"cwd": str(workspace), "mcpServers": []})
            for opened in (early, late):
                session_id = str(opened["sessionId"])
                await connection.request("session/set_model", {"sessionId": session_id, "modelId": CLI_MODEL})
                prompt = [{"type": "text", "text": "hello"}]
                answer = await connection.request("session/prompt", {"sessionId": session_id, "prompt": prompt})
                assert answer.get("stopReason") == "end_turn"
        finally:
            await connection.close()
        bodies = [json.dumps(r.body) for r in server.requests_for("generateContentStream")]
    assert len(bodies) == 2
    assert "notes.txt" in bodies[0]
    assert "notes.txt" in bodies[1]
    assert "added-later.txt" not in bodies[0]
    assert "MEMORY-MARKER-7d1" not in bodies[0]
    assert "added-later.txt" in bodies[1]
    assert "MEMORY-MARKER-7d1" in bodies[1]


async def test_session_new_starts_the_sessions_mcp_servers(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "mcp-started"
    server = {"name": "probe", "command": "/bin/sh", "args": ["-c", f"echo started > {marker}"], "env": []}
    connection, _ = await _gemini(tmp_path)
    try:
        await connection.request("session/new", {"cwd": str(workspace), "mcpServers": [server]})
        assert marker.read_text() == "started\n"  # before any prompt
    finally:
        await connection.close()
