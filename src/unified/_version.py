"""unified's version: the one place it is written (pyproject.toml reads it here, through hatch).

A module of its own, below everything: the adapters that tell a binary who its client is import it
without importing the package's face (`unified/__init__.py`), which stands above them.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
