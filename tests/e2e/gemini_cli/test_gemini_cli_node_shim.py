"""The gemini CLI is started by Node.js itself, never through a version manager's shim on PATH.

asdf, nodenv, mise and volta put a `node` on PATH that picks the Node.js it runs by the folder it starts in (a
`.tool-versions`, `.node-version` or `package.json` there): through the CLI's `#!/usr/bin/env node` line, a
repository's `nodejs path:./bin` ran the repository's own program as the agent binary, in the run's folder, before
anything unified decides. The shim here stands for one: in a folder holding `.steer` it runs the repository's choice
(it leaves a marker and exits), anywhere else the real Node.js.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import stream_line, text
from unified import ExecuteParams, execute
from unified._adapters.gemini_cli._launch import GEMINI_CLI
from unified._binary.install import NodeUnavailable, require_node
from unified.events import Result

pytestmark = pytest.mark.e2e


def _shim(folder: Path, marker: Path, real: str | None) -> Path:
    """A `node` shim in `folder`: in a directory holding `.steer` it makes `marker` and exits (the repository's
    "Node"), elsewhere it runs `real` (none: it names no Node at all)."""
    folder.mkdir()
    shim = folder / "node"
    elsewhere = f'exec "{real}" "$@"' if real else "echo 'no version set for nodejs'; exit 126"
    shim.write_text(f'#!/bin/sh\nif [ -e .steer ]; then : > "{marker}"; exit 0; fi\n{elsewhere}\n')
    shim.chmod(0o755)
    return shim


def _real_node() -> str:
    found = shutil.which("node")
    assert found is not None, "the e2e tier runs with Node.js on PATH"
    return os.path.realpath(found)


def test_the_node_behind_a_shim_is_asked_from_the_root_folder_not_the_run_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before (None: the kernel ran the `#!` line's `env node`, the shim, in the run's folder)."""
    repo, marker = tmp_path / "repo", tmp_path / "marker"
    repo.mkdir()
    (repo / ".steer").touch()
    real = _real_node()
    shims = tmp_path / "shims"
    _shim(shims, marker, real)
    monkeypatch.chdir(repo)
    binary = Path(os.environ["UNIFIED_GEMINI_BIN"])
    assert require_node(GEMINI_CLI, binary, {"PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}) == (real,)
    assert not marker.exists()


def test_a_shim_that_names_no_node_from_the_root_folder_is_refused_saying_so(tmp_path: Path) -> None:
    """FAILED before (None, then a run that died in the shim's words)."""
    shims = tmp_path / "shims"
    _shim(shims, tmp_path / "marker", None)
    binary = Path(os.environ["UNIFIED_GEMINI_BIN"])
    with pytest.raises(NodeUnavailable) as caught:
        require_node(GEMINI_CLI, binary, {"PATH": str(shims)})
    assert "not Node.js but a launcher" in caught.value.message
    assert "no version set for nodejs" in caught.value.message  # what it answered
    assert caught.value.hint is not None
    assert "global Node.js version" in caught.value.hint


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("transport", ["stream-json", "acp"])
async def test_a_run_in_a_repository_that_steers_the_shim_runs_the_real_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workspace: Path, responses: Callable[..., Path], transport: str
) -> None:
    """FAILED before over stream-json: the shim, started by the kernel in the run's folder, ran the repository's
    program (the marker) and the run ended in a backend error. (An ACP process starts in a folder of unified's, so
    there it held before too.) Now the CLI runs, on the real Node.js, and answers."""
    marker = tmp_path / "marker"
    (workspace / ".steer").touch()
    shims = tmp_path / "shims"
    _shim(shims, marker, _real_node())
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    fake = responses(stream_line(text("hello from the real CLI")))
    params = ExecuteParams(
        prompt="hi",
        backend="gemini-cli",
        cwd=workspace,
        backend_options={"fake_responses": str(fake), "pool_size": 0, "transport": transport},
    )
    async with execute(params) as stream:
        events = [event async for event in stream]
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text) == ("success", "hello from the real CLI")
    assert not marker.exists()
