"""Policies the security tests build from the shipped one."""

from __future__ import annotations

from unified.tools import Policy


def allow_prefixes(*prefixes: str) -> Policy:
    """The shipped policy and a user rule allowing the shell commands that begin with one of `prefixes`."""
    listed = ", ".join(f'"{prefix}"' for prefix in prefixes)
    rule = f'[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = [{listed}]\ndecision = "allow"\npriority = 100\n'
    return Policy.default().with_toml(rule)
