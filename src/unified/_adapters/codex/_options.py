"""The codex backend's `backend_options`, as one typed model (see docs/backends/codex.md).

Parsed when the backend is created: a misspelt key or a wrong type is a `ConfigurationError` naming
the key and the known ones before any process starts. Free of the adapter's run code.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field, StrictInt

from unified._adapters.codex._pool import CodexPool
from unified._binary.options import StartProcessOption, TranscriptOption
from unified._exports import publish
from unified._internal.options import PolicyOption, parse_options
from unified.types import BackendOptions

__all__ = ["BACKEND", "CodexOptions", "codex_options"]

BACKEND = "codex"


class CodexOptions(BackendOptions):
    """Every option the codex backend reads; all optional."""

    codex_binary: Path | None = None
    """The `codex` executable: the npm launcher or the native binary (else `UNIFIED_CODEX_BIN`, the
    project's `.codex-cli/`, what `unified install codex` installed, `PATH`)."""
    codex_home: Path | None = None
    """The CODEX_HOME unified runs Codex in (else `UNIFIED_CODEX_HOME`, else `<unified data dir>/codex`):
    its sessions, its config.toml. Never your own `~/.codex`."""
    base_url: str | None = None
    """The OpenAI Responses API base URL, ending in `/v1` (else `OPENAI_BASE_URL`, else the OpenAI API)."""
    api_key: str | None = Field(default=None, repr=False)
    """The API key (else `OPENAI_API_KEY`; else a ChatGPT login in your Codex home's auth.json)."""
    chatgpt_base_url: str | None = None
    """Where a ChatGPT login's requests go (Codex's `chatgpt_base_url`; default ChatGPT's own): a proxy's,
    or a test server's."""
    pool_size: StrictInt | None = Field(default=None, ge=0)
    """Warm app-server processes kept by the default pool (default 2); 0 = a cold process per run."""
    pool: CodexPool | None = None
    """A pool to lease processes from instead of the default one."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables for the app-server (and, minus anything secret-looking, its commands)."""
    hide_host_environment: bool = True
    """Before the first app-server starts, make this process undumpable (Linux), so no command the model runs through
    it can read this process's keys in `/proc/<pid>/environ` (docs/tools.md, "The host's own environment":
    process-wide, no core dump, no same-user debugger). False: leave it dumpable."""
    provider_timeout_s: float = Field(default=60.0, gt=0)
    """How long Codex may retry without progress (it retries forever) before the turn is interrupted; a provider it
    cannot connect to at all ends sooner, as `backend_unavailable` (docs/backends/codex.md)."""
    stream_idle_timeout_s: float = Field(default=120.0, ge=0.001, le=86_400)
    """Codex's own limit on silence inside one model stream (`stream_idle_timeout_ms`, whole milliseconds): at least
    one (a smaller one was sent as 0), at most a day (infinity raised OverflowError out of `execute`; 1e300 made the
    app-server panic at start)."""
    web_search: Literal["disabled", "cached", "live"] = "disabled"
    """OpenAI's hosted web search (Codex's `web_search`): off unless asked for, since the provider runs it
    on its side with no approval (as the API backends' google_search); `cached` searches OpenAI's index,
    `live` the web. Each search is a server-side `tool_use` / `tool_result` pair."""
    project_instructions: bool = False
    """Whether Codex reads the repository's own instructions into the model's context: its `AGENTS.md` (and
    `AGENTS.override.md`, in the run's folder and those above it up to the project's root) and its skills
    (`.codex/skills/`, `.agents/skills/`, listed with Codex's bundled ones). Off by default, as on the other agent
    backends (claude-code reads no workspace CLAUDE.md, the Gemini CLI no GEMINI.md outside a folder it trusts): a
    repository the caller did not write could instruct the model there."""
    policy: PolicyOption = None
    """The caller's permission policy (a `unified.tools.Policy`, as the other backends take). Its user rules
    (`Policy.with_toml`, `with_file`) decide before the bridge's own table: a deny rule refuses the call naming the
    rule, an ask rule puts it to `on_user_input` (denied when nobody answers) even where Codex's read-only or the
    approval mode would run it; an allow leaves the call to the bridge's table. Codex runs its subagents unasked:
    a policy that does not allow `invoke_agent` (or `spawn_agent`) turns them off for the thread. None: the
    bridge's table alone."""
    transcript: TranscriptOption = None
    """A list that receives every JSON-RPC message both ways (`{"dir": "send"|"recv", "msg"}`): what
    `unified record` writes as a cassette; the caller's own list."""
    start_process: StartProcessOption = None
    """Starts the app-server instead of the binary (tests pass a `unified.testing.FakeAgentProcess`
    starter); the binary is then not looked up."""


def codex_options(raw: Mapping[str, object] | BackendOptions) -> CodexOptions:
    """`raw` as `CodexOptions`, or a `ConfigurationError` naming each bad key and the known ones."""
    return parse_options(CodexOptions, raw, BACKEND)


publish("unified", ["CodexOptions"], globals())
