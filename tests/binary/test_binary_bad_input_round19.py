"""Bad input round 19: an agent binary (or `node`) whose `--version` prints bytes that are no UTF-8 (a wrapper
script gone wrong, a binary of another platform's locale). The probe's strict decoding raised a bare
UnicodeDecodeError: `unified doctor` ended "unexpected UnicodeDecodeError ... a bug in unified" (exit 70), and a run
of that backend the same. Now it is the binary that "did not report a version": `backend_unavailable` (for node,
`NodeUnavailable`) with how to install the supported one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from unified._adapters.gemini_cli._launch import GEMINI_CLI
from unified._binary.install import NodeUnavailable, node_version, probe_version
from unified.errors import BackendUnavailable

pytestmark = pytest.mark.e2e  # runs the scripts

GARBLED = "#!/bin/sh\nprintf '\\377\\376 bad\\n'\nexit 3\n"


def _script(folder: Path, name: str) -> Path:
    script = folder / name
    script.write_text(GARBLED)
    script.chmod(0o755)
    return script


def test_a_binary_whose_version_is_no_utf8_did_not_report_a_version(tmp_path: Path) -> None:
    binary = _script(tmp_path, "gemini")
    with pytest.raises(BackendUnavailable) as raised:
        probe_version(GEMINI_CLI, binary, {"PATH": os.environ["PATH"]})
    assert f"{binary} did not report a version (" in raised.value.message, raised.value.message
    assert "install" in str(raised.value.hint)


def test_a_node_whose_version_is_no_utf8_is_node_unavailable(tmp_path: Path) -> None:
    _script(tmp_path, "node")
    with pytest.raises(NodeUnavailable, match="did not report a version"):
        node_version(GEMINI_CLI, {"PATH": str(tmp_path)})
