// unified's key loader for the gemini CLI, preloaded by node (`--require` in NODE_OPTIONS) before the CLI's
// own code runs. Why: a process's exec environment stays readable for its whole life by every process of the
// same user (/proc/<pid>/environ), and the CLI's node process is the parent of every shell command the model
// runs, so a key put there is one `cat /proc/$PPID/environ` away from the model. unified therefore starts the
// CLI without its key and hands the key over through an inherited pipe (src/unified/_binary/process.py,
// PipedEnv): its descriptor number is in UNIFIED_GEMINI_ENV_FD, its content one JSON line of names to values
// (null: delete the variable). This sets them in process.env (what the CLI reads; node's setenv never writes
// into the exec environment /proc shows), closes the pipe and removes UNIFIED_GEMINI_ENV_FD, so neither the
// CLI's children nor anything reading /proc/<pid>/fd finds the key. Without the variable it does nothing (a
// node the model runs inherits NODE_OPTIONS only when the message did not take our --require back out of it).
// A failure is an exit with code 78 and one line on stderr: the CLI never runs without the key it was given.
//
// The names listed in the message's UNIFIED_GEMINI_HIDE (comma-separated; never set as a variable) stay
// readable by name (process.env.GEMINI_API_KEY, `in`, Object.hasOwn: what the CLI and its .env loading ask)
// but are left out of every enumeration of process.env (Object.keys, for..in, {...process.env}): the CLI
// builds each child's environment so (its shell tool, hooks, MCP servers, node's own child_process
// default), so no command the model runs inherits the key, even where the CLI's own redaction is off
// (it reads unified's system settings only as root).
"use strict";
(() => {
  const variable = "UNIFIED_GEMINI_ENV_FD";
  const text = process.env[variable];
  if (text === undefined) {
    return;
  }
  delete process.env[variable];
  const fs = require("node:fs");
  const fd = /^[0-9]+$/.test(text) ? Number(text) : -1;
  let open = fd >= 0;
  try {
    if (fd < 0) {
      throw new Error(`${variable} is not a file descriptor: ${JSON.stringify(text)}`);
    }
    const chunks = [];
    const buffer = Buffer.alloc(4096);
    for (;;) {
      const count = fs.readSync(fd, buffer, 0, buffer.length, null);
      if (count === 0) {
        break;
      }
      chunks.push(Buffer.from(buffer.subarray(0, count)));
      if (buffer.subarray(0, count).includes(10)) {
        break;
      }
    }
    open = false;
    fs.closeSync(fd);
    const line = Buffer.concat(chunks).toString("utf8");
    if (!line.endsWith("\n")) {
      throw new Error("the pipe ended before the whole message");
    }
    const values = JSON.parse(line);
    const hideVariable = "UNIFIED_GEMINI_HIDE";
    const hidden = new Set(typeof values[hideVariable] === "string" ? values[hideVariable].split(",") : []);
    delete values[hideVariable];
    for (const [name, value] of Object.entries(values)) {
      if (value === null) {
        delete process.env[name];
      } else if (typeof value === "string") {
        process.env[name] = value;
      }
    }
    if (hidden.size > 0) {
      const names = (target) => Reflect.ownKeys(target).filter((name) => !hidden.has(name));
      process.env = new Proxy(process.env, { ownKeys: names });
    }
  } catch (error) {
    if (open) {
      try {
        fs.closeSync(fd);
      } catch {}
    }
    process.stderr.write(`unified: the gemini CLI's key loader could not read its credentials: ${error.message}\n`);
    process.exit(78);
  }
})();
