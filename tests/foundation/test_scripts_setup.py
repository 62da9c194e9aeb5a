"""`scripts/setup` as a fresh clone meets it: it says what it is doing, and npm's notices stay in a log.

Runs the real script in a copy of the clone's scripts (its `.venv` the project's own, already
installed, so pip has nothing to do), with an `npm` on PATH that behaves as npm 11 does on this
package: it installs, and prints its install-script and update notices.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S

pytestmark = pytest.mark.e2e  # runs bash and node

ROOT = Path(__file__).parents[2]
FAKE_NPM = """#!/usr/bin/env bash
# npm as it installs an agent CLI package: files under --prefix, then its notices
prefix=""
package=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--prefix" ]; then prefix="$2"; shift; else package="$1"; fi
  shift
done
name="${package%@*}"
version="${package##*@}"
case "$name" in
  @google/gemini-cli) bin=gemini ;;
  @anthropic-ai/claude-code) bin=claude ;;
  node) bin=node ;;
  *) bin=codex ;;
esac
[ "$bin" = node ] && [ "${NODE_FAILS:-0}" = 1 ] && { echo "npm error code EBADPLATFORM" >&2; exit 1; }
echo "added 7 packages in 22s"
echo "npm warn install-scripts 2 packages have install scripts not yet covered by allowScripts:" >&2
echo "npm notice New major version of npm available!" >&2
[ "${NPM_FAILS:-0}" = 1 ] && { echo "npm error code E404" >&2; exit 1; }
mkdir -p "$prefix/node_modules/$name" "$prefix/node_modules/.bin"
echo "{\\"name\\": \\"$name\\", \\"version\\": \\"$version\\"}" > "$prefix/node_modules/$name/package.json"
printf '#!/bin/sh\\necho %s%s\\n' "$( [ "$bin" = node ] && echo v)" "$version" > "$prefix/node_modules/.bin/$bin"
chmod +x "$prefix/node_modules/.bin/$bin"
if [ "$bin" = codex ]; then  # its platform package, with the native binary
  native="$prefix/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin"
  mkdir -p "$native"
  printf '#!/bin/sh\\necho codex-cli %s\\n' "$version" > "$native/codex"
  chmod +x "$native/codex"
fi
"""


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The clone's scripts and pyproject, with the project's .venv (installed, so pip is skipped)."""
    if shutil.which("node") is None:
        pytest.fail("this test needs Node.js 20+ on PATH (the gemini CLI does)")
    copy = tmp_path / "clone"
    (copy / "scripts").mkdir(parents=True)
    (copy / ".ci").mkdir()
    shutil.copy(ROOT / "scripts" / "setup", copy / "scripts" / "setup")
    for script in (ROOT / ".ci").glob("install-*.sh"):  # every agent CLI's
        shutil.copy(script, copy / ".ci" / script.name)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    (copy / ".venv").symlink_to(Path(sys.prefix))
    stamp = Path(sys.prefix) / ".unified-installed"
    if not stamp.is_file():
        pytest.fail(f"{stamp} is missing: run ./scripts/setup first")
    older = stamp.stat().st_mtime - 60
    os.utime(copy / "pyproject.toml", (older, older))  # the venv is up to date: pip does not run
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    return copy


def _setup(clone: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{clone.parent / 'bin'}{os.pathsep}{os.environ['PATH']}", **extra}
    for name in ("UNIFIED_SKIP_GEMINI_CLI", "UNIFIED_TEST_NODE"):
        if name not in extra:
            env.pop(name, None)
    return subprocess.run(
        ["bash", str(clone / "scripts" / "setup")],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
        check=False,
    )


def test_setup_says_what_it_installs_and_keeps_npm_in_a_log(clone: Path) -> None:
    done = _setup(clone)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "setup: installing the gemini CLI 0.61.0 into .gemini-cli/ with npm (a minute or two the first time)",
        "setup: installing the Claude Code CLI 2.1.332 into .claude-code/ with npm (a minute or two the first time)",
        "setup: installing the Codex CLI 0.171.0 into .codex-cli/ with npm (a minute or two the first time)",
    ]
    assert done.stderr == ""
    for folder in (".gemini-cli", ".claude-code", ".codex-cli"):
        log = (clone / folder / "npm-install.log").read_text()
        assert "npm warn install-scripts" in log
        assert "npm notice" in log
    again = _setup(clone)  # already there: nothing to say
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


def test_for_the_tests_setup_also_installs_their_node_and_goes_on_without_it_if_npm_cannot(clone: Path) -> None:
    """scripts/test asks for the pinned Node the CLIs run on in the suite (.ci/install-node.sh); it only makes
    their starts cheaper, so a failed install is said in one line and the tests run on the machine's Node."""
    done = _setup(clone, UNIFIED_TEST_NODE="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "setup: installing the tests' Node.js LTS into .node/ with npm (a few seconds; see .ci/install-node.sh for why)"
    )
    assert (clone / ".node" / "node_modules" / ".bin" / "node").is_file()
    assert "npm warn install-scripts" in (clone / ".node" / "npm-install.log").read_text()
    again = _setup(clone, UNIFIED_TEST_NODE="1")
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")

    shutil.rmtree(clone / ".node")
    failed = _setup(clone, UNIFIED_TEST_NODE="1", NODE_FAILS="1")
    assert failed.returncode == 0, failed.stderr
    last = failed.stdout.splitlines()[-1]
    assert last.startswith("setup: could not install the tests' Node.js (its log: .node/npm-install.log); the tests")
    assert "npm error code EBADPLATFORM" in (clone / ".node" / "npm-install.log").read_text()


def test_when_npm_fails_setup_shows_its_log_and_one_error_line(clone: Path) -> None:
    done = _setup(clone, NPM_FAILS="1")
    assert done.returncode == 1
    assert "  | npm error code E404" in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == "error: npm could not install the gemini CLI 0.61.0 (its whole log: .gemini-cli/npm-install.log)"
