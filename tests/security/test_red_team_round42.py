"""Red team, round 42: a hostile workspace for the Gemini CLI, the unit cases of `memory_file_refusal` (the real CLI's
in test_red_team_round42_e2e.py).

Hole: in a folder the CLI trusts, a memory file (`GEMINI.md`, or a name `context.fileName` gives) that is a link to
a file outside the run's folders was read into the model's request, at the start (the workspace's and those above it
up to the repository's top) and when a tool read beside it in a subfolder. Now the run is refused before the CLI
starts, as it is where such a name is a FIFO or a device (which would hold the CLI's start) or the workspace holds
too many entries to look at each. Held (pins): a link inside the run's folders, a link that leads nowhere or to a
folder (the CLI reads neither), and the folders above a workspace outside any repository (the CLI reads none there).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from unified._adapters.gemini_cli import _workspace_settings
from unified._adapters.gemini_cli._workspace_settings import (
    FolderTrust,
    env_file_refusal,
    memory_file_refusal,
    memory_names,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (tmp_path / "secret.md").write_text("SECRET\n")
    return path


def _refused(ws: Path, *names: str) -> str | None:
    refusal = memory_file_refusal([ws], names or ("gemini.md",))
    return None if refusal is None else refusal[0]


def test_a_memory_link_out_of_the_workspace_is_refused_deep_and_in_any_case(ws: Path, tmp_path: Path) -> None:
    """SUCCEEDED before (no check): a subfolder's `Gemini.md` link out (a file system that ignores case finds it)."""
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "Gemini.md").symlink_to(tmp_path / "secret.md")
    assert (_refused(ws) or "").startswith(f"{ws / 'a' / 'b' / 'Gemini.md'} is a link to {tmp_path / 'secret.md'}")


def test_links_inside_nowhere_or_to_a_folder_are_not_refused(ws: Path, tmp_path: Path) -> None:
    """Held: the CLI reads the first from inside, and cannot read the others as a file."""
    (ws / "docs").mkdir()
    (ws / "docs" / "memory.md").write_text("mine\n")
    (ws / "GEMINI.md").symlink_to(ws / "docs" / "memory.md")
    (ws / "docs" / "GEMINI.md").symlink_to(tmp_path / "nowhere")
    (ws / "x").mkdir()
    (ws / "x" / "GEMINI.md").symlink_to(tmp_path, target_is_directory=True)
    assert _refused(ws) is None


def test_a_memory_fifo_is_refused(ws: Path) -> None:
    """SUCCEEDED before: the CLI reads every memory file it finds, and a FIFO holds its start."""
    os.mkfifo(ws / "GEMINI.md")
    assert (_refused(ws) or "").startswith(f"{ws / 'GEMINI.md'} is a FIFO")


def test_the_folders_above_up_to_the_repositorys_top_are_looked_at(ws: Path, tmp_path: Path) -> None:
    """SUCCEEDED before: the CLI reads the memory files of the folders from the workspace up to the one holding
    `.git`; above a workspace in no repository it reads none, and none is refused there."""
    inner = ws / "pkg"
    inner.mkdir()
    (ws / "GEMINI.md").symlink_to(tmp_path / "secret.md")
    assert _refused(inner) is None  # no `.git` above: the CLI stops at the workspace
    (ws / ".git").mkdir()
    assert (_refused(inner) or "").startswith(f"{ws / 'GEMINI.md'} is a link to")


def test_a_workspace_too_large_to_look_at_is_refused(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: past the bound a memory link may lie unseen."""
    monkeypatch.setattr(_workspace_settings, "LINK_SCAN_MAX_ENTRIES", 3)
    for index in range(5):
        (ws / f"f{index}").write_text("")
    assert "too many for unified to look at every memory file" in (_refused(ws) or "")


def test_the_names_are_every_settings_context_file_names(ws: Path, tmp_path: Path) -> None:
    """A name the workspace's (or the user's) `context.fileName` gives is looked for too, as the CLI would."""
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text('{"context": {"fileName": "USER.md"}}')
    (ws / ".gemini").mkdir()
    (ws / ".gemini" / "settings.json").write_text('{"context": {"fileName": ["AGENTS.md", 3]}}')
    names = memory_names(FolderTrust(ws, {}, home, tmp_path / "none.json"))
    assert names == ("agents.md", "gemini.md", "user.md")
    (ws / "AGENTS.md").symlink_to(tmp_path / "secret.md")
    assert (_refused(ws, *names) or "").startswith(f"{ws / 'AGENTS.md'} is a link to")


def _folder(tmp_path: Path, dotenv: str, *, trusted: bool, **env: str) -> FolderTrust:
    """A workspace whose `.env` is `dotenv`, in a home whose folder trust is off (`trusted`) or on."""
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({"security": {"folderTrust": {"enabled": not trusted}}}))
    ws = tmp_path / "repo"
    ws.mkdir(exist_ok=True)
    (ws / ".env").write_text(dotenv)
    return FolderTrust(ws.resolve(), {"GEMINI_API_KEY": "k", **env}, home, tmp_path / "none.json")


@pytest.mark.parametrize("trusted", [False, True])
@pytest.mark.parametrize(
    "dotenv",
    [
        "GOOGLE_CLOUD_LOCATION=evil.example/x?\n",
        "PORT=1\nexport GOOGLE_CLOUD_LOCATION: 'a@evil.example#'\n",
        'GOOGLE_CLOUD_LOCATION="evil.example/\nx"\n',
    ],
)
def test_a_dotenv_location_that_moves_the_vertex_host_is_refused(tmp_path: Path, dotenv: str, trusted: bool) -> None:
    """SUCCEEDED before (untrusted, a run that gives its key: the file was not even read): 0.61 takes the location
    from a `.env` in any folder and builds `https://${location}-aiplatform.googleapis.com/`, another host here."""
    folder = _folder(tmp_path, dotenv, trusted=trusted)
    assert folder.trusted is trusted
    refusal = env_file_refusal(folder)
    assert refusal is not None
    assert refusal[0].startswith(f"{folder.cwd / '.env'} sets GOOGLE_CLOUD_LOCATION to no region name")


@pytest.mark.parametrize(
    "dotenv", ["GOOGLE_CLOUD_LOCATION=us-central1\n", 'GOOGLE_CLOUD_LOCATION="global" # the region\n', "X=a/b\n"]
)
def test_a_dotenv_region_name_is_not_refused(tmp_path: Path, dotenv: str) -> None:
    """Held: an application's own region (or any other variable) in an untrusted folder's `.env`."""
    assert env_file_refusal(_folder(tmp_path, dotenv, trusted=False)) is None


def test_a_location_the_run_sets_is_not_refused(tmp_path: Path) -> None:
    """Held: the file never replaces a variable set for the run."""
    folder = _folder(tmp_path, "GOOGLE_CLOUD_LOCATION=evil/\n", trusted=False, GOOGLE_CLOUD_LOCATION="us-east1")
    assert env_file_refusal(folder) is None
