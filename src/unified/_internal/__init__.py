"""Machinery shared by every backend; not part of the public API."""
