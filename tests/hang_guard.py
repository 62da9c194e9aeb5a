"""The one wall-clock limit tests may set, and only as a hang guard.

A test orders its steps by observable events, never by sleeps. Where a step could hang forever
(a child process that never exits, a stream that never ends), it may bound the wait by
`HANG_GUARD_S`: far above (10x or more) the step's normal time even on a loaded 2-core machine, so
it only ever turns a hang into a failure and never trips on a slow run.
"""

HANG_GUARD_S = 600.0
