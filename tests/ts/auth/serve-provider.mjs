// The auth tests' oidc-provider (provider.mjs) as a process of its own, for
// tests in other languages (tests/py/test_auth.py):
//
//   node serve-provider.mjs [--resource URL=SCOPES]... [--client ID:SECRET]...
//
// --resource lets tokens be issued for URL (their audience) with SCOPES
// (space-separated); --client registers a confidential client for the
// client-credentials grant. Prints one JSON line, {"issuer": "http://..."},
// on stdout once it listens, and exits when stdin closes, so it never
// outlives the test that started it.

import { parseArgs } from 'node:util';
import { startProvider } from './provider.mjs';

const { values } = parseArgs({
  options: {
    resource: { type: 'string', multiple: true, default: [] },
    client: { type: 'string', multiple: true, default: [] },
  },
});

const clients = values.client.map((pair) => {
  const at = pair.indexOf(':');
  if (at < 1) throw new Error(`--client ${pair}: expected ID:SECRET`);
  return {
    client_id: pair.slice(0, at),
    client_secret: pair.slice(at + 1),
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
  };
});

const provider = await startProvider({ clients });
for (const pair of values.resource) {
  const at = pair.indexOf('=');
  if (at < 1) throw new Error(`--resource ${pair}: expected URL=SCOPES`);
  provider.addResource(pair.slice(0, at), pair.slice(at + 1));
}

process.stdout.write(`${JSON.stringify({ issuer: provider.issuer })}\n`);
process.stdin.resume();
process.stdin.on('end', () => provider.close().then(() => process.exit(0)));
process.on('SIGTERM', () => provider.close().then(() => process.exit(0)));
