"""Fixtures of the generate-content end-to-end tests (the harness lives in gc_harness.py)."""

from tests.e2e.generate_content.gc_harness import harness

__all__ = ["harness"]
