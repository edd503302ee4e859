// Protocol 2026-07-28 seen from the TypeScript SDK's v2 client
// (`@modelcontextprotocol/client`, pinned to 2026-07-28 over stdio): a
// tool's questions come back as `input_required` results, which the client
// answers through its ordinary request handlers and retries with the
// `requestState`, over several rounds, several questions at once, and on
// `prompts/get` too. The host runs each call once (parked between rounds).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { callEnded, collectLines, events, guest, hostBinary, jsonLog, until } from './helpers.mjs';

/** A v2 client pinned to 2026-07-28 on a host serving `everything`, its
 * handlers answering forms (`name`: Ada, anything else: green), sampling
 * and roots; `asked` records what each handler was asked, in order. */
async function connect() {
  const transport = new StdioClientTransport({
    command: hostBinary,
    args: [...jsonLog, '--component', guest('everything')],
    env: { ...process.env, RUST_LOG: 'mcp_wasm_host=debug', NO_COLOR: '1' },
    stderr: 'pipe',
  });
  const stderr = collectLines(transport.stderr);
  const client = new Client(
    { name: 'rounds-test', version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {} }, sampling: {}, roots: {} },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    },
  );
  const asked = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    const field = Object.keys(request.params.requestedSchema.properties)[0];
    return { action: 'accept', content: { [field]: field === 'name' ? 'Ada' : 'green' } };
  });
  client.setRequestHandler('sampling/createMessage', async (request) => {
    asked.push(`sample: ${request.params.messages[0].content.text}`);
    return { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'Hi Ada' } };
  });
  client.setRequestHandler('roots/list', async () => {
    asked.push('roots');
    return { roots: [{ uri: 'file:///work', name: 'work' }] };
  });
  await client.connect(transport);
  // How many times `tool` started, once its call has ended.
  const started = async (tool) => {
    await until(`the host to end the ${tool} call`, () => callEnded(stderr, tool));
    return events(stderr).filter((e) => e.fields.message === 'call started' && e.fields.tool === tool).length;
  };
  return { client, asked, started };
}

test('a question per round: two rounds, each answered by the handler, the call run once', async () => {
  const { client, asked, started } = await connect();
  try {
    const tool = 'test_input_required_result_multi_round';
    const result = await client.callTool({ name: tool, arguments: {} });
    assert.deepEqual(result.content, [{ type: 'text', text: 'Ada likes green' }]);
    assert.deepEqual(asked, ['Step 1: What is your name?', 'Step 2: What is your favorite color?']);
    assert.equal(await started(tool), 1, 'parked between rounds, not run again');
  } finally {
    await client.close();
  }
});

test('three questions at once (a form, sampling, roots) answered in one round', async () => {
  const { client, asked } = await connect();
  try {
    const result = await client.callTool({ name: 'test_input_required_result_multiple_inputs', arguments: {} });
    assert.deepEqual(result.content, [{ type: 'text', text: 'name: Ada; greeting: Hi Ada; roots: file:///work' }]);
    assert.deepEqual(asked.toSorted(), ['What is your name?', 'roots', 'sample: Generate a greeting']);
  } finally {
    await client.close();
  }
});

test('a prompt that asks first: prompts/get in two rounds', async () => {
  const { client, asked } = await connect();
  try {
    const prompt = await client.getPrompt({ name: 'test_input_required_result_prompt' });
    assert.deepEqual(prompt.messages, [{ role: 'user', content: { type: 'text', text: 'Use this context: green' } }]);
    assert.deepEqual(asked, ['What context should the prompt use?']);
  } finally {
    await client.close();
  }
});
