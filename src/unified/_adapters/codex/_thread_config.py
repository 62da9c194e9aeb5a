"""The `config` a run gives its thread (`thread/start`, `thread/resume`): what Codex reads of the repository, the
tools it offers, the thread's MCP servers. Over stdin, per thread, so a warm process serves runs of any of them.

- **A repository's instructions.** Codex 0.171 puts a repository's `AGENTS.md` (`AGENTS.override.md` first; the
  run's folder and those above it up to the project's root) into the model's context (a user message, "# AGENTS.md
  instructions for <dir>"), and lists the repository's skills (`SKILL.md` under `.codex/skills/` and
  `.agents/skills/`, with Codex's bundled ones) in a developer message the model must follow ("you must use that
  skill"). A hostile repository writes its instructions there. The other agent backends do not read a workspace's
  own instructions unless the caller says so (claude-code runs with `--setting-sources user`: measured, a
  workspace's CLAUDE.md and `.claude/skills` reach no request; the Gemini CLI reads a GEMINI.md only in a folder
  it trusts, not the default), so neither does codex unless `CodexOptions.project_instructions` is on:
  `project_doc_max_bytes = 0` and `skills.include_instructions = false` (measured against FakeOpenAI: neither the
  AGENTS.md text nor a skill's description reaches the request, the bundled skills' list goes too).
- **Excluded tools.** Codex offers its own tools whatever the run excludes; a key of the thread's config turns each
  off (`TOOL_SWITCHES`, measured on 0.171: the tool is gone from the request's `tools`). `apply_patch` has none
  (its form is the model's metadata): the approval bridge refuses each of its calls instead (`_approvals`).
  An MCP tool named exactly (`mcp__<server>__<tool>`) goes into its server's `disabled_tools` (measured on 0.171:
  the model's direct call of it answered "unsupported call", and with the server's only tool disabled `tool_search`,
  which finds the deferred MCP tools, is no longer offered); a pattern cannot name a server's tools before they
  are listed, so its calls are refused per call, as every excluded MCP call is too.
- **Included directories.** `include_directories` are the thread's `sandbox_workspace_write.writable_roots`: Codex
  0.171 lists each as a `<root>` of the `<workspace_roots>` in the environment context it gives the model (measured:
  beside the cwd, with the thread's sandbox still off, `danger-full-access`), as the Gemini CLI's
  `--include-directories` and Claude Code's `--add-dir` tell their model; the approval bridge judges a path in one
  as inside the workspace (`_approvals.ApprovalBridge._workspace`). Codex writes the environment context at a
  thread's first turn, so a resumed thread's model was not told of folders added later (measured): a resume
  replaces the thread's roots (`runtimeWorkspaceRoots`, `_run.CodexRun._open`), which makes Codex tell it anew.
- **No terminal outside yolo.** The model's `write_stdin` types into a process an `exec_command` started, which
  Codex 0.171 does without asking anyone and reports only once the input is written (`item/commandExecution/
  terminalInteraction`): the allow of `bash` or `python3` would let the model type any command into it. Measured,
  nothing holds the input before it lands: no approval of `kind: "writeStdin"` came (the schema has one, the
  `write_stdin_approval` feature is on) under `approvalPolicy` `untrusted` or `on-request`, sandbox
  `danger-full-access`, `workspace-write` or `read-only` (the read-only sandbox only confined what the typed command
  wrote). But only a terminal session keeps its stdin open: without `tty` Codex answers the model's `write_stdin`
  "stdin is closed for this session" and writes nothing. So outside yolo `features.unified_exec_tty = false`: an
  `exec_command` asking for `tty` is answered "TTY execution is disabled by config; omit `tty` or set it to false"
  (before the approval: nothing runs) and no input ever reaches a process (red team round 41; before, the first
  input was written and the run stopped after it, `_run.CodexRun._stop_unasked_input`, still the backstop).
- **MCP resources.** With any MCP server Codex 0.171 offers `list_mcp_resources`, `list_mcp_resource_templates`
  and `read_mcp_resource`, and runs them without asking the client; no key turns them off, and interrupting the
  turn comes too late (measured, three runs: the server's resource handler ran 17 ms before unified's `tool_use`
  once, under 1 ms after it twice). So outside yolo every server, stdio or streamable HTTP, runs behind
  `_resources_relay` (`_launch._mcp_table`), which takes its `resources` capability away and answers a
  `resources/*` request itself, with an error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from unified._adapters.codex._launch import Launch
from unified._adapters.codex._options import CodexOptions
from unified.types import ExecuteParams

__all__ = [
    "TOOL_SWITCHES",
    "ToolSwitch",
    "included_roots",
    "mcp_disabled",
    "refused_per_call",
    "switched_off",
    "thread_config",
]


@dataclass(frozen=True, slots=True)
class ToolSwitch:
    """A key of Codex's config that takes tools off what the model is offered, and the names that exclude them."""

    path: tuple[str, ...]
    """Where in the config the switch is (its value: `false`)."""
    tools: tuple[str, ...]
    """Codex's tools it removes (the names in the request's `tools`)."""
    aliases: tuple[str, ...] = ()
    """unified's names for the same tools (the policy's, the other backends')."""

    @property
    def names(self) -> tuple[str, ...]:
        return self.tools + self.aliases


TOOL_SWITCHES = (
    ToolSwitch(("features", "shell_tool"), ("exec_command", "write_stdin"), ("run_shell_command",)),
    ToolSwitch(("features", "view_image"), ("view_image",)),
    ToolSwitch(("features", "goals"), ("get_goal", "create_goal", "update_goal")),
    ToolSwitch(("tools", "experimental_request_user_input", "enabled"), ("request_user_input",), ("ask_user",)),
    ToolSwitch(("features", "multi_agent"), ("tool_search", "spawn_agent"), ("invoke_agent",)),
)
"""Every tool Codex 0.171 offered FakeOpenAI's `gpt-5.5` (`exec_command`, `write_stdin`, `request_user_input`,
`apply_patch`, `view_image`, `get_goal`, `create_goal`, `update_goal`, `tool_search`), each switch measured to take
its tools and nothing else off the request. One switch removes its tools together: Codex has no key for
`write_stdin` alone (it writes to a command `exec_command` started), nor for one goal tool. `tool_search` finds the
subagent tools (`spawn_agent`, ...), which `multi_agent` removes with it. Hosted web search is `web_search`
(`_launch`: not turned on for a run that excludes it)."""


PATCH_TOOLS = ("apply_patch", "write_file", "edit_file")
"""Codex's patch tool and unified's names for what it does: no key removes it."""


def _excluded(name: str, params: ExecuteParams) -> bool:
    from unified.tools._runtime import is_excluded  # the runtime's own reading of excluded_tools

    return is_excluded(name, params.excluded_tools)


def switched_off(params: ExecuteParams) -> list[ToolSwitch]:
    """The switches the run's `excluded_tools` turns off: any of its names excluded."""
    if not params.excluded_tools:
        return []
    return [switch for switch in TOOL_SWITCHES if any(_excluded(name, params) for name in switch.names)]


def mcp_disabled(params: ExecuteParams) -> dict[str, list[str]]:
    """The tools of each of the run's MCP servers that `excluded_tools` names exactly (`mcp__<server>__<tool>`, no
    glob character): its `disabled_tools`. A server's name may hold `_`, so each server's prefix is tried."""
    disabled: dict[str, list[str]] = {}
    for pattern in params.excluded_tools:
        if any(char in pattern for char in "*?["):
            continue
        for server in params.mcp_servers:
            tool = pattern.removeprefix(f"mcp__{server.name}__")
            if tool and tool != pattern:
                disabled.setdefault(server.name, []).append(tool)
    return disabled


def refused_per_call(params: ExecuteParams) -> list[str]:
    """What the run excludes that Codex still offers, its calls refused by the approval bridge: its patch tool, and
    the MCP tools a pattern names (`mcp*`, `*`: which of a server's tools match is known only when it lists them);
    one named exactly is its server's `disabled_tools` (`mcp_disabled`)."""
    names = [name for name in PATCH_TOOLS if _excluded(name, params)]
    if params.mcp_servers:
        exact = {f"mcp__{server}__{tool}" for server, tools in mcp_disabled(params).items() for tool in tools}
        names += [p for p in params.excluded_tools if p.startswith(("mcp", "*", "?", "[")) and p not in exact]
    return names


def _set(config: dict[str, Any], path: tuple[str, ...], value: object) -> None:
    table = config
    for key in path[:-1]:
        table = table.setdefault(key, {})
    table[path[-1]] = value


def included_roots(params: ExecuteParams) -> list[str]:
    """The run's `include_directories` as absolute real paths, relative to the run's folder (as `Workspace` reads
    them)."""
    cwd = params.cwd.expanduser()
    return [os.path.realpath(cwd / folder) for folder in params.include_directories]


def thread_config(params: ExecuteParams, options: CodexOptions, launch: Launch, *, subagents: bool) -> dict[str, Any]:
    """The thread's `config` (see the module docstring); `subagents`: whether the caller's policy lets the model
    spawn one (`_approvals.subagents_refused`)."""
    config: dict[str, Any] = {}
    if launch.mcp_servers or launch.project_servers_off:
        # the thread's own (`_launch._mcp_table`: their tokens stay off argv and env), a repository's turned off
        config["mcp_servers"] = {**launch.project_servers_off, **launch.mcp_servers}
        for server, tools in mcp_disabled(params).items():
            if server in launch.mcp_servers:  # a new table: the launch's is shared by every thread of the process
                config["mcp_servers"][server] = {**launch.mcp_servers[server], "disabled_tools": tools}
    if not options.project_instructions:
        config["project_doc_max_bytes"] = 0
        _set(config, ("skills", "include_instructions"), False)
    if params.include_directories:
        _set(config, ("sandbox_workspace_write", "writable_roots"), included_roots(params))
    for switch in switched_off(params):
        _set(config, switch.path, False)
    if params.approval_mode != "yolo":  # no terminal session: no stdin the model's `write_stdin` could type into
        _set(config, ("features", "unified_exec_tty"), False)
    if not subagents:
        # Codex asks nobody before a spawn: a policy that might refuse one turns the tools off for the thread
        _set(config, ("features", "multi_agent"), False)
    return config
