"""The subagents a user, a project or an extension defines are named in unified's rules for the gemini CLI.

0.61 holds a policy rule for a subagent's calls only when the rule names it exactly; a subagent unified's rules do
not name waits for ever on a question no ACP client is put (e2e: test_gemini_cli_subagent_policy.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from unified._adapters.gemini_cli import _user_agents
from unified._adapters.gemini_cli._launch import SUBAGENTS, Launch
from unified._adapters.gemini_cli._options import GeminiCliOptions
from unified._adapters.gemini_cli._user_agents import MAX_NAMES, own_subagents
from unified.testing import FakeAgentProcess
from unified.tools import Policy
from unified.types import ExecuteParams

ASKS_SHELL = Policy.default().with_toml(
    '[[rule]]\nname = "mine"\ntoolName = "run_shell_command"\ndecision = "ask_user"\npriority = 500\n'
)
SILENT = FakeAgentProcess.starter(lambda process: lambda line: None)
"""A stand-in binary: `Launch.of` then looks for no `gemini`."""


def _agent(folder: Path, file: str, front_matter: str, body: str = "You help.\n") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_text(f"---\n{front_matter}\n---\n{body}")


def test_the_users_the_projects_and_the_extensions_agents_are_found(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "ws"
    _agent(home / ".gemini" / "agents", "a.md", "name: helper\ndescription: d")
    _agent(cwd / ".gemini" / "agents", "b.md", "name: 'reviewer'  # the project's\ndescription: d")
    _agent(home / ".gemini" / "extensions" / "ext" / "agents", "c.md", '{"name": "ext-agent", "description": "d"}')
    _agent(home / ".gemini" / "agents", "remote.md", "- name: far_1\n  agent_card_url: https://x\n- name: far_2")
    linked = home / ".gemini" / "extensions" / "linked"  # `gemini extensions link ../src`: its files stay there
    linked.mkdir()
    record = {"source": str(tmp_path / "src"), "type": "link"}
    (linked / ".gemini-extension-install.json").write_text(json.dumps(record))
    _agent(tmp_path / "src" / "agents", "d.md", "name: from_source\ndescription: d")
    _agent(linked / "agents", "e.md", "name: not_loaded\ndescription: d")  # 0.61 reads the source's
    assert own_subagents(home, cwd) == ("ext-agent", "far_1", "far_2", "from_source", "helper", "reviewer")


@pytest.mark.parametrize(
    "front_matter",
    [
        "name: >-\n  folded-agent\ndescription: d",
        "name: |\n  folded-agent\ndescription: d",
        "name: |-  # a comment\n\n    folded-agent\n",
        "name: >2\n  folded-agent",
        "- name: >-\n    folded-agent\n  agent_card_url: https://x",
        "'name': |+\n  folded-agent\r\ndescription: d",
    ],
)
def test_a_name_written_as_a_block_scalar_is_found(tmp_path: Path, front_matter: str) -> None:
    """Round 12: `name: >-` (or `|`) with the name on the next line is YAML's block scalar; the name was missed, and
    a policy's rules did not name that subagent."""
    _agent(tmp_path / ".gemini" / "agents", "a.md", front_matter)
    assert own_subagents(tmp_path, tmp_path / "ws") == ("folded-agent",)


@pytest.mark.parametrize(
    "front_matter",
    [
        "name: >-\nfolded-agent",  # not indented: no content of the scalar
        "name: >-\n  two words",
        "description: >-\n  folded-agent",
    ],
)
def test_a_block_scalar_that_holds_no_single_name_names_nothing(tmp_path: Path, front_matter: str) -> None:
    _agent(tmp_path / ".gemini" / "agents", "a.md", front_matter)
    assert own_subagents(tmp_path, tmp_path / "ws") == ()


@pytest.mark.parametrize(
    "record", ["{", '{"type": "link", "source": 7}', '["link"]', '{"type": "git", "source": "/x"}']
)
def test_an_extension_whose_install_record_names_no_link_is_read_where_it_is(tmp_path: Path, record: str) -> None:
    extension = tmp_path / ".gemini" / "extensions" / "ext"
    _agent(extension / "agents", "a.md", "name: here\ndescription: d")
    (extension / ".gemini-extension-install.json").write_text(record)
    assert own_subagents(tmp_path, tmp_path / "ws") == ("here",)


@pytest.mark.parametrize(
    ("file", "text"),
    [
        ("_draft.md", "---\nname: draft\n---\n"),  # 0.61 skips a file whose name starts with `_`
        ("notes.txt", "---\nname: notes\n---\n"),  # and every file not ending in .md
        ("late.md", "intro\n---\nname: late\n---\n"),  # front matter must open the file
        ("open.md", "---\nname: unclosed\n"),  # and close
        ("body.md", "---\ndescription: d\n---\nname: in_the_body\n"),  # a body's `name:` is no name
        ("upper.md", "---\nname: My Agent\n---\n"),  # no slug: 0.61 refuses the file
    ],
)
def test_what_the_cli_would_not_load_names_nothing(tmp_path: Path, file: str, text: str) -> None:
    folder = tmp_path / ".gemini" / "agents"
    folder.mkdir(parents=True)
    (folder / file).write_text(text)
    assert own_subagents(tmp_path, tmp_path / "ws") == ()


def test_a_fifo_a_folder_and_a_link_to_a_device_are_neither_waited_on_nor_read(tmp_path: Path) -> None:
    folder = tmp_path / ".gemini" / "agents"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "fifo.md")  # no writer: an open that waits would hang the start
    (folder / "dir.md").mkdir()
    (folder / "zero.md").symlink_to("/dev/zero")
    _agent(folder, "real.md", "name: real\ndescription: d")
    assert own_subagents(tmp_path, tmp_path / "ws") == ("real",)


def test_a_huge_file_is_read_only_up_to_its_front_matter_bound(tmp_path: Path) -> None:
    folder = tmp_path / ".gemini" / "agents"
    _agent(folder, "big.md", "name: big\ndescription: d", body="x" * (4 * _user_agents.MAX_BYTES))
    _agent(folder, "late.md", "description: d\n" + "#" * _user_agents.MAX_BYTES + "\nname: late")
    assert own_subagents(tmp_path, tmp_path / "ws") == ("big",)


def test_the_names_are_bounded(tmp_path: Path) -> None:
    folder = tmp_path / ".gemini" / "agents"
    names = "\n".join(f"- name: agent{n:04}" for n in range(MAX_NAMES * 3))
    _agent(folder, "many.md", names)
    found = own_subagents(tmp_path, tmp_path / "ws")
    assert len(found) == MAX_NAMES
    assert found[0] == "agent0000"


def test_a_run_with_a_policy_names_them_in_its_policy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, cwd = tmp_path / "home", tmp_path / "ws"
    cwd.mkdir()
    _agent(home / ".gemini" / "agents", "a.md", "name: helper\ndescription: d")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
    params = ExecuteParams(prompt="go", backend="gemini-cli", cwd=cwd)
    options = GeminiCliOptions(start_process=SILENT, policy=ASKS_SHELL)
    launch = Launch.of(params, options)
    assert launch.subagents == (*SUBAGENTS, "helper")
    rules = Path(launch.policy_flags()[1]).read_text()
    assert 'subagent = "helper"\ndecision = "deny"' in rules
    assert 'subagent = "generalist"\ndecision = "deny"' in rules
    without = Launch.of(params, GeminiCliOptions(start_process=SILENT))
    assert without.subagents == SUBAGENTS  # no policy: nothing to name them in, no look at the files


def test_a_folder_of_very_many_entries_is_looked_at_only_up_to_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace's `.gemini/agents/` is the repository's to fill: listing and sorting it whole at every start
    would let it slow each one; the first `MAX_ENTRIES` entries listed are looked at."""
    monkeypatch.setattr(_user_agents, "MAX_ENTRIES", 10)
    folder = tmp_path / ".gemini" / "agents"
    folder.mkdir(parents=True)
    for n in range(50):
        (folder / f"junk{n:02}.txt").write_text("")
    assert len(_user_agents._entries(folder)) == 10
