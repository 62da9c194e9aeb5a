"""The claude-code backend's `backend_options`, as one typed model (see docs/backends/claude-code.md).

Parsed when the backend is created, so a misspelt key or a wrong type is a `ConfigurationError`
naming the key and the known ones before any process starts. Free of the adapter's run code.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import Field, StrictInt

from unified._adapters.claude_code._spares import ClaudeSparePool
from unified._binary.options import StartProcessOption, TranscriptOption
from unified._exports import publish
from unified._internal.options import PolicyOption, parse_options
from unified.types import BackendOptions

__all__ = ["BACKEND", "ClaudeCodeOptions", "claude_code_options"]

BACKEND = "claude-code"


class ClaudeCodeOptions(BackendOptions):
    """Every option the claude-code backend reads; all optional."""

    claude_binary: Path | None = None
    """The `claude` executable (else `UNIFIED_CLAUDE_BIN`, the project's `.claude-code/`, the
    `unified install claude-code` folder, `PATH`)."""
    home: Path | None = None
    """The CLI's isolated home (HOME; its CLAUDE_CONFIG_DIR is `<home>/.claude`), where its sessions
    and a Claude login live. Default: `claude-code/home` in unified's data folder (never `~/.claude`)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for the child (passed as given, after the allowlist)."""
    hide_host_environment: bool = True
    """Before the first CLI process starts, make this process undumpable (Linux), so no command the model runs through
    it can read this process's keys in `/proc/<pid>/environ` (docs/tools.md, "The host's own environment":
    process-wide, no core dump, no same-user debugger). False: leave it dumpable."""
    policy: PolicyOption = None
    """The permission policy deciding every tool call (default: unified's shipped one, `Policy.default()`)."""
    max_retries: StrictInt = Field(default=3, ge=0, le=15)
    """Retries of one model request (the CLI's own, capped by CLAUDE_CODE_MAX_RETRIES)."""
    max_retry_delay_s: float = Field(default=60.0, ge=0)
    """A 429 (or 529) asking to wait longer than this ends the run at once (`rate_limited`)."""
    stall_timeout_s: float = Field(default=90.0, gt=0)
    """The longest silence of the CLI while it waits for the model (its own watchdog waits 5 minutes):
    then the turn is interrupted and the run fails with `stream_interrupted` (retryable)."""
    request_timeout_s: float = Field(default=90.0, ge=0.001, le=2_147_483)
    """Per model request, the wait for the response headers (the CLI's API_TIMEOUT_MS, whole milliseconds: at least
    one, a smaller one was sent as 0; at most what a Node timer takes, 2**31 - 1 ms, beyond which Node fires it at
    once)."""
    transcript: TranscriptOption = None
    """A list that receives every stream-json line both ways (`{"dir": "send"|"recv", "msg"}`):
    what `unified record` writes as a cassette; the caller's own list."""
    start_process: StartProcessOption = None
    """Starts the CLI instead of spawning `claude` (the transport seam; tests pass a
    `unified.testing.FakeAgentProcess` starter). The binary is then not looked up."""
    forward_subagent_text: bool = True
    """Ask the CLI for its subagents' text and thinking (initialize `forwardSubagentText`)."""
    close_grace_s: float = Field(default=5.0, ge=0)
    """How long the CLI may take to exit once its stdin is closed, before its process group is ended."""
    pool_size: StrictInt = Field(default=0, ge=0)
    """Spare processes the default pool may keep, each started ahead for the next new-session run with
    the same launch (`_spares.py`); 0 = a cold process per run. Off by default: a spare costs a
    speculative start (~0.5 s of CPU) and an idle process, which a one-shot run never uses."""
    pool: ClaudeSparePool | None = None
    """A pool of spares to use instead of the default one (its own size applies)."""
    slash_commands: bool = False
    """Let a prompt starting with `/` run as a Claude Code slash command (a built-in such as `/compact`, `/model`,
    `/login`, or a command file of the home's `.claude/commands/`). Default false: the prompt reaches the model as
    the text it is (`_run.literal_content`), so a caller forwarding a user's "/login" or "/compact" neither swallows
    the turn nor runs a command file planted in the home."""


def claude_code_options(raw: Mapping[str, object] | BackendOptions) -> ClaudeCodeOptions:
    """`raw` as `ClaudeCodeOptions`, or a `ConfigurationError` naming each bad key and the known ones."""
    return parse_options(ClaudeCodeOptions, raw, BACKEND)


publish("unified", ["ClaudeCodeOptions"], globals())
