// mcp-wasm-host --http: the TypeScript SDK's Streamable HTTP client gets the
// same cancel path as stdio (abort() stops the tool, cleanup runs, the next
// call is served), and requests naming a foreign Host are refused.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { callEnded, demo, startHttpHost, until } from './helpers.mjs';

test('over HTTP, abort() stops a spinning tool, cleanup runs, the next call is served', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-wasm-host-http-'));
  const { child, url, lines } = await startHttpHost(demo, ['--dir', dir]);
  const client = new Client({ name: 'mcp-wasm-host-http-test', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const controller = new AbortController();
    const call = client.callTool({ name: 'spin', arguments: {} }, undefined, { signal: controller.signal });
    await until('spin to take its lock', () => readdirSync(dir).some((f) => f.endsWith('.lock')));
    controller.abort('the user gave up');
    await assert.rejects(call, /abort|gave up/i);
    await until('the host to end the spin call', () => callEnded(lines, 'spin'));
    const ended = callEnded(lines, 'spin');
    assert.equal(ended.fields.stop_reason, 'client-cancelled', JSON.stringify(ended));
    assert.equal(ended.fields.cleanup, 'done', JSON.stringify(ended));
    assert.deepEqual(readdirSync(dir), []);
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'over http' } });
    assert.equal(echo.content[0].text, 'over http');
  } finally {
    await client.close();
    child.kill('SIGTERM');
  }
});

/** POSTs an `initialize` naming `host` in the Host header (and `origin`, if
 * given, as a browser would); resolves with the status. */
function initializeAs(url, host, origin) {
  const { port } = new URL(url);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
    protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'host-check', version: '1' } } });
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/mcp', method: 'POST',
        headers: { Host: host, 'Content-Type': 'application/json',
                   Accept: 'application/json, text/event-stream',
                   ...(origin ? { Origin: origin } : {}) } },
      (res) => { res.resume(); resolve(res.statusCode); },
    );
    req.on('error', reject);
    req.end(body);
  });
}

test('over HTTP, a request naming a foreign Host is refused (DNS rebinding)', async () => {
  const { child, url } = await startHttpHost(demo, []);
  try {
    const status = await initializeAs(url, 'evil.example.com');
    assert.ok(status >= 400 && status < 500, `status ${status}`);
    assert.equal(await initializeAs(url, new URL(url).host), 200);
  } finally {
    child.kill('SIGTERM');
  }
});

test('over HTTP, --http-allow-host admits a host the user named', async () => {
  const { child, url } = await startHttpHost(demo, ['--http-allow-host', 'tools.internal']);
  try {
    assert.equal(await initializeAs(url, 'tools.internal'), 200);
    const status = await initializeAs(url, 'evil.example.com');
    assert.ok(status >= 400 && status < 500, `status ${status}`);
  } finally {
    child.kill('SIGTERM');
  }
});

test('over HTTP, only loopback origins and --http-allow-origin ones may call from a browser', async () => {
  const { child, url } = await startHttpHost(demo, ['--http-allow-origin', 'https://app.example.com']);
  const host = new URL(url).host;
  try {
    assert.equal(await initializeAs(url, host, 'https://app.example.com'), 200);
    assert.equal(await initializeAs(url, host, `http://${host}`), 200);
    const status = await initializeAs(url, host, 'https://evil.example.com');
    assert.ok(status >= 400 && status < 500, `status ${status}`);
  } finally {
    child.kill('SIGTERM');
  }
});
