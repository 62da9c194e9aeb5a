"""Typed per-backend options: every backend reports a bad key or value the same way, before anything starts.

A backend's model subclasses the public `unified.types.BackendOptions` and lives beside its adapter
(free of SDK imports, so callers can build it cheaply). `ExecuteParams.backend_options` takes either
that model or a plain dict of the same keys; `parse_options` turns either into the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import ValidationError

from unified.errors import ConfigurationError
from unified.types import BackendOptions

__all__ = ["OptionsT", "parse_options"]

OptionsT = TypeVar("OptionsT", bound=BackendOptions)


def parse_options(model: type[OptionsT], raw: Mapping[str, object] | BackendOptions, backend: str) -> OptionsT:
    """`raw` as `model`, or a `ConfigurationError` naming every bad key (never a value: it may be a secret)."""
    if isinstance(raw, model):
        return raw
    if isinstance(raw, BackendOptions):
        raise ConfigurationError(
            f"backend_options is a {type(raw).__name__}, but the {backend} backend takes {model.__name__}",
            hint=f"pass {model.__name__}(...) or a dict of its keys",
        )
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        problems = "; ".join(
            f"backend_options.{'.'.join(str(part) for part in error['loc']) or '?'}: "
            + ("unknown option" if error["type"] == "extra_forbidden" else error["msg"])
            for error in exc.errors()
        )
        known = ", ".join(sorted(model.model_fields))
        raise ConfigurationError(
            f"invalid backend_options for {backend}: {problems}", hint=f"the {backend} backend knows: {known}"
        ) from None
