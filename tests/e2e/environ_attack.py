"""The red team's environment attack on a real agent binary (tests/e2e/*/test_*_secrets.py): a command
the model runs prints `env`, then `/proc/$PPID/environ` (the process that started the shell: the
agent's own, holding the run's key), then `/proc/<unified's pid>/environ`; what reaches the events,
and what the model is sent, is checked for pieces of each key."""

from __future__ import annotations

import os
from collections.abc import Iterable

from unified.events import Result, ToolResult, UnifiedEvent


def environ_command(*, keys_only: bool = False) -> str:
    """The command; `keys_only` keeps the lines naming a key or token (for a CLI that cuts a long output)."""
    body = (
        "env; echo '--- parent'; tr '\\0' '\\n' < /proc/$PPID/environ; "
        f"echo '--- unified'; tr '\\0' '\\n' < /proc/{os.getpid()}/environ"
    )
    if keys_only:
        return f"{{ {body}; }} | grep -a -i -E 'key|token|---'; echo '--- end'"
    return f"{body}; echo '--- end'"


def pieces(secret: str, text: str, size: int = 8) -> list[str]:
    """Every `size`-character piece of `secret` that `text` shows."""
    return sorted({secret[i : i + size] for i in range(len(secret) - size + 1) if secret[i : i + size] in text})


def check_no_key_out(
    events: list[UnifiedEvent], hidden: Iterable[str], never_sent: Iterable[str] = (), sent: str = ""
) -> str:
    """The command ran to its end; no event shows a piece of a `hidden` key; the model was `sent` no
    piece of a `never_sent` one (another provider's). Returns the command's output as the events show it."""
    assert isinstance(events[-1], Result)
    output = next(e for e in events if isinstance(e, ToolResult)).output or ""
    assert "--- end" in output, output
    shown = "\n".join(e.model_dump_json() for e in events)
    for secret in hidden:
        assert pieces(secret, shown) == [], secret
    for secret in never_sent:
        assert pieces(secret, sent) == [], secret
    return output
