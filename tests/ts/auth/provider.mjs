// A real authorization server for the auth tests: oidc-provider (a certified
// OpenID provider) on loopback, port 0. It issues JWT access tokens (RFC
// 9068) per resource indicator (RFC 8707), registers clients dynamically
// (RFC 7591), requires PKCE, and serves the client-credentials grant.
//
// There is no person to log in or consent, so the test stands in for one:
// every authorization logs in as the fixed account ACCOUNT, and every
// request is granted what it asks (`loadExistingGrant`, and the consent
// page for native clients, which oidc-provider always asks): the
// interaction pages below finish themselves. Only resources the test
// registered (`addResource`) get tokens, and only with the scopes
// registered for them.

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { errors, Provider } from 'oidc-provider';

/** The `sub` of every token issued through the authorization-code flow. */
export const ACCOUNT = 'test-user';

/** Scopes the provider advertises as its own, besides OpenID's. The MCP
 * SDKs register clients with the scopes the host advertises, and
 * oidc-provider registers only scopes it advertises, so those must be here;
 * but it also holds a client to the scopes here that it registered with,
 * so a scope a client steps up to later (`tools:admin`) must not be: that
 * one exists only as a resource server's scope (`addResource`). */
export const SCOPES = ['tools:call'];

/** Access tokens live this long (seconds): longer than any test. */
const TOKEN_TTL = 300;

/** A saved grant of everything an authorization request asks: its scopes
 * as the provider's, and for each resource it names (the access token
 * still carries only the scopes its resource server defines, see
 * getResourceServerInfo). */
async function grantAll(provider, clientId, accountId, params) {
  const grant = new provider.Grant({ clientId, accountId });
  const scope = typeof params.scope === 'string' ? params.scope : '';
  grant.addOIDCScope(scope);
  for (const resource of [params.resource].flat().filter(Boolean)) {
    grant.addResourceScope(resource, scope);
  }
  await grant.save();
  return grant;
}

/** A fresh private signing key as a JWK, with a key id. */
function signingKey(kind, kid) {
  const { privateKey } =
    kind === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...privateKey.export({ format: 'jwk' }), kid, use: 'sig' };
}

/**
 * Starts the provider on 127.0.0.1 with a free port.
 *
 * `clients`: statically registered clients (oidc-provider client metadata),
 * e.g. a confidential client for the client-credentials grant.
 *
 * `scopes`: the scopes to advertise (besides `openid` and `offline_access`).
 *
 * Resolves with `{ issuer, addResource(url, scope), close() }`.
 */
export async function startProvider({ clients = [], scopes = SCOPES } = {}) {
  const server = createServer();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const issuer = `http://127.0.0.1:${server.address().port}`;
  // Resource indicator → the scopes its tokens may carry (space-separated).
  const resources = new Map();

  const provider = new Provider(issuer, {
    clients,
    scopes: ['openid', 'offline_access', ...scopes],
    // RS256 for ID tokens (the OpenID default); ES256 signs the access
    // tokens, so the resource server has to pick the right key by `kid`.
    jwks: { keys: [signingKey('rsa', 'id-token-key'), signingKey('ec', 'access-token-key')] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // A code or client-credentials request for a single resource may
        // omit it at the token endpoint.
        defaultResource: async (_ctx, _client, oneOf) => oneOf,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, indicator) => {
          const scope = resources.get(indicator);
          if (scope === undefined) throw new errors.InvalidTarget(`no resource server ${indicator}`);
          return {
            scope,
            audience: indicator,
            accessTokenFormat: 'jwt',
            accessTokenTTL: TOKEN_TTL,
            jwt: { sign: { alg: 'ES256', kid: 'access-token-key' } },
          };
        },
      },
    },
    pkce: { required: () => true },
    // Consent, auto-approved: a logged-in session gets a grant for what the
    // request asks, so no consent prompt is shown (except where
    // oidc-provider always asks, see `interact`).
    loadExistingGrant: async (ctx) => {
      const { client, params, session } = ctx.oidc;
      if (!session.accountId) return undefined;
      return grantAll(ctx.oidc.provider, client.clientId, session.accountId, params);
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    ttl: {
      AccessToken: TOKEN_TTL,
      ClientCredentials: TOKEN_TTL,
      AuthorizationCode: 60,
      Grant: TOKEN_TTL,
      IdToken: TOKEN_TTL,
      Interaction: 60,
      RefreshToken: TOKEN_TTL,
      Session: TOKEN_TTL,
    },
    renderError: async (ctx, out) => {
      ctx.type = 'application/json';
      ctx.body = out;
    },
  });

  // The login and consent pages, answered at once: the person at the
  // keyboard is ACCOUNT and approves everything. Consent is asked only of
  // native clients (oidc-provider always asks them; the Python SDK
  // registers as one, `application_type: native`), since
  // loadExistingGrant covers the rest.
  async function interact(req, res) {
    try {
      const { prompt, params, session } = await provider.interactionDetails(req, res);
      let result;
      if (prompt.name === 'login') {
        result = { login: { accountId: ACCOUNT } };
      } else if (prompt.name === 'consent') {
        const grant = await grantAll(provider, params.client_id, session.accountId, params);
        result = { consent: { grantId: grant.jti } };
      } else {
        throw new Error(`unexpected prompt ${prompt.name} (${prompt.reasons})`);
      }
      await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
    } catch (error) {
      res.statusCode = 500;
      res.setHeader('content-type', 'text/plain');
      res.end(`interaction failed: ${error.message}`);
    }
  }

  const callback = provider.callback();
  server.on('request', (req, res) => {
    const { pathname } = new URL(req.url, issuer);
    if (req.method === 'GET' && /^\/interaction\/[\w-]+$/.test(pathname)) {
      interact(req, res);
    } else {
      callback(req, res);
    }
  });

  return {
    issuer,
    /** Lets tokens be issued for `url` (the audience), with `scope` (space-separated). */
    addResource(url, scope) {
      resources.set(url, scope);
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
