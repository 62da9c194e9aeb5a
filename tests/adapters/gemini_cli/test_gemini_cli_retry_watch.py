"""The gemini CLI's retries as its debug log tells them (`_retry_watch`): each failed attempt a `retrying` warning;
the second attempt in a row that made no connection ends the prompt with `backend_unavailable`; an attempt the
server answered (a status) is only a warning. The real CLI's log is used end to end in
tests/e2e/conversations/test_unreachable_provider.py."""

from __future__ import annotations

import fcntl
import stat
from pathlib import Path

import pytest

from unified._adapters.gemini_cli._outcome import retry_note
from unified._adapters.gemini_cli._retry_watch import (
    DEBUG_LOG_ENV,
    DebugLog,
    RetryWatch,
    debug_log_env,
    sweep_debug_logs,
)
from unified.errors import BackendUnavailable, UnifiedError

pytestmark = pytest.mark.anyio

REFUSED = (
    "[2026-12-03T22:04:32.764Z] [WARN] Attempt {n} failed. Retrying with backoff... "
    "Error: exception TypeError: fetch failed sending request\n"
    "    at file:///x/chunk.js:267671:13\n"
)
STATUS = "[2026-12-03T22:04:32.764Z] [WARN] Attempt {n} failed with status 503. Retrying with backoff... ApiError\n"
CHATTER = "[2026-12-03T22:04:32.111Z] [DEBUG] Experiments loaded {\n  flags: []\n}\n"


class Warnings(list[tuple[str, str]]):
    async def __call__(self, code: str, message: str) -> None:
        self.append((code, message))


def _watch(tmp_path: Path, before: str = "", max_retries: int = 9) -> tuple[Path, RetryWatch, Warnings]:
    path = tmp_path / "debug.log"
    path.write_text(before)
    warnings = Warnings()
    return path, RetryWatch(DebugLog(path), warnings, "http://u:pw@127.0.0.1:9/", max_retries), warnings


def _add(path: Path, text: str) -> None:
    with path.open("a") as handle:
        handle.write(text)


async def test_the_second_refused_attempt_ends_the_prompt_naming_the_url(tmp_path: Path) -> None:
    path, watch, warnings = _watch(tmp_path, before=REFUSED.format(n=1) + REFUSED.format(n=2))  # an earlier prompt's
    await watch.tick()
    assert warnings == []
    _add(path, CHATTER + REFUSED.format(n=1))
    await watch.tick()
    assert [code for code, _ in warnings] == ["retrying"]
    assert "Attempt 1 failed" in warnings[0][1]
    _add(path, REFUSED.format(n=2))
    with pytest.raises(BackendUnavailable) as caught:
        await watch.tick()
    error = caught.value
    assert (error.code, error.retryable) == ("backend_unavailable", True)
    assert "http://127.0.0.1:9" in error.message
    assert "pw" not in error.message.split("127.0.0.1")[0]
    assert error.details["attempts"] == 2


async def test_an_answered_attempt_or_progress_starts_the_count_again(tmp_path: Path) -> None:
    path, watch, warnings = _watch(tmp_path)
    _add(path, REFUSED.format(n=1) + STATUS.format(n=2) + REFUSED.format(n=3))
    await watch.tick()
    _add(path, REFUSED.format(n=4)[:40])  # half a line: read when it is whole
    await watch.tick()
    watch.progress()
    _add(path, REFUSED.format(n=4)[40:])
    await watch.tick()
    assert len(warnings) == 4


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (STATUS, "backend_error"),
        (STATUS.replace("status 503", "status 429"), "rate_limited"),
        (
            "[2026-12-03T22:04:32.764Z] [WARN] Attempt {n} failed: Resource has been exhausted (e.g. check quota).\n",
            "rate_limited",
        ),
        (
            "[2026-12-03T22:04:32.764Z] [WARN] Attempt {n} failed with 5xx error. Retrying with backoff...\n",
            "backend_error",
        ),
        (  # the CLI's last attempt at a 5xx: the API's error body, as a quota error's message is written
            '[2026-12-03T22:04:32.764Z] [WARN] Attempt {n} failed: {{"error":{{"code":500,"message":"An internal '
            'error has occurred.","status":"INTERNAL"}}}}. Max attempts reached\n',
            "backend_error",
        ),
        (
            "[2026-12-03T22:04:32.764Z] [WARN] Attempt {n} failed. Retrying with backoff... Error: terminated\n",
            "stream_interrupted",
        ),
    ],
    ids=["503", "429", "quota", "5xx", "5xx-last", "broken-stream"],
)
async def test_an_attempt_past_max_retries_ends_the_prompt_with_its_typed_error(
    tmp_path: Path, line: str, code: str
) -> None:
    """`max_retries` of the CLI's own retries are waited for (each a warning); the failure after them ends the
    prompt with the typed error the other backends give for it, retryable (a failover_on backend takes over)."""
    path, watch, warnings = _watch(tmp_path, max_retries=2)
    _add(path, line.format(n=1) + line.format(n=2))
    await watch.tick()
    assert [c for c, _ in warnings] == ["retrying", "retrying"]
    _add(path, line.format(n=3))
    with pytest.raises(UnifiedError) as caught:
        await watch.tick()
    assert (caught.value.code, caught.value.retryable) == (code, True), caught.value.message
    assert "attempt 3" in caught.value.message
    assert len(warnings) == 2  # the last failure is the error, not one more warning


def test_retry_lines() -> None:
    refused = retry_note(REFUSED.format(n=3).splitlines()[0])
    assert refused is not None
    assert (refused.attempt, refused.connect_failure) == (3, True)
    answered = retry_note(STATUS.format(n=1).splitlines()[0])
    assert answered is not None
    assert not answered.connect_failure
    assert retry_note(CHATTER.splitlines()[0]) is None
    assert retry_note("    at async retryWithBackoff (Attempt 1 failed)") is None


def test_each_process_gets_a_private_log_unless_the_caller_named_one(tmp_path: Path) -> None:
    env, log = debug_log_env({"PATH": "/bin"})
    assert env[DEBUG_LOG_ENV] == str(log.path)
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600
    log.remove()
    assert not log.path.exists()
    mine = tmp_path / "mine.log"
    env, log = debug_log_env({DEBUG_LOG_ENV: str(mine)})
    assert (env[DEBUG_LOG_ENV], log.path) == (str(mine), mine)
    mine.write_text("the caller's\n")
    log.remove()
    assert mine.read_text() == "the caller's\n"  # theirs: never removed


def test_the_logs_a_crashed_run_left_are_swept_and_nothing_else(tmp_path: Path) -> None:
    """A run killed before it removed its process's log (SIGKILL) holds it no more: the next run's sweep removes
    it; a log another live run holds, a link named like a log, and other files stay."""
    _, first = debug_log_env({})
    folder = first.path.parent
    stale = folder / f"{'a' * 32}.log"
    stale.write_text("[DEBUG] a crashed run's\n")
    held = folder / f"{'b' * 32}.log"
    held.write_text("[DEBUG] a live run's\n")
    other = folder / "notes.txt"
    other.write_text("not a log\n")
    target = tmp_path / "target"
    target.write_text("keep\n")
    link = folder / f"{'c' * 32}.log"
    link.symlink_to(target)
    with held.open("rb") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_SH)
        _, second = debug_log_env({})
        sweep_debug_logs(keep=second.path.name)  # as a run does once its process started
        assert not stale.exists()
        assert held.exists()
        assert other.exists()
        assert link.is_symlink()
        assert target.exists()
        assert first.path.exists()  # held by its run, which is alive
    second.remove()
    first.remove()
    assert not first.path.exists()
    assert not second.path.exists()


def test_a_run_may_sweep_after_its_process_started_and_never_its_own_log() -> None:
    """Making the log leaves the crashed runs' logs for `sweep_debug_logs`, which a run calls
    once its process is started (off the way to its first output); the sweep spares the `keep` log, even
    unheld (a file system without locks), and still removes the stale ones."""
    _, first = debug_log_env({})
    folder = first.path.parent
    stale = folder / f"{'d' * 32}.log"
    stale.write_text("[DEBUG] a crashed run's\n")
    _, mine = debug_log_env({})
    assert stale.exists()  # not swept before the process starts
    unheld = folder / f"{'e' * 32}.log"
    unheld.write_text("[DEBUG] this run's, its lock refused\n")
    sweep_debug_logs(keep=unheld.name)
    assert not stale.exists()
    assert unheld.exists()
    assert mine.path.exists()  # held by its run
    assert first.path.exists()
    unheld.unlink()
    mine.remove()
    first.remove()


async def test_on_a_shared_process_a_retry_may_be_another_sessions_and_spends_no_budget(tmp_path: Path) -> None:
    """A warm ACP process serves several runs' sessions, and its one debug log tells of all their requests. Before,
    another session's failing request at attempt 4 ended this run (max_retries 3) with its error, and each of its
    retries was shown as this run's own."""
    path, watch, warnings = _watch(tmp_path, max_retries=3)
    others = [True]
    watch.shared = lambda: others[0]
    _add(path, STATUS.format(n=4))
    await watch.tick()  # no raise: maybe another session's
    assert [code for code, _ in warnings] == ["retrying"]
    assert "maybe another session" in warnings[0][1]
    _add(path, REFUSED.format(n=1) + REFUSED.format(n=2))
    with pytest.raises(BackendUnavailable):  # no connection at all: as unreachable for this run as for the others
        await watch.tick()
    others[0] = False
    _add(path, STATUS.format(n=4))
    with pytest.raises(UnifiedError):  # alone on the process: the retry is this run's, and its budget is spent
        await watch.tick()
