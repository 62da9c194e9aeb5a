"""The gemini CLI's retries, which it tells nobody over ACP: read from its debug log, shown, and bounded.

0.61 asks the model again after a failed request up to 10 times, waiting 5 s, 10 s, 20 s, then 30 s (each
±30%: about 3.5 minutes in all), and says nothing of it over ACP (its retry events reach only its interactive
UI) nor on stderr. Its debug logger writes each failed attempt to the file GEMINI_DEBUG_LOG_FILE names
(`_outcome.retry_note` reads the line). Every process unified starts gets such a file of its own (`debug_log_env`,
in unified's cache folder, removed with the process); a run reads what was added to it during its prompt:
each failed attempt is a `retrying` warning, and the `CONNECT_ATTEMPTS`th attempt in a row that made no connection
at all ends the prompt with `backend_unavailable` (docs/backends/gemini-cli.md, "Errors"), where the run used to
wait silently for its idle timeout; an attempt the server answered (a 429, a 5xx) or that broke off past the run's
`max_retries` ends it with that failure's typed error (`_outcome.retries_spent`), where the CLI would go on for minutes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from unified._adapters.gemini_cli._outcome import provider_down, retries_spent, retry_note, wait_too_long
from unified._binary.environment import cache_folder
from unified._binary.held_files import FLAGS, let_go, open_folder
from unified._binary.held_files import sweep as sweep_stale
from unified._redaction import clip

__all__ = [
    "CONNECT_ATTEMPTS",
    "DEBUG_LOG_ENV",
    "WATCH_INTERVAL_S",
    "DebugLog",
    "RetryWatch",
    "debug_log_env",
    "sweep_debug_logs",
]

DEBUG_LOG_ENV = "GEMINI_DEBUG_LOG_FILE"
CONNECT_ATTEMPTS = 2
"""Failed attempts in a row that made no connection after which the provider counts as unreachable: the CLI's
first retry waits 5 s (±30%), so the run ends about 5 s in, in step with the other backends' own quick retries."""
WATCH_INTERVAL_S = 0.25
"""How often a prompt's run looks at the debug log (one `stat`, a read when it grew)."""
_MAX_READ = 1 << 20
"""At most this much of the log is read at one look (the rest at the next)."""
_LOG_FOLDER = "gemini-debug"
"""unified's cache folder of the debug logs it makes."""
_LOG_NAME = re.compile(r"[0-9a-f]{32}\.log\Z")
"""The name of a debug log unified made (and so may sweep)."""
_ENTRY = re.compile(r"\n(?=\[)")
"""Where the log's next entry starts (`[<time>] [LEVEL] ...`): the lines between continue the entry before."""


class DebugLog:
    """A CLI process's debug log: its path, and, when unified made it, the hold that keeps it while the
    process lives (`unified._binary.held_files`: a shared `flock` on a descriptor of ours; a log whose
    holder crashed is stale, and the next one made sweeps it away)."""

    def __init__(self, path: Path, *, held: int | None = None) -> None:
        self.path = path
        self._held = held

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def read(self, start: int) -> tuple[str, int]:
        """The whole lines added since `start`, and the offset after them."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(start)
                data = handle.read(_MAX_READ)
        except OSError:
            return "", start
        end = data.rfind(b"\n") + 1  # a line being written is read at the next look
        if end == 0 and len(data) < _MAX_READ:
            return "", start
        end = end or len(data)
        return data[:end].decode("utf-8", "replace"), start + end

    def remove(self) -> None:
        """Let go of the log and remove it, once, when unified made it (the caller's own is left alone)."""
        held, self._held = self._held, None
        if held is not None:
            let_go(held, self.path)


def debug_log_env(env: Mapping[str, str]) -> tuple[dict[str, str], DebugLog]:
    """The environment to start one CLI process with, its debug log named in it: the caller's own
    GEMINI_DEBUG_LOG_FILE when it set one, else a new file only the user can read, in unified's cache
    folder, held until `DebugLog.remove`. The logs of crashed runs in that folder are the caller's to sweep
    (`sweep_debug_logs`) once its process is started: they need not go before the CLI starts, and the sweep
    (a listing and a lock tried per file) then costs nothing on the way to its first output."""
    given = env.get(DEBUG_LOG_ENV)
    if given:
        return dict(env), DebugLog(Path(given))
    folder_path = cache_folder(_LOG_FOLDER)
    folder = open_folder(folder_path)
    try:
        name = f"{uuid.uuid4().hex}.log"
        fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_RDONLY | FLAGS, 0o600, dir_fd=folder)
    finally:
        os.close(folder)
    with contextlib.suppress(OSError):  # a file system without locks: removed with its process, never swept
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    path = folder_path / name
    return {**env, DEBUG_LOG_ENV: str(path)}, DebugLog(path, held=fd)


def sweep_debug_logs(keep: str = "") -> None:
    """Remove the debug logs of crashed runs from unified's folder of them (`held_files.sweep`: only logs
    nobody holds), but `keep` (a log of this run's, whatever its hold)."""
    folder = open_folder(cache_folder(_LOG_FOLDER))
    try:
        sweep_stale(folder, _LOG_NAME, keep)
    finally:
        os.close(folder)


class RetryWatch:
    """What the CLI's debug log says of one prompt's requests: its retries as warnings; the end of a prompt whose
    provider cannot be reached (`tick` raises `backend_unavailable`)."""

    def __init__(
        self,
        log: DebugLog | None,
        warn: Callable[[str, str], Awaitable[None]],
        url: str,
        max_retries: int,
        shared: Callable[[], bool] | None = None,
        max_delay_s: float = 60.0,
    ) -> None:
        self.log = log
        self.warn = warn
        self.url = url
        self.max_retries = max_retries
        """The CLI's retries of one request the run waits for (`GeminiCliOptions.max_retries`)."""
        self.shared = shared
        """Whether the process serves other runs' sessions now (a warm ACP process): its log then tells of their
        requests too, with nothing saying whose. A retry read then is shown as maybe another session's and never
        spends this run's `max_retries` (a healthy run was ended by another's failing request); attempts that made
        no connection still end it, as the provider is as unreachable for it as for the others."""
        self.max_delay_s = max_delay_s
        """The longest wait before a retry the run sits out (`GeminiCliOptions.max_retry_delay_s`): 0.61 waits
        whatever a 429's `RetryInfo` asks (about 100 s measured, with a warning that gave no wait)."""
        self.offset = log.size() if log is not None else 0
        """What the log held before the prompt: another prompt's."""
        self.refused = 0
        """Attempts in a row that made no connection."""

    def progress(self) -> None:
        """Something of the prompt arrived: the provider answered."""
        self.refused = 0

    async def tick(self) -> None:
        log = self.log
        if log is None or log.size() <= self.offset:
            return
        text, self.offset = log.read(self.offset)
        for entry in _ENTRY.split(text):
            note = retry_note(entry)
            if note is None:
                continue
            shared = self.shared is not None and self.shared()
            whose = " (a request of this process, maybe another session's)" if shared else ""
            said = f"gemini{whose}: {clip(note.text, 300)}"
            if note.wait_s is not None:
                said += f" (the CLI asks again in {note.wait_s:.1f} s)"
            if not note.connect_failure:
                self.refused = 0
                if note.attempt > self.max_retries and not shared:  # the CLI would ask again: the budget is spent
                    raise retries_spent(note)
                asked = note.asked_s if note.asked_s is not None else note.wait_s
                if asked is not None and asked > self.max_delay_s and not shared:
                    raise wait_too_long(note, self.max_delay_s)
                await self.warn("retrying", said)
                continue
            await self.warn("retrying", said)
            self.refused += 1
            if self.refused >= CONNECT_ATTEMPTS:
                raise provider_down(self.url, note, self.refused)
