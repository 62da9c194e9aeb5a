"""Pid reuse on demand: a script run as pid 1 of a pid namespace of its own, where no other process takes
pids and `/proc/sys/kernel/ns_last_pid` says which pid the next process gets (`take`). A test there makes
a stranger get exactly the number one of our process groups had, the moment that number is free: a
kill of a reused number is then certain to hit the stranger, not a matter of luck.

Needs `unshare` and the right to make the namespace (root, or unprivileged user namespaces); the tests
that use it are skipped elsewhere (macOS, a locked-down container).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.hang_guard import HANG_GUARD_S

__all__ = ["PRELUDE", "needs_pid_namespace", "run_in_pid_namespace"]

PRELUDE = '''
import os
import signal
import subprocess
from pathlib import Path


def take(pid: int) -> subprocess.Popen[bytes]:
    """A stranger (`sleep`, leading a group of its own) that gets `pid` if that pid is free now."""
    Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
    return subprocess.Popen(["sleep", "600"], start_new_session=True)


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
'''


def _command(script: str) -> list[str]:
    if os.geteuid() == 0:
        return ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", script]
    return ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", sys.executable, "-c", script]


@functools.cache
def _available() -> str | None:
    """Why pid namespaces cannot be used here, None when they can."""
    if shutil.which("unshare") is None or not os.path.isdir("/proc/self"):
        return "no unshare or no /proc"
    probe = PRELUDE + "print(os.getpid()); Path('/proc/sys/kernel/ns_last_pid').write_text('41'); print(take(42).pid)"
    try:
        done = subprocess.run(_command(probe), capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
    except OSError as exc:
        return str(exc)
    if done.returncode != 0 or done.stdout.split() != ["1", "42"]:
        return f"cannot make a pid namespace and set its next pid: {done.stderr.strip()[-200:]}"
    return None


def needs_pid_namespace() -> None:
    """Skip the calling test where a pid namespace of its own cannot be made."""
    reason = _available()
    if reason is not None:
        pytest.skip(reason)


def run_in_pid_namespace(script: str) -> list[str]:
    """Run `PRELUDE` + `script` as pid 1 of a new pid namespace (this interpreter, this `sys.path`); the
    lines it printed. A failure (a non-zero exit) fails the test with its stderr."""
    needs_pid_namespace()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        _command(PRELUDE + textwrap.dedent(script)),
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()
