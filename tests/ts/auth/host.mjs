// Starts mcp-wasm-host --http as an OAuth resource server for the auth
// tests. `--auth-resource` must be the URL clients use, port included
// (clients check the metadata's `resource` against the URL they called),
// so the port cannot be chosen by the host (`--http 127.0.0.1:0`): the test
// asks the kernel for a free one, names it in both flags, and starts again
// on another if something took it in between.

import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { demo, hostBinary } from '../helpers.mjs';

const PATIENCE_MS = 20_000;
const ANNOUNCED = /^mcp-wasm-host: serving MCP over Streamable HTTP at (http:\/\/127\.0\.0\.1:\d+\/mcp)$/;

/** A port that was free a moment ago. */
async function freePort() {
  const probe = createServer();
  await new Promise((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', resolve);
  });
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Resolves with the host's URL once it announces it; rejects if it exits first. */
function announced(child, stderr) {
  return new Promise((resolve, reject) => {
    let partial = '';
    const timer = setTimeout(
      () => reject(new Error(`the host did not announce its URL:\n${stderr.join('\n')}`)),
      PATIENCE_MS,
    );
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop();
      for (const line of parts) {
        stderr.push(line);
        const match = line.match(ANNOUNCED);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`the host exited (${code ?? signal}):\n${stderr.join('\n')}`), { stderr }));
    });
  });
}

/**
 * Starts the host with `--auth-issuer issuer --auth-resource <its URL>`,
 * plus `args`. `beforeStart(resource)` runs first with the URL it will
 * have (e.g. to register that resource with the authorization server).
 * Resolves with `{ url, stderr, stop() }`; `url` is the resource.
 */
export async function startAuthHost({ issuer, args = [], beforeStart = async () => {} }) {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const resource = `http://127.0.0.1:${port}/mcp`;
    await beforeStart(resource);
    const child = spawn(
      hostBinary,
      ['--http', `127.0.0.1:${port}`, '--auth-issuer', issuer, '--auth-resource', resource,
        '--component', demo, ...args],
      { env: { ...process.env, RUST_LOG: 'mcp_wasm_host=info', NO_COLOR: '1' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const stderr = [];
    try {
      const url = await announced(child, stderr);
      if (url !== resource) throw new Error(`the host serves ${url}, not ${resource}`);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      return {
        url,
        stderr,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          await exited;
        },
      };
    } catch (error) {
      child.kill('SIGKILL');
      // Another process took the port between the probe and the host.
      if (attempt < 3 && stderr.some((line) => line.includes('cannot listen'))) continue;
      throw error;
    }
  }
}

/** The claims of a JWT (no verification: the host does that). */
export function jwtClaims(token) {
  const [header, payload] = token.split('.').slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url')));
  return { header, payload };
}
