"""Typed per-backend options: every backend reports a bad key or value the same way, before anything starts.

A backend's model subclasses the public `unified.types.BackendOptions` and lives beside its adapter
(free of SDK imports, so callers can build it cheaply). `ExecuteParams.backend_options` takes either
that model or a plain dict of the same keys; `parse_options` turns either into the model.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import Field, PlainValidator, ValidationError

from unified.errors import ConfigurationError
from unified.types import BackendOptions

__all__ = ["OptionsT", "PolicyOption", "parse_options"]

OptionsT = TypeVar("OptionsT", bound=BackendOptions)

_POLICY_MODULE = "unified.tools._policy"
"""Where `Policy` is defined (`PolicyOption` looks for it among the imported modules)."""


def _a_policy(value: object) -> Any:
    """A `unified.tools.Policy` or None, checked without importing the tool runtime (~0.2 s, and a package above
    this one): a `Policy` exists only once its module was imported, so where it is not, `value` is none."""
    if value is None:
        return None
    policies = sys.modules.get(_POLICY_MODULE)
    if policies is None or not isinstance(value, policies.Policy):
        raise ValueError(f"policy must be a unified.tools.Policy (got {type(value).__name__})")
    return value


PolicyOption = Annotated[Any, PlainValidator(_a_policy), Field(repr=False, exclude=True)]
"""Every backend's `policy` option (a `unified.tools.Policy`; None: the shipped one), typed once: taking one loads
nothing (the codex and API backends' runs load the tool runtime only when a call is decided), and it is left out of
the options' repr and dumps (a policy's rules are the caller's, and long)."""


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
