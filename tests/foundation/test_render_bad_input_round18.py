"""Bad input round 18: a claude-code or codex run that failed with its CLI's stderr (a SIGXFSZ under `ulimit -f`,
measured with `unified run`) showed that stderr as "the gemini CLI's stderr": every binary backend's error carries
it (`stderr_tail`), and the renderer may know no backend (codex's app-server died before any session)."""

from __future__ import annotations

from unified._cli.render import Renderer
from unified.events import ErrorEvent


def test_a_binary_backends_stderr_tail_is_not_called_the_gemini_clis() -> None:
    tail = "WARNING: proceeding, even though we could not create PATH aliases"
    error = ErrorEvent(code="backend_error", message="codex app-server exited", details={"stderr_tail": tail})
    shown = Renderer(env={}).render(error)
    assert shown is not None
    assert "gemini" not in shown.plain
    assert "the agent CLI's stderr (last lines):\n  WARNING: proceeding" in shown.plain
