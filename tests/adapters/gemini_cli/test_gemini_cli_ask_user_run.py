"""A gemini-cli run with `on_user_input` on the in-process fake ACP agent: the ask_user server in the session's
`mcpServers`, its token only there, and the permission bridge allowing exactly this run's tool.

The model's call reaching the server is the real binary's (tests/e2e/gemini_cli/test_gemini_cli_ask_user.py);
the server itself is tests/adapters/gemini_cli/test_gemini_cli_ask_server.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from unified import ExecuteParams, UserInputRequest, UserInputResponse
from unified._adapters.gemini_cli import _ask_server
from unified._execute import EventStream
from unified.events import PermissionDecision, Result, ToolUse, UnifiedEvent, WarningEvent
from unified.testing._fake_acp import FakeAcp, Finish, Permission, text, tool_done

pytestmark = pytest.mark.anyio

HEX = "ab" * 12
OURS = f"mcp_unified-{HEX}_ask_the_user"
ARGS = '{"questions":[{"question":"Which colour?"}]}'
MCP_OPTIONS = (
    {"optionId": "proceed_always_server", "name": "Allow all server tools for this session", "kind": "allow_always"},
    {"optionId": "proceed_always_tool", "name": "Allow tool for this session", "kind": "allow_always"},
    {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
)


@pytest.fixture(autouse=True)
def _known_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's random name, fixed so that the scripted agent can name the tool."""
    monkeypatch.setattr(_ask_server, "server_name", lambda: f"unified-{HEX}")


def mcp_permission(tool: str, n: int) -> Permission:
    """0.61's permission request for an MCP tool (recorded from the real binary, e2e)."""
    call_id = f"{tool}__{tool}_179631398327{n}_0"
    server = tool.removeprefix("mcp_").rsplit("_ask_the_user", 1)[0]
    return Permission(
        {
            "toolCallId": call_id,
            "status": "pending",
            "title": f"ask_the_user ({server} MCP Server)",
            "content": [{"type": "content", "content": {"type": "text", "text": ARGS}}],
            "locations": [],
            "kind": "other",
        },
        options=MCP_OPTIONS,
        if_allowed=[tool_done(call_id, "done", kind="other")],
    )


async def run(fake: FakeAcp, cwd: Path, **fields: Any) -> list[UnifiedEvent]:
    params = ExecuteParams(
        prompt="go", backend="gemini-cli", cwd=cwd, backend_options={"start_process": fake, "pool_size": 0}, **fields
    )
    async with EventStream(params, strict=True) as stream:
        return [event async for event in stream]


async def test_the_server_is_in_mcp_servers_and_its_token_nowhere_else(tmp_path: Path) -> None:
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow()

    fake = FakeAcp([text("ok"), Finish()])
    events = await run(fake, tmp_path, on_user_input=answer)
    new = next(m for m in fake.received if m.get("method") == "session/new")
    [entry] = new["params"]["mcpServers"]
    assert entry["type"] == "http"
    assert entry["name"] == f"unified-{HEX}"
    assert entry["url"].startswith("http://127.0.0.1:")
    [header] = entry["headers"]
    assert header["name"] == "Authorization"
    token = header["value"].removeprefix("Bearer ")
    assert len(token) >= 32
    process = fake.processes[0]
    assert not any(token in arg for arg in process.argv)
    assert not any(token in value for value in process.env.values())
    assert all(token not in event.model_dump_json() for event in events)
    assert not asked
    assert isinstance(events[-1], Result)


async def test_without_on_user_input_nothing_is_served(tmp_path: Path) -> None:
    fake = FakeAcp([text("ok"), Finish()])
    await run(fake, tmp_path)
    new = next(m for m in fake.received if m.get("method") == "session/new")
    assert new["params"]["mcpServers"] == []


@pytest.mark.parametrize(
    "impostor",
    [
        "mcp_unified-cdcdcdcdcdcdcdcdcdcdcdcd_ask_the_user",  # another run's (or a guessed) server name
        "mcp_evil_ask_the_user",
        "mcp_evil_ask_user",
    ],
)
async def test_only_this_runs_tool_is_allowed_unasked(tmp_path: Path, impostor: str) -> None:
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.deny()

    fake = FakeAcp([mcp_permission(OURS, 1), mcp_permission(impostor, 2), text("ok"), Finish()])
    events = await run(fake, tmp_path, on_user_input=answer)
    uses = [e for e in events if isinstance(e, ToolUse)]
    assert [u.name for u in uses] == ["ask_user", impostor]
    assert uses[0].input == {"questions": [{"question": "Which colour?"}]}
    decisions = {d.tool_use_id: d for d in events if isinstance(d, PermissionDecision)}
    ours = decisions[uses[0].tool_use_id]
    assert (ours.decision, ours.decided_by, ours.rule) == ("allow", "policy", "ask-user")
    theirs = decisions[uses[1].tool_use_id]
    assert (theirs.decision, theirs.decided_by) == ("deny", "user")
    # our tool is never a permission prompt; the impostor is one, like any MCP tool, named as the policy names it
    server, _, tool = impostor.removeprefix("mcp_").partition("_")
    assert [(r.source, r.tool_name) for r in asked] == [("permission", f"mcp__{server}__{tool}")]
    assert fake.permission_answers == [
        {"outcome": "selected", "optionId": "proceed_once"},
        {"outcome": "selected", "optionId": "cancel"},
    ]


@pytest.mark.parametrize("where", ["user", "workspace"])
async def test_a_settings_allowlist_that_blocks_the_server_is_a_warning(
    tmp_path: Path, isolated_home: Path, where: str
) -> None:
    cwd = tmp_path / "ws"
    cwd.mkdir()
    folder = (isolated_home if where == "user" else cwd) / ".gemini"
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"mcp": {"allowed": ["notes"]}}))

    async def answer(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.allow()

    events = await run(FakeAcp([text("ok"), Finish()]), cwd, on_user_input=answer)
    [warning] = [e for e in events if isinstance(e, WarningEvent)]
    assert warning.code == "mcp_server_unavailable"
    assert "'notes'" in warning.message
    assert "cannot ask" in warning.message
    # without a handler nothing is served, so nothing is blocked
    events = await run(FakeAcp([text("ok"), Finish()]), cwd)
    assert not [e for e in events if isinstance(e, WarningEvent)]


@pytest.mark.parametrize("excluded", ["ask_user", "ask_*", "*"])
async def test_excluded_ask_user_is_not_served(tmp_path: Path, excluded: str) -> None:
    """`excluded_tools` removes ask_user here as the tool runtime removes it on the API backends."""

    async def answer(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.allow()

    fake = FakeAcp([text("ok"), Finish()])
    await run(fake, tmp_path, on_user_input=answer, excluded_tools=(excluded,))
    new = next(m for m in fake.received if m.get("method") == "session/new")
    assert new["params"]["mcpServers"] == []
