"""The names of the subagents a user or a project defines for the gemini CLI, so unified's rules can name them.

A policy rule of 0.61 holds for one subagent's calls only when its `subagent` field names it exactly (no wildcard,
no list), and a subagent cannot put a question to an ACP client: 0.61 waits for ever on it. unified's rules deny
such a subagent the tools the caller's policy would ask about (`_launch.subagent_rules`); for that they must name
every subagent the CLI may run, not only its built-in ones. 0.61 loads them (`AgentRegistry.loadAgents`) from the
Markdown files (not starting with `_`) of `<home>/.gemini/agents/`, of the project's `.gemini/agents/` (a trusted
folder's, once acknowledged) and of each installed extension's `agents/` (a linked one's where it lives), each
file's YAML front matter naming one agent (`name`, a slug: `[a-z0-9-_]+`) or a list of remote ones.

Read here without a YAML parser, over-inclusively: every slug written after a `name:` key in a file's front
matter, at any depth. A name too many costs one rule that never matches; a name missed is the wait unified's
bound on a subagent's silence (`subagent_silence_s`) ends. Bounded: at most `MAX_FILES` files, the first
`MAX_BYTES` of each, and `MAX_NAMES` names, so a folder of thousands cannot slow every start.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path

from unified._files import open_regular

__all__ = ["MAX_NAMES", "own_subagents"]

MAX_FILES = 256
"""Agent files read in all (a user's folder holds a handful)."""
MAX_ENTRIES = 4096
"""Entries of one folder looked at: a workspace's `.gemini/agents/` of a million files costs no more."""
MAX_BYTES = 64 * 1024
"""The most read of one file: its front matter comes first."""
MAX_NAMES = 128
"""Names kept: each costs a rule per tool the policy asks about."""
_FRONT_MATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---(?:\r?\n|\Z)", re.DOTALL)
"""0.61's `FRONTMATTER_REGEX`: the file starts with it."""
_NAME = re.compile(r"""(?:^|[\s{,\[-])(["']?)name\1[ \t]*:[ \t]*(["']?)([a-z0-9_-]+)\2(?=[\s,}\]#]|\Z)""", re.MULTILINE)
"""`name: x`, `- name: 'x'` (a list of remote agents), `{"name": "x", ...}` (a flow mapping)."""
_BLOCK_NAME = re.compile(
    r"""(?:^|[\s{,\[-])(["']?)name\1[ \t]*:[ \t]*[|>][-+0-9]*[ \t]*(?:#[^\n]*)?\r?\n(?:[ \t]*\r?\n)*"""
    r"""[ ]+([a-z0-9_-]+)[ \t]*\r?(?=\n|\Z)""",
    re.MULTILINE,
)
"""A name written as a block scalar: `name: >-` (or `|`, `|+`, `>2`, a comment after it), blank lines, then the
name on an indented line of its own (round 12: missed, so no rule named that subagent)."""


def own_subagents(home: Path, cwd: Path) -> tuple[str, ...]:
    """The names of the subagents defined in `home`'s and `cwd`'s `.gemini/agents/` and `home`'s extensions, sorted."""
    folders = [home / ".gemini" / "agents", cwd / ".gemini" / "agents"]
    folders += [_extension_root(extension) / "agents" for extension in _entries(home / ".gemini" / "extensions")]
    names: set[str] = set()
    budget = MAX_FILES
    for folder in folders:
        for entry in _entries(folder):
            if budget <= 0 or len(names) >= MAX_NAMES:
                return tuple(sorted(names)[:MAX_NAMES])
            if entry.name.startswith("_") or not entry.name.endswith(".md"):
                continue
            budget -= 1
            names.update(_names_in(entry))
    return tuple(sorted(names)[:MAX_NAMES])


def _entries(folder: Path) -> list[Path]:
    """`folder`'s entries (the first `MAX_ENTRIES` the system lists), sorted; none when it is missing or unreadable
    (the CLI then loads none from it)."""
    try:
        with os.scandir(folder) as found:
            return sorted(Path(entry.path) for entry in itertools.islice(found, MAX_ENTRIES))
    except OSError:
        return []


def _extension_root(folder: Path) -> Path:
    """Where an installed extension's files are: its folder, or for one installed with `gemini extensions link`
    the folder its install record names (0.61's `_buildExtension`: `.gemini-extension-install.json`, `type` link)."""
    try:
        with open_regular(folder / ".gemini-extension-install.json") as file:
            record = json.loads(file.read(MAX_BYTES))
    except (OSError, ValueError, RecursionError):
        return folder
    source = record.get("source") if isinstance(record, dict) and record.get("type") == "link" else None
    return Path(source) if isinstance(source, str) and source and "\0" not in source else folder


def _names_in(path: Path) -> list[str]:
    """The names in `path`'s front matter: its first `MAX_BYTES` read, if it is a regular file (a FIFO is never
    waited on, a device never read)."""
    try:
        with open_regular(path) as file:
            text = file.read(MAX_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError):  # NotRegularFile is an OSError
        return []
    found = _FRONT_MATTER.match(text)
    if not found:
        return []
    return [match[3] for match in _NAME.finditer(found[1])] + [match[2] for match in _BLOCK_NAME.finditer(found[1])]
