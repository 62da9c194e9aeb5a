"""Red team, round 42, with the real Gemini CLI offline against FakeGemini: a hostile workspace (see
test_red_team_round42.py for the unit cases).

SUCCEEDED before (each fails on the code before its fix): in a folder the CLI trusts, a workspace `GEMINI.md` that is
a link to a file outside the run's folders sent that file to the model in the first request, on both transports; a
subfolder's `GEMINI.md` link did the same when the model's unasked `read_file` read a file beside it. Held (pins): a
memory link inside the workspace is read as before; a workspace `.gemini/commands/*.toml` is not run by a prompt
that names it (no `!{...}` command, no `@{...}` file, no expansion)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.gemini_cli.conftest import gemini_setup, workspace
from unified import ExecuteParams, execute
from unified.events import ErrorEvent, Result, UnifiedEvent
from unified.testing import FakeGemini, FunctionCall, ModelTurn
from unified.testing._wiring import backend_options_for

__all__ = ["gemini_setup", "workspace"]

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def _run(
    workspace: Path, tmp_path: Path, turns: list[ModelTurn], prompt: str = "hi", transport: str = "acp"
) -> tuple[list[UnifiedEvent], str]:
    """The run's events and every request body FakeGemini got (the test home has folder trust off: trusted)."""
    async with FakeGemini(turns) as server:
        options = backend_options_for(server, "gemini-cli", cli_home=tmp_path / "cli-home")
        params = ExecuteParams(
            prompt=prompt,
            backend="gemini-cli",
            cwd=workspace,
            backend_options={**options, "pool_size": 0, "transport": transport},
        )
        async with execute(params) as stream:
            events = [event async for event in stream]
        bodies = "\n".join(str(request.body) for request in server.requests)
    return events, bodies


def _outside(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    secret = tmp_path / "outside" / "secret.md"
    secret.write_text("ROUND42-OUTSIDE-SECRET\n")
    return secret


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_a_memory_file_linked_outside_the_workspace_is_refused(
    workspace: Path, tmp_path: Path, transport: str
) -> None:
    """SUCCEEDED before: the CLI read `GEMINI.md -> ../outside/secret.md` (its `@` imports are held inside the
    project, the memory file itself was not) into the first request it sent the model."""
    (workspace / "GEMINI.md").symlink_to(_outside(tmp_path))
    events, bodies = await _run(workspace, tmp_path, [ModelTurn(text="done")], transport=transport)
    assert "ROUND42-OUTSIDE-SECRET" not in bodies
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "configuration_error"
    assert error.message.startswith(f"{workspace / 'GEMINI.md'} is a link to {tmp_path / 'outside' / 'secret.md'}")
    assert "GEMINI_CLI_TRUST_WORKSPACE=false in the env option" in error.message


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_subfolders_memory_link_is_refused_before_a_read_there_sends_it(
    workspace: Path, tmp_path: Path
) -> None:
    """SUCCEEDED before: the model's `read_file` of `sub/notes.txt` ran unasked (a read), and the CLI added
    `sub/GEMINI.md` (a link out) to the tool's result as newly discovered project context."""
    (workspace / "sub").mkdir()
    (workspace / "sub" / "notes.txt").write_text("SUB-NOTES\n")
    (workspace / "sub" / "GEMINI.md").symlink_to(_outside(tmp_path))
    read = FunctionCall(name="read_file", args={"file_path": str(workspace / "sub" / "notes.txt")})
    events, bodies = await _run(workspace, tmp_path, [ModelTurn(function_calls=[read]), ModelTurn(text="done")])
    assert "ROUND42-OUTSIDE-SECRET" not in bodies
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "configuration_error"
    assert error.message.startswith(f"{workspace / 'sub' / 'GEMINI.md'} is a link to")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_memory_link_inside_the_workspace_is_read(workspace: Path, tmp_path: Path) -> None:
    """Held (a pin against refusing too much): `GEMINI.md -> docs/memory.md` stays in the workspace, and the CLI reads
    it into the request as before."""
    (workspace / "docs").mkdir()
    (workspace / "docs" / "memory.md").write_text("ROUND42-OWN-MEMORY\n")
    (workspace / "GEMINI.md").symlink_to(workspace / "docs" / "memory.md")
    events, bodies = await _run(workspace, tmp_path, [ModelTurn(text="done")])
    assert isinstance(events[-1], Result), events[-1]
    assert "ROUND42-OWN-MEMORY" in bodies


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_a_workspace_command_is_not_run_by_a_prompt_naming_it(
    workspace: Path, tmp_path: Path, transport: str
) -> None:
    """Held (a pin): a trusted workspace's `.gemini/commands/deploy.toml` with a `!{...}` shell command and an
    `@{...}` file outside: a prompt `/deploy now` runs neither and reaches the model unexpanded (or not at all)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "outside.txt").write_text("ROUND42-AT-FILE\n")
    (workspace / ".gemini" / "commands").mkdir(parents=True)
    (workspace / ".gemini" / "commands" / "deploy.toml").write_text(
        'description = "ROUND42-COMMAND"\n'
        f'prompt = "ROUND42-EXPANDED !{{touch {marks}/cmd}} @{{{tmp_path}/outside.txt}}"\n'
    )
    events, bodies = await _run(
        workspace, tmp_path, [ModelTurn(text="done")], prompt="/deploy now", transport=transport
    )
    assert isinstance(events[-1], Result), events[-1]
    assert sorted(p.name for p in marks.iterdir()) == []
    for marker in ("ROUND42-COMMAND", "ROUND42-EXPANDED", "ROUND42-AT-FILE"):
        assert marker not in bodies
