// Drives mcp-wasm-host with the official TypeScript SDK client over stdio:
// callTool(..., { signal }) then abort() must stop the tool in the sandbox,
// run its cleanup, send no result, and leave the server ready for the next call.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { callEnded, collectLines, demo, hostBinary, jsonLog, until } from './helpers.mjs';

/** Starts the host with `args` and connects an SDK client; collects stderr lines. */
async function connect(args) {
  const transport = new StdioClientTransport({
    command: hostBinary,
    args: [...jsonLog, ...args],
    stderr: 'pipe',
    env: { ...process.env, RUST_LOG: 'mcp_wasm_host=info', NO_COLOR: '1' },
  });
  const lines = collectLines(transport.stderr);
  const client = new Client({ name: 'mcp-wasm-host-ts-test', version: '1.0.0' });
  await client.connect(transport);
  // Every message as it arrives, before the SDK dispatches it.
  const received = [];
  const dispatch = transport.onmessage;
  transport.onmessage = (message, extra) => {
    received.push(message);
    dispatch(message, extra);
  };
  return { client, lines, received };
}

function locksIn(dir) {
  return readdirSync(dir).filter((f) => f.endsWith('.lock'));
}

for (const tool of ['spin', 'stall']) {
  test(`abort() stops \`${tool}\`, cleanup runs, and the next call is served`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-wasm-host-ts-'));
    const { client, lines } = await connect(['--component', demo, '--dir', dir]);
    try {
      const controller = new AbortController();
      const started = Date.now();
      const call = client.callTool({ name: tool, arguments: {} }, undefined, { signal: controller.signal });
      await until(`${tool} to take its lock`, () => locksIn(dir).length === 1);
      // The user gives up 100 ms into the call.
      await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - started))));
      controller.abort('the user gave up');
      await assert.rejects(call, /abort|gave up/i);

      await until(`the host to end the ${tool} call`, () => callEnded(lines, tool));
      const ended = callEnded(lines, tool);
      assert.equal(ended.fields.stop_reason, 'client-cancelled', JSON.stringify(ended));
      assert.equal(ended.fields.cleanup, 'done', JSON.stringify(ended));
      assert.deepEqual(locksIn(dir), [], 'cleanup removed the lock');

      const echo = await client.callTool({ name: 'echo', arguments: { text: 'after the abort' } });
      assert.equal(echo.content[0].text, 'after the abort');
    } finally {
      await client.close();
    }
  });
}

test('tools/list over the SDK shows the demo tools with object schemas', async () => {
  const { client } = await connect(['--component', demo]);
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of ['echo', 'countdown', 'spin', 'stall']) assert.ok(names.includes(name), name);
    for (const t of tools) assert.equal(t.inputSchema.type, 'object');
  } finally {
    await client.close();
  }
});

test('progress goes out only when the request carries a progress token', async () => {
  const { client, received } = await connect(['--component', demo]);
  try {
    const seen = [];
    // 50 ms between reports, so the first ones arrive in reads of their own.
    await client.callTool({ name: 'countdown', arguments: { steps: 3, step_ms: 50 } }, undefined, {
      onprogress: (p) => seen.push(`${p.progress}/${p.total}`),
    });
    // On the wire, every report came before the result...
    const progress = received
      .filter((m) => m.method === 'notifications/progress')
      .map((m) => `${m.params.progress}/${m.params.total}`);
    assert.deepEqual(progress, ['1/3', '2/3', '3/3']);
    // ...but the SDK runs progress handlers a microtask later and settles
    // the call at once: a report that arrives in the same read as the
    // result is dropped by the SDK itself. What it passed on is in order.
    assert.deepEqual(seen, progress.slice(0, seen.length));
    assert.ok(seen.length >= 1, 'the SDK passed on at least the first report');
    // Without onprogress the SDK sends no token; the host then sends no progress
    // (the SDK would reject an unknown token as an error on the transport).
    const errors = [];
    client.onerror = (e) => errors.push(e);
    await client.callTool({ name: 'countdown', arguments: { steps: 3, step_ms: 1 } });
    assert.deepEqual(errors, []);
  } finally {
    await client.close();
  }
});
