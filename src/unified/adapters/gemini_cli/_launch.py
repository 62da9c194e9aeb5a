"""How a run starts `gemini`: binary, environment, model and the flags both transports share.

Built once per backend from its options; the ACP run (`run.py`) and the stream-json fallback
(`stream_json.py`) both read it, so neither imports the other or the adapter.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from unified.adapters.gemini_cli._home import cache_file, child_env
from unified.adapters.gemini_cli._options import GeminiCliOptions
from unified.adapters.gemini_cli._transport import locate
from unified.tools import protected_path_patterns
from unified.types import ExecuteParams

BACKEND = "gemini-cli"
FAKE_MODEL = "gemini-2.5-flash"
"""With recorded responses a concrete model is required: `auto` would consume a line routing."""
STAND_IN_BINARY = Path("gemini")
"""The argv[0] recorded when `start_process` replaces the binary (it is not looked up)."""


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
            extra_env["GEMINI_SYSTEM_MD"] = str(cache_file("system", ".md", params.system_instruction))
        env = child_env(extra_env)
        where = {**os.environ, **env}  # UNIFIED_GEMINI_BIN is ours to read, not the child's
        binary = STAND_IN_BINARY if options.start_process is not None else locate(options.gemini_binary, where).path
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
        return ["--policy", str(cache_file("exclude-tools", ".toml", rules))]


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
    assert len(args) <= 2048, "the CLI would refuse this argsPattern: split the rule"
    return (
        '[[rule]]\ntoolName = ["write_file", "replace"]\n'
        f"argsPattern = {json.dumps(args)}\n"
        'decision = "deny"\npriority = 998\n'
        'denyMessage = "unified: a protected path (it changes what runs later) is never written unasked"\n\n'
    )
