// mcp-wasm-host --http --auth-issuer, end to end with a real client and a
// real authorization server, all on loopback: the TypeScript SDK's client
// and oidc-provider (tests/ts/auth/provider.mjs). The client starts with
// nothing but the host's URL: the host's 401 leads it to the resource
// metadata, that to the provider, where it registers itself, authorizes
// with code + PKCE (the test plays the browser) and gets a JWT access token
// for the host, which then serves the call.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ACCOUNT, startProvider } from './auth/provider.mjs';
import { TestOAuthClient } from './auth/client.mjs';
import { jwtClaims, startAuthHost } from './auth/host.mjs';

/** The scope the host advertises and its tokens carry. */
const SCOPE = 'tools:call';

/** POSTs an `initialize` to the host with `token` (if any); resolves with the response. */
function initialize(url, token) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
      protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'auth-test', version: '1' } } }),
  });
}

/** A client-credentials token from `issuer` for `resource`, as client `id`:`secret`. */
async function clientCredentialsToken(issuer, { id, secret }, resource) {
  const discovery = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
  const res = await fetch(discovery.token_endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: SCOPE }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.access_token;
}

/** Connects `client` through a fresh transport with `oauth`; the SDK runs
 * discovery and authorization itself when the host answers 401. */
function transportFor(url, oauth) {
  return new StreamableHTTPClientTransport(new URL(url), { authProvider: oauth });
}

test('the TypeScript SDK client finds the provider from the 401, registers, runs code + PKCE, calls echo', async (t) => {
  const provider = await startProvider();
  t.after(() => provider.close());
  const host = await startAuthHost({
    issuer: provider.issuer,
    args: ['--auth-scopes', SCOPE],
    beforeStart: async (resource) => provider.addResource(resource, SCOPE),
  });
  t.after(() => host.stop());

  // Without a token: 401, and the challenge names the metadata.
  const refused = await initialize(host.url);
  assert.equal(refused.status, 401);
  const metadataUrl = `${new URL(host.url).origin}/.well-known/oauth-protected-resource/mcp`;
  assert.ok(refused.headers.get('www-authenticate').startsWith(`Bearer resource_metadata="${metadataUrl}"`),
    refused.headers.get('www-authenticate'));

  // First connect: the SDK meets the 401, discovers, registers, and sends
  // the "browser" to the provider; the connect itself then fails, as it
  // would while a real browser is away.
  const oauth = new TestOAuthClient();
  const first = new Client({ name: 'auth-test', version: '1.0.0' });
  await assert.rejects(first.connect(transportFor(host.url, oauth)), UnauthorizedError);
  assert.ok(oauth.clientInformation()?.client_id, 'the client registered dynamically');
  assert.equal(oauth.authorizations.length, 1);
  const request = oauth.authorizations[0].searchParams;
  assert.equal(oauth.authorizations[0].origin, provider.issuer, 'authorized at the provider the metadata names');
  assert.equal(request.get('resource'), host.url, 'asked for a token for the host (RFC 8707)');
  assert.equal(request.get('code_challenge_method'), 'S256');
  assert.equal(request.get('scope'), SCOPE);
  assert.ok(oauth.code, 'the provider answered with a code');

  // Back from the "browser": exchange the code (with the PKCE verifier),
  // connect again, call.
  const transport = transportFor(host.url, oauth);
  await transport.finishAuth(oauth.code);
  const { header, payload } = jwtClaims(oauth.tokens().access_token);
  assert.equal(header.typ, 'at+jwt');
  assert.equal(header.alg, 'ES256');
  assert.equal(payload.iss, provider.issuer);
  assert.equal(payload.aud, host.url);
  assert.equal(payload.sub, ACCOUNT);
  assert.equal(payload.scope, SCOPE);
  const client = new Client({ name: 'auth-test', version: '1.0.0' });
  t.after(() => client.close());
  await client.connect(transport);
  const echo = await client.callTool({ name: 'echo', arguments: { text: 'through oidc-provider' } });
  assert.equal(echo.isError, false, JSON.stringify(echo));
  assert.equal(echo.content[0].text, 'through oidc-provider');
  assert.equal(oauth.authorizations.length, 1, 'no second authorization was needed');
});

test("a token for another resource (audience) is refused; the same client's token for the host is served", async (t) => {
  const robot = { id: 'robot', secret: 'robot-secret-that-is-long-enough-for-hs256' };
  const provider = await startProvider({
    clients: [{
      client_id: robot.id,
      client_secret: robot.secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
    }],
  });
  t.after(() => provider.close());
  const other = 'http://127.0.0.1:1/other-mcp-server';
  provider.addResource(other, SCOPE);
  const host = await startAuthHost({
    issuer: provider.issuer,
    args: ['--auth-scopes', SCOPE],
    beforeStart: async (resource) => provider.addResource(resource, SCOPE),
  });
  t.after(() => host.stop());

  const foreign = await clientCredentialsToken(provider.issuer, robot, other);
  assert.equal(jwtClaims(foreign).payload.aud, other);
  const refused = await initialize(host.url, foreign);
  assert.equal(refused.status, 401);
  const challenge = refused.headers.get('www-authenticate');
  assert.match(challenge, /error="invalid_token"/);
  assert.match(challenge, /aud/);

  // Same client, same provider, same signing key: only the audience differs.
  const own = await clientCredentialsToken(provider.issuer, robot, host.url);
  assert.equal(jwtClaims(own).payload.sub, robot.id);
  const served = await initialize(host.url, own);
  assert.equal(served.status, 200, await served.text());
});

// A tool needing a scope the token lacks (--tool-scope TOOL=SCOPE): 403
// insufficient_scope, from which the SDK steps up.
test('a missing scope is a 403 the SDK client steps up from, then the call succeeds', async (t) => {
  const ADMIN = 'tools:admin';
  const provider = await startProvider();
  t.after(() => provider.close());
  const host = await startAuthHost({
    issuer: provider.issuer,
    // Advertised: only tools:call, so the client asks for that first.
    args: ['--auth-scopes', SCOPE, '--tool-scope', `echo=${ADMIN}`],
    beforeStart: async (resource) => provider.addResource(resource, `${SCOPE} ${ADMIN}`),
  });
  t.after(() => host.stop());

  const oauth = new TestOAuthClient();
  const first = new Client({ name: 'auth-test', version: '1.0.0' });
  await assert.rejects(first.connect(transportFor(host.url, oauth)), UnauthorizedError);
  const transport = transportFor(host.url, oauth);
  await transport.finishAuth(oauth.code);
  assert.equal(jwtClaims(oauth.tokens().access_token).payload.scope, SCOPE);
  const client = new Client({ name: 'auth-test', version: '1.0.0' });
  t.after(() => client.close());
  await client.connect(transport);

  // The 403 names the missing scope; the SDK re-authorizes for it.
  await assert.rejects(client.callTool({ name: 'echo', arguments: { text: 'step up' } }), UnauthorizedError);
  assert.equal(oauth.authorizations.length, 2);
  assert.ok(oauth.authorizations[1].searchParams.get('scope').split(' ').includes(ADMIN),
    `the step-up asked for ${ADMIN}: ${oauth.authorizations[1]}`);
  await transport.finishAuth(oauth.code);
  assert.ok(jwtClaims(oauth.tokens().access_token).payload.scope.split(' ').includes(ADMIN));
  const echo = await client.callTool({ name: 'echo', arguments: { text: 'step up' } });
  assert.equal(echo.content[0].text, 'step up');
});
