"""Stand-ins for an agent binary that is broken in a way the real one cannot be made to be, shared by the
bad-input tests of the binary backends (tests/e2e/*/test_*_bad_input.py): a path that is missing, a
directory, a file without its `x` bit, and tiny `/bin/sh` scripts that answer `--version` as the pinned
binary does and then print garbage or exit. Everything the real binary can be made to do (a provider's
429, a dropped stream, a kill mid-run) the tests do with the real binary against a fake model server.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BROKEN", "GARBAGE_LINES", "broken_binary", "script_binary"]

GARBAGE_LINES = (
    "echo 'Welcome! this line is no JSON'\n"
    "printf '\\377\\376 not utf-8\\n'\n"
    "echo '[1, 2, 3]'\n"
    'echo \'{"type": 5, "id": [], "method": {}, "result": 5}\'\n'
    "head -c 9000000 /dev/zero | tr '\\0' x; echo\n"  # one line of 9 MB: over the 8 MB line cap
)
"""Shell lines printing, to stdout, a line that is no JSON, one that is not UTF-8, JSON that is no object, an
object of the wrong shape and a line over the cap."""


def script_binary(folder: Path, name: str, version: str, body: str) -> Path:
    """An executable `/bin/sh` script `folder/name` that prints `version` for `--version` and runs `body`
    otherwise."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "{version}"; exit 0; fi\n{body}')
    path.chmod(0o755)
    return path


def broken_binary(folder: Path, name: str, kind: str) -> Path:
    """A path that names no runnable binary: `missing`, a `directory`, a file `not_executable`, or a script
    whose `--version` prints no version (`no_version`)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if kind == "directory":
        path.mkdir()
    elif kind == "not_executable":
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o644)
    elif kind == "no_version":
        path.write_text("#!/bin/sh\necho 'Segmentation fault? no, just garbage'\n")
        path.chmod(0o755)
    elif kind != "missing":
        raise ValueError(f"unknown kind {kind!r}")
    return path


BROKEN = {
    "missing": "which does not exist",
    "directory": "which is a directory, not the executable",
    "not_executable": "which is not executable",
    "no_version": "did not report a version",
}
"""What the error's message says for each `broken_binary` kind."""
