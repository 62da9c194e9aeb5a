"""Importing a heavy module from inside a run without stalling the event loop.

google-genai takes ~0.7 s to import. A run that imported it on the event loop would freeze every
other task of the loop (other runs, a UI, a server) for that long; in a worker thread the loop
keeps serving them. Python's import lock makes a concurrent import of the same module wait for
the first one to finish, so every caller gets a fully initialized module.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import anyio.to_thread

__all__ = ["import_off_loop"]


async def import_off_loop(name: str) -> ModuleType:
    """`importlib.import_module(name)`, in a worker thread unless the module is already loaded."""
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    if module is not None and not getattr(spec, "_initializing", False):
        return module
    return await anyio.to_thread.run_sync(importlib.import_module, name)
