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
- `proxy`: a local forwarder standing in for a proxy URL with a password, which the child never gets;
- `framing`: JSON Lines with a line cap (a bad line is a typed error, never a crash);
- `jsonrpc`: a JSON-RPC 2.0 connection over an `AgentProcess`, shared by the sessions it hosts;
- `pool`: a keyed, bounded pool of warm processes with an idle TTL;
- `spares`: a keyed, bounded set of processes started ahead, each for one later run, with an idle
  TTL (for a binary with one session per process);
- `follow`: following JSONL files (session logs) as the binary appends to them.

Importing this package imports none of them: each is imported where it is used.

How the binaries driven or planned map onto it (docs/backends/gemini-cli.md shows the first):

- Gemini CLI (`gemini --acp`): spec `@google/gemini-cli`; home `GEMINI_CLI_HOME` (the user's);
  `JsonRpcConnection` routed by `params.sessionId`; many sessions per pooled process; session
  files `tmp/<project>/chats/*.jsonl`.
- Claude Code (`claude -p --input-format stream-json --output-format stream-json`): spec
  `@anthropic-ai/claude-code` (a native executable of about 400 MB); home `CLAUDE_CONFIG_DIR`;
  JSON lines with an envelope of its own (`control_request` / `control_response` matched by
  `request_id`) over the same `AgentProcess`; one session per process, so no warm pool but spares
  (`spares`: the next run's process started ahead); session files `projects/<cwd>/<uuid>.jsonl`.
- Codex (`codex app-server`): spec `@openai/codex`; home `CODEX_HOME` (with its `config.toml`);
  `JsonRpcConnection(jsonrpc_field=False)` routed by `params.threadId`, its approval requests
  answered through `on_request` or the thread's inbox; many threads per process; session files
  `sessions/YYYY/MM/DD/rollout-*.jsonl`.
"""

__all__: list[str] = []
