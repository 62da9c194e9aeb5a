"""Red team, round 21.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- programs that run the rest of their words (`unbuffer`, `rlwrap`, `ifne`, `chronic`, `faketime`, `caffeinate`,
  `setarch`, `gosu`, `pee`, ...) were read as the command itself, so `unbuffer rm x` passed a deny rule for `rm`
  under a broader allow rule; now they are wrappers (`_shell_syntax._WRAPPERS`), and an option of theirs the reader
  does not know (`rlwrap -z filter`, `entr -s`) is asked.

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import pytest

from unified.tools import Policy

pytestmark = [pytest.mark.anyio]

SHELL = "run_shell_command"

DENY_RM = (
    '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "rm"\ndecision = "deny"\npriority = 500\n'
    '[[rule]]\ntoolName = "run_shell_command"\ndecision = "allow"\npriority = 100\n'
)


# 1. wrappers the shell reader did not know


@pytest.mark.parametrize(
    "command",
    [
        "unbuffer rm x",
        "unbuffer -p rm x",
        "rlwrap rm x",
        "rlwrap -a -C name rm x",
        "ifne rm x",
        "ifne -n rm x",
        "chronic rm x",
        "chronic -ev rm x",
        "faketime now rm x",
        "faketime -f +1d rm x",
        "caffeinate -i rm x",
        "eatmydata rm x",
        "nocache rm x",
        "entr rm x",
        "trickle -d 10 rm x",
        "cpulimit -l 5 rm x",
        "xvfb-run -a rm x",
        "ssh-agent rm x",
        "sshpass -p pw rm x",
        "tini -- rm x",
        "dumb-init rm x",
        "gosu user rm x",
        "su-exec user rm x",
        "chpst -u user rm x",
        "setarch x86_64 -R rm x",
        "linux64 rm x",
        "run-one rm x",
        "lckdo lock rm x",
        "with-lock-ex -w lock rm x",
        "systemd-inhibit --why=x rm x",
        "pee 'rm x' cat",
        "nohup unbuffer nice rm x",
    ],
)
def test_a_deny_rule_holds_through_a_wrapper(command: str) -> None:
    """SUCCEEDED before: the wrapper was the command, `rm` one of its operands, and the blanket allow ran it."""
    verdict = Policy.default().with_toml(DENY_RM).evaluate(SHELL, {"command": command}, "default")
    assert verdict.decision == "deny", command


@pytest.mark.parametrize("command", ["rlwrap -z filter cat", "entr -s 'make'", "faketime --date-prog=x now cat"])
def test_a_wrapper_option_that_runs_a_program_of_its_own_is_asked(command: str) -> None:
    """SUCCEEDED before: allowed under the blanket allow beside a deny rule (`rlwrap -z` runs a filter program)."""
    verdict = Policy.default().with_toml(DENY_RM).evaluate(SHELL, {"command": command}, "default")
    assert verdict.decision == "ask_user", command


def test_a_wrapped_command_an_allow_rule_names_still_runs() -> None:
    """Beside it: an allow rule for `make` covers `unbuffer make` and `chronic make`, as it does `nohup make` (before,
    the wrapper was the command and was asked)."""
    policy = Policy.default().with_toml(
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "make"\ndecision = "allow"\npriority = 100\n'
    )
    for command in ("nohup make", "unbuffer make", "chronic make test", "ifne make"):
        assert policy.evaluate(SHELL, {"command": command}, "default").decision == "allow", command
