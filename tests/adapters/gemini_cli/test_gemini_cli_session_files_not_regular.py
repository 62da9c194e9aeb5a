"""A FIFO, a link to a FIFO or a device where the Gemini CLI keeps a chat file, its `projects.json` or a
project's `.project_root`: every reader refuses it as an unreadable file (a listing's problem, a
CorruptSession, an entry skipped), never waits on it or reads it, and never deletes it; and the same for
its `settings.json` and `oauth_creds.json`. Without a
binary: the readers are called on hand-made files under the isolated home (tests/conftest.py)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.harness.not_regular import NOT_REGULAR, not_a_regular_file, still_there
from unified._adapters.gemini_cli._chat_files import (
    PROJECT_ROOT_FILE,
    ChatFiles,
    conversation_size,
    gemini_home,
    read_chat,
    repair_session,
    session_files,
    session_usage,
)
from unified._adapters.gemini_cli._conversation import FAILED_TURN, keep_failed_prompt, open_retry, project_slug
from unified._adapters.gemini_cli._launch import DEFAULT_MODEL, Launch
from unified._adapters.gemini_cli._shared_sessions import project_chats, stored_session
from unified._auth import _read_json_object
from unified.errors import CorruptSession
from unified.events import Usage

GOOD = "abcdef12-0000-0000-0000-000000000001"
HOSTILE = "0badf00d-0000-0000-0000-000000000002"


def chat_lines(session_id: str, prompt: str) -> str:
    records = [
        {"sessionId": session_id, "projectHash": "h", "startTime": "2026-11-29T10:00:00Z", "kind": "main"},
        {"id": "u1", "type": "user", "content": [{"text": prompt}]},
        {"id": "g1", "type": "gemini", "content": "ok", "tokens": {"input": 3, "output": 1}},
    ]
    return "\n".join(json.dumps(r) for r in records) + "\n"


def chats(home: Path, slug: str = "ws") -> Path:
    folder = gemini_home({"HOME": str(home)}) / "tmp" / slug / "chats"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def chat_path(home: Path, session_id: str, slug: str = "ws") -> Path:
    return chats(home, slug) / f"session-2026-11-29T10-00-{session_id[:8]}.jsonl"


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_listing_reports_it_as_a_problem_and_lists_the_rest(isolated_home: Path, kind: str) -> None:
    chat_path(isolated_home, GOOD).write_text(chat_lines(GOOD, "hello"))
    with not_a_regular_file(chat_path(isolated_home, HOSTILE), kind) as hostile:
        locator = ChatFiles()
        assert [s.session_id for s in locator.list_sessions()] == [GOOD]
        [(path, why)] = locator.problems
        assert path == hostile
        assert "not a regular file" in why
    assert still_there(hostile, kind)


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_every_reader_of_a_chat_file_refuses_it(isolated_home: Path, kind: str) -> None:
    with not_a_regular_file(chat_path(isolated_home, HOSTILE), kind) as hostile:
        with pytest.raises(CorruptSession, match="not a regular file") as caught:
            read_chat(hostile)
        assert "move it away" in str(caught.value.hint)
        assert session_usage(hostile) == (Usage(), 0)
        assert conversation_size(hostile) == 0
        home = gemini_home({"HOME": str(isolated_home)})
        assert session_files(home, HOSTILE) == []  # so a resume's guard, a repair or a share never touch it
        assert repair_session(home, HOSTILE) == []
        keep_failed_prompt(home, HOSTILE, [{"type": "text", "text": "again"}])
        assert stored_session(home, HOSTILE, isolated_home, None) is None
        with pytest.raises(CorruptSession, match="not a regular file"):
            open_retry(hostile, HOSTILE)
    assert still_there(hostile, kind)


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_delete_removes_the_session_not_a_fifo_with_its_short_id(isolated_home: Path, kind: str) -> None:
    real = chat_path(isolated_home, GOOD)
    real.write_text(chat_lines(GOOD, "hello"))
    twin = real.with_name(f"session-2026-11-29T09-00-{GOOD[:8]}.jsonl")
    with not_a_regular_file(twin, kind):
        assert ChatFiles().delete(GOOD[:8]).session_id == GOOD
    assert not real.exists()
    assert still_there(twin, kind)


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_projects_json_and_project_markers_that_are_not_files_are_unreadable(
    isolated_home: Path, tmp_path: Path, kind: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    chat_path(isolated_home, GOOD, slug="other").write_text(chat_lines(GOOD, "hello"))
    home = gemini_home({"HOME": str(isolated_home)})
    registry, marker = home / "projects.json", home / "tmp" / "other" / PROJECT_ROOT_FILE
    with not_a_regular_file(registry, kind), not_a_regular_file(marker, kind):
        locator = ChatFiles()
        assert locator.projects() == {}
        assert [(d.name, root) for d, root in locator.project_dirs(None)] == [("other", None)]
        assert [s.session_id for s in locator.list_sessions()] == [GOOD]
        assert locator.list_sessions(str(workspace)) == []
        # the CLI's slug for a new project: the registry read as empty, the unreadable marker not trusted
        assert project_slug(home, workspace) == "ws"
        assert json.loads((home / "projects.json").read_text()) == {"projects": {str(workspace): "ws"}}
    assert (home / "tmp" / "ws" / PROJECT_ROOT_FILE).read_text() == str(workspace)
    assert still_there(marker, kind)


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_marker_that_is_not_a_file_is_not_adopted_nor_written_through(
    isolated_home: Path, tmp_path: Path, kind: str
) -> None:
    """`project_chats` (a shared session written into this home) passes over a directory whose marker it
    cannot read; `project_slug` replaces such a marker whole instead of opening it to write."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = gemini_home({"HOME": str(isolated_home)})
    with not_a_regular_file(home / "tmp" / "ws" / PROJECT_ROOT_FILE, kind) as marker:
        assert project_chats(home, workspace) == home / "tmp" / "ws-1" / "chats"
        assert still_there(marker, kind)
        slug = project_slug(home, workspace)
    assert slug in ("ws", "ws-1")
    written = home / "tmp" / slug / PROJECT_ROOT_FILE
    assert stat.S_ISREG(written.lstat().st_mode)
    assert written.read_text() == str(workspace)


def test_links_to_regular_files_are_read_as_before(isolated_home: Path, tmp_path: Path) -> None:
    """A user's home may hold links of its own: a link to a regular file is followed."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "chat.jsonl").write_text(chat_lines(GOOD, "hello"))
    (elsewhere / "projects.json").write_text(json.dumps({"projects": {str(workspace): "ws"}}))
    path = chat_path(isolated_home, GOOD)
    path.symlink_to(elsewhere / "chat.jsonl")
    home = gemini_home({"HOME": str(isolated_home)})
    (home / "projects.json").symlink_to(elsewhere / "projects.json")
    locator = ChatFiles()
    [info] = locator.list_sessions(str(workspace))
    assert (info.session_id, info.first_prompt, info.extra["turns"]) == (GOOD, "hello", 1)
    assert locator.problems == []
    assert [m["id"] for m in read_chat(path).messages] == ["u1", "g1"]
    assert session_files(home, GOOD) == [path]
    keep_failed_prompt(home, GOOD, [{"type": "text", "text": "again"}])
    assert FAILED_TURN in read_chat(path).meta
    assert (elsewhere / "chat.jsonl").read_text().endswith("}}\n")


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_settings_and_credentials_that_are_not_files_are_not_read(isolated_home: Path, kind: str) -> None:
    """The CLI's `settings.json` names no model; its `oauth_creds.json` is no login."""
    home = gemini_home({"HOME": str(isolated_home)})
    launch = Launch(
        binary=Path("gemini"),
        env={"GEMINI_CLI_HOME": str(isolated_home)},
        model=None,
        fake_responses=None,
        fake_responses_strict=False,
        include_directories=(),
        excluded_tools=(),
    )
    with not_a_regular_file(home / "settings.json", kind), not_a_regular_file(home / "oauth_creds.json", kind) as creds:
        assert launch.model_for() == DEFAULT_MODEL
        assert _read_json_object(creds) is None
    assert still_there(creds, kind)


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_the_resume_guard_refuses_a_file_swapped_after_it_was_listed(
    isolated_home: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard backs up every file of the session before `--resume`: one swapped for a FIFO or a device
    between the listing and the copy is a CorruptSession naming it, and it is left where it is. (`shutil.copy2`
    raised its own SpecialFileError for a FIFO, which ended the run as unified's internal error, and copied a
    link to a device: /dev/zero without end.)"""
    from unified._adapters.gemini_cli import _chat_files

    path = chat_path(isolated_home, HOSTILE)
    with not_a_regular_file(path, kind) as hostile:
        monkeypatch.setattr(_chat_files, "session_files", lambda home, session_id: [hostile])
        guard = _chat_files.ResumeGuard(gemini_home({"HOME": str(isolated_home)}), HOSTILE)
        with pytest.raises(CorruptSession, match="cannot back up"):
            guard.before()
        assert still_there(hostile, kind)


def test_the_resume_guard_restores_over_a_link_put_in_the_files_place(isolated_home: Path, tmp_path: Path) -> None:
    """A chat file that lost messages during the resume is restored by replacing what is at its path: a link
    put there since is replaced by the file, never written through to its target; the file's times and mode
    are the original's, as `shutil.copy2` kept them."""
    from unified._adapters.gemini_cli import _chat_files

    path = chat_path(isolated_home, GOOD)
    path.write_text(chat_lines(GOOD, "keep me"))
    path.chmod(0o640)
    before = path.stat()
    guard = _chat_files.ResumeGuard(gemini_home({"HOME": str(isolated_home)}), GOOD)
    guard.before()
    elsewhere = tmp_path / "someone-elses-file"
    elsewhere.write_text("not yours\n")
    path.unlink()
    path.symlink_to(elsewhere)  # it now reads as a session with no messages: the guard restores it
    repairs = guard.after()
    assert any("restored" in r for r in repairs)
    assert elsewhere.read_text() == "not yours\n"
    assert not path.is_symlink()
    assert read_chat(path).messages[0]["content"] == [{"text": "keep me"}]
    restored = path.stat()
    assert (stat.S_IMODE(restored.st_mode), restored.st_mtime_ns) == (0o640, before.st_mtime_ns)


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_binary_path_that_is_not_a_file_is_not_read_for_its_interpreter(tmp_path: Path, kind: str) -> None:
    """Whether the gemini binary is a Node script is read from its `#!` line: a FIFO there is not waited on."""
    from unified._binary.environment import file_signature
    from unified._binary.install import _node_line

    with not_a_regular_file(tmp_path / "gemini", kind) as binary:
        signature = file_signature(binary)
        assert signature is not None
        assert _node_line(binary, signature) is None
