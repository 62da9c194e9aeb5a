"""Red team, round 20.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a Codex read-only command reading a file outside the workspace through a value attached to the last letter of an
  option cluster: `file -bm/home/u/.netrc x` (the key file as file's magic file: its lines come back in warnings) and
  `grep -rf../out/key x .` ran unasked, because the outside-workspace check judged only what follows the cluster's
  first letter (`m/home/u/.netrc`, a path inside); now every letter's value is judged (`_read_only.operands`, as
  `_reach` does for path rules), and a cluster longer than that bound is no read-only command.

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.test_red_team_round7 import _codex_command
from unified.tools._read_only import not_read_only, operands

pytestmark = [pytest.mark.anyio]


# 1. a value attached to a later letter of an option cluster, in a Codex read-only command


@pytest.mark.parametrize(
    ("command", "action"),
    [
        ("file -bm../out/key x", {"type": "read", "command": "file", "name": "x", "path": "x"}),
        ("grep -rf{out}/key x .", {"type": "search", "command": "grep", "query": "x", "path": "."}),
        ("grep -rif../out/key x .", {"type": "search", "command": "grep", "query": "x", "path": "."}),
    ],
)
async def test_a_codex_read_naming_an_outside_file_in_an_option_cluster_is_asked(
    tmp_path: Path, command: str, action: dict[str, str]
) -> None:
    """SUCCEEDED before: the outside-workspace check judged `m../out/key` (what follows the cluster's first letter), a
    path inside the workspace, and the command ran unasked; `file -m` prints each line of the file it reads."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "x").write_text("x\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "key").write_text("machine x login u password SECRETPASSWORD123\n")
    filled = command.replace("{out}", str(out))
    assert not_read_only(filled) is None
    answer, decision = await _codex_command(ws, filled, ws, [{**action, "command": filled}])
    assert answer == "decline"
    assert decision.rule == "outside-workspace"


async def test_a_codex_read_with_option_clusters_inside_the_workspace_still_runs_unasked(tmp_path: Path) -> None:
    """The pin beside it: `grep -rn x src` and `head -n5 x` name nothing outside."""
    (tmp_path / "src").mkdir()
    (tmp_path / "x").write_text("x\n")
    for command, action in [
        ("grep -rn x src", {"type": "search", "command": "grep -rn x src", "query": "x", "path": "src"}),
        ("head -n5 x", {"type": "read", "command": "head -n5 x", "name": "x", "path": "x"}),
    ]:
        answer, decision = await _codex_command(tmp_path, command, tmp_path, [action])
        assert (answer, decision.decided_by) == ("accept", "policy"), command


def test_an_option_cluster_too_long_to_judge_is_no_read_only_command() -> None:
    """SUCCEEDED before: past the letters judged, a value would go unjudged, so such a cluster is asked."""
    assert "option cluster" in str(not_read_only("grep -" + "i" * 70 + "f/etc/shadow x ."))
    assert not_read_only("grep -" + "i" * 30 + "f/etc/shadow x .") is None
    assert "/etc/shadow" in operands("grep -" + "i" * 30 + "f/etc/shadow x .")


def test_a_pattern_holding_an_equals_sign_is_not_read_as_a_path() -> None:
    """Pin: an operand is judged as written (`grep url=/api src` is no read of /api), an option's value after `=`."""
    assert operands("grep url=/api src") == ["url=/api", "src"]
    assert operands("grep --file=/etc/shadow src") == ["/etc/shadow", "src"]
