// The `languages` section's baseline for the JavaScript guest: a native
// server on the official TypeScript MCP SDK (`McpServer` over
// `StdioServerTransport`, from tests/ts/node_modules), with the same `echo`
// tool as guest-tools' examples: input `{text: string}` ("Text to return"),
// output schema `{text: string}`, the text as content plus the structured
// result, the same annotations. What a user would write instead of a
// JavaScript guest. Serves over stdio until stdin closes:
//
//   node host/benches/native_sdk_echo.mjs
//
// Installed by `scripts/setup.sh --with-node` (`just setup --with-node`).

import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const modules = join(root, 'tests/ts/node_modules');
const sdk = join(modules, '@modelcontextprotocol/sdk/dist/esm/server');
if (!existsSync(sdk)) {
  throw new Error(`missing the TypeScript SDK at ${sdk}: run \`scripts/setup.sh --with-node\``);
}
const load = (path) => import(pathToFileURL(path).href);
const { McpServer } = await load(join(sdk, 'mcp.js'));
const { StdioServerTransport } = await load(join(sdk, 'stdio.js'));
const { z } = await load(join(modules, 'zod/index.js'));

const server = new McpServer({ name: 'native-sdk-echo', version: '1.0.0' });
server.registerTool(
  'echo',
  {
    description: 'Returns the text it is given.',
    inputSchema: { text: z.string().describe('Text to return') },
    outputSchema: { text: z.string() },
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
  ({ text }) => ({ content: [{ type: 'text', text }], structuredContent: { text } }),
);
await server.connect(new StdioServerTransport());
