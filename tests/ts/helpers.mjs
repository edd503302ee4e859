// Shared by the TypeScript SDK tests: where the host and the demo component
// are, reading its log events, and waiting on a condition with a bound
// instead of sleeping blindly.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const hostBinary = process.env.MCP_WASM_HOST ?? join(root, 'target/release/mcp-wasm-host');
export const demo = join(root, 'target/guests/demo.wasm');
const PATIENCE_MS = 20_000;

/** A component built into target/guests (`just build guests`); a missing one fails the test. */
export function guest(name) {
  const path = join(root, `target/guests/${name}.wasm`);
  assert.ok(existsSync(path), `missing test fixture ${path}: run \`just build guests\``);
  return path;
}

for (const [what, path] of [['host binary', hostBinary], ['demo component', demo]]) {
  assert.ok(existsSync(path), `missing ${what} at ${path}: run \`just build guests\``);
}

/** Resolves once `check()` is true; fails after PATIENCE_MS. */
export async function until(what, check) {
  const deadline = Date.now() + PATIENCE_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** Arguments that make the host log one JSON object per line (see `events`). */
export const jsonLog = ['--log-format', 'json'];

/** Collects a stream's text output as lines. */
export function collectLines(stream) {
  const lines = [];
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop();
    lines.push(...parts);
  });
  return lines;
}

/** The log events among the host's stderr lines (`--log-format json`):
 * `{ level, target, fields: { message, ... }, span }`. Other lines (a
 * panic, the --http address) are skipped. */
export function events(lines) {
  return lines.flatMap((line) => {
    try {
      const event = JSON.parse(line);
      return event && typeof event.fields === 'object' ? [event] : [];
    } catch {
      return [];
    }
  });
}

/** The host's `call ended` event for a call of `tool`, if logged yet. */
export function callEnded(lines, tool) {
  return events(lines).find((e) => e.fields.message === 'call ended' && e.fields.tool === tool);
}

/** Starts `mcp-wasm-host --http 127.0.0.1:0` serving `component` with
 * `args`; resolves with the child, its URL and its stderr lines. */
export async function startHttpHost(component, args = []) {
  const child = spawn(hostBinary, [...jsonLog, '--http', '127.0.0.1:0', '--component', component, ...args], {
    env: { ...process.env, RUST_LOG: 'mcp_wasm_host=info', NO_COLOR: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const lines = collectLines(child.stderr);
  // The announcement is a plain line, not a log event.
  const announced = /^mcp-wasm-host: serving MCP over Streamable HTTP at (http:\/\/127\.0\.0\.1:\d+\/mcp)$/;
  await until('the host to announce its URL', () => lines.some((l) => announced.test(l)));
  const url = lines.map((l) => l.match(announced)).find(Boolean)[1];
  return { child, url, lines };
}
