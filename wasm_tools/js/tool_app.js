// The toolcage:tool world's export around an operator's tool written in JavaScript.
//
// The build (python -m toolcage.wasm_tools.build --js-tool NAME.js) puts this module beside
// the tool's own files, with tool_name.js re-exporting the tool's module as `tool`.
// componentize-js evaluates the modules at build time and snapshots the engine, so the
// tool's top level runs once; each call is a fresh instance of that snapshot.
//
// A tool's module exports `run(args)`: `args` is the object of its validated parameters; a
// string it returns is the result's text, any other value is sent as JSON. What it throws
// is the call's execution_error: an Error as "Name: message" (its stack goes to stderr,
// which the host logs), a failed host call's reason (the thrown value's `payload`), or the
// thrown value as text.
import { tool } from './tool_name.js';

function reason(error) {
  if (typeof error?.payload === 'string') return error.payload;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

export function run(args) {
  try {
    const result = tool.run(JSON.parse(args));
    if (result instanceof Promise) {
      throw new TypeError('run returned a Promise: a tool runs synchronously');
    }
    return typeof result === 'string' ? result : (JSON.stringify(result) ?? 'null');
  } catch (error) {
    console.error(error instanceof Error ? `${reason(error)}\n${error.stack}` : reason(error));
    throw reason(error);
  }
}
