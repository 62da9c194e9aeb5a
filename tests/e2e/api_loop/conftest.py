"""Fixtures of the shared agent loop tests: FakeGemini and a workspace, from the generate-content harness."""

from tests.e2e.generate_content.gc_harness import harness

__all__ = ["harness"]
