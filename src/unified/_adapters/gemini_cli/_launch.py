"""How a run starts `gemini`: the pinned binary, its environment, the model and the flags both transports share.

Built once per backend from its options; the ACP run (`_run.py`) and the stream-json fallback
(`_stream_json.py`) both read it, so neither imports the other or the backend.

The environment (`gemini_env`): the caller's variables (auth included) plus the backend's `env`
option, and four additions of ours:
- `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, a file of ours that is the machine's system settings (if
  any) plus `general.sessionRetention.enabled = false`: the CLI's session cleanup deletes a
  conversation when `--resume` left an empty duplicate of it (docs/backends/gemini-cli.md, Quirks
  7 and 8). We never touch the user's own settings.json. Caveat (0.61): the CLI skips a system
  settings file with a "Security Warning" unless root owns it and every parent directory, none
  writable by group or others, so this helps root only; `ResumeGuard` (`_chat_files.py`) is the
  protection that always holds. The same file turns on the CLI's own
  `security.environmentVariableRedaction` (`_OVERRIDES`, `_BLOCKED_ENV`): where the CLI reads the file
  (root, as above), the key never reaches the environment of a command the model runs
  (docs/backends/gemini-cli.md, "Keys and the model's commands");
- `TMPDIR`, a folder of unified's cache only the user can read (`TEMP_FOLDER`): 0.61 writes an API error's
  report, the whole request, to its temp dir as `gemini-client-error-*.json`, readable by all (0644); in /tmp
  any local user read the conversation and the files the model read. A `TMPDIR` in the backend's `env` option wins;
- one node process: left alone, `gemini` starts a second node process of itself only to raise its
  heap limit to half the machine's memory, which doubles every cold start (measured 3.2-4.2 s
  against 1.4-2.2 s). We give node that heap limit and tell the CLI not to relaunch; a caller who
  sets `GEMINI_CLI_NO_RELAUNCH` or a heap limit of their own keeps theirs;
- a compile cache: a third of a cold start's CPU is V8 compiling the CLI's 96 MB of modules
  (`--cpu-prof` of `gemini --version`: 0.71 of 2.04 s). Node 22.1+ keeps the compiled code in
  `NODE_COMPILE_CACHE` (unified's cache folder, `node-compile-cache`) and checks it against each
  module's source, so later starts skip that work: 2.28 -> 1.86 s of CPU here on Node 22.23 (medians). Older
  Node ignores the variable. A caller's own `NODE_COMPILE_CACHE` or `NODE_DISABLE_COMPILE_CACHE` wins.

The credentials (`CREDENTIAL_ENV`) stay in `Launch.env` (the pool key, the redaction of the stderr tail) but
not in the exec environment of the process (`start_gemini`, `credentials_by_pipe`): on POSIX they reach the
CLI through an inherited pipe that `key_loader.cjs`, preloaded by node, reads into `process.env` before the
CLI's code runs, so `/proc/<the CLI's pid>/environ`, which a command the model runs can read, never holds
them, and leaves them out of every listing of `process.env`, so no environment the CLI builds for a child
holds them either (docs/backends/gemini-cli.md, "Keys and the model's commands"). On Windows (no
`pass_fds`) they stay in the environment.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import json
import os
import re
import stat
from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from unified._adapters.gemini_cli._chat_files import gemini_home
from unified._adapters.gemini_cli._error_reports import TEMP_FOLDER
from unified._adapters.gemini_cli._options import GeminiCliOptions
from unified._adapters.gemini_cli._outcome import TRUST_ADVICE
from unified._adapters.gemini_cli._user_agents import own_subagents
from unified._adapters.gemini_cli._workspace_settings import (
    FolderTrust,
    env_file_refusal,
    memory_names,
    special_file_refusal,
    workspace_refusal,
)
from unified._binary.environment import (
    EnvPolicy,
    FileSignature,
    cache_file,
    cache_folder,
    child_env,
    file_signature,
    private_cache_folder,
)
from unified._binary.install import BinarySpec, locate, require_node
from unified._binary.process import AgentSubprocess, PipedEnv
from unified._files import read_regular
from unified._urls import base_url_refusal
from unified.errors import BackendUnavailable, ConfigurationError
from unified.tools import Policy, protected_path_patterns
from unified.tools._policy import ALIASES, USER_TIER, Decision, Rule, outright_refusal, unasked_refusal
from unified.types import ApprovalMode, ExecuteParams, StdioMcpServer

__all__ = [
    "BACKEND",
    "CLI_MODES",
    "CLI_NAMES",
    "CREDENTIAL_ENV",
    "CREDENTIAL_READERS",
    "DEFAULT_MODEL",
    "ENV_FD_VAR",
    "GEMINI_CLI",
    "KEY_LOADER",
    "PINNED_VERSION",
    "SYSTEM_SETTINGS_ENV",
    "Launch",
    "cli_denials",
    "cli_tool_name",
    "credential_alias_rules",
    "credentials_by_pipe",
    "gemini_env",
    "gemini_file",
    "never_asked_denials",
    "outright_denials",
    "policy_denials",
    "policy_rules",
    "policy_tool_names",
    "require_node",
    "start_gemini",
    "subagent_denials",
    "subagent_rules",
    "user_rule_tools",
]

BACKEND = "gemini-cli"
CREDENTIAL_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS")
"""The variables that carry the CLI's credentials: never in its exec environment where a pipe can carry them
(`credentials_by_pipe`), never given to a version probe."""
PINNED_VERSION = "0.61.0"
GEMINI_CLI = BinarySpec(
    name=BACKEND,
    package="@google/gemini-cli",
    version=PINNED_VERSION,
    supported=((0, 61, 0), (0, 62, 0)),
    bin="gemini",
    env_var="UNIFIED_GEMINI_BIN",
    option="gemini_binary",
    local_dir=".gemini-cli",
    install_command="unified install-gemini",
    title="the gemini CLI",
    home_vars=("HOME", "GEMINI_CLI_HOME"),  # the CLI writes into its home even for --version
    probe_env={"GEMINI_CLI_NO_RELAUNCH": "true"},
    credential_env=CREDENTIAL_ENV,  # `--version` needs none
)
AUTH_ENV = (
    *CREDENTIAL_ENV,
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "CODE_ASSIST_ENDPOINT",
)
"""Variables that choose and carry the CLI's credentials: passed to the child untouched, never logged."""
ENV_POLICY = EnvPolicy(
    allow=frozenset({*AUTH_ENV, "CLOUDSDK_CONFIG", "NODE_OPTIONS", "NODE_COMPILE_CACHE", "NODE_DISABLE_COMPILE_CACHE"}),
    allow_prefixes=("GEMINI_", "GOOGLE_GENAI_", "GOOGLE_CLOUD_"),
)
"""What the `gemini` child takes from the host besides the basics: its credentials and settings
(`GEMINI_CLI_HOME`, `GEMINI_SYSTEM_MD`, ...), gcloud's configuration for application default
credentials, and node's options. Nothing else (docs/backends/gemini-cli.md, "Processes")."""
DEFAULT_MODEL = "gemini-2.5-flash"
"""The model of a run that names none (the generate-content backend's default too), unless the CLI's own
`GEMINI_MODEL` or its settings' `model.name` name a concrete one. Always a concrete model: with none the
CLI's router (`auto`) first makes `generateContent` calls of its own to pick one, invisible in the stream
(docs/backends/gemini-cli.md, "Model")."""
STAND_IN_BINARY = Path("gemini")
"""The argv[0] recorded when `start_process` replaces the binary (it is not looked up)."""
SYSTEM_SETTINGS_ENV = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
_DEFAULT_SYSTEM_SETTINGS = Path("/etc/gemini-cli/settings.json")
_OVERRIDES: dict[str, Any] = {
    "general": {"sessionRetention": {"enabled": False}, "enableAutoUpdate": False},
    "security": {"environmentVariableRedaction": {"enabled": True}},
}
_BLOCKED_ENV = CREDENTIAL_ENV
"""Named in `security.environmentVariableRedaction.blocked` besides the machine's own list: the CLI's
redaction (on, `_OVERRIDES`) already drops every variable named like a key, token or credential and
every value shaped like a Google API key from the environment of the commands its shell tool (and its
hooks) run; naming the credentials keeps them out even if a machine's `allowed` names one
(docs/backends/gemini-cli.md, "Keys and the model's commands")."""


def gemini_file(stem: str, suffix: str, text: str) -> Path:
    """A file handed to the CLI (a policy, a system prompt, settings), named by its content."""
    return cache_file("gemini-cli", stem, suffix, text)


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = dict(value) if isinstance(value, Mapping) else value
    return merged


def _system_settings_file(env: Mapping[str, str]) -> Path:
    """The machine's system settings plus ours, written once per content."""
    source = Path(env.get(SYSTEM_SETTINGS_ENV) or _DEFAULT_SYSTEM_SETTINGS)
    return gemini_file("system-settings", ".json", _system_settings_text(source, file_signature(source)))


@functools.lru_cache(maxsize=8)
def _system_settings_text(source: Path, signature: FileSignature | None) -> str:
    """The merged settings of `source` as it is (`signature`: its `file_signature`, None when absent):
    read again only when it changed."""
    base: dict[str, Any] = {}
    if signature is not None and stat.S_ISREG(signature[0]):
        try:
            loaded = json.loads(read_regular(source))
        except (OSError, ValueError, RecursionError):
            loaded = {}
        base = loaded if isinstance(loaded, dict) else {}
    merged = _merge(base, copy.deepcopy(_OVERRIDES))  # a copy: what follows changes it in place
    redaction = merged["security"]["environmentVariableRedaction"]
    theirs = redaction.get("blocked")
    blocked = [name for name in theirs if isinstance(name, str)] if isinstance(theirs, list) else []
    redaction["blocked"] = [*blocked, *(name for name in _BLOCKED_ENV if name not in blocked)]
    allowed = redaction.get("allowed")
    if isinstance(allowed, list):  # the machine's own exceptions, never one of the credentials
        redaction["allowed"] = [
            name for name in allowed if not (isinstance(name, str) and name.upper() in _BLOCKED_ENV)
        ]
    return json.dumps(merged, indent=2, sort_keys=True)


def gemini_env(extra: Mapping[str, str] | None = None, cwd: Path | None = None) -> dict[str, str]:
    """The CLI's environment (see the module docstring); `cwd`: the run's (`child_env`)."""
    env = child_env(ENV_POLICY, extra=extra, cwd=cwd)
    # The CLI's home made here, where a file in its way (HOME naming a file) is the typed `backend_unavailable`
    # naming it (`_files.unwritable`): the CLI died at its start, "exit code 1: general failure", its reason (ENOTDIR
    # on projects.json) deep in a stderr tail under other warnings (bad input round 15).
    gemini_home(env).mkdir(parents=True, exist_ok=True)
    env[SYSTEM_SETTINGS_ENV] = str(_system_settings_file(env))
    if "TMPDIR" not in (extra or {}):
        # 0.61 writes the report of an API error, the whole request (the conversation, what the model read), to
        # `os.tmpdir()` as gemini-client-error-*.json, 0644: where that is /tmp, any local user read it.
        env["TMPDIR"] = str(private_cache_folder(TEMP_FOLDER))
    if "GEMINI_CLI_NO_RELAUNCH" not in env:
        env["GEMINI_CLI_NO_RELAUNCH"] = "true"
        node_options = env.get("NODE_OPTIONS", "")
        if "--max-old-space-size" not in node_options:
            env["NODE_OPTIONS"] = f"{node_options} --max-old-space-size={_half_memory_mb()}".strip()
    if "NODE_COMPILE_CACHE" not in env and "NODE_DISABLE_COMPILE_CACHE" not in env:
        env["NODE_COMPILE_CACHE"] = str(cache_folder("node-compile-cache"))
    return env


def _half_memory_mb() -> int:
    """Half the machine's memory in MiB: the heap limit the CLI's own relaunch would ask for."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (2 * 1024 * 1024)


KEY_LOADER = Path(__file__).with_name("key_loader.cjs")
"""The preload (package data) that reads the piped credentials into the CLI's `process.env`."""
ENV_FD_VAR = "UNIFIED_GEMINI_ENV_FD"
"""Where `KEY_LOADER` finds the pipe's descriptor number (it removes the variable)."""
HIDE_ENTRY = "UNIFIED_GEMINI_HIDE"
"""The pipe's entry (never a variable) naming, comma-separated, the variables `KEY_LOADER` leaves out of every
enumeration of `process.env`, so of every child's environment the CLI builds (readable by name still)."""
KEY_LOADER_EXIT = 78
"""The exit code of a CLI whose `KEY_LOADER` could not read the pipe (`_outcome.EXIT_CODES`)."""
PIPES_CREDENTIALS = os.name == "posix"
"""Whether the credentials go by pipe: POSIX has `pass_fds`; Windows keeps them in the environment."""


def credentials_by_pipe(env: Mapping[str, str]) -> tuple[dict[str, str], PipedEnv | None]:
    """The CLI's exec environment and what goes through the pipe (see the module docstring).

    The credentials leave the environment; `NODE_OPTIONS` gets `--require <KEY_LOADER>` first, and the pipe
    carries its value as it was (or its deletion), which the loader puts back, so what the CLI starts (the
    model's commands, MCP servers) sees the `NODE_OPTIONS` it would have seen and loads no preload of ours.
    Without credentials, or where no pipe can be passed, `env` as it is. A missing loader is a
    `BackendUnavailable` (a broken install), never a CLI started without its key.
    """
    secrets = {name: env[name] for name in CREDENTIAL_ENV if name in env}
    if not secrets or not PIPES_CREDENTIALS:
        return dict(env), None
    if not KEY_LOADER.is_file():
        raise BackendUnavailable(
            f"unified's key loader for the gemini CLI is missing ({KEY_LOADER})",
            hint="reinstall unified: pip install --force-reinstall unified",
        )
    theirs = env.get("NODE_OPTIONS")
    launch_env = {name: value for name, value in env.items() if name not in secrets and name != ENV_FD_VAR}
    launch_env["NODE_OPTIONS"] = f"--require {_node_option_quoted(str(KEY_LOADER))}" + (f" {theirs}" if theirs else "")
    piped: dict[str, str | None] = {**secrets, "NODE_OPTIONS": theirs}
    if env.get("GEMINI_CLI_NO_RELAUNCH"):  # a CLI that relaunches itself needs the key in its second process
        piped[HIDE_ENTRY] = ",".join(secrets)
    return launch_env, PipedEnv(ENV_FD_VAR, piped)


def _node_option_quoted(text: str) -> str:
    """`text` as one argument of `NODE_OPTIONS`, which node splits at spaces outside double quotes (inside
    them a backslash escapes the next character)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def start_gemini(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> AgentSubprocess:
    """The default `start_process` (the `gemini --acp` subprocess), and stream-json's `gemini -p` (its prompt on
    stdin): the credentials by pipe (`credentials_by_pipe`)."""
    launch_env, piped = credentials_by_pipe(env)
    return AgentSubprocess(argv, cwd=cwd, env=launch_env, hint=GEMINI_CLI.install_hint, piped=piped)


SUBAGENTS = ("codebase_investigator", "cli_help", "generalist", "browser_agent")
"""0.61's own subagents (`AgentRegistry.loadBuiltInAgents`). A policy rule holds for one subagent's calls when its
`subagent` names it, exactly (no wildcard, no list): those the user, the project or an extension defines are named
from their files (`_user_agents`)."""


@dataclass(frozen=True, slots=True)
class Launch:
    binary: Path
    env: dict[str, str]
    model: str | None
    fake_responses: Path | None
    fake_responses_strict: bool
    include_directories: tuple[Path, ...]
    excluded_tools: tuple[str, ...]
    policy: Policy | None = None
    """The caller's policy (`GeminiCliOptions.policy`): the tools its user rules may deny or ask for are asked."""
    max_retries: int = 3
    """The CLI's retries of one request before the run gives up (`GeminiCliOptions.max_retries`, `RetryWatch`)."""
    max_retry_delay_s: float = 60.0
    """The longest wait before a retry the run sits out (`GeminiCliOptions.max_retry_delay_s`, `RetryWatch`)."""
    subagent_silence_s: float | None = 900.0
    """How long a running subagent may write nothing before the run ends (`GeminiCliOptions.subagent_silence_s`)."""
    subagents: tuple[str, ...] = SUBAGENTS
    """The subagents the CLI may run: its own (`SUBAGENTS`) and, with a policy, those the user, the project or an
    extension defines (`_user_agents.own_subagents`), each named in `subagent_rules`."""
    credential_aliases: tuple[str, ...] | None = ()
    """The entries of the run's folders that are a credential file under another name (`_protected.credential_aliases`,
    searched when the run starts, `GeminiCliBackend`; None: too many entries to search): the CLI's reads of them are
    asked (ACP) or denied (stream-json) by `credential_alias_rules`."""
    max_turns: int | None = None
    """The run's `max_turns` over ACP, which unified keeps (`_permissions.TurnCap`): every call is asked
    (`policy_flags`), and the first call of request `max_turns` is not run and ends the run."""
    node: tuple[str, ...] = ()
    """The Node.js executable (and the `#!` line's arguments for it) that runs `binary`, put before it in the argv
    (`install.require_node`): the CLI is never started through a version manager's shim, which would pick the Node
    by the run's folder, a repository's. Empty for a stand-in process."""
    folder_trusted: bool = True
    """Whether the CLI trusts the run's cwd (`_workspace_settings.cli_trusts`; looked at only for a run with stdio MCP
    servers, which it starts only there)."""
    memory_names: tuple[str, ...] | None = None
    """The memory file names the CLI reads in the run's folders (`_workspace_settings.memory_names`), which
    `memory_file_refusal` looks for before it starts; None where it reads none of them (a folder it does not trust) or
    no CLI runs (a stand-in process)."""

    @classmethod
    def of(cls, params: ExecuteParams, options: GeminiCliOptions) -> Launch:
        extra_env = dict(options.env)
        given = ChainMap(extra_env, os.environ)  # looked up, not copied (decoding the environment costs)
        base_url = given.get("GOOGLE_GEMINI_BASE_URL", "")
        source = "GOOGLE_GEMINI_BASE_URL" + (" of the env option" if "GOOGLE_GEMINI_BASE_URL" in extra_env else "")
        url_refusal = (
            base_url_refusal(base_url, source, "the gemini CLI", setting="GOOGLE_GEMINI_BASE_URL") if base_url else None
        )
        if url_refusal is not None:  # else the CLI fails session/new: "Invalid custom base URL", a backend_error
            raise ConfigurationError(url_refusal[0], hint=url_refusal[1])
        google_key = given.get("GOOGLE_API_KEY", "")
        if not given.get("GEMINI_API_KEY", "").strip() and google_key.strip():
            # The CLI reads only GEMINI_API_KEY; google-genai (and so unified's doctor and routing) GOOGLE_API_KEY too.
            extra_env["GEMINI_API_KEY"] = google_key
        if params.system_instruction is not None:
            # Replaces the CLI's whole system prompt; read per process, so it is part of the pool key.
            extra_env["GEMINI_SYSTEM_MD"] = str(gemini_file("system", ".md", params.system_instruction))
        env = gemini_env(extra_env, params.cwd.expanduser())
        where = ChainMap(env, os.environ)  # UNIFIED_GEMINI_BIN is ours to read, not the child's
        binary = STAND_IN_BINARY
        node: tuple[str, ...] = ()
        if options.start_process is None:
            binary = locate(GEMINI_CLI, options.gemini_binary, where).path
            node = require_node(GEMINI_CLI, binary, env) or ()
        fake = options.fake_responses.resolve() if options.fake_responses is not None else None
        home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home())
        system = Path(given.get(SYSTEM_SETTINGS_ENV) or _DEFAULT_SYSTEM_SETTINGS)
        cwd = params.cwd.expanduser().resolve()
        folder = FolderTrust(cwd, env, home, system)
        if (special := special_file_refusal(folder)) is not None:
            raise ConfigurationError(special[0], hint=special[1])
        refusal = workspace_refusal(folder)
        if refusal is not None:
            raise ConfigurationError(
                f"{refusal}: in this folder, which it trusts, the gemini CLI would run commands or servers of that "
                "file's, send the run's data where it says or let its tools reach folders the run did not name, "
                "before and beside anything the run allows",
                hint="remove them from that file (give MCP servers as the run's mcp_servers), or have the CLI not "
                "trust the folder (GEMINI_CLI_TRUST_WORKSPACE=false in the env option: it then ignores the "
                "workspace's settings, and refuses yolo and stdio MCP servers)",
            )
        env_refusal = env_file_refusal(folder)
        if env_refusal is not None:
            raise ConfigurationError(env_refusal[0], hint=env_refusal[1])
        if (
            (params.approval_mode == "yolo" or (params.approval_mode == "auto_edit" and options.transport != "acp"))
            and options.start_process is None  # a stand-in agent is not the CLI: its trust is not asked
            and not folder.trusted
        ):
            # Else the CLI starts only to refuse it: exit 55 headless, a `session/set_mode` error over ACP. (Over
            # ACP, unified's auto_edit runs the CLI's default mode, which needs no trust: it runs there.)
            raise ConfigurationError(
                f"approval_mode {params.approval_mode!r}: the gemini CLI allows yolo and auto_edit only in a folder "
                f"it trusts, and it does not trust {cwd}",
                hint=f"{TRUST_ADVICE}, or run in a folder it trusts",
            )
        subagents: tuple[str, ...] = SUBAGENTS
        if options.policy is not None:  # a file system look only when rules may name them
            subagents += tuple(name for name in own_subagents(home, params.cwd.expanduser()) if name not in SUBAGENTS)
        return cls(
            binary=binary,
            node=node,
            env=env,
            model=params.model,
            fake_responses=fake,
            fake_responses_strict=options.fake_responses_strict,
            include_directories=tuple(Path(d).resolve() for d in params.include_directories),
            excluded_tools=tuple(sorted(set(params.excluded_tools))),
            policy=options.policy,
            max_retries=options.max_retries,
            max_retry_delay_s=options.max_retry_delay_s,
            subagent_silence_s=options.subagent_silence_s,
            subagents=subagents,
            max_turns=params.max_turns if options.transport == "acp" else None,  # stream-json keeps its own
            folder_trusted=not any(isinstance(s, StdioMcpServer) for s in params.mcp_servers) or folder.trusted,
            memory_names=memory_names(folder) if options.start_process is None and folder.trusted else None,
        )

    def model_for(self, session_model: str | None = None) -> str:
        """The model this run uses: the run's `model`, else the resumed session's (never the router's), else
        the CLI's own `GEMINI_MODEL` or settings `model.name` when concrete, else `DEFAULT_MODEL`."""
        for candidate in (self.model, session_model, self.env.get("GEMINI_MODEL")):
            if candidate and not candidate.startswith("auto"):
                return candidate
        configured = self._settings_model()  # a file read: only when nothing above names a model
        if configured and not configured.startswith("auto"):
            return configured
        return DEFAULT_MODEL

    def _settings_model(self) -> str | None:
        home = Path(self.env.get("GEMINI_CLI_HOME") or self.env.get("HOME") or Path.home())
        try:
            settings = json.loads(read_regular(home / ".gemini" / "settings.json"))
        except (OSError, ValueError, RecursionError):
            return None
        model = settings.get("model") if isinstance(settings, dict) else None
        name = model.get("name") if isinstance(model, dict) else None
        return name if isinstance(name, str) else None

    def acp_argv(self) -> list[str]:
        argv = [*self.node, str(self.binary), "--acp"]
        if self.fake_responses is not None:
            flag = "--fake-responses" if self.fake_responses_strict else "--fake-responses-non-strict"
            argv += [flag, str(self.fake_responses)]
        return argv + self.directory_flags() + self.policy_flags()

    def directory_flags(self) -> list[str]:
        """The run's `include_directories` as the CLI's flags, on both transports (stream-json went without them, and
        its tools refused a read there as outside the workspace, measured)."""
        return [arg for directory in self.include_directories for arg in ("--include-directories", str(directory))]

    def policy_flags(self) -> list[str]:
        """unified's rules for the CLI (`policy_rules`) as a `--policy` file. A file given this way is the
        CLI's user tier and replaces its user policies directory: no rule of its own lets a call past unified."""
        rules = policy_denials(cli_denials(self.policy))
        rules += subagent_rules(subagent_denials(self.policy), self.subagents)
        rules += policy_rules(self.excluded_tools, user_rule_tools(self.policy))
        rules += credential_alias_rules(self.credential_aliases, asking=True)
        if self.max_turns is not None:
            rules += _TURN_CAP_RULE
        return ["--policy", str(gemini_file("policy", ".toml", rules))]

    def headless_policy_flags(
        self, mode: ApprovalMode, *, protect_paths: bool, links: Sequence[str] | None = ()
    ) -> list[str]:
        """stream-json's `--policy` file, where nobody can be asked (the approval mode decides): the
        `excluded_tools` denied, what `mode` would ask about denied (`unasked_denials`) and, with `protect_paths`
        (all but yolo, where the CLI's autoEdit would approve edits unseen), `write_file`/`replace` of a protected
        path denied (docs/tools.md), named plainly or through one of `links` the run's folders hold
        (`linked_protected_rules`; None: they could not be named), and so are reads that may reach a credential file
        under another name (`credential_alias_rules`)."""
        rules = deny_rules(self.excluded_tools) + unasked_denials(mode)
        if protect_paths:
            rules += protected_path_rules() + linked_protected_rules(links)
            rules += credential_alias_rules(self.credential_aliases, asking=False)
        if not rules:
            return []
        return ["--policy", str(gemini_file("exclude-tools", ".toml", rules))]


CLI_NAMES: dict[str, str] = {"edit_file": "replace", "search": "grep_search", "list_dir": "list_directory"}
"""unified's tool name -> the CLI's: `unified.tools.ALIASES` the other way round (a test keeps them equal;
written out so that finding the binary does not load the tool runtime). `excluded_tools` may use either."""
ASKING_MODES = '["default", "autoEdit", "plan"]'
"""The CLI's modes our rules hold in: all but yolo (unified's yolo allows every call, and only the CLI's yolo
lets its subagents run tools they could never put to a client)."""
ALL_MODES = '["default", "autoEdit", "plan", "yolo"]'
"""The CLI's modes a caller's rule holds in: all, yolo included (`user_rule_tools`; yolo's own allow is below it)."""
_RULE_PRIORITY = 380
"""4.38 in the CLI's tiers: above its settings' `tools.allowed` (4.3) and trusted MCP servers (4.2), below
its settings' `tools.exclude` (4.4) and `mcp.excluded` (4.9) denials, which stay theirs."""
READ_ONLY_CLI_TOOLS = ("glob", "grep_search", "list_directory", "read_file")
"""The CLI's tools that are unified's read-only ones (`list_directory` is our `list_dir`, ...)."""


NEVER_ASKED = ("invoke_agent",)
"""The CLI's tools it runs without asking whatever its policy says (0.61: a delegation's `shouldConfirmExecute`
is its subagent's, which confirms nothing), so an `ask_user` rule lets them run: only a deny rule stops them."""
CLI_MODES: Mapping[ApprovalMode, str] = {"default": "default", "auto_edit": "default", "plan": "plan", "yolo": "yolo"}
"""unified's approval mode -> the CLI's mode the run's session is set to (`_session_setup`) and the modes its rules
are written for. auto_edit runs the CLI in its default mode: its own autoEdit approves every edit without asking anyone
(its tools skip the policy), so unified's policy could not decide them; in default mode the CLI asks (`policy_rules`)
and unified's auto_edit allows the edits (`_permissions.py`). yolo stays the CLI's yolo: unified's yolo allows every
call too, and only there do the CLI's subagents run their own tools (which it can never put to a client)."""


def never_asked_denials(policy: Policy | None) -> dict[str, tuple[str, tuple[str, ...]]]:
    """For each tool the CLI never asks about (`NEVER_ASKED`) that the caller's policy would not plainly allow: the
    rule that says so and the CLI modes it holds in. Decided by the policy itself, for a call whose arguments are
    unseen (`Policy.evaluate`: a rule that denies or asks for some calls of the tool counts): nobody can be asked,
    so what the policy might not allow is denied (fail closed)."""
    denials: dict[str, tuple[str, tuple[str, ...]]] = {}
    if policy is None:
        return denials
    for tool in NEVER_ASKED:
        refusals = {cli: rule for mode, cli in CLI_MODES.items() if (rule := unasked_refusal(policy, tool, mode))}
        if refusals:
            denials[tool] = (next(iter(refusals.values())), tuple(sorted(refusals)))
    return denials


def outright_denials(policy: Policy | None) -> dict[str, tuple[str, tuple[str, ...]]]:
    """For each tool a user rule names (exactly, no wildcard) that `policy` denies every call of
    (`tools._policy.outright_refusal`): its CLI name -> the rule and the CLI modes it holds in. The CLI is told to deny
    it without arguments (`policy_denials`), so it refuses every call itself, a subagent's too, and does not offer it:
    asked instead (`user_rule_tools`), a subagent's call of it was a question nobody could answer, and the run hung
    (0.61 in yolo, measured for an MCP tool, the shell and `write_file`)."""
    denials: dict[str, tuple[str, tuple[str, ...]]] = {}
    if policy is None:
        return denials
    for name, _rule in _user_rule_names(policy):
        if any(c in name for c in "*?["):
            continue
        tool = ALIASES.get(name, name)
        refusals = {
            cli: rule
            for mode, cli in CLI_MODES.items()
            if (rule := outright_refusal(policy, tool, mode, lowest=USER_TIER))
        }
        if refusals:
            denials.setdefault(cli_tool_name(name), (next(iter(refusals.values())), tuple(sorted(refusals))))
    return denials


def cli_denials(policy: Policy | None) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every tool the CLI is told to deny without arguments for the caller's policy, by its CLI name: those it never
    asks about (`never_asked_denials`) and those the policy denies outright (`outright_denials`)."""
    return {**outright_denials(policy), **never_asked_denials(policy)}


def _user_rule_names(policy: Policy) -> list[tuple[str, str]]:
    """(tool name or pattern as written, rule name) of the caller's rules that may deny or ask, highest first."""
    rules: list[Rule] = [r for r in policy.rules if r.priority >= USER_TIER and r.decision is not Decision.ALLOW]
    return [(name, rule.name) for rule in rules for name in rule.tool_names]


def subagent_denials(policy: Policy | None) -> dict[str, str]:
    """The CLI's name (or pattern) of each tool the CLI must ask unified about (`user_rule_tools`) -> the rule that
    makes it so. A subagent cannot put a question to the client: 0.61 puts it on its internal message bus, which no
    ACP client answers, and waits for ever (its own time limit paused meanwhile). So a subagent is denied these
    tools outright (fail closed: an ask rule, or a deny rule with arguments, refuses every call of the subagent's),
    while the main agent's calls are still asked. A tool the CLI denies everyone in every mode (`cli_denials`) needs
    no rule of its own."""
    denials: dict[str, str] = {}
    if policy is None:
        return denials
    for name, rule in _user_rule_names(policy):
        denials.setdefault(cli_tool_name(name), rule)
    for tool in READ_ONLY_CLI_TOOLS:
        ours = ALIASES.get(tool, tool)
        refusals = [refusal for mode in CLI_MODES if (refusal := unasked_refusal(policy, ours, mode)) is not None]
        if refusals:
            denials.setdefault(tool, refusals[0])
    everywhere = set(CLI_MODES.values())
    denied = {tool for tool, (_rule, modes) in cli_denials(policy).items() if set(modes) == everywhere}
    return {tool: rule for tool, rule in denials.items() if tool not in denied}


_UNASKABLE = " (a subagent cannot be asked)"


def subagent_rules(denials: Mapping[str, str], subagents: Sequence[str] = SUBAGENTS) -> str:
    """`subagent_denials` as the CLI's deny rules, one per subagent (`Launch.subagents`) and tool, in every mode,
    above unified's asking rules; the `denyMessage` names the caller's rule (`_subagents` reads it back). (With a
    wildcard, `*`, no subagent starts in the first place: the main agent's rule asking about every tool makes 0.61's
    own check of the delegation a question, which it refuses, "Tool execution for ... denied by policy", measured.)"""
    return "".join(
        f"[[rule]]\nname = {toml_string(f'unified: {rule} (subagent {agent})')}\ntoolName = {toml_string(tool)}\n"
        f'subagent = {toml_string(agent)}\ndecision = "deny"\npriority = 997\nmodes = {ALL_MODES}\n'
        f"denyMessage = {toml_string(f'unified: the policy rule {rule} does not allow it{_UNASKABLE}')}\n\n"
        for tool, rule in sorted(denials.items())
        for agent in subagents
    )


DENIAL_RULE = re.compile(r"unified: the policy rule (?P<rule>.+?) does not allow it")
"""The caller's rule named in the `denyMessage` of unified's deny rules (`policy_denials`, `subagent_rules`), as
the CLI's refusal quotes it ("Tool execution denied by policy. unified: ...")."""


def toml_string(value: str | list[str]) -> str:
    """`value` as a TOML string (or array of them) for the CLI's policy file: JSON's escapes without `ensure_ascii`.
    With it, a character beyond the BMP (an emoji in a rule's name, in an excluded MCP tool's name) became a JSON
    surrogate pair escape, which TOML refuses, and the CLI dropped that rule: a deny rule for `invoke_agent` so named
    let the subagent run (measured on 0.61). DEL (U+007F), which JSON leaves raw and TOML refuses in a string, is
    escaped: raw, the CLI's parser refused the whole file, every rule of unified's with it, and in yolo a tool the
    caller's rule (so named) denies ran unasked (measured on 0.61)."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def policy_denials(denials: Mapping[str, tuple[str, tuple[str, ...]]]) -> str:
    """`never_asked_denials` as the CLI's deny rules, above everything of unified's but the exclusions. Without
    arguments, so the CLI does not offer the tool in those modes: 0.61 in yolo runs a delegation past a deny rule
    *with* arguments (measured: the subagent started), and a call of a tool it does not offer is refused."""
    return "".join(
        f"[[rule]]\nname = {toml_string(f'unified: {rule}')}\ntoolName = {toml_string(tool)}\n"
        'decision = "deny"\n'
        f"priority = 998\nmodes = {json.dumps(list(modes))}\n"
        f"denyMessage = {toml_string(f'unified: the policy rule {rule} does not allow it')}\n\n"
        for tool, (rule, modes) in sorted(denials.items())
    )


_MCP_NAME = re.compile(r"mcp__(?P<server>[^*?\[\]]+?)__(?P<tool>[^*?\[\]]+)")
"""unified's name of an MCP tool (`mcp__<server>__<tool>`, docs/tools.md)."""


def cli_tool_name(name: str) -> str:
    """The CLI's name (or policy pattern) for a tool name of unified's: `edit_file` -> `replace` (`CLI_NAMES`),
    an MCP tool `mcp__srv__tool` -> `mcp_srv_tool` (0.61's `mcp_<server>_<tool>`); a wildcard may be any tool:
    `*` (fail closed; 0.61's own `mcp_srv_*` let a call in yolo run unasked, measured). The
    CLI's policy took `mcp__srv__tool` for a tool of its own name, none: in yolo the tool ran unasked, a
    subagent's call too (measured on 0.61)."""
    mcp = _MCP_NAME.fullmatch(name)
    if mcp is not None:
        return f"mcp_{mcp['server']}_{mcp['tool']}"
    if any(c in name for c in "*?["):
        return "*"
    return CLI_NAMES.get(name, name)


def policy_tool_names(name: str, servers: Sequence[str]) -> tuple[str, ...]:
    """unified's names for the CLI's MCP tool `name` (`mcp_<server>_<tool>` -> `mcp__<server>__<tool>`), which the
    caller's policy speaks: one for each of the run's `servers` that prefixes it, longest server first. A server's name
    may hold `_`, so with servers `a` and `a_b` the CLI's `mcp_a_b_c` is tool `c` of `a_b` or tool `b_c` of `a`: the
    caller decides on every reading, and the strictest wins (`_permissions`: fail closed). Without a matching server,
    the CLI's own split at the first `_`. Any other name is unified's already (one reading)."""
    if not name.startswith("mcp_") or name.startswith("mcp__"):
        return (name,)
    rest = name[len("mcp_") :]
    readings = tuple(
        f"mcp__{server}__{rest[len(server) + 1 :]}"
        for server in sorted(set(servers), key=len, reverse=True)
        if rest.startswith(f"{server}_") and len(rest) > len(server) + 1
    )
    if readings:
        return readings
    server, sep, tool = rest.partition("_")
    return (f"mcp__{server}__{tool}",) if sep and server and tool else (name,)


def user_rule_tools(policy: Policy | None) -> tuple[str, ...]:
    """The CLI's names of the tools a user rule of `policy` may deny or ask for: the CLI must ask unified about
    them in every mode, or it would run them unasked (its read-only tools, everything in yolo) and the rule would
    not hold. Each in the CLI's spelling (`cli_tool_name`); a wildcard: every tool (`*`). So are the read-only
    tools `policy` does not allow in every mode (one built without the shipped table's `read-only` row): the CLI runs
    those unasked only on unified's word."""
    if policy is None:
        return ()
    names: set[str] = set()
    for rule in policy.rules:
        if rule.priority < USER_TIER or rule.decision is Decision.ALLOW:
            continue
        names.update(cli_tool_name(name) for name in rule.tool_names)
    for tool in READ_ONLY_CLI_TOOLS:
        ours = ALIASES.get(tool, tool)
        if any(policy.evaluate(ours, {}, mode, unseen=True).decision is not Decision.ALLOW for mode in CLI_MODES):
            names.add(tool)
    return ("*",) if "*" in names else tuple(sorted(names))


_EDITS = ("write_file", "replace")
"""The CLI's edit tools, which `policy_rules` has ask (and `_UNASKED` deny where nobody can be asked)."""
_EFFECTS = ("web_fetch", "save_memory", "activate_skill")
"""The CLI's other tools that act on the world, asked (and denied) as the edits are."""


def policy_rules(excluded_tools: Sequence[str] = (), asked: Sequence[str] = ()) -> str:
    """The CLI's policy that makes unified the one authority over tool calls (docs/backends/gemini-cli.md).

    - every call that can change anything asks (unified answers, `_permissions.py`): the shell (a rule with
      arguments, which the CLI's "known safe command" heuristics do not override, so `echo hi` asks too),
      writes and edits, web fetches, memory, skills and every MCP tool, in plan too (where unified's plan
      denies what changes anything): the CLI's own plan-mode denials are below the settings' `tools.allowed`
      (4.3), so a `tools.allowed: ["run_shell_command"]` ran the model's shell command in plan (measured, 0.61);
    - the read-only tools unified's table allows in every mode run unasked (reported as its rule);
    - `excluded_tools` are denied (a denial without arguments also hides the tool from the model);
    - the `asked` tools (`user_rule_tools`: those a caller's rule may deny or ask for) ask in every mode, yolo
      included, above the read-only rule: unified's policy decides them.
    """
    rules = deny_rules(excluded_tools)
    if asked:
        rules += (
            f'[[rule]]\nname = "unified: the caller\'s policy decides"\ntoolName = {toml_string(list(asked))}\n'
            f'argsPattern = "."\ndecision = "ask_user"\npriority = {_RULE_PRIORITY + 10}\nmodes = {ALL_MODES}\n\n'
        )
    ask = f'decision = "ask_user"\npriority = {_RULE_PRIORITY}\n'
    rules += (
        '[[rule]]\nname = "unified: the shell asks"\ntoolName = "run_shell_command"\nargsPattern = "."\n'
        f"{ask}modes = {ASKING_MODES}\n\n"
        f'[[rule]]\nname = "unified: edits ask"\ntoolName = {json.dumps(list(_EDITS))}\n'
        f"{ask}modes = {ASKING_MODES}\n\n"
        f'[[rule]]\nname = "unified: effects ask"\ntoolName = {json.dumps(list(_EFFECTS))}\n'
        f"{ask}modes = {ASKING_MODES}\n\n"
        '[[rule]]\nname = "unified: MCP tools ask"\ntoolName = "*"\nmcpName = "*"\n'
        f"{ask}modes = {ASKING_MODES}\n\n"
        f'[[rule]]\nname = "unified: read-only"\ntoolName = {json.dumps(list(READ_ONLY_CLI_TOOLS))}\n'
        f'decision = "allow"\npriority = {_RULE_PRIORITY}\nmodes = {ASKING_MODES}\n'
    )
    return rules


CLI_TOOLS = (
    "activate_skill", "ask_user", "complete_task", "enter_plan_mode", "exit_plan_mode", "get_internal_docs", "glob",
    "google_web_search", "grep_search", "invoke_agent", "list_directory", "list_mcp_resources", "read_file",
    "read_many_files", "read_mcp_resource", "replace", "run_shell_command", "save_memory", "take_snapshot",
    "tracker_add_dependency", "tracker_create_task", "tracker_get_task", "tracker_list_tasks", "tracker_update_task",
    "tracker_visualize", "update_topic", "web_fetch", "write_file", "write_todos",
)  # fmt: skip
"""The built-in tools of the CLI 0.61 (its `*_TOOL_NAME` constants), which `excluded_tools` patterns are matched
against (`deny_rules`)."""
_SIBLINGS: Mapping[str, tuple[str, ...]] = {"read_file": ("read_many_files",)}
"""The CLI's tools that do what an excluded one does, under another name: `read_many_files` reads files as
`read_file` does (its entries are judged as `read_file`'s: `_reach.ALSO_JUDGED`)."""

_UNASKED: Mapping[ApprovalMode, tuple[str, ...]] = {
    "default": ("run_shell_command", *_EDITS, *_EFFECTS),
    "auto_edit": ("run_shell_command", *_EFFECTS),
    "plan": ("run_shell_command", *_EFFECTS),
    "yolo": (),
}
"""The CLI's tools that `policy_rules` has ask in each approval mode (plan's edits are the CLI's plan files, left to
its plan mode): where nobody can be asked (stream-json), each is denied, and so is every MCP tool but in yolo."""


def unasked_denials(mode: ApprovalMode) -> str:
    """Deny rules for what `mode` would ask about, for a run nobody can be asked in (stream-json), at our rules'
    priority: above the settings' `tools.allowed` (4.3). Without them such a list let the CLI run those calls
    (measured with 0.61: a workspace's `.gemini/settings.json` `tools.allowed: ["run_shell_command", "write_file"]`
    ran the model's shell command and write in `default`, which registers neither otherwise)."""
    tools = _UNASKED[mode]
    if not tools:
        return ""
    deny = f'decision = "deny"\npriority = {_RULE_PRIORITY}\n'
    why = 'denyMessage = "unified: it needs approval and nobody can answer (the stream-json transport)"\n'
    return (
        f'[[rule]]\nname = "unified: nobody can be asked"\ntoolName = {json.dumps(list(tools))}\n{deny}{why}\n'
        f'[[rule]]\nname = "unified: nobody can be asked (MCP)"\ntoolName = "*"\nmcpName = "*"\n{deny}{why}\n'
    )


def deny_rules(excluded_tools: Sequence[str]) -> str:
    """`excluded_tools` as deny rules (0.61 has no exclude flag; settings are the user's). A deny rule
    without arguments removes the tool from what the model is offered. The CLI reads a rule's `toolName` as one
    name (only `*`, `mcp_*` and `mcp_<server>_*` are patterns to it), so a glob (`write_*`, `*_file`) is matched
    here against its tools, under its names and unified's (`edit_*` takes `replace`), and an excluded tool takes its
    siblings (`_SIBLINGS`). Round 20: `excluded_tools=["write_*"]` gave a rule for no tool, and `write_file` stayed
    offered and ran in auto_edit; excluding `read_file` left `read_many_files`."""
    names: set[str] = set()
    for pattern in excluded_tools:
        names.add(CLI_NAMES.get(pattern, pattern))
        names.update(
            tool
            for tool in CLI_TOOLS
            if fnmatch.fnmatchcase(tool, pattern) or fnmatch.fnmatchcase(ALIASES.get(tool, tool), pattern)
        )
    names.update(sibling for name in list(names) for sibling in _SIBLINGS.get(name, ()))
    return "".join(
        f'[[rule]]\ntoolName = {toml_string(name)}\ndecision = "deny"\npriority = 999\n\n' for name in sorted(names)
    )


_MAX_ARGS_PATTERN = 2048
"""The longest `argsPattern` the CLI takes (it drops a longer one, and the rule with it)."""


_LINK_SAFE = re.compile(r"[A-Za-z0-9._+@/ -]+")
"""A link's path the CLI's JSON of the arguments spells as it is (no escape), so a pattern can name it."""


def linked_protected_rules(links: Sequence[str] | None) -> str:
    """Deny rules for the CLI's edit tools on each link of the workspace that leads to a protected path or directory,
    and on what a protected link leads to (`_protected.protected_links`: `docs/e -> ../.envrc`; `docs/v -> ../.vscode`
    and what lies under it; `scripts/hook.sh` for `.git/hooks/pre-commit -> ../../scripts/hook.sh`): the CLI
    writes through a link, while `protected_path_rules` reads the text of `file_path` (red team round 15:
    stream-json's autoEdit wrote `.envrc` as `docs/e`). The links are found when the run starts (headless, the CLI
    runs no shell command unasked, so it makes none). None (they could not all be found), or a name no pattern can
    spell: every edit is denied, saying why."""
    if links is None or any(_LINK_SAFE.fullmatch(link) is None or len(link) > _MAX_ARGS_PATTERN // 4 for link in links):
        why = "unified could not name every link of this workspace that leads to a protected path"
        return (
            '[[rule]]\ntoolName = ["write_file", "replace"]\ndecision = "deny"\npriority = 998\n'
            f"denyMessage = {json.dumps(f'unified: {why}; use the acp transport to edit here')}\n\n"
        )
    fragments = [f'{re.escape(link)}|{re.escape(link)}/[^"]*' for link in links]
    return _deny_edits(
        fragments,
        "a link to a protected path, or what a protected link leads to (it changes what runs later), is never written "
        "unasked",
    )


def _deny_edits(fragments: Sequence[str], message: str) -> str:
    """Deny rules for the CLI's edit tools whose `file_path` ends in one of `fragments` (`_path_rules`)."""
    return _path_rules(
        _EDITS, fragments, f'decision = "deny"\npriority = 998\ndenyMessage = {json.dumps(f"unified: {message}")}\n'
    )


def _path_rules(tools: Sequence[str], fragments: Sequence[str], decision: str) -> str:
    """Rules for `tools` whose `file_path` ends in one of `fragments` (alternatives of a regex; the CLI refuses a
    quantified group, its ReDoS check), each deciding as the TOML lines `decision` say, as many as keep each
    `argsPattern` within what the CLI takes (`_MAX_ARGS_PATTERN`)."""
    opening, closing = '"file_path":"(?:[^"]*/|)(?:', ')"'
    groups: list[list[str]] = [[]]
    for fragment in fragments:
        if len(opening + "|".join([*groups[-1], fragment]) + closing) > _MAX_ARGS_PATTERN and groups[-1]:
            groups.append([])
        groups[-1].append(fragment)
    rules = []
    for group in groups if fragments else []:
        args = opening + "|".join(group) + closing
        if len(args) > _MAX_ARGS_PATTERN:
            raise AssertionError(f"one path is too long for the CLI's argsPattern: {args[:80]}...")
        rules.append(f"[[rule]]\ntoolName = {json.dumps(list(tools))}\nargsPattern = {json.dumps(args)}\n{decision}\n")
    return "".join(rules)


_TURN_CAP_RULE = (
    '[[rule]]\nname = "unified: max_turns counts every call"\ntoolName = "*"\nargsPattern = "."\n'
    f'decision = "ask_user"\npriority = {_RULE_PRIORITY + 10}\nmodes = {ALL_MODES}\n\n'
)
"""The rule of a run with `max_turns` (ACP): every call asks, in every mode, so the CLI waits on unified before each
one, and no request follows a call unified stops at (`_permissions.TurnCap`). Its calls are unified's policy's to
decide as ever; with every tool asked, 0.61 refuses a delegation (its own check of it is a question), so such a run
starts no subagent (`subagent_rules`)."""


CREDENTIAL_READERS = ("read_many_files", "grep_search")
"""The CLI's tools that read files no argument names (a glob's matches, a folder's tree): where the workspace holds
another name of a credential file, each call of them may read it."""
_CREDENTIAL_WHY = "the workspace holds another name of a credential file (a hard link or a link to one)"


def credential_alias_rules(aliases: Sequence[str] | None, *, asking: bool) -> str:
    """Rules for the CLI's read tools where the run's folders hold `aliases` (`_protected.credential_aliases`: a hard
    link to `~/.netrc`, a link to one), which the read-only rule (`policy_rules`) would let it read unasked: a
    `read_file` whose `file_path` ends in the name of one of them (any spelling of a path to it ends so: `docs/n`,
    `./x/../docs/n`, through a linked folder), and every call of `CREDENTIAL_READERS`, ask (`asking`: ACP, unified
    decides, `_permissions`) above the read-only rule, in every mode but yolo, or are denied (stream-json, nobody can
    be asked). None (they could not all be found), or a name no pattern can spell: every read tool's call so. None of
    them (the usual workspace): no rule, and every read stays unasked. (`glob` and `list_directory` list names only.)"""
    if aliases is not None and not aliases:
        return ""
    if asking:
        decision = f'decision = "ask_user"\npriority = {_RULE_PRIORITY + 5}\nmodes = {ASKING_MODES}\n'
    else:
        why = f"unified: {_CREDENTIAL_WHY}, and nobody can be asked (the stream-json transport)"
        decision = f'decision = "deny"\npriority = 998\ndenyMessage = {json.dumps(why)}\n'
    names = sorted({PurePosixPath(alias).name for alias in aliases or ()})
    if aliases is None or any(
        _LINK_SAFE.fullmatch(name) is None or len(name) > _MAX_ARGS_PATTERN // 4 for name in names
    ):
        readers: tuple[str, ...] = (*CREDENTIAL_READERS, "read_file")
        return f'[[rule]]\nname = "unified: {_CREDENTIAL_WHY}"\ntoolName = {json.dumps(list(readers))}\n{decision}\n'
    return (
        f'[[rule]]\nname = "unified: {_CREDENTIAL_WHY}"\ntoolName = {json.dumps(list(CREDENTIAL_READERS))}\n'
        f"{decision}\n" + _path_rules(("read_file",), [re.escape(name) for name in names], decision)
    )


@functools.cache
def protected_path_rules() -> str:
    """Deny rules for the CLI's edit tools on protected paths, matched on their `file_path` argument
    (the CLI tests `argsPattern` against the arguments' JSON; its regexes take no case flag, and it
    drops a pattern with a quantified group, `(..)?`, or over 2,048 characters): as many rules as it
    takes to keep each pattern under that length."""
    fragments = [
        re.escape(pattern).replace(r"\*\*", '[^"]*').replace(r"\*", '[^/"]*').replace(r"\?", '[^/"]')
        for pattern in protected_path_patterns()
    ]
    return _deny_edits(fragments, "a protected path (it changes what runs later) is never written unasked")
