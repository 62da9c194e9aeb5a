"""A FIFO, a link to a FIFO or a device where Codex keeps a rollout: refused as an unreadable rollout (a
CorruptSession, a listing's problem, a subagent not counted), never waited on or read, never deleted;
and the same where the user's Codex home keeps its login or ours its config. Pure, no process: the
readers are called on hand-made files in the test's own CODEX_HOME."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.harness.not_regular import NOT_REGULAR, not_a_regular_file, still_there
from unified._adapters.codex._conversation import rollout_from_conversation
from unified._adapters.codex._launch import CONFIG_TOML, ChatgptLogin, chatgpt_login, prepare_home
from unified._adapters.codex._rollouts import Rollouts, codex_short_id, read_rollout, rollout_name
from unified._adapters.codex._shared_sessions import collect
from unified._files import NotRegularFile
from unified.conversations import Conversation, ModelTurn, TextPart, UserTurn
from unified.errors import CorruptSession

T0 = 1796139949320
GOOD = "01a23248-9d08-7a31-8b3c-0000000aaaa1"
HOSTILE = "01a23248-9d08-7a31-8b3c-0000000bbbb1"


def rollout_text(thread_id: str, question: str) -> str:
    conversation = Conversation(
        turns=[UserTurn(parts=[TextPart(text=question)]), ModelTurn(parts=[TextPart(text="ok")])]
    )
    return rollout_from_conversation(conversation, thread_id=thread_id, cwd="/p", provider="unified", now_ms=T0)


def folder_of(home: Path) -> Path:
    return Rollouts(home).root / "2026" / "12" / "01"


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_rollout_that_is_not_a_file_is_corrupt_not_waited_on(tmp_path: Path, kind: str) -> None:
    created = datetime.fromtimestamp(T0 / 1000, UTC)
    good = Rollouts(tmp_path).write(GOOD, created, rollout_text(GOOD, "fine"))
    with not_a_regular_file(good.with_name(rollout_name(HOSTILE, created)), kind) as hostile:
        with pytest.raises(CorruptSession, match="cannot be read: not a regular file") as caught:
            read_rollout(hostile)
        assert "move it away" in str(caught.value.hint)
        rollouts = Rollouts(tmp_path)
        # a listing names regular files only; one swapped in after it is refused by the read above
        assert [s.session_id for s in rollouts.list_sessions()] == [GOOD]
        assert rollouts.children(GOOD) == []
        assert collect(tmp_path, GOOD, None) is not None
        rollouts.delete(GOOD)
        assert not good.exists()
    assert still_there(hostile, kind)


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_listing_reports_a_rollout_swapped_for_a_fifo_after_it_was_named(tmp_path: Path, kind: str) -> None:
    created = datetime.fromtimestamp(T0 / 1000, UTC)
    path = Rollouts(tmp_path).write(HOSTILE, created, rollout_text(HOSTILE, "mine"))
    path.unlink()
    with not_a_regular_file(path, kind):
        rollouts = Rollouts(tmp_path)
        info = rollouts.info(path, HOSTILE)
        assert info is not None
        assert info.problem is not None
        assert info.problem.kind == "corrupt"
        assert "not a regular file" in info.problem.message
        assert info.short_id == codex_short_id(HOSTILE)
    assert still_there(path, kind)


def test_a_link_to_a_regular_rollout_is_read_listed_and_shared(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(rollout_text(GOOD, "fine"))
    home = tmp_path / "codex"
    folder = folder_of(home)
    folder.mkdir(parents=True)
    link = folder / rollout_name(GOOD, datetime.fromtimestamp(T0 / 1000, UTC))
    link.symlink_to(elsewhere)
    assert read_rollout(link).thread_id == GOOD
    [info] = Rollouts(home).list_sessions()
    assert (info.session_id, info.first_prompt, info.problem) == (GOOD, "fine", None)
    stored = collect(home, GOOD, None)
    assert stored is not None
    assert stored.state["rollouts"] == {link.name: elsewhere.read_text()}


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_login_or_a_config_that_is_not_a_file_is_not_read(tmp_path: Path, kind: str) -> None:
    """The user's `auth.json` is read as no ChatGPT login; our home's `config.toml` is written anew (the
    thing there replaced whole, never opened to write)."""
    user = tmp_path / "user-codex"
    home = tmp_path / "our-codex"
    with not_a_regular_file(user / "auth.json", kind) as login, not_a_regular_file(home / "config.toml", kind):
        assert chatgpt_login({"CODEX_HOME": str(user)}) is None
        prepare_home(home)
        assert (home / "config.toml").read_text(encoding="utf-8") == CONFIG_TOML
        with pytest.raises(NotRegularFile):
            ChatgptLogin(login).copy_in(home)
    assert still_there(login, kind)


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_binary_path_that_is_not_a_file_is_not_read_to_find_the_native_binary(tmp_path: Path, kind: str) -> None:
    """`native_binary` reads the first bytes of the codex it is given (the npm launcher's `#!`): a FIFO there is
    not waited on; it is taken as it is, and starting it fails with the process's own error."""
    from unified._adapters.codex._launch import native_binary

    with not_a_regular_file(tmp_path / "codex", kind) as binary:
        assert native_binary(binary) == binary.resolve()
