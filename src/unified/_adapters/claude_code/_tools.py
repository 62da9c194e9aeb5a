"""Claude Code's tools as unified's policy sees them: which the CLI must ask about, and their policy names.

The CLI asks the client (`can_use_tool`) only for calls its own rules do not settle; in its
default mode it runs read-only Bash and in-cwd reads without asking. So the backend makes it ask
for every call that can change anything, or read anything, with a `permissions.ask` rule per tool
in the `--settings` it starts with (`ASKED`): the caller's policy then decides each one. The subagent
tool (`Agent`, `invoke_agent` to the policy) is asked too: the shipped rule allows it in every mode (its
subagent's every call is asked in turn), and a caller's rule denying or asking for it must be heard (round
10: the CLI ran it unasked). The tools left out only inspect the CLI's own state (`ToolSearch`,
`ListAgents`, `CronList`, ...); the CLI runs those itself and the backend reports `decided_by="backend"`.
`AskUserQuestion` is asked too: its "permission" request is how the CLI hands the model's question to the client.

For the policy (`unified.tools.Policy`, whose rules name unified's tools), each Claude tool maps
to the unified tool of the same effect (`Bash` is `run_shell_command`, `Write` is `write_file`,
...), with the arguments the policy reads (`command`, `file_path`). A tool without a counterpart
keeps its own name: the shipped policy asks for it (denied when nobody can answer), allows it in
`yolo` and denies it in `plan`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "AGENT_TOOLS",
    "ASKED",
    "QUESTION_TOOL",
    "ask_settings",
    "claude_tool_name",
    "disallowed_tools",
    "policy_call",
]

QUESTION_TOOL = "AskUserQuestion"
AGENT_TOOLS = frozenset({"Agent", "Task"})
"""The subagent tool (`init.tools` says `Task`, the model calls it `Agent`)."""

ASKED: tuple[str, ...] = (
    QUESTION_TOOL,
    "Agent",
    "Artifact",
    "Bash",
    "BashOutput",
    "KillShell",
    "ClaudeDesign",
    "CronCreate",
    "CronDelete",
    "Edit",
    "MultiEdit",
    "EnterPlanMode",
    "ExitPlanMode",
    "EnterWorktree",
    "ExitWorktree",
    "Glob",
    "Grep",
    "LS",
    "ListMcpResourcesTool",
    "Monitor",
    "NotebookEdit",
    "NotebookRead",
    "Projects",
    "PushNotification",
    "Read",
    "ReadMcpResourceDirTool",
    "ReadMcpResourceTool",
    "RemoteTrigger",
    "ScheduleWakeup",
    "SendFeedback",
    "SendMessage",
    "Skill",
    "TaskStop",
    "WebFetch",
    "WebSearch",
    "Workflow",
    "Write",
)
"""Every tool of Claude Code 2.1 that acts on the world (files, shell, network, messages to agents,
schedules, worktrees, workflows) or reads files: the CLI asks the client before each call of them. With a Claude
login (`claude_login`) the CLI may offer claude.ai's tools too, which send what the model chose off the machine:
`Artifact` publishes a file of the workspace as a web page, `Projects` uploads one (`local_path`) to a project,
`RemoteTrigger` creates and runs cloud agents, `ClaudeDesign`, `SendFeedback` and `PushNotification` send the
model's text (2.1.332's `sdk-tools.d.ts`; round 20: they were left to the CLI's own judgement). The MCP resource
tools (`ListMcpResourcesTool`, `ReadMcpResourceTool`, `ReadMcpResourceDirTool`) are asked as the servers' tools
are: the CLI ran them unasked (measured: a server's resource handler ran with no permission request). A name the
CLI does not offer in a run is a rule that matches nothing."""

_POLICY_NAMES: Mapping[str, str] = {
    "Bash": "run_shell_command",
    "Read": "read_file",
    "NotebookRead": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "NotebookEdit": "edit_file",
    "Glob": "glob",
    "Grep": "search",
    "LS": "list_dir",
    "WebFetch": "web_fetch",
    "WebSearch": "google_web_search",
    "Agent": "invoke_agent",
    "Task": "invoke_agent",
    QUESTION_TOOL: "ask_user",
    "Monitor": "run_shell_command",
}
_READ_ALSO_AS: Mapping[str, str] = {"Monitor": "web_fetch"}
"""The unified tool a Claude tool is read as for some inputs, besides its own (`_POLICY_NAMES`): `Monitor` runs a
shell command (`command`) and streams its output, or opens a WebSocket (`ws.url`) and streams its frames. Round 37: it
kept its own name, so an "allow always" for `Monitor(command="echo hi")` allowed every later command of it unasked
(measured: one writing `.git/hooks/pre-commit`), no protected path was checked, a caller's shell rules did not apply,
and `excluded_tools=["run_shell_command"]` left it offered."""
_CLAUDE_NAMES: Mapping[str, str] = {
    "run_shell_command": "Bash",
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "replace": "Edit",
    "glob": "Glob",
    "search": "Grep",
    "grep_search": "Grep",
    "list_dir": "LS",
    "list_directory": "LS",
    "web_fetch": "WebFetch",
    "google_web_search": "WebSearch",
    "invoke_agent": "Agent",
    "ask_user": QUESTION_TOOL,
}


def claude_tool_name(name: str) -> str:
    """The Claude Code tool a name stands for: its own name, or unified's name of the same tool
    (for `excluded_tools`, which callers write once for every backend)."""
    return _CLAUDE_NAMES.get(name, name)


def disallowed_tools(excluded_tools: Iterable[str]) -> list[str]:
    """The Claude Code tools `excluded_tools` takes away (`--disallowedTools`): each name as Claude's
    (`claude_tool_name`), and every tool of the CLI the policy reads as a tool it names, glob patterns too
    (`edit_file` is `Edit` and `NotebookEdit`, `read_file` is `Read` and `NotebookRead`, `invoke_agent` is `Agent`
    and `Task`, `write_*` is `Write`). Round 20: `excluded_tools=["edit_file"]` left `NotebookEdit` offered, and
    the policy, which reads it as `edit_file`, allowed it in auto_edit."""
    from unified.tools._runtime import is_excluded

    excluded = list(excluded_tools)
    names = {claude_tool_name(name) for name in excluded}
    names.update(tool for tool, name in (*_POLICY_NAMES.items(), *_READ_ALSO_AS.items()) if is_excluded(name, excluded))
    return sorted(names)


def policy_call(tool: str, args: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(unified tool name, arguments) of a Claude call, as the policy reads it."""
    name = _POLICY_NAMES.get(tool, tool)
    arguments = dict(args)
    socket = arguments.get("ws")
    if tool in _READ_ALSO_AS and "command" not in arguments and isinstance(socket, Mapping):
        name = _READ_ALSO_AS[tool]
        arguments["url"] = socket.get("url")
    if name == "search" and "pattern" in arguments:
        arguments.setdefault("query", arguments["pattern"])
    if name == "list_dir" and "path" in arguments:
        arguments.setdefault("file_path", arguments["path"])
    if tool in ("NotebookEdit", "NotebookRead") and "notebook_path" in arguments:  # its path, whatever else it is given
        arguments["file_path"] = arguments["notebook_path"]
    return name, arguments


def ask_settings(mcp_servers: Iterable[str]) -> dict[str, Any]:
    """The `--settings` that make the CLI ask about every call of `ASKED` and of each MCP server's tools."""
    rules = [*ASKED, *(f"mcp__{name}" for name in mcp_servers)]
    return {"permissions": {"ask": rules, "defaultMode": "default"}}
