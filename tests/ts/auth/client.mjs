// The TypeScript SDK client's side of the auth tests: an OAuthClientProvider
// that keeps everything in memory and, instead of opening a browser, follows
// the authorization request through the (auto-approving) authorization
// server to capture the code, as a person clicking through would.

import { randomBytes } from 'node:crypto';
import { followAuthorization } from './browser.mjs';

/** Where the authorization server sends the code; never actually visited. */
export const REDIRECT_URI = 'http://127.0.0.1/callback';

export class TestOAuthClient {
  constructor() {
    /** Every authorization URL the SDK sent the "browser" to, in order. */
    this.authorizations = [];
    /** The code from the last authorization, for `transport.finishAuth`. */
    this.code = undefined;
    this._state = undefined;
    this._client = undefined;
    this._tokens = undefined;
    this._verifier = undefined;
  }

  get redirectUrl() {
    return REDIRECT_URI;
  }

  get clientMetadata() {
    return {
      client_name: 'mcp-wasm-host auth test (TypeScript SDK)',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      // A public client: PKCE is what binds the code to it.
      token_endpoint_auth_method: 'none',
    };
  }

  state() {
    this._state = randomBytes(16).toString('base64url');
    return this._state;
  }

  clientInformation() {
    return this._client;
  }

  saveClientInformation(info) {
    this._client = info;
  }

  tokens() {
    return this._tokens;
  }

  saveTokens(tokens) {
    this._tokens = tokens;
  }

  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }

  codeVerifier() {
    if (!this._verifier) throw new Error('no code verifier saved');
    return this._verifier;
  }

  async redirectToAuthorization(url) {
    this.authorizations.push(new URL(url));
    const answer = await followAuthorization(url, REDIRECT_URI);
    if (answer.error) throw new Error(`authorization refused: ${answer.error} ${answer.error_description ?? ''}`);
    if (answer.state !== this._state) throw new Error(`state mismatch: ${answer.state} != ${this._state}`);
    this.code = answer.code;
  }
}
