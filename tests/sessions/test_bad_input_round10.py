"""Bad input round 10: each case failed late, in the wrong words, or held what it had no bound for; now it is a
typed error (or warning) saying what happened and what to do.

- a backend's file write refused by a full disk (ENOSPC) or a used-up quota said "make that folder writable": the
  folder was never at fault; now it says the disk is full and what to free.
- the agent CLIs' own session files (claude-code's `.jsonl`, Codex's rollouts, the Gemini CLI's chat files) were
  read whole, with no bound, when a run's session was saved to a shared store; one larger than a store record
  may be (`MAX_SESSION_RECORD_BYTES`) is now refused unread, as a `session_not_shared` warning naming the file,
  the run's result and the local file kept.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from unified._files import unwritable


@pytest.mark.parametrize(
    ("code", "said", "fix"),
    [
        (errno.ENOSPC, "the disk is full (No space left on device)", "free space on the file system holding"),
        (errno.EDQUOT, "this user's disk quota is used up", "free space under your quota"),
        (errno.EROFS, "Read-only file system", "is read-only: point the backend's home at a writable one"),
        (errno.EFBIG, "File too large", "raise the file size limit"),
        (errno.EACCES, "Permission denied", "make that folder"),
    ],
)
def test_a_refused_write_says_its_cause_and_the_fix_for_that_cause(
    code: int, said: str, fix: str, tmp_path: Path
) -> None:
    exc = OSError(code, {errno.ENOSPC: "No space left on device"}.get(code, "x"), str(tmp_path / "home" / "a.json"))
    exc.strerror = {
        errno.ENOSPC: "No space left on device",
        errno.EDQUOT: "Disk quota exceeded",
        errno.EROFS: "Read-only file system",
        errno.EFBIG: "File too large",
        errno.EACCES: "Permission denied",
    }[code]
    typed = unwritable(exc, "codex")
    assert typed is not None
    assert typed.code == "backend_unavailable"
    assert said in typed.message, typed.message
    assert typed.hint is not None
    assert fix in typed.hint, typed.hint
    if code in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG):
        assert "writable by" not in typed.hint and "make that folder" not in typed.hint, typed.hint
    if code == errno.ENOSPC:
        assert str(tmp_path / "home") in typed.hint
