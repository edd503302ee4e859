// mcp-wasm-host --http with opaque access tokens, validated by
// introspection (RFC 7662), end to end: the TypeScript SDK's client gets
// its token from the SDK's own example authorization server (mcpAuthRouter
// with the example's in-memory provider, tests/ts/auth/sdk-example-server.mjs),
// whose tokens are random strings only its /introspect can explain.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EXAMPLE_SCOPE, startExampleServer } from './auth/sdk-example-server.mjs';
import { TestOAuthClient } from './auth/client.mjs';
import { startAuthHost } from './auth/host.mjs';

/** POSTs an `initialize` to the host with `token`; resolves with the response. */
function initialize(url, token) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
      protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'auth-test', version: '1' } } }),
  });
}

// Opaque tokens (not JWTs) checked by introspection (RFC 7662): the host
// authenticates as --auth-client-id to the server's introspection endpoint.
test("opaque tokens from the SDK's example authorization server are checked by introspection", async (t) => {
  const server = await startExampleServer();
  t.after(() => server.close());
  const dir = mkdtempSync(join(tmpdir(), 'mcp-wasm-host-introspection-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const secretFile = join(dir, 'client-secret');
  writeFileSync(secretFile, server.resourceServer.secret, { mode: 0o600 });
  const host = await startAuthHost({
    issuer: server.issuer,
    args: [
      '--auth-scopes', EXAMPLE_SCOPE,
      '--auth-introspection-url', server.introspectionUrl,
      '--auth-client-id', server.resourceServer.id,
      '--auth-client-secret-file', secretFile,
    ],
  });
  t.after(() => host.stop());

  // The SDK client: 401 → metadata → the example server → register →
  // code + PKCE → an opaque token.
  const oauth = new TestOAuthClient();
  const first = new Client({ name: 'auth-test', version: '1.0.0' });
  await assert.rejects(first.connect(new StreamableHTTPClientTransport(new URL(host.url), { authProvider: oauth })),
    UnauthorizedError);
  assert.equal(oauth.authorizations[0].searchParams.get('resource'), host.url);
  const transport = new StreamableHTTPClientTransport(new URL(host.url), { authProvider: oauth });
  await transport.finishAuth(oauth.code);
  const token = oauth.tokens().access_token;
  assert.doesNotMatch(token, /\./, 'an opaque token, not a JWT');

  const client = new Client({ name: 'auth-test', version: '1.0.0' });
  t.after(() => client.close());
  await client.connect(transport);
  const echo = await client.callTool({ name: 'echo', arguments: { text: 'introspected' } });
  assert.equal(echo.content[0].text, 'introspected');
  assert.ok(server.introspections.some((call) => call.active), 'the host asked /introspect');
  assert.ok(server.introspections.every((call) => call.authenticated),
    'always as the resource server (client_id + secret)');

  // A token the server never issued: inactive, refused.
  const unknown = await initialize(host.url, randomUUID());
  assert.equal(unknown.status, 401);
  assert.match(unknown.headers.get('www-authenticate'), /error="invalid_token"/);

  // A token the server did issue and calls active, but for another
  // resource: its audience is checked too.
  const foreign = randomUUID();
  server.provider.tokens.set(foreign, {
    token: foreign,
    clientId: oauth.clientInformation().client_id,
    scopes: [EXAMPLE_SCOPE],
    expiresAt: Date.now() + 3_600_000,
    resource: new URL('http://127.0.0.1:1/other-mcp-server'),
    type: 'access',
  });
  const refused = await initialize(host.url, foreign);
  assert.equal(refused.status, 401);
  assert.match(refused.headers.get('www-authenticate'), /error="invalid_token"/);
});
