"""Running a probe as a user that is not root, for the tests of what a same-user process may read in /proc.

As root every process's `/proc/<pid>/environ` is readable whatever its dumpable flag, so such a test run as root
starts its processes through `setpriv` as `nobody`; as anyone else, as that user."""

from __future__ import annotations

import os
import shutil

__all__ = ["not_root_prefix"]


def not_root_prefix() -> list[str]:
    """The argv prefix that runs a command as a user that is not root: empty unless this process is root."""
    if os.getuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    assert setpriv is not None, "as root the probe needs setpriv to run as another user"
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
