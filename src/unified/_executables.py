"""Why a command cannot be started, in words a person can act on.

exec's own errors say little: "Permission denied" for a directory or a file without its `x` bit, and the
script's own name when it is its `#!` interpreter that is missing. Asked once starting a command failed (or,
for a path the caller named, before): by the agent-binary layer for a backend's binary and by the tool runtime
for a stdio MCP server's command, which both say the same of the same mistake.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from unified._files import open_regular

__all__ = ["not_runnable", "script_problem", "why_cannot_run"]


def not_runnable(path: Path) -> str | None:
    """Why a path the caller named cannot be run, None when it can: found here, the message says what is wrong
    with the path, where running it would say only "Permission denied" (a directory, a file without its `x` bit)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "which does not exist"
    except OSError as exc:
        return f"which cannot be looked at ({exc.strerror})"
    if stat.S_ISDIR(mode):
        return "which is a directory, not the executable"
    if not os.access(path, os.X_OK):
        return f"which is not executable (mode {stat.filemode(mode)}: `chmod +x` it, or name the executable)"
    return None


def why_cannot_run(command: str, env: Mapping[str, str]) -> str | None:
    """Why `command` (a path, or a name looked up on `env`'s PATH) cannot be started, said of the command
    ("which is a directory, not the executable"), or None when nothing here tells: for a program that failed to
    start, whose exec error said only "Permission denied" or named a script whose interpreter is missing."""
    if os.sep not in command:
        found = shutil.which(command, path=env.get("PATH"))
        if found is None:
            return "which is not a program on the PATH it gets (install it, or name it by its path)"
        path = Path(found)
    else:
        path = Path(command)
    return not_runnable(path) or script_problem(path, env)


def script_problem(binary: Path, env: Mapping[str, str]) -> str | None:
    """Why the `#!` line of the script `binary` cannot start it, None when `binary` is no script or its line names
    an interpreter that is there. Asked only once running it failed: exec's error then names the script itself
    ("No such file or directory: '<binary>'", a file that is there) when it is the interpreter that is missing,
    and `#!/usr/bin/env NAME` without NAME on PATH exits 127 with no output at all."""
    try:
        with open_regular(binary) as handle:
            first = handle.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    line = first[2:].rstrip(b"\n")
    if line.endswith(b"\r"):
        return (
            "which is a script with Windows line endings: its `#!` line names an interpreter whose name ends in a "
            "carriage return, which no system has (convert the file to Unix line endings, e.g. with dos2unix)"
        )
    words = line.decode(errors="replace").split()
    if not words:
        return "which is a script whose `#!` line names no interpreter"
    interpreter = words[0]
    if not os.access(interpreter, os.X_OK):
        return (
            f"which is a script whose interpreter {interpreter!r} (its `#!` line) is not there or not executable "
            "(install it, or correct the line)"
        )
    names = [word for word in words[1:] if not word.startswith("-")]  # `env -S node --flag`: node
    wanted = names[0] if Path(interpreter).name == "env" and names and "=" not in names[0] else None
    if wanted is not None and shutil.which(wanted, path=env.get("PATH")) is None:
        return (
            f"which is a script run by `{interpreter} {wanted}`, and no {wanted!r} is on the PATH the backend "
            "gets (install it, or put its folder on PATH)"
        )
    return None
