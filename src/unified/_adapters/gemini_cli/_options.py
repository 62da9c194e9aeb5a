"""The gemini-cli backend's `backend_options`, as one typed model (see docs/backends/gemini-cli.md).

Parsed when the backend is created, so a misspelt key (`pool_sise`) or a wrong type is a
`ConfigurationError` naming the key and the known ones before any process starts. Free of the
adapter's run code: building or checking options costs no process, pipe or SDK import.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field, StrictBool, StrictInt

from unified._adapters.gemini_cli._acp import AcpPool
from unified._binary.options import StartProcessOption, TranscriptOption
from unified._exports import publish
from unified._internal.options import PolicyOption, parse_options
from unified.types import BackendOptions

__all__ = ["GeminiCliOptions", "gemini_cli_options"]

BACKEND = "gemini-cli"


class GeminiCliOptions(BackendOptions):
    """Every option the gemini-cli backend reads; all optional."""

    gemini_binary: Path | None = None
    """The `gemini` executable (else `UNIFIED_GEMINI_BIN`, the project's `.gemini-cli/`, `PATH`)."""
    transport: Literal["acp", "stream-json"] = "acp"
    """`stream-json` (`gemini -p`) is for CLIs without ACP: no thoughts, permission prompts or subagent detail."""
    pool_size: StrictInt | None = Field(default=None, ge=0)
    """Warm processes kept by the default pool; 0 = a cold process per run."""
    pool: AcpPool | None = None
    """A pool to lease processes from instead of the default one."""
    fake_responses: Path | None = None
    """A `--fake-responses` JSONL file of recorded model answers (offline runs)."""
    fake_responses_strict: StrictBool = True
    """`--fake-responses` (True) or `--fake-responses-non-strict` (False)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables for the child."""
    hide_host_environment: bool = True
    """Before the first CLI process starts, make this process undumpable (Linux), so no command the model runs through
    it can read this process's keys in `/proc/<pid>/environ` (docs/tools.md, "The host's own environment":
    process-wide, no core dump, no same-user debugger). False: leave it dumpable."""
    policy: PolicyOption = None
    """The permission policy deciding every call the CLI asks about (default: unified's shipped one,
    `Policy.default()`), as on the other backends. The CLI is made to ask, in every mode, about each tool
    a user rule of it may deny or ask for (`_launch.user_rule_tools`): `invoke_agent`, its subagents, too.
    ACP only: stream-json cannot ask, so a policy there is refused."""
    max_retries: StrictInt = Field(default=3, ge=0, le=9)
    """Retries of one model request after a 429, a 5xx or a broken stream, of the CLI's own (up to 9, waiting 5 s,
    10 s, 20 s, then 30 s each: ~3.5 min). Past them the prompt is ended and the run fails with the last failure's
    typed error (`rate_limited`, `backend_error`, retryable), in step with the other backends' `max_retries`."""
    max_retry_delay_s: float = Field(default=60.0, ge=0)
    """A retry the CLI would make after a longer wait than this (a 429 whose `RetryInfo` asks for it: 0.61 waits
    whatever the server asks) ends the prompt at once: `rate_limited`, its `details.retry_after_s` the wait asked."""
    subagent_silence_s: float | None = Field(default=900.0, gt=0)
    """Longest a running subagent may go without a record in its chat file; then the run ends with `backend_error`
    naming it. 0.61 waits for ever on a question a subagent cannot put to a client (a tool the caller's policy asks
    about, called by a subagent of the user's own, which unified's `--policy` rules cannot name), and the delegation
    keeps the run's idle timeout off. The CLI ends its own subagents after 10 minutes of work (`timeout_mins` of a
    user's agent), a wait for a question excluded; None: no bound."""
    acp_transcript: TranscriptOption = None
    """A list that receives every JSON-RPC message both ways and, between them, the records the CLI
    appended to its chat files meanwhile (cassette recording); kept by identity."""
    start_process: StartProcessOption = None
    """Starts the ACP agent instead of spawning `gemini --acp` (the transport seam; tests pass
    `unified.testing.FakeAcp`, an `AgentProcess` starter). The binary is then not looked up."""


def gemini_cli_options(raw: Mapping[str, object] | BackendOptions) -> GeminiCliOptions:
    """`raw` as `GeminiCliOptions`, or a `ConfigurationError` naming each bad key and the known ones."""
    return parse_options(GeminiCliOptions, raw, BACKEND)


publish("unified", ["GeminiCliOptions"], globals())
