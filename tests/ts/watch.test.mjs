// --watch seen from the official TypeScript SDK client: when a component
// file changes, the client gets notifications/tools/list_changed and the
// new tool list; a call in flight during the swap completes on the old
// version; a broken new version is refused and the old one keeps serving.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { callEnded, collectLines, demo, events, hostBinary, jsonLog, until } from './helpers.mjs';

const hostile = join(demo, '../hostile.wasm');

/** Replaces `path` at once (write beside, rename), as a build's final copy does. */
function replace(path, bytes) {
  writeFileSync(`${path}.new`, bytes);
  renameSync(`${path}.new`, path);
}

const logged = (lines, pred) => events(lines).find((e) => pred(e.fields));

test('a changed component is swapped in; the client sees tools/list_changed and the new list', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-wasm-host-ts-watch-'));
  const tool = join(dir, 'tool.wasm');
  copyFileSync(demo, tool);
  const transport = new StdioClientTransport({
    command: hostBinary,
    args: [...jsonLog, '--component', tool, '--watch', '--watch-interval', '20ms'],
    stderr: 'pipe',
    env: { ...process.env, RUST_LOG: 'mcp_wasm_host=info,tool=info', NO_COLOR: '1' },
  });
  const lines = collectLines(transport.stderr);
  const client = new Client({ name: 'mcp-wasm-host-ts-test', version: '1.0.0' });
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes += 1;
  });
  await client.connect(transport);
  try {
    assert.equal(client.getServerCapabilities()?.tools?.listChanged, true);
    const before = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(before.includes('countdown'), before.join());

    // A call runs on the demo when the file becomes another component.
    const call = client.callTool({ name: 'countdown', arguments: { steps: 30, step_ms: 100, quiet: true } });
    await until('the countdown to run', () => logged(lines, (f) => f.message.startsWith('countdown:')));
    replace(tool, readFileSync(hostile));
    await until('tools/list_changed', () => changes === 1);
    const after = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(after.includes('list_env') && !after.includes('countdown'), after.join());

    // The call in flight completes on the old version, after the swap.
    const result = await call;
    assert.equal(result.content[0].text, 'counted down from 30');
    const all = () => events(lines);
    const reloadedAt = all().findIndex((e) => e.fields.message === 'component reloaded');
    await until('the countdown call to end', () => callEnded(lines, 'countdown'));
    const endedAt = all().findIndex((e) => e.fields.message === 'call ended' && e.fields.tool === 'countdown');
    assert.ok(reloadedAt >= 0 && reloadedAt < endedAt, `the swap came while the call ran: ${reloadedAt} ${endedAt}`);

    // A broken version is refused; the current one keeps serving.
    replace(tool, Buffer.from('not a component'));
    await until('the refusal', () => logged(lines, (f) => f.message.startsWith('reload refused')));
    const listed = await client.callTool({ name: 'list_env', arguments: {} });
    assert.notEqual(listed.isError, true, JSON.stringify(listed));
    assert.equal(changes, 1, 'a refused version changes nothing');
  } finally {
    await client.close();
  }
});
