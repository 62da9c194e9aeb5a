"""Keeping this process's environment from the commands a model runs (Linux `prctl(PR_SET_DUMPABLE, 0)`).

Shared by the tool runtime (before its first shell command or stdio MCP server, `unified.tools._shell`) and the
agent binaries' backends (before a run starts the binary's process, a warm or spare one too: each adapter's run):
in both, a command of the model's runs as this process's user, as its child or the binary's, and could read this
process's keys in `/proc/<pid>/environ` (`cat /proc/$(ps -o ppid= $PPID)/environ` through a binary).
Low-level on purpose: it imports nothing of ours, so either side may use it (tests/foundation/test_layering.py).
"""

from __future__ import annotations

import sys

__all__ = ["hide_host_environment"]


def hide_host_environment() -> bool:
    """Marks this process not dumpable (Linux `prctl(PR_SET_DUMPABLE, 0)`), once; whether it is now.

    Every process of the same user may read another's `/proc/<pid>/environ`, the environment it started with, unless
    that process is not dumpable: then the kernel's ptrace access check refuses it to all but root (CAP_SYS_PTRACE).
    A command the model runs (`cat /proc/$PPID/environ`, `cat /proc/$(ps -o ppid= $PPID)/environ` through an agent
    binary, or a script that opens it at run time, which no static judging of the command sees) would otherwise read
    the host's API keys there, and print them encoded past any redaction. Nothing in the child can stop it (its own
    flag guards its environment, not its parent's; a new session or process group changes nothing; Landlock's ptrace
    scope needs `no_new_privs` in every command, which breaks sudo). The costs, process-wide and until the process
    ends (the flag is never set back: a command may outlive the run): no core dump of this process; a debugger or
    profiler of the same user cannot attach to it (`gdb -p`, `py-spy`, `strace -p`) and `/proc/<pid>/{environ,fd,
    maps,mem}` of it are root's to read (the process itself still lists `/proc/self/fd`). Opt out with
    `hide_host_environment=False` (`ToolRuntime`, each backend's options; docs/tools.md). Its children are not
    affected: each program started is dumpable again once it runs (`execve`), the agent binaries included.

    The kernel checks access when `/proc/<pid>/environ` is opened, not when it is read: a descriptor opened while
    this process was still dumpable stays readable (measured, round 27), which is why every caller makes this call
    before it starts anything a model steers. Root (CAP_SYS_PTRACE) reads it anyway; macOS has no such flag."""
    global _host_hidden
    if not _host_hidden and sys.platform == "linux":
        import ctypes

        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
            _host_hidden = prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
        except (OSError, AttributeError):  # no libc with prctl (a static or foreign runtime): nothing to set
            _host_hidden = False
    return _host_hidden


_PR_SET_DUMPABLE = 4
_host_hidden = False
