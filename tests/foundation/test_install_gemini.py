"""`unified install-gemini`: Node is checked first, npm installs into the user data dir, the lookup finds it.

npm itself cannot run offline, so the install test puts a stand-in `npm` on PATH that lays out
what npm would; Node checks, the command's output streams and the binary lookup are real.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from unified._adapters.gemini_cli import GEMINI_CLI, PINNED_VERSION

pytestmark = pytest.mark.e2e  # runs real subprocesses


def _install(path: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unified._cli", "install-gemini", *args],
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,  # a hang guard only
        check=False,
    )


def _script(directory: Path, name: str, body: str) -> None:
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


NPM_STANDIN = f"""prefix="$3"
echo "added 1 package (stand-in npm: $*)"
package="$prefix/node_modules/@google/gemini-cli"
mkdir -p "$package" "$prefix/node_modules/.bin"
echo '{{"name": "@google/gemini-cli", "version": "{PINNED_VERSION}"}}' > "$package/package.json"
printf '#!/bin/sh\\necho {PINNED_VERSION}\\n' > "$prefix/node_modules/.bin/gemini"
chmod +x "$prefix/node_modules/.bin/gemini"
"""


def test_without_node_it_says_what_to_install(tmp_path: Path) -> None:
    done = _install(str(tmp_path / "empty-bin"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: Node.js was not found on PATH; the gemini CLI needs Node.js 20+ (install Node.js 20 or newer "
        "(https://nodejs.org or your package manager), then run this again)"
    ]
    assert not GEMINI_CLI.user_prefix().exists()


def test_an_old_node_is_refused_before_npm_runs(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _script(bin_dir, "node", "echo v18.19.0\n")
    _script(bin_dir, "npm", f"touch {tmp_path / 'npm-ran'}\n")
    done = _install(str(bin_dir))
    assert done.returncode == 2
    assert "Node.js 18.19.0" in done.stderr
    assert "needs 20+" in done.stderr
    assert not (tmp_path / "npm-ran").exists()


def test_install_puts_the_pinned_cli_where_the_lookup_finds_it(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _script(bin_dir, "node", "echo v20.11.1\n")
    _script(bin_dir, "npm", NPM_STANDIN)
    done = _install(f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")  # the stand-ins first, then mkdir and chmod
    assert done.returncode == 0, done.stderr
    binary = GEMINI_CLI.user_prefix() / "node_modules" / ".bin" / "gemini"
    assert done.stdout.strip() == f"gemini-cli {PINNED_VERSION} installed: {binary}"
    assert f"install --prefix {GEMINI_CLI.user_prefix()} --no-audit --no-fund @google/gemini-cli@{PINNED_VERSION}" in (
        done.stderr
    )  # npm's output went to stderr
    assert GEMINI_CLI.user_installed() == binary  # where the lookup looks after the variable and a clone's folder
    again = _install(str(tmp_path / "no-node-needed"))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"gemini-cli {PINNED_VERSION} already installed: {binary}"


def test_a_failed_npm_is_one_error_line(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _script(bin_dir, "node", "echo v22.1.0\n")
    _script(bin_dir, "npm", "echo 'npm error network unreachable' >&2\nexit 1\n")
    done = _install(str(bin_dir))
    assert done.returncode == 1
    assert "npm error network unreachable" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: `")
    assert "failed (exit 1)" in done.stderr
    assert done.stdout == ""
