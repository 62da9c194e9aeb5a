"""Bad input round 26: the Gemini CLI's error reports (`gemini-client-error-*.json`, each the whole request) piled up in
unified's temp folder of the CLI (`gemini-cli-tmp`) for good. Now the newest 20 of the last week are kept; a report
written in the last minute, a link, another user's file or one of the CLI's other temp files is never removed.
Each test FAILED on the old code (no sweep: every file stayed) but the pins that say so. Ages are set with
`os.utime`, never waited for."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from unified._adapters.gemini_cli._error_reports import (
    REPORT_KEPT_S,
    REPORT_SETTLED_S,
    REPORTS_KEPT,
    TEMP_FOLDER,
    sweep_error_reports,
)
from unified._binary.environment import cache_folder, private_cache_folder

DAY = 24 * 3600.0


def _report(folder: Path, number: int, age_s: float, now: float) -> Path:
    path = folder / f"gemini-client-error-Turn.run-sendMessageStream-2026-12-06T12-{number:02d}-00-000Z.json"
    path.write_text('{"error": {"message": "400"}, "context": ["the whole request"]}')
    os.utime(path, (now - age_s, now - age_s))
    return path


@pytest.fixture
def folder() -> Path:
    return private_cache_folder(TEMP_FOLDER)


def _names(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir()}


def test_reports_older_than_a_week_are_removed(folder: Path) -> None:
    now = time.time()
    old = _report(folder, 1, REPORT_KEPT_S + DAY, now)
    recent = _report(folder, 2, DAY, now)
    sweep_error_reports()
    assert not old.exists()
    assert recent.exists()


def test_only_the_newest_are_kept_beyond_the_count(folder: Path) -> None:
    now = time.time()
    reports = [_report(folder, n, 600.0 + n * 60, now) for n in range(REPORTS_KEPT + 5)]  # all within the week
    sweep_error_reports()
    assert [path.exists() for path in reports] == [True] * REPORTS_KEPT + [False] * 5


def test_a_report_being_written_is_never_removed_whatever_its_rank(folder: Path) -> None:
    now = time.time()
    settled = [_report(folder, n, REPORT_KEPT_S + DAY, now) for n in range(3)]
    fresh = [_report(folder, 10 + n, REPORT_SETTLED_S / 2, now) for n in range(REPORTS_KEPT + 3)]
    future = _report(folder, 50, -DAY, now)  # a clock set back: "written tomorrow" is as fresh
    sweep_error_reports()
    assert all(path.exists() for path in [*fresh, future])
    assert not any(path.exists() for path in settled)


def test_links_other_files_and_folders_are_left_alone(folder: Path, tmp_path: Path) -> None:
    """A report name that is a link is a name: never followed, and not ours to judge (pin of its target)."""
    now = time.time()
    target = tmp_path / "kept.json"
    target.write_text("not the CLI's")
    old = now - REPORT_KEPT_S - DAY
    os.utime(target, (old, old))
    link = folder / "gemini-client-error-general-2026-01-01T00-00-00-000Z.json"
    link.symlink_to(target)
    shell = folder / "shell_pgrep_abc.tmp"  # the CLI's shell tool's: another process's live file
    shell.write_text("123")
    os.utime(shell, (old, old))
    sub = folder / "gemini-client-error-x-2026.json"
    sub.mkdir()
    os.utime(sub, (old, old))
    removed = _report(folder, 1, REPORT_KEPT_S + DAY, now)
    sweep_error_reports()
    assert not removed.exists()
    assert link.is_symlink()
    assert target.read_text() == "not the CLI's"
    assert shell.exists()
    assert sub.is_dir()


def test_a_temp_folder_that_is_a_link_is_not_swept(tmp_path: Path) -> None:
    """A cache folder replaced by a link (to a folder of someone's reports) is never followed."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    now = time.time()
    report = _report(elsewhere, 1, REPORT_KEPT_S + DAY, now)
    place = cache_folder(TEMP_FOLDER)
    place.parent.mkdir(parents=True, exist_ok=True)
    place.symlink_to(elsewhere)
    sweep_error_reports()
    assert report.exists()


def test_no_folder_yet_is_nothing_to_sweep() -> None:
    """Pin: a sweep before the CLI ever ran makes nothing and raises nothing."""
    sweep_error_reports()
    assert not cache_folder(TEMP_FOLDER).exists()
