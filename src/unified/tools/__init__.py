"""The local tool runtime the API backends (generateContent, Interactions) give their model.

It knows nothing of adapters or backends; an adapter drives it like this::

    user_input = ctx.ask_user if params.on_user_input else None   # nobody to ask: ASK_USER means deny
    async with ToolRuntime(params.cwd, include_directories=params.include_directories,
                           approval_mode=params.approval_mode, excluded_tools=params.excluded_tools,
                           user_input=user_input) as tools:
        for problem in await tools.connect_mcp(params.mcp_servers):
            ...                                                # emit a `warning` event
        declarations = tools.declarations(family="gemini-3")   # -> the model's tool list
        ...
        outcomes = await tools.run_batch(calls, EventForwarder(ctx.emit))  # one model turn's calls
        # each ToolOutcome.response is the function response, verbatim; inline_data are extra parts

`user_input` bridges the run's questions to the caller: permission prompts become a
`user_input_request` with source `permission`, and the `ask_user` tool (offered only then) one
with source `model-tool`. A lower-level `ask: PermissionRequest -> PermissionAnswer | UserInputResponse`
hook replaces the permission half alone. The observer receives each call's `PermissionDecision` and
`ToolProgress` events, ready to emit; `EventForwarder(emit)` passes them straight to `emit`.
Tool contracts and the policy format: docs/tools.md.
"""

from unified._internal.models import ToolFamily, profile
from unified.tools._ask_user import UserInputBridge
from unified.tools._base import InlineData, ToolError, ToolOutput, ToolSpec
from unified.tools._files import ReadMode
from unified.tools._policy import Decision, Policy, PolicyError, Rule, Verdict
from unified.tools._protected import protected_path, protected_path_patterns
from unified.tools._runtime import (
    ALIASES,
    AskPermission,
    EventForwarder,
    McpConnectError,
    NullObserver,
    PermissionAnswer,
    PermissionRequest,
    ToolCall,
    ToolObserver,
    ToolOutcome,
    ToolRuntime,
)


def tool_family(model_id: str | None) -> ToolFamily:
    """The declaration set for a model id: Gemini 3 models get theirs, everything else the legacy one
    (the model profiles in `unified._internal.models` decide)."""
    return profile(model_id).tool_family


__all__ = [
    "ALIASES",
    "AskPermission",
    "Decision",
    "EventForwarder",
    "InlineData",
    "McpConnectError",
    "NullObserver",
    "PermissionAnswer",
    "PermissionRequest",
    "Policy",
    "PolicyError",
    "ReadMode",
    "Rule",
    "ToolCall",
    "ToolError",
    "ToolFamily",
    "ToolObserver",
    "ToolOutcome",
    "ToolOutput",
    "ToolRuntime",
    "ToolSpec",
    "UserInputBridge",
    "Verdict",
    "protected_path",
    "protected_path_patterns",
    "tool_family",
]
