"""Bad input round 16, the gemini CLI's retry after a 429 (`_retry_watch`): 0.61 waits whatever the server's
`RetryInfo` asks (about 100 s measured) and its debug log says how long on the entry's second line ("Suggested retry
after 100s.. Retrying after 103000ms..."), which was not read: the warning gave no wait, and no limit applied. Now
the warning names the wait, and one over `max_retry_delay_s` ends the prompt: `rate_limited` with `retry_after_s`.
The real CLI behind FakeGemini: tests/e2e/gemini_cli/test_gemini_cli_bad_input_round16.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters.gemini_cli.test_gemini_cli_retry_watch import Warnings, _add
from unified._adapters.gemini_cli._outcome import retry_note
from unified._adapters.gemini_cli._retry_watch import DebugLog, RetryWatch
from unified.errors import RateLimited

pytestmark = pytest.mark.anyio

QUOTA = (
    "[2026-12-05T19:39:08.357Z] [WARN] Attempt {n} failed: Resource has been exhausted (e.g. check quota).\n"
    "Suggested retry after {asked}s.. Retrying after {wait}ms...\n"
)


def _watch(tmp_path: Path, max_delay_s: float = 60.0) -> tuple[Path, RetryWatch, Warnings]:
    path = tmp_path / "debug.log"
    path.write_text("")
    warnings = Warnings()
    return path, RetryWatch(DebugLog(path), warnings, "http://127.0.0.1:9/", 9, max_delay_s=max_delay_s), warnings


def test_a_quota_entry_tells_the_wait_asked_and_the_clis() -> None:
    note = retry_note(QUOTA.format(n=1, asked=9, wait=10390))
    assert note is not None
    assert (note.status, note.asked_s, note.wait_s) == (429, 9.0, 10.39)


async def test_a_retry_warning_names_the_clis_wait(tmp_path: Path) -> None:
    path, watch, warnings = _watch(tmp_path)
    _add(path, QUOTA.format(n=1, asked=9, wait=10390))
    await watch.tick()
    [(code, message)] = warnings
    assert code == "retrying"
    assert message.endswith("(the CLI asks again in 10.4 s)"), message


async def test_a_wait_over_max_retry_delay_s_ends_the_prompt_rate_limited_with_retry_after_s(tmp_path: Path) -> None:
    path, watch, warnings = _watch(tmp_path, max_delay_s=30.0)
    _add(path, QUOTA.format(n=1, asked=100, wait=103000))
    with pytest.raises(RateLimited) as caught:
        await watch.tick()
    error = caught.value
    assert (error.code, error.retryable, error.details["retry_after_s"]) == ("rate_limited", True, 100.0)
    assert "would wait 100 s before it asks again, more than max_retry_delay_s (30 s)" in error.message
    assert warnings == []
