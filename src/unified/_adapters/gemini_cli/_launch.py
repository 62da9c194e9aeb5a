"""How a run starts `gemini`: the pinned binary, its environment, the model and the flags both transports share.

Built once per backend from its options; the ACP run (`_run.py`) and the stream-json fallback
(`_stream_json.py`) both read it, so neither imports the other or the backend.

The environment (`gemini_env`): the caller's variables (auth included) plus the backend's `env`
option, and three additions of ours:
- `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, a file of ours that is the machine's system settings (if
  any) plus `general.sessionRetention.enabled = false`: the CLI's session cleanup deletes a
  conversation when `--resume` left an empty duplicate of it (docs/backends/gemini-cli.md, Quirks
  7 and 8). We never touch the user's own settings.json. Caveat (0.61): the CLI skips a system
  settings file with a "Security Warning" unless root owns it and every parent directory, none
  writable by group or others, so this helps root only; `ResumeGuard` (`_chat_files.py`) is the
  protection that always holds;
- one node process: left alone, `gemini` starts a second node process of itself only to raise its
  heap limit to half the machine's memory, which doubles every cold start (measured 3.2-4.2 s
  against 1.4-2.2 s). We give node that heap limit and tell the CLI not to relaunch; a caller who
  sets `GEMINI_CLI_NO_RELAUNCH` or a heap limit of their own keeps theirs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unified._adapters.gemini_cli._options import GeminiCliOptions
from unified._binary.environment import EnvPolicy, cache_file, child_env
from unified._binary.install import BinarySpec, locate
from unified._binary.process import AgentSubprocess
from unified.tools import protected_path_patterns
from unified.types import ExecuteParams

__all__ = [
    "BACKEND",
    "GEMINI_CLI",
    "PINNED_VERSION",
    "SYSTEM_SETTINGS_ENV",
    "Launch",
    "gemini_env",
    "gemini_file",
    "start_gemini",
]

BACKEND = "gemini-cli"
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
)
CREDENTIAL_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS")
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
    allow=frozenset({*AUTH_ENV, "CLOUDSDK_CONFIG", "NODE_OPTIONS"}),
    allow_prefixes=("GEMINI_", "GOOGLE_GENAI_", "GOOGLE_CLOUD_"),
)
"""What the `gemini` child takes from the host besides the basics: its credentials and settings
(`GEMINI_CLI_HOME`, `GEMINI_SYSTEM_MD`, ...), gcloud's configuration for application default
credentials, and node's options. Nothing else (docs/backends/gemini-cli.md, "Processes")."""
FAKE_MODEL = "gemini-2.5-flash"
"""With recorded responses a concrete model is required: `auto` would consume a line routing."""
STAND_IN_BINARY = Path("gemini")
"""The argv[0] recorded when `start_process` replaces the binary (it is not looked up)."""
SYSTEM_SETTINGS_ENV = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
_DEFAULT_SYSTEM_SETTINGS = Path("/etc/gemini-cli/settings.json")
_OVERRIDES: dict[str, Any] = {"general": {"sessionRetention": {"enabled": False}, "enableAutoUpdate": False}}


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
    base: dict[str, Any] = {}
    if source.is_file():
        try:
            loaded = json.loads(source.read_text())
        except (OSError, ValueError):
            loaded = {}
        base = loaded if isinstance(loaded, dict) else {}
    return gemini_file("system-settings", ".json", json.dumps(_merge(base, _OVERRIDES), indent=2, sort_keys=True))


def gemini_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment (see the module docstring)."""
    env = child_env(ENV_POLICY, extra=extra)
    env[SYSTEM_SETTINGS_ENV] = str(_system_settings_file(env))
    if "GEMINI_CLI_NO_RELAUNCH" not in env:
        env["GEMINI_CLI_NO_RELAUNCH"] = "true"
        node_options = env.get("NODE_OPTIONS", "")
        if "--max-old-space-size" not in node_options:
            env["NODE_OPTIONS"] = f"{node_options} --max-old-space-size={_half_memory_mb()}".strip()
    return env


def _half_memory_mb() -> int:
    """Half the machine's memory in MiB: the heap limit the CLI's own relaunch would ask for."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (2 * 1024 * 1024)


def start_gemini(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> AgentSubprocess:
    """The default `start_process`: the `gemini --acp` subprocess."""
    return AgentSubprocess(argv, cwd=cwd, env=env, hint=GEMINI_CLI.install_hint)


@dataclass(frozen=True, slots=True)
class Launch:
    binary: Path
    env: dict[str, str]
    model: str | None
    fake_responses: Path | None
    fake_responses_strict: bool
    include_directories: tuple[Path, ...]
    excluded_tools: tuple[str, ...]

    @classmethod
    def of(cls, params: ExecuteParams, options: GeminiCliOptions) -> Launch:
        extra_env = dict(options.env)
        if params.system_instruction is not None:
            # Replaces the CLI's whole system prompt; read per process, so it is part of the pool key.
            extra_env["GEMINI_SYSTEM_MD"] = str(gemini_file("system", ".md", params.system_instruction))
        env = gemini_env(extra_env)
        where = {**os.environ, **env}  # UNIFIED_GEMINI_BIN is ours to read, not the child's
        binary = (
            STAND_IN_BINARY
            if options.start_process is not None
            else locate(GEMINI_CLI, options.gemini_binary, where).path
        )
        fake = options.fake_responses.resolve() if options.fake_responses is not None else None
        return cls(
            binary=binary,
            env=env,
            model=params.model or (FAKE_MODEL if fake else None),
            fake_responses=fake,
            fake_responses_strict=options.fake_responses_strict,
            include_directories=tuple(Path(d).resolve() for d in params.include_directories),
            excluded_tools=tuple(sorted(set(params.excluded_tools))),
        )

    def acp_argv(self) -> list[str]:
        argv = [str(self.binary), "--acp"]
        if self.fake_responses is not None:
            flag = "--fake-responses" if self.fake_responses_strict else "--fake-responses-non-strict"
            argv += [flag, str(self.fake_responses)]
        for directory in self.include_directories:
            argv += ["--include-directories", str(directory)]
        return argv + self.policy_flags()

    def policy_flags(self, *, protect_paths: bool = False) -> list[str]:
        """`excluded_tools` as a `--policy` file of deny rules (0.61 has no exclude flag; settings are the
        user's). A deny rule without arguments removes the tool from what the model is offered.

        `protect_paths` (stream-json, where nobody can be asked and the CLI's autoEdit approves edits
        unseen): deny `write_file`/`replace` of a protected path (docs/tools.md, "Protected paths")."""
        rules = "".join(
            f'[[rule]]\ntoolName = {json.dumps(name)}\ndecision = "deny"\npriority = 999\n\n'
            for name in self.excluded_tools
        )
        if protect_paths:
            rules += protected_path_rules()
        if not rules:
            return []
        return ["--policy", str(gemini_file("exclude-tools", ".toml", rules))]


def protected_path_rules() -> str:
    """Deny rules for the CLI's edit tools on protected paths, matched on their `file_path` argument
    (the CLI tests `argsPattern` against the arguments' JSON; its regexes take no case flag, and it
    drops a pattern with a quantified group, `(..)?`, or over 2,048 characters)."""
    fragments = []
    for pattern in protected_path_patterns():
        fragment = re.escape(pattern).replace(r"\*\*", '[^"]*').replace(r"\*", '[^/"]*').replace(r"\?", '[^/"]')
        fragments.append(fragment)
    # the CLI refuses a quantified group (its ReDoS check) and patterns over 2,048 characters
    args = '"file_path":"(?:[^"]*/|)(?:' + "|".join(fragments) + ')"'
    if len(args) > 2048:
        raise AssertionError("the CLI would refuse this argsPattern: split the rule")
    return (
        '[[rule]]\ntoolName = ["write_file", "replace"]\n'
        f"argsPattern = {json.dumps(args)}\n"
        'decision = "deny"\npriority = 998\n'
        'denyMessage = "unified: a protected path (it changes what runs later) is never written unasked"\n\n'
    )
