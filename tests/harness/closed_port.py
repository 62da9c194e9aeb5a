"""A local TCP port where nothing listens, held for the test: connections to it are refused at once.

The socket is bound to 127.0.0.1 and never `listen()`s, so the kernel answers every connection to the port
with a reset (ECONNREFUSED), and no other process can take the port while the test holds it: unlike a port
found free and closed again, it cannot start answering halfway through the test.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["closed_port"]


@contextmanager
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections for as long as the `with` lasts."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
    finally:
        sock.close()
