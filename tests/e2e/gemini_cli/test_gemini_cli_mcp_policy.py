"""A caller's deny rule for an MCP tool holds on the Gemini CLI (red team round 12).

A user rule naming an MCP tool in unified's
spelling (`mcp__srv__delete_repo`, `mcp__srv__*`) was not a name the CLI's policy knows (`mcp_srv_delete_repo`).
The MCP server's own log proves whether the tool ran.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import Run, call, stream_line, text
from unified.events import PermissionDecision, Result
from unified.tools import Policy
from unified.types import StdioMcpServer

Responses = Callable[..., Path]

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

MCP_SERVER = '''
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("srv")
LOG = sys.argv[1]


@server.tool()
def delete_repo(repo: str) -> str:
    """Delete a repository."""
    with open(LOG, "a") as log:
        log.write(f"deleted {repo}\\n")
    return f"deleted {repo}"


server.run()
'''


def _deny(tool: str) -> Policy:
    return Policy.default().with_toml(
        f'[[rule]]\nname = "no-delete"\ntoolName = "{tool}"\ndecision = "deny"\npriority = 500\n'
    )


def _server(tmp_path: Path) -> tuple[StdioMcpServer, Path]:
    script = tmp_path / "srv_server.py"
    script.write_text(MCP_SERVER)
    log = tmp_path / "srv.log"
    return StdioMcpServer(name="srv", command=sys.executable, args=(str(script), str(log))), log


@pytest.mark.parametrize("tool", ["mcp__srv__delete_repo", "mcp__srv__*"])
@pytest.mark.parametrize("mode", ["default", "yolo"])
async def test_a_denied_mcp_tool_does_not_run(
    run_gemini: Run, responses: Responses, tmp_path: Path, mode: str, tool: str
) -> None:
    server, log = _server(tmp_path)
    fake = responses(stream_line(call("mcp_srv_delete_repo", repo="prod")), stream_line(text("done")))
    options = {"policy": _deny(tool), "fake_responses_strict": False}
    events = await run_gemini(fake, approval_mode=mode, mcp_servers=(server,), backend_options=options)
    assert isinstance(events[-1], Result)
    assert not log.exists(), log.read_text()
    [decision] = [e for e in events if isinstance(e, PermissionDecision) and e.tool_name == "mcp_srv_delete_repo"]
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "policy", "no-delete")
