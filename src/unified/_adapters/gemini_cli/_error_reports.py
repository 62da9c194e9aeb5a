"""The Gemini CLI's error reports in its temp folder of unified's cache (`TEMP_FOLDER`), kept for a while, not for good.

0.61 writes the report of each API error (`reportError`: `gemini-client-error-<type>-<ISO time>.json`, the whole
request: the conversation and what the model read) to `os.tmpdir()`, which unified points at a folder of its cache only
its user reads (`_launch.gemini_env`). Nothing removed them: each failed request left its conversation there, a few MB
each, for good. `sweep_error_reports` keeps the newest `REPORTS_KEPT` of the last `REPORT_KEPT_S` and removes the rest.

Safety: only names the CLI gives its reports, only regular files of our user, looked at and removed through the
folder's descriptor, opened without following a link (a folder that is a link is left alone, and so is a report that
is one: removing a name never touches what it points at); a report younger than `REPORT_SETTLED_S` is never removed,
as the CLI may be writing it now (`fs.writeFile` is not atomic) in another process. The CLI's other temp files (its
shell tool's) are never looked at. A caller's own `TMPDIR` (the backend's `env` option) is the caller's: not swept.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time

from unified._binary.environment import cache_folder
from unified._binary.held_files import same_file

__all__ = ["REPORTS_KEPT", "REPORT_KEPT_S", "REPORT_SETTLED_S", "TEMP_FOLDER", "sweep_error_reports"]

TEMP_FOLDER = "gemini-cli-tmp"
"""The CLI's `TMPDIR` (unless the backend's `env` option names one): a folder of unified's cache only its user can
read (`private_cache_folder`), for the CLI's error reports, which hold the request, and its shell tool's temp files."""

REPORTS_KEPT = 20
"""Most reports kept: the newest, enough to see what a run of errors sent."""

REPORT_KEPT_S = 7 * 24 * 3600.0
"""Longest a report is kept (a week): then the conversation it holds is gone from the cache."""

REPORT_SETTLED_S = 60.0
"""A report changed this recently is never removed, whatever its rank: a CLI may be writing it."""

_REPORT_NAME = re.compile(r"gemini-client-error-[\w.-]+\.json")
"""The names `reportError` gives (`gemini-client-error-${type}-${timestamp}.json`)."""


def sweep_error_reports() -> None:
    """Remove the CLI's error reports beyond the newest `REPORTS_KEPT` or older than `REPORT_KEPT_S` (never one
    younger than `REPORT_SETTLED_S`) from unified's temp folder of it. Never raises: a sweep that cannot look leaves
    everything as it was."""
    try:
        folder = os.open(cache_folder(TEMP_FOLDER), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # none yet, or a link (ELOOP, ENOTDIR): never followed
        return
    try:
        _sweep(folder, time.time())
    except OSError:
        return
    finally:
        os.close(folder)


def _sweep(folder: int, now: float) -> None:
    reports: list[tuple[float, str, os.stat_result]] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if not _REPORT_NAME.fullmatch(entry.name):
                continue
            with contextlib.suppress(OSError):
                found = os.stat(entry.name, dir_fd=folder, follow_symlinks=False)
                if stat.S_ISREG(found.st_mode) and found.st_uid == os.getuid():
                    reports.append((found.st_mtime, entry.name, found))
    reports.sort(reverse=True)  # the newest first
    for rank, (changed, name, found) in enumerate(reports):
        age = now - changed
        if age < REPORT_SETTLED_S or (rank < REPORTS_KEPT and age <= REPORT_KEPT_S):
            continue
        if same_file(found, name, folder):  # not replaced since it was looked at
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=folder)
