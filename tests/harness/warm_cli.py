"""One warm `gemini --acp` process for the tests of a module, as an orchestrator's runs share one.

A cold start of the CLI costs 1.1-1.4 s of CPU (node loading its bundle), most of the suite's time; a new
ACP session in a running process costs a few milliseconds. unified's pool keeps a process warm for the
next run launched alike (the same argv and environment: the same HOME, cache folder and fake server).
Tests whose runs need nothing of their own in the launch share one here: one FakeGemini playing each
test's script in turn (`ScriptedFake.play`), or one `--fake-responses` file holding each test's recorded
responses in turn (`responses`), one prepared HOME, and a pool of their own (the default pool
stays cold in tests: `unified.testing.backend_options_for`). Each test still has its own workspace, so its own project
folder (chats, trust) under that HOME.

What such a test must not do: look at what is in HOME beyond its own project, count the processes left
after its run, or leave a request in flight when it ends (the next test's script would serve it: a run
that ends with a result has none).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from unified._adapters.gemini_cli import AcpPool
from unified.testing import FakeGemini, Turn, prepare_cli_home

__all__ = ["WarmCli"]

WARM_PROCESSES = 2
"""Processes kept warm for a module: a second launch (another approval mode's policy) does not evict the first."""


@dataclass(frozen=True)
class WarmCli:
    """A module's shared FakeGemini, HOME and pool of warm CLI processes (on one worker)."""

    server: FakeGemini
    home: Path
    pool: AcpPool

    @classmethod
    @contextmanager
    def started(cls, home: Path) -> Iterator[WarmCli]:
        """Serving until the block ends; then its processes are killed (the module's tests are over)."""
        pool = AcpPool(size=WARM_PROCESSES)
        try:
            with FakeGemini() as server:
                yield cls(server, prepare_cli_home(home), pool)
        finally:
            pool.close_now()

    def play(self, turns: Iterable[Turn]) -> FakeGemini:
        """The server, playing `turns` from now on (the last test's script and requests forgotten)."""
        self.server.play(turns)
        return self.server

    @property
    def backend_options(self) -> dict[str, object]:
        """`backend_options` of a run on the warm processes against the server (the script `play` gave it): the
        server's environment, whose HOME is the shared one the `warm_cli` fixture points the test at, and the pool."""
        return {"env": dict(self.server.cli_env), "pool": self.pool}

    @property
    def responses(self) -> Path:
        """The one `--fake-responses` file runs on recorded responses name (the CLI reads it from its start at
        every session): a test copies its own there before it runs."""
        return self.home / "model.responses"
