// The TypeScript SDK's own example authorization server, for opaque tokens:
// `mcpAuthRouter` over the example's in-memory provider
// (examples/server/demoInMemoryOAuthProvider.js), plus the `/introspect`
// endpoint (RFC 7662) that the example's `setupAuthServer` adds. That
// function listens on a port fixed in advance and exits the process on
// error, so this assembles the same parts on port 0 instead.
//
// Its tokens are random UUIDs: a resource server can only learn what one
// means by asking `/introspect`. The example's endpoint asks the caller for
// no credentials; here it requires the resource server's (client_id and
// secret, HTTP Basic or in the form), as RFC 7662 §2.1 says it should, and
// records every call so a test can see the host introspected.

import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import express from 'express';
import { mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';

/** The scope the example server supports (as in the SDK's example). */
export const EXAMPLE_SCOPE = 'mcp:tools';

/** The resource server's credentials and whether a request presents them. */
function presents(req, { id, secret }) {
  const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString();
    const at = decoded.indexOf(':');
    return decodeURIComponent(decoded.slice(0, at)) === id && decodeURIComponent(decoded.slice(at + 1)) === secret;
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
  // The example's /introspect (setupAuthServer), behind the caller check.
  app.post('/introspect', async (req, res) => {
    const authenticated = presents(req, resourceServer);
    if (!authenticated) {
      introspections.push({ authenticated, active: false });
      res.status(401).json({ error: 'invalid_client' });
      return;
    }
    try {
      const { token } = req.body;
      if (!token) {
        res.status(400).json({ error: 'Token is required' });
        return;
      }
      const tokenInfo = await provider.verifyAccessToken(token);
      introspections.push({ authenticated, active: true });
      res.json({
        active: true,
        client_id: tokenInfo.clientId,
        scope: tokenInfo.scopes.join(' '),
        exp: tokenInfo.expiresAt,
        aud: tokenInfo.resource,
      });
    } catch (error) {
      introspections.push({ authenticated, active: false });
      res.status(401).json({ active: false, error: 'Unauthorized', error_description: `Invalid token: ${error}` });
    }
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
