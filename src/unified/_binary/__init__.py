"""What a backend that drives an agent binary needs, written once (gemini-cli now; Claude Code and Codex next).

Each module has one role and knows nothing of any particular binary; a backend brings the data
(a `BinarySpec`, an environment allowlist, how to route its messages) and keeps its own protocol
translation:

- `install`: find the pinned binary (option, env var, project-local folder, user data folder,
  PATH), probe its version, install it with npm (never globally);
- `environment`: the child's environment (allowlisted, with the backend's additions) and files
  handed to it by content;
- `process`: the real `AgentProcess`: own process group, non-blocking pipes usable from any event
  loop, the whole group ended on close, a bounded and redacted stderr tail;
- `framing`: JSON Lines with a line cap (a bad line is a typed error, never a crash);
- `jsonrpc`: a JSON-RPC 2.0 connection over an `AgentProcess`, shared by the sessions it hosts;
- `pool`: a keyed, bounded pool of warm processes with an idle TTL;
- `follow`: following JSONL files (session logs) as the binary appends to them.

Importing this package imports none of them: each is imported where it is used.
"""

__all__: list[str] = []
