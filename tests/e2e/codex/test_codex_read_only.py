"""Commands Codex parses as reads, listings or searches, on the real pinned binary: those that may write,
delete or run a program are asked (in default mode with nobody to ask: denied), and plain reads still run
unasked.

SUCCEEDED before (the bridge trusted Codex's `commandActions` alone): in default mode, nobody asked,
`find . -delete` deleted the workspace's files, `find . -fprint` and `cat a | tee` wrote files, and
`rg --pre`, `fd -x`, `git grep -O`, `nl a | xargs touch` were allowed by policy as reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.codex.conftest import decide_commands

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

NOT_READS = [
    "find . -delete",
    "find . -fprint PWNED1",
    "cat a | tee PWNED2",
    "nl a | xargs touch PWNED3",
    "rg --pre ./evil.sh foo .",
    "fd -x touch",
    "git grep -O'touch PWNED4' foo",
    "find . -name a -fprintf PWNED5 '%p'",
]


def names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


READS = ["cat a", "ls -la", "sed -n 1,2p a", "find . -name a", "head -n 1 a | wc -l", "grep -rn foo ."]


async def test_what_codex_calls_a_read_is_asked_unless_unified_agrees(workspace: Path) -> None:
    (workspace / "a").write_text("foo\n")
    (workspace / "evil.sh").write_text("#!/bin/sh\ntouch PWNED0\ncat\n")
    (workspace / "evil.sh").chmod(0o755)
    before = names(workspace)
    decided = await decide_commands(workspace, [*NOT_READS, *READS])
    assert set(decided) == {*NOT_READS, *READS}, sorted(decided)
    for command in NOT_READS:
        decision = decided[command]
        assert (decision.decision, decision.decided_by) == ("deny", "approval_mode"), (command, decision)
    for command in READS:
        decision = decided[command]
        assert (decision.decision, decision.decided_by) == ("allow", "policy"), (command, decision)
    assert names(workspace) == before, "nothing written, nothing deleted"


OUTSIDE = [
    "head -n1 a ../../../../etc/hostname",
    "grep -r root a /etc/passwd",
    "rg foo a /etc",
    "nl a /etc/hostname",
    "sed -n 1p a /etc/hostname",
    "ls / a",
    "find . /etc -name hostname",
    "cat a | grep x /etc/hostname",
    "grep -f/etc/passwd a",
]


async def test_a_read_of_a_second_path_outside_the_workspace_is_asked(workspace: Path) -> None:
    """SUCCEEDED before: Codex's parse names one path of each of these (`a`), so the outside-workspace check
    saw only that one and they ran unasked, reading /etc. Every word that may be a path is looked at now."""
    (workspace / "a").write_text("foo\n")
    decided = await decide_commands(workspace, OUTSIDE)
    assert set(decided) == set(OUTSIDE), sorted(decided)
    for command in OUTSIDE:
        assert decided[command].decision == "deny", (command, decided[command])
        assert decided[command].decided_by != "policy" or decided[command].rule == "outside-workspace", command
