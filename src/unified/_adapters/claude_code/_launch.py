"""How a run starts `claude`: the pinned binary, its isolated home, its environment and its flags.

The home: HOME and CLAUDE_CONFIG_DIR point at a folder of unified's (`claude-code/home` in the user
data folder, or the `home` option), never at the user's `~/.claude`; the CLI keeps its sessions,
its Claude login and its caches there. Settings come only from the `--settings` JSON of the run
(every tool asks, see `_tools.py`) and that home (`--setting-sources user`): a project's
`.claude/settings*.json` cannot allow a tool behind the caller's back, and MCP servers come only
from the run (`--strict-mcp-config`).

The environment is built from an allowlist (`ENV_POLICY`): what the CLI reads for its credentials
and routing (ANTHROPIC_*, CLAUDE_CODE_*, Bedrock's AWS_*, Vertex's CLOUD_ML_REGION and Google
credentials file, proxies and CA certificates), the basics (PATH, locale, terminal, temp dir),
and nothing else: none of unified's own settings (UNIFIED_*, a session store URL) nor another
provider's keys reach it. Ours on top: no nonessential traffic, telemetry, error reports or
auto-updates; the retry cap; the header timeout; the temp dir inside the home. The run's
ANTHROPIC_API_KEY (or its only ANTHROPIC_AUTH_TOKEN: `take_credential`) is taken out again and given
through the CLI's `apiKeyHelper` setting (`key_helper`, its file `_key_file`): the CLI's Bash commands
inherit its environment, so the key must not be in it. A Bedrock run's AWS keys likewise, through its
`awsCredentialExport` setting (`take_aws_keys`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from unified._adapters.claude_code._key_file import KeyLease, aws_file, key_file, lease, mcp_file, system_file
from unified._adapters.claude_code._options import BACKEND, ClaudeCodeOptions
from unified._adapters.claude_code._tools import ask_settings, disallowed_tools
from unified._binary.environment import EnvPolicy, child_env, home_refusal
from unified._binary.install import BinarySpec, locate
from unified._binary.process import AgentSubprocess
from unified._urls import base_url_refusal
from unified.errors import BackendUnavailable, ConfigurationError
from unified.types import ExecuteParams, HttpMcpServer, McpServer, SseMcpServer

__all__ = [
    "CLAUDE_CODE",
    "ENV_POLICY",
    "HOME_OVERRIDES",
    "PINNED_VERSION",
    "Launch",
    "claude_env",
    "config_dir",
    "default_home",
    "key_helper",
    "start_claude",
    "take_aws_keys",
    "takes_thinking_budget",
]

_BUDGET_MODELS = re.compile(r"claude-(?:sonnet-4(?:-0|-5)?|haiku-4-5|opus-4-5)(?:-\d{8})?")
"""The models to which 2.1.332 passes `--max-thinking-tokens` (measured against FakeAnthropic: the request's
`thinking` is `{"type": "enabled", "budget_tokens": N}`): Sonnet 4 and 4.5, Haiku 4.5, Opus 4.5, with or without a
date. Every other name it sends `{"type": "adaptive"}` (Sonnet 4.6, Opus 4.6 and later, aliases, names it does not
know), moves to a newer model (Opus 4 and 4.1 become Opus 5.5) or sends no thinking at all (Claude 3.x)."""


def takes_thinking_budget(model: str | None) -> bool:
    """Whether the pinned CLI passes a thinking budget to `model` (None: the CLI's default, which is adaptive)."""
    return model is not None and _BUDGET_MODELS.fullmatch(model) is not None


PINNED_VERSION = "2.1.332"
CLAUDE_CODE = BinarySpec(
    name=BACKEND,
    package="@anthropic-ai/claude-code",
    version=PINNED_VERSION,
    supported=((2, 1, 332), (2, 1, 333)),
    bin="claude",
    env_var="UNIFIED_CLAUDE_BIN",
    option="claude_binary",
    local_dir=".claude-code",
    install_command="unified install claude-code",
    title="Claude Code",
    home_vars=("HOME", "CLAUDE_CONFIG_DIR"),
    probe_env={"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
    min_node=(18, 0, 0),
    runs_on_node=False,
)
"""The binary is a native executable in the npm package (`bin/claude.exe`, ~400 MB): npm installs
it; Node is needed for the install only, never to run it."""

ENV_POLICY = EnvPolicy(
    allow=frozenset(
        {
            "DISABLE_TELEMETRY",
            "DISABLE_AUTOUPDATER",
            "DISABLE_ERROR_REPORTING",
            "DISABLE_COST_WARNINGS",
            "DISABLE_NON_ESSENTIAL_MODEL_CALLS",
            "API_TIMEOUT_MS",
            "MAX_THINKING_TOKENS",
            "MAX_MCP_OUTPUT_TOKENS",
            "MCP_TIMEOUT",
            "MCP_TOOL_TIMEOUT",
            "BASH_DEFAULT_TIMEOUT_MS",
            "BASH_MAX_TIMEOUT_MS",
            "BASH_MAX_OUTPUT_LENGTH",
            "CLOUD_ML_REGION",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AWS_REGION",
            "AWS_DEFAULT_REGION",
            "AWS_PROFILE",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_BEARER_TOKEN_BEDROCK",
            "AWS_CONFIG_FILE",
            "AWS_SHARED_CREDENTIALS_FILE",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "NO_PROXY",
            "http_proxy",
            "https_proxy",
            "no_proxy",
            "NODE_EXTRA_CA_CERTS",
            "SSL_CERT_FILE",
            "SSL_CERT_DIR",
        }
    ),
    allow_prefixes=("ANTHROPIC_", "CLAUDE_CODE_", "VERTEX_REGION_"),
)
"""What the CLI reads (docs/backends/claude-code.md, "Environment"); everything else stays out."""

_FIXED_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_ENTRYPOINT": "sdk-py",
    # each Bash command starts in the project folder, where unified's policy judges its relative paths: a
    # `cd .git/hooks` kept for the next command would make its `cp x pre-commit` write a hook unasked
    "CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR": "1",
}
_NEVER_FROM_PARENT = frozenset({"CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR"})
"""The caller's own Claude home must not leak in: the run's home is always ours."""
_AWS_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
"""The AWS keys a Bedrock run gives through the CLI's `awsCredentialExport` setting (`take_aws_keys`)."""
_PROVIDER_CREDENTIALS: Mapping[str, tuple[str, ...]] = {
    **dict.fromkeys(
        (*_AWS_KEYS, "AWS_BEARER_TOKEN_BEDROCK"),
        ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_MANTLE", "CLAUDE_CODE_USE_ANTHROPIC_AWS"),
    ),
    "ANTHROPIC_AWS_API_KEY": ("CLAUDE_CODE_USE_ANTHROPIC_AWS",),
    "ANTHROPIC_FOUNDRY_API_KEY": ("CLAUDE_CODE_USE_FOUNDRY",),
    "ANTHROPIC_FOUNDRY_AUTH_TOKEN": ("CLAUDE_CODE_USE_FOUNDRY",),
}
"""Each credential of another provider than Anthropic's API, with the switches of 2.1.332 under which the CLI reads it
(its table of provider credentials: AWS keys for Bedrock and Mantle, Foundry's key for Foundry). Under none of them the
parent's were passed on all the same (allowlisted), only to reach the model's commands, which inherit the CLI's
environment: a model's `env` printed a developer's AWS secret key to the model and its provider (round 37). The `env`
option's are kept: given on purpose."""
STAND_IN_BINARY = Path("claude")
"""The argv[0] recorded when `start_process` replaces the binary (it is not looked up)."""


def default_home() -> Path:
    """The CLI's home in unified's data folder: `$XDG_DATA_HOME/unified/claude-code/home` on Linux."""
    return Path(platformdirs.user_data_dir("unified", appauthor=False)) / BACKEND / "home"


def config_dir(home: Path) -> Path:
    """CLAUDE_CONFIG_DIR of a home (the CLI's sessions are in its `projects/`)."""
    return home / ".claude"


_NODE_TIMER_MAX_MS = 2**31 - 1
"""The longest wait a Node timer takes: a longer one fires at once."""


def claude_env(
    options: ClaudeCodeOptions, home: Path, *, parent: Mapping[str, str] | None = None, cwd: Path | None = None
) -> dict[str, str]:
    """The child's environment: the allowlisted variables (another provider's credentials only under its switch:
    `_PROVIDER_CREDENTIALS`), the `env` option, the isolated home, ours; `cwd`: the run's (`child_env`)."""
    inherited = child_env(ENV_POLICY, parent=parent, cwd=cwd)
    env = {name: value for name, value in inherited.items() if name not in _NEVER_FROM_PARENT}
    env.update(options.env)
    for name, switches in _PROVIDER_CREDENTIALS.items():
        if name not in options.env and not any(env.get(switch, "").strip() for switch in switches):
            env.pop(name, None)
    env.update(_FIXED_ENV)
    env["HOME"] = str(home)
    env["CLAUDE_CONFIG_DIR"] = str(config_dir(home))
    env["CLAUDE_CODE_TMPDIR"] = str(home / "tmp")
    env["CLAUDE_CODE_MAX_RETRIES"] = str(options.max_retries)
    env.setdefault("API_TIMEOUT_MS", str(round(options.request_timeout_s * 1000)))
    return env


KEY_ENV = "ANTHROPIC_API_KEY"
"""The key the CLI is given through its `apiKeyHelper` setting instead of its environment (`key_helper`)."""
TOKEN_ENV = "ANTHROPIC_AUTH_TOKEN"
"""A gateway's bearer token: given through the helper too when it is the run's one credential (`take_credential`)."""


def _base_url_variable(env: Mapping[str, str]) -> str:
    """The variable naming where the CLI sends its model requests, as it picks its provider (Bedrock, Vertex
    AI, else Anthropic's API or a gateway)."""
    if env.get("CLAUDE_CODE_USE_BEDROCK", "").strip():
        return "ANTHROPIC_BEDROCK_BASE_URL"
    if env.get("CLAUDE_CODE_USE_VERTEX", "").strip():
        return "ANTHROPIC_VERTEX_BASE_URL"
    return "ANTHROPIC_BASE_URL"


def _check_base_url(env: Mapping[str, str], options: ClaudeCodeOptions) -> None:
    """Refuse a base URL the CLI cannot send to, before it starts: it took one and failed every request as
    "API Error: Invalid URL", a `stream_interrupted` that said to check the network and retry."""
    name = _base_url_variable(env)
    url = env.get(name, "")
    source = f"{name} of the env option" if name in options.env else name
    refusal = base_url_refusal(url, source, "Claude Code", setting=name) if url else None
    if refusal is not None:
        raise ConfigurationError(refusal[0], hint=refusal[1])


def take_credential(env: dict[str, str]) -> str | None:
    """Takes the credential the `apiKeyHelper` gives out of `env` (None when there is none to take).

    The CLI sends its helper's value both as `x-api-key` and as `Authorization: Bearer` (measured with
    2.1.332 against FakeAnthropic), so the helper stands in for ANTHROPIC_API_KEY, and for
    ANTHROPIC_AUTH_TOKEN when that is the only credential or the same value (a gateway reads its
    bearer token as before, and is sent it as `x-api-key` too). A key and a different token cannot
    both go through one helper: the token then stays in the environment (docs/backends/claude-code.md).
    """
    key = env.get(KEY_ENV)
    token = env.get(TOKEN_ENV)
    if key:
        del env[KEY_ENV]
        if token == key:
            del env[TOKEN_ENV]
        return key
    if token and KEY_ENV not in env:  # an empty ANTHROPIC_API_KEY given on purpose: left as it is
        del env[TOKEN_ENV]
        return token
    return None


def take_aws_keys(env: dict[str, str]) -> bytes | None:
    """The AWS keys of a Bedrock run (`CLAUDE_CODE_USE_BEDROCK`) taken out of `env`, as the JSON the CLI's
    `awsCredentialExport` helper prints (`{"Credentials": {"AccessKeyId", "SecretAccessKey", "SessionToken"}}`);
    None outside Bedrock or without both an access key id and its secret (a profile, a role: left as they are).

    Round 37: they reached the CLI's environment, which its Bash commands inherit, so a model's `env` printed the
    secret key to the model and its provider. Given through the helper (measured with 2.1.332 against
    FakeAnthropic's Bedrock: the requests carry the helper's session token), they are in no environment of its."""
    if not env.get("CLAUDE_CODE_USE_BEDROCK", "").strip():
        return None
    key_id, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if not key_id or not secret:
        return None
    credentials = {"AccessKeyId": key_id, "SecretAccessKey": secret}
    if token := env.get("AWS_SESSION_TOKEN"):
        credentials["SessionToken"] = token
    for name in _AWS_KEYS:
        env.pop(name, None)
    return json.dumps({"Credentials": credentials}, separators=(",", ":")).encode()


def key_helper(env: dict[str, str], home: Path) -> str | None:
    """Moves the run's ANTHROPIC_API_KEY (or its only ANTHROPIC_AUTH_TOKEN: `take_credential`) out of
    `env` and answers the `apiKeyHelper` command that prints it from its file of the home
    (`_key_file`: `keys/anthropic-<digest>`, mode 0600, folder 0700, written while a process of the run
    or its pool holds a lease on it, removed after), None without one. The CLI runs the helper for its
    key, so the key is in no environment of its process: not in what its Bash tool's commands inherit,
    nor in `/proc/<its pid>/environ` (docs/backends/claude-code.md, "Keys and the model's commands")."""
    credential = take_credential(env)
    return None if credential is None else _helper(key_file(home, credential), env.get("PATH"))


def _helper(file: Path, path: str | None) -> str:
    """`cat` of a private file (the key's, the AWS keys'), by the absolute path of `cat`: the CLI runs a helper through
    a shell with the run's PATH, and a PATH without `cat` (an `env` option that narrows it) made every run fail with
    "apiKeyHelper script is failing", an auth error naming no cause."""
    cat = shutil.which("cat", path=path) or shutil.which("cat", path=os.defpath)
    if cat is None:
        raise BackendUnavailable(
            "claude-code gives the CLI its key through `cat`, and no `cat` program was found on PATH or in "
            f"{os.defpath}",
            hint="install coreutils (or put `cat` on PATH)",
        )
    return f"{shlex.quote(cat)} {shlex.quote(str(file))}"


def start_claude(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> AgentSubprocess:
    """The default `start_process`: the `claude` subprocess in its own process group."""
    return AgentSubprocess(argv, cwd=cwd, env=env, hint=CLAUDE_CODE.install_hint)


def _mcp_entry(server: McpServer) -> dict[str, Any]:
    if isinstance(server, HttpMcpServer | SseMcpServer):
        return {"type": server.type, "url": server.url, "headers": dict(server.headers)}
    entry: dict[str, Any] = {"type": "stdio", "command": server.command, "args": list(server.args)}
    if server.env:
        entry["env"] = dict(server.env)
    return entry


HOME_OVERRIDES: Mapping[str, str] = {
    ".claude/settings.json": "the CLI's user settings, whose hooks, status line and env run with every run",
    ".claude/CLAUDE.md": "instructions the CLI gives the model in every run",
    ".claude/rules": "instructions the CLI gives the model in every run",
    ".claude/agents": "subagents the model may start, with their own instructions",
    ".claude/skills": "skills the CLI lists to the model in every run",
    ".claude/output-styles": "output styles, instructions the CLI's settings may choose",
}
"""What 2.1.332 reads in its home (`--setting-sources user` reads the user's settings, which are the home's) that
decides what runs unasked or what the model is told in every run. Red team round 41, measured: a planted
`<home>/.claude/settings.json` had its `SessionStart`, `UserPromptSubmit` and `PreToolUse` hooks run (in default mode,
before any permission) and its `env` reach the model's commands; its CLAUDE.md, rules, an agent's and a skill's
description and the output style it chose reached the model's request. unified writes none of them (settings come in
`--settings`), nor does the CLI on its own (measured: a run's home holds `.claude.json`, backups, plugins' store,
sessions, shell snapshots), so one found there was put by something else, such as a command a model ran in an
earlier run (in yolo, or a write outside the workspace the user allowed): the run is refused. The home's
`commands/` too (`_NO_COMMANDS`; a command's description reached the model's request, as a skill's), unless the caller
opts into slash commands (`slash_commands`), whose commands live there."""

_NO_COMMANDS: Mapping[str, str] = {
    **HOME_OVERRIDES,
    ".claude/commands": "slash commands, which the CLI lists to the model in every run",
}

_HOME_HINT = (
    "remove it (look at what it says first: it may be an attack's), or point the home option elsewhere; settings for "
    "a run go in its options, never in the backend's home"
)


@dataclass(frozen=True, slots=True)
class Launch:
    """The binary and environment of a run, and how its argv is made."""

    binary: Path
    env: dict[str, str]
    home: Path
    model: str | None
    params: ExecuteParams = field(repr=False)
    api_key_helper: str | None = None
    """The `apiKeyHelper` command that gives the CLI the run's key (`key_helper`), None without one."""
    aws_helper: str | None = None
    """The `awsCredentialExport` command that gives a Bedrock run's CLI its AWS keys (`take_aws_keys`), None without."""
    private_files: tuple[tuple[Path, bytes], ...] = field(default=(), repr=False)
    """The run's private files of the home, by path and content, written while a process holds a `lease`
    (`_key_file`): the key the helper prints (`key_file`); a Bedrock run's AWS keys (`aws_file`); the `--mcp-config`
    JSON of its MCP servers, whose headers and `env` carry tokens (`mcp_file`), never on its command line, which its
    Bash tool's commands and every local user can read; its system instruction (`system_file`): a command line holds
    no argument over 128 KiB."""
    mcp_path: Path | None = None
    """The `--mcp-config` file among them, None without MCP servers."""
    system_path: Path | None = None
    """The `--system-prompt-file` among them, None without a system instruction."""

    @classmethod
    def of(cls, params: ExecuteParams, options: ClaudeCodeOptions) -> Launch:
        home = (options.home or default_home()).expanduser().resolve()
        planted = home_refusal(home, HOME_OVERRIDES if options.slash_commands else _NO_COMMANDS, BACKEND, _HOME_HINT)
        if planted is not None:
            raise planted
        env = claude_env(options, home, cwd=params.cwd.expanduser())
        _check_base_url(env, options)
        binary = (
            STAND_IN_BINARY
            if options.start_process is not None
            else locate(CLAUDE_CODE, options.claude_binary, {**os.environ, **env}).path  # UNIFIED_CLAUDE_BIN is ours
        )
        key = take_credential(env)
        helper = None if key is None else _helper(key_file(home, key), env.get("PATH"))
        files = [] if key is None else [(key_file(home, key), key.encode())]
        aws_keys = take_aws_keys(env)
        aws_helper = None
        if aws_keys is not None:
            files.append((aws_path := aws_file(home, aws_keys), aws_keys))
            aws_helper = _helper(aws_path, env.get("PATH"))
        mcp_path = system_path = None
        if params.mcp_servers:
            # The CLI's one wait for its MCP servers to start and list their tools (30 s unless set); it takes no
            # timeout per server. Without it a server's `timeout_s` went nowhere: 120 s for a slow one was cut at
            # 30 s (its tools missing, no word), 2 s for a stuck one still held every turn's start 30 s.
            slowest = max(server.timeout_s for server in params.mcp_servers)
            env.setdefault("MCP_TIMEOUT", str(min(max(1, round(slowest * 1000)), _NODE_TIMER_MAX_MS)))
            servers = {server.name: _mcp_entry(server) for server in params.mcp_servers}
            config = json.dumps({"mcpServers": servers}, separators=(",", ":")).encode()
            mcp_path = mcp_file(home, config)
            files.append((mcp_path, config))
        if params.system_instruction is not None:
            text = params.system_instruction.encode()
            system_path = system_file(home, text)
            files.append((system_path, text))
        return cls(
            binary=binary,
            env=env,
            home=home,
            model=params.model,
            params=params,
            api_key_helper=helper,
            aws_helper=aws_helper,
            private_files=tuple(files),
            mcp_path=mcp_path,
            system_path=system_path,
        )

    def lease(self) -> KeyLease | None:
        """A hold on the run's private files for one process about to start (None without any): written now
        if they are not there, and removed once no process holds them (`_key_file`)."""
        return lease(list(self.private_files)) if self.private_files else None

    def argv(self, *, session_id: str, resume: bool) -> list[str]:
        """The command line: stream-json both ways with partial messages, permission prompts over
        the control protocol, the ask-every-call settings from no other source, the run's options."""
        params = self.params
        settings = ask_settings(server.name for server in params.mcp_servers)
        if self.api_key_helper is not None:
            settings["apiKeyHelper"] = self.api_key_helper
        if self.aws_helper is not None:
            settings["awsCredentialExport"] = self.aws_helper
        argv = [
            str(self.binary),
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--include-partial-messages",
            "--permission-prompt-tool",
            "stdio",
            "--permission-mode",
            "default",
            "--setting-sources",
            "user",
            "--settings",
            json.dumps(settings, separators=(",", ":")),
            "--strict-mcp-config",
        ]
        argv.append(f"--resume={session_id}" if resume else f"--session-id={session_id}")
        if self.model:
            argv += ["--model", self.model]
        if self.mcp_path is not None:
            argv += ["--mcp-config", str(self.mcp_path)]
        if params.excluded_tools:
            argv += ["--disallowedTools", ",".join(disallowed_tools(params.excluded_tools))]
        for directory in params.include_directories:
            argv += ["--add-dir", str(Path(directory).expanduser().resolve())]
        if self.system_path is not None:
            argv += ["--system-prompt-file", str(self.system_path)]
        if params.max_turns is not None:
            argv += ["--max-turns", str(params.max_turns)]
        thinking = params.thinking
        if thinking is not None:
            if thinking.level is not None:
                argv += ["--effort", "low" if thinking.level == "minimal" else thinking.level]
            elif thinking.budget is not None and thinking.budget > 0:
                argv += ["--max-thinking-tokens", str(thinking.budget)]
        return argv

    @property
    def entries(self) -> Path:
        """The CLI's live-process entries folder (`sessions/<pid>.json`), see `ClaudeConnection`."""
        return config_dir(self.home) / "sessions"

    def run_env(self) -> dict[str, str]:
        """The environment of this run (thinking turned off when the caller asked for budget 0)."""
        env = dict(self.env)
        thinking = self.params.thinking
        if thinking is not None and thinking.budget == 0:
            env["CLAUDE_CODE_DISABLE_THINKING"] = "1"
        return env


def new_session_id() -> str:
    return str(uuid.uuid4())
