// The wire bench's TypeScript driver: the official MCP SDK client
// (`Client` + `StdioClientTransport`, from tests/ts/node_modules) drives
// servers over stdio, so host and native server are also compared through
// the client most MCP hosts use. Spawned by `host/benches/node_client.rs`:
//
//   node node_echo.mjs '{"mode":"echo"|"throughput", "calls":N, "servers":[{name, command, args, env}]}'
//   node node_echo.mjs '{"mode":"rounds", "calls":N, "concurrent":M, "rounds":R, "servers":[...]}'
//
// Every server stays up for the whole measurement and the blocks alternate
// between them, so machine noise hits each alike. Prints one JSON line on
// stdout: echo → {name: [latency µs, ...]} (warm-up excluded), throughput →
// {name: [calls/s per round, ...]}, rounds (each round: N/R sequential calls
// then M/R calls at 32 in flight, per server in turn) → {name: {latencies:
// [µs, ...], rates: [calls/s per round, ...], rss_kib: [...], pss_kib:
// [...]}}, the memory read from /proc right after each round's calls at 32
// in flight (a host releases its idle pool memory a second later).

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const sdk = join(root, 'tests/ts/node_modules/@modelcontextprotocol/sdk/dist/esm/client');
if (!existsSync(sdk)) {
  throw new Error(`missing the TypeScript SDK at ${sdk}: run \`just setup --with-node\``);
}
const { Client } = await import(pathToFileURL(join(sdk, 'index.js')).href);
const { StdioClientTransport } = await import(pathToFileURL(join(sdk, 'stdio.js')).href);

const config = JSON.parse(process.argv[2]);
const args = { name: 'echo', arguments: { text: 'hello' } };

async function connect(server) {
  const transport = new StdioClientTransport({
    command: server.command,
    args: server.args,
    env: { ...process.env, ...server.env },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'wire-bench-node', version: '1.0.0' });
  await client.connect(transport);
  // As an MCP host does: list the tools first (the client then validates
  // structured results against any output schema).
  await client.listTools();
  client.pid = transport.pid;
  return client;
}

/** A `/proc/PID/FILE` field in KiB (`VmRSS:` in status, `Pss:` in smaps_rollup). */
function procKib(pid, file, field) {
  const line = readFileSync(`/proc/${pid}/${file}`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(field));
  return Number(line.slice(field.length).trim().split(/\s+/)[0]);
}

async function call(client) {
  const result = await client.callTool(args);
  if (result.isError) throw new Error(`echo failed: ${JSON.stringify(result)}`);
}

/** `n` sequential calls, each one's latency in µs. */
async function sequential(client, n) {
  const times = new Array(n);
  for (let i = 0; i < n; i++) {
    const started = process.hrtime.bigint();
    await call(client);
    times[i] = Number(process.hrtime.bigint() - started) / 1e3;
  }
  return times;
}

/** `total` calls with `inFlight` outstanding at any time; calls/s. */
async function concurrent(client, total, inFlight) {
  let next = 0;
  const started = process.hrtime.bigint();
  const worker = async () => {
    while (next < total) {
      next++;
      await call(client);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return total / (Number(process.hrtime.bigint() - started) / 1e9);
}

const clients = [];
for (const server of config.servers) clients.push(await connect(server));
const out = Object.fromEntries(config.servers.map((s) => [s.name, []]));
if (config.mode === 'echo') {
  for (const client of clients) await sequential(client, 200);
  for (let block = 0; block < 10; block++) {
    for (const [i, client] of clients.entries()) {
      out[config.servers[i].name].push(...(await sequential(client, config.calls / 10)));
    }
  }
} else if (config.mode === 'throughput') {
  for (const client of clients) await concurrent(client, 500, 32);
  for (let round = 0; round < 5; round++) {
    for (const [i, client] of clients.entries()) {
      out[config.servers[i].name].push(await concurrent(client, config.calls / 5, 32));
    }
  }
} else if (config.mode === 'rounds') {
  for (const client of clients) {
    await sequential(client, 200);
    await concurrent(client, 500, 32);
  }
  for (const server of config.servers) {
    out[server.name] = { latencies: [], rates: [], rss_kib: [], pss_kib: [] };
  }
  for (let round = 0; round < config.rounds; round++) {
    for (const [i, client] of clients.entries()) {
      const figures = out[config.servers[i].name];
      figures.latencies.push(...(await sequential(client, config.calls / config.rounds)));
      figures.rates.push(await concurrent(client, config.concurrent / config.rounds, 32));
      figures.rss_kib.push(procKib(client.pid, 'status', 'VmRSS:'));
      figures.pss_kib.push(procKib(client.pid, 'smaps_rollup', 'Pss:'));
    }
  }
} else {
  throw new Error(`unknown mode ${config.mode}`);
}
for (const client of clients) await client.close();
process.stdout.write(JSON.stringify(out) + '\n');
