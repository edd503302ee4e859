// The TypeScript SDK's own example authorization server, for opaque tokens:
// `mcpAuthRouter` over the example's in-memory provider
// (examples/server/demoInMemoryOAuthProvider.js), plus an `/introspect`
// endpoint (RFC 7662) modelled on the one the example's `setupAuthServer`
// adds. That function listens on a port fixed in advance and exits the
// process on error, so this assembles the same parts on port 0 instead.
//
// Its tokens are random UUIDs: a resource server can only learn what one
// means by asking `/introspect`. The example's own endpoint differs from
// RFC 7662 in three ways, changed here (each would make a correct
// resource server refuse every token or fail closed):
// - it asks the caller for no credentials; here the resource server must
//   authenticate (HTTP Basic or in the form, RFC 7662 §2.1);
// - it answers an unknown or expired token with 401 (which reads as "your
//   credentials were refused"); here with 200 `{"active": false}` (§2.2);
// - its answer names no subject; here `sub` is the user the example's
//   provider pretends logged in (`demo_user`), and `iss` the issuer.
// Every call is recorded, so a test can see the host introspected.

import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import express from 'express';
import { mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';

/** The scope the example server supports (as in the SDK's example). */
export const EXAMPLE_SCOPE = 'mcp:tools';

/** The user the example's provider pretends logged in (its session cookie). */
export const DEMO_USER = 'demo_user';

/** The resource server's credentials and whether a request presents them. */
function presents(req, { id, secret }) {
  const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString();
    const at = decoded.indexOf(':');
    // Each part is form-encoded before the Basic encoding (RFC 6749 §2.3.1).
    const part = (text) => decodeURIComponent(text.replaceAll('+', ' '));
    return part(decoded.slice(0, at)) === id && part(decoded.slice(at + 1)) === secret;
  }
  return req.body?.client_id === id && req.body?.client_secret === secret;
}

/**
 * Starts the example authorization server on 127.0.0.1, port 0.
 * Resolves with `{ issuer, introspectionUrl, resourceServer: { id, secret },
 * introspections, provider, close() }`: `introspections` lists each
 * introspection call as `{ authenticated, active }`; `provider` is the
 * example's DemoInMemoryAuthProvider (its `tokens` map holds what it issued).
 */
export async function startExampleServer() {
  const app = express();
  const server = createServer(app);
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const issuerUrl = new URL(`http://127.0.0.1:${server.address().port}`);
  const provider = new DemoInMemoryAuthProvider();
  const resourceServer = { id: 'mcp-wasm-host', secret: randomBytes(24).toString('base64url') };
  const introspections = [];

  app.use(express.json());
  app.use(express.urlencoded());
  app.use(mcpAuthRouter({ provider, issuerUrl, scopesSupported: [EXAMPLE_SCOPE] }));
  // The example's /introspect (setupAuthServer), with the changes above.
  app.post('/introspect', async (req, res) => {
    const authenticated = presents(req, resourceServer);
    if (!authenticated) {
      introspections.push({ authenticated, active: false });
      res.status(401).json({ error: 'invalid_client' });
      return;
    }
    const { token } = req.body;
    if (!token) {
      res.status(400).json({ error: 'Token is required' });
      return;
    }
    let tokenInfo;
    try {
      tokenInfo = await provider.verifyAccessToken(token);
    } catch {
      introspections.push({ authenticated, active: false });
      res.json({ active: false });
      return;
    }
    introspections.push({ authenticated, active: true });
    res.json({
      active: true,
      client_id: tokenInfo.clientId,
      scope: tokenInfo.scopes.join(' '),
      exp: tokenInfo.expiresAt,
      aud: tokenInfo.resource,
      sub: DEMO_USER,
      iss: issuerUrl.href,
    });
  });

  return {
    issuer: issuerUrl.href,
    introspectionUrl: new URL('/introspect', issuerUrl).href,
    resourceServer,
    introspections,
    provider,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
