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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from unified._adapters.codex._launch import Launch
from unified._adapters.codex._options import CodexOptions
from unified.types import ExecuteParams

__all__ = ["TOOL_SWITCHES", "ToolSwitch", "refused_per_call", "switched_off", "thread_config"]


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


def refused_per_call(params: ExecuteParams) -> list[str]:
    """What the run excludes that Codex still offers, its calls refused by the approval bridge: its patch tool, and
    the tools of the run's MCP servers (named `mcp__<server>__<tool>`, or by a pattern that may match one)."""
    names = [name for name in PATCH_TOOLS if _excluded(name, params)]
    if params.mcp_servers:
        names += [p for p in params.excluded_tools if p.startswith(("mcp", "*", "?", "["))]
    return names


def _set(config: dict[str, Any], path: tuple[str, ...], value: object) -> None:
    table = config
    for key in path[:-1]:
        table = table.setdefault(key, {})
    table[path[-1]] = value


def thread_config(params: ExecuteParams, options: CodexOptions, launch: Launch, *, subagents: bool) -> dict[str, Any]:
    """The thread's `config` (see the module docstring); `subagents`: whether the caller's policy lets the model
    spawn one (`_approvals.subagents_refused`)."""
    config: dict[str, Any] = {}
    if launch.mcp_servers or launch.project_servers_off:
        # the thread's own (`_launch._mcp_table`: their tokens stay off argv and env), a repository's turned off
        config["mcp_servers"] = {**launch.project_servers_off, **launch.mcp_servers}
    if not options.project_instructions:
        config["project_doc_max_bytes"] = 0
        _set(config, ("skills", "include_instructions"), False)
    for switch in switched_off(params):
        _set(config, switch.path, False)
    if not subagents:
        # Codex asks nobody before a spawn: a policy that might refuse one turns the tools off for the thread
        _set(config, ("features", "multi_agent"), False)
    return config
