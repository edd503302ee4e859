// Resources, prompts and completion (mcp:tool 0.2.1) seen from the official
// TypeScript SDK client: the example component guest-tools/everything
// offers them, the host lists them beside its own status resource, routes
// reads, prompts and completions to it, relays its resource-updated calls
// to subscribers, and stops a read the client gave up on. A component built
// against 0.2.0 must keep working beside it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { callEnded, collectLines, events, guest, hostBinary, jsonLog, startHttpHost, until } from './helpers.mjs';

/** Bounds a whole test: a hang fails it instead of stalling the run. */
const QUICK_TEST = { timeout: 60_000 };

const STATUS_URI = 'mcp-wasm-host://status';
const WATCHED = 'test://watched-resource';
const TEMPLATE = 'test://template/{id}/data';
const STATIC_TEXT = 'This is the content of the static text resource.';
const EVERYTHING_URIS = [
  'test://static-text',
  'test://static-binary',
  WATCHED,
  'test://spinning-resource',
  'skill://release-notes/SKILL.md',
  'skill://release-notes/references/STYLE.md',
];

/** Serves `components` over stdio and connects a client. The host logs one
 * JSON object per line; `debug` adds the "call started" events. Every
 * resources/updated notification the SDK dispatches is kept in `updated`. */
async function serve(components, { debug = false, args = [] } = {}) {
  const transport = new StdioClientTransport({
    command: hostBinary,
    args: [...jsonLog, ...components.flatMap((name) => ['--component', guest(name)]), ...args],
    stderr: 'pipe',
    env: { ...process.env, RUST_LOG: `mcp_wasm_host=${debug ? 'debug' : 'info'}`, NO_COLOR: '1' },
  });
  // Drained, so a chatty host never blocks on a full pipe; read by the tests.
  const lines = collectLines(transport.stderr);
  const client = new Client({ name: 'mcp-wasm-host-ts-offers', version: '1.0.0' });
  const updated = watchUpdates(client);
  await client.connect(transport);
  // Every message as it arrives, before the SDK dispatches it.
  const received = [];
  const dispatch = transport.onmessage;
  transport.onmessage = (message, extra) => {
    received.push(message);
    dispatch(message, extra);
  };
  return { client, lines, updated, received };
}

/** Records the URI of every notifications/resources/updated the client gets. */
function watchUpdates(client) {
  const updated = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updated.push(n.params.uri);
  });
  return updated;
}

/** The single text content of a read of `uri`, checked for its URI and type. */
async function readText(client, uri, mimeType) {
  const { contents } = await client.readResource({ uri });
  assert.equal(contents.length, 1, JSON.stringify(contents));
  assert.deepEqual(
    { uri: contents[0].uri, mimeType: contents[0].mimeType, hasText: typeof contents[0].text === 'string' },
    { uri, mimeType, hasText: true },
    JSON.stringify(contents),
  );
  return contents[0].text;
}

/** Bytes that start as every PNG file does. */
function assertPng(base64) {
  const bytes = Buffer.from(base64, 'base64');
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], base64);
}

const completeTemplate = (client, value) =>
  client.complete({ ref: { type: 'ref/resource', uri: TEMPLATE }, argument: { name: 'id', value } });
const completePrompt = (client, name, argument, value) =>
  client.complete({ ref: { type: 'ref/prompt', name }, argument: { name: argument, value } });

/** A JSON-RPC invalid-params error whose message matches `named`. */
async function invalidParams(promise, named) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof McpError, String(err));
    assert.equal(err.code, ErrorCode.InvalidParams, err.message);
    assert.match(err.message, named);
    return true;
  });
}

describe('everything.wasm over stdio: resources, templates, prompts, completion', () => {
  let host;
  before(async () => {
    host = await serve(['everything']);
  }, QUICK_TEST);
  after(() => host?.client.close());

  test('the host advertises resources (with subscribe), prompts and completions', QUICK_TEST, () => {
    const caps = host.client.getServerCapabilities();
    assert.equal(caps.resources?.subscribe, true, JSON.stringify(caps));
    assert.ok(caps.prompts, JSON.stringify(caps));
    assert.ok(caps.completions, JSON.stringify(caps));
  });

  test("resources/list: the host's status first, then the component's in its order", QUICK_TEST, async () => {
    const { resources } = await host.client.listResources();
    assert.deepEqual(resources.map((r) => r.uri), [STATUS_URI, ...EVERYTHING_URIS]);
    const byUri = new Map(resources.map((r) => [r.uri, r]));
    assert.equal(byUri.get('test://static-text').mimeType, 'text/plain');
    assert.equal(byUri.get('test://static-binary').mimeType, 'image/png');
    assert.equal(byUri.get('test://static-text').name, 'static-text');
  });

  test('resources/read: text as text, bytes as base64 (a PNG)', QUICK_TEST, async () => {
    assert.equal(await readText(host.client, 'test://static-text', 'text/plain'), STATIC_TEXT);
    const { contents } = await host.client.readResource({ uri: 'test://static-binary' });
    assert.equal(contents.length, 1, JSON.stringify(contents));
    const [binary] = contents;
    assert.equal(binary.uri, 'test://static-binary');
    assert.equal(binary.mimeType, 'image/png');
    assert.equal(binary.text, undefined, 'bytes are never sent as text');
    assertPng(binary.blob);
  });

  test('resources/templates/list and a read routed through the template', QUICK_TEST, async () => {
    const { resourceTemplates } = await host.client.listResourceTemplates();
    assert.deepEqual(
      resourceTemplates.map(({ uriTemplate, name, mimeType }) => ({ uriTemplate, name, mimeType })),
      [{ uriTemplate: TEMPLATE, name: 'template-data', mimeType: 'application/json' }],
    );
    const uri = 'test://template/123/data';
    const data = JSON.parse(await readText(host.client, uri, 'application/json'));
    assert.deepEqual(data, { id: '123', templateTest: true, data: 'Data for ID: 123' });
  });

  test('a URI neither listed nor matching a template is not found (-32002)', QUICK_TEST, async () => {
    await assert.rejects(host.client.readResource({ uri: 'test://no-such-resource' }), (err) => {
      assert.ok(err instanceof McpError, String(err));
      // MCP's "resource not found"; the SDK has no name for it.
      assert.equal(err.code, -32002, err.message);
      return true;
    });
  });

  test('completion/complete for a template variable and a prompt argument', QUICK_TEST, async () => {
    const { completion: ids } = await completeTemplate(host.client, '1');
    assert.deepEqual(ids.values, ['100', '123']);
    assert.notEqual(ids.hasMore, true);
    const { completion: words } = await completePrompt(host.client, 'test_prompt_with_arguments', 'arg1', 'par');
    assert.deepEqual(words.values, ['paris', 'park', 'party']);
    assert.notEqual(words.hasMore, true);
    // No match is an empty list, not an error.
    const { completion: none } = await completeTemplate(host.client, '9');
    assert.deepEqual(none.values, []);
  });

  test('prompts/list: the five prompts, with their arguments', QUICK_TEST, async () => {
    const { prompts } = await host.client.listPrompts();
    assert.deepEqual(prompts.map((p) => p.name), [
      'test_simple_prompt',
      'test_prompt_with_arguments',
      'test_prompt_with_embedded_resource',
      'test_prompt_with_image',
      'test_input_required_result_prompt',
    ]);
    const args = new Map(prompts.map((p) => [p.name, (p.arguments ?? []).map((a) => [a.name, a.required])]));
    assert.deepEqual(args.get('test_simple_prompt'), []);
    assert.deepEqual(args.get('test_prompt_with_arguments'), [['arg1', true], ['arg2', true]]);
    assert.deepEqual(args.get('test_prompt_with_embedded_resource'), [['resourceUri', true]]);
  });

  test('prompts/get fills in arguments', QUICK_TEST, async () => {
    const simple = await host.client.getPrompt({ name: 'test_simple_prompt' });
    assert.deepEqual(simple.messages, [
      { role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } },
    ]);
    const filled = await host.client.getPrompt({
      name: 'test_prompt_with_arguments',
      arguments: { arg1: 'A', arg2: 'B' },
    });
    assert.deepEqual(filled.messages, [
      { role: 'user', content: { type: 'text', text: "Prompt with arguments: arg1='A', arg2='B'" } },
    ]);
  });

  test('prompts/get with an embedded resource and with an image', QUICK_TEST, async () => {
    const embedded = await host.client.getPrompt({
      name: 'test_prompt_with_embedded_resource',
      arguments: { resourceUri: 'test://embedded/42' },
    });
    assert.ok(embedded.messages.length >= 1, JSON.stringify(embedded));
    const [first] = embedded.messages;
    assert.equal(first.role, 'user');
    assert.equal(first.content.type, 'resource', JSON.stringify(first));
    assert.equal(first.content.resource.uri, 'test://embedded/42');
    assert.equal(first.content.resource.text, 'Embedded resource content for testing.');

    const image = await host.client.getPrompt({ name: 'test_prompt_with_image' });
    const pictures = image.messages.filter((m) => m.content.type === 'image');
    assert.equal(pictures.length, 1, JSON.stringify(image));
    assert.equal(pictures[0].content.mimeType, 'image/png');
    assertPng(pictures[0].content.data);
    assert.equal(image.messages[0].content.type, 'image', 'the image comes first, then the text');
    assert.equal(image.messages.at(-1).content.type, 'text');
  });

  test('prompts/get missing a required argument, or with an unknown one, is invalid params', QUICK_TEST, async () => {
    await invalidParams(
      host.client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'A' } }),
      /arg2/,
    );
    await invalidParams(
      host.client.getPrompt({ name: 'test_simple_prompt', arguments: { surprise: 'x' } }),
      /surprise/,
    );
    // The host is still serving prompts after refusing those.
    const again = await host.client.getPrompt({ name: 'test_simple_prompt' });
    assert.equal(again.messages.length, 1);
  });
});

test('subscribe, a tool says the resource changed, the subscriber is told; unsubscribed, not', QUICK_TEST, async () => {
  const { client, updated } = await serve(['everything']);
  try {
    await client.subscribeResource({ uri: WATCHED });
    const first = await client.callTool({ name: 'update_watched_resource', arguments: {} });
    assert.notEqual(first.isError, true, JSON.stringify(first));
    await until('notifications/resources/updated for the watched resource', () => updated.includes(WATCHED));
    assert.deepEqual(updated, [WATCHED]);

    await client.unsubscribeResource({ uri: WATCHED });
    const second = await client.callTool({ name: 'update_watched_resource', arguments: {} });
    assert.notEqual(second.isError, true, JSON.stringify(second));
    // Sound only if the host writes a call's notifications before its
    // result on stdio (the SDK dispatches them in order): had the second
    // call caused a notification, it would be here by now. The next test
    // checks that ordering.
    assert.deepEqual(updated, [WATCHED], 'no notification after unsubscribing');
  } finally {
    await client.close();
  }
});

test('on stdio, resources/updated comes before the result of the call that caused it', QUICK_TEST, async () => {
  const { client, received } = await serve(['everything']);
  try {
    await client.subscribeResource({ uri: WATCHED });
    const calls = 5; // several: one in order by luck proves nothing
    for (let i = 0; i < calls; i++) {
      await client.callTool({ name: 'update_watched_resource', arguments: {} });
    }
    // At each call's result, the notifications that arrived before it on
    // the wire: the call's own and those of the calls before.
    const order = received.map((m) => m.method ?? `result ${m.id}`);
    const seenBefore = [];
    let notified = 0;
    for (const m of received) {
      if (m.method === 'notifications/resources/updated') notified += 1;
      else if (m.id !== undefined) seenBefore.push(notified);
    }
    // The first response is the subscribe's, with none before it.
    const expected = Array.from({ length: calls + 1 }, (_, i) => i);
    assert.deepEqual(seenBefore, expected, `on the wire: ${order.join(', ')}`);
  } finally {
    await client.close();
  }
});

test('abort() stops a read that never ends (by force), and the next read is served', QUICK_TEST, async () => {
  // No fuel limit, so only the cancel can stop the spinning read.
  const { client, lines } = await serve(['everything'], { debug: true, args: ['--fuel', '0'] });
  const started = () =>
    events(lines).find((e) => e.fields.message === 'call started' && e.fields.tool === 'resources/read');
  try {
    const controller = new AbortController();
    const read = client.readResource({ uri: 'test://spinning-resource' }, { signal: controller.signal });
    await until('the host to start the spinning read', started);
    controller.abort('the user gave up');
    await assert.rejects(read, /abort|gave up/i);

    await until('the host to end the spinning read', () => callEnded(lines, 'resources/read'));
    const ended = callEnded(lines, 'resources/read');
    const shown = JSON.stringify(ended);
    assert.equal(ended.fields.subject, 'test://spinning-resource', shown);
    assert.equal(ended.fields.stop_reason, 'client-cancelled', shown);
    // The guest ignores its `cancelled`: the host had to stop it.
    assert.equal(ended.fields.forced, true, shown);

    assert.equal(await readText(client, 'test://static-text', 'text/plain'), STATIC_TEXT);
  } finally {
    await client.close();
  }
});

test('over Streamable HTTP: resources, templates, completion, prompts and updates', QUICK_TEST, async () => {
  const { child, url } = await startHttpHost(guest('everything'));
  const client = new Client({ name: 'mcp-wasm-host-ts-offers-http', version: '1.0.0' });
  const updated = watchUpdates(client);
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const { resources } = await client.listResources();
    assert.deepEqual(resources.map((r) => r.uri), [STATUS_URI, ...EVERYTHING_URIS]);
    assert.equal(await readText(client, 'test://static-text', 'text/plain'), STATIC_TEXT);
    const { contents } = await client.readResource({ uri: 'test://static-binary' });
    assertPng(contents[0].blob);
    const data = JSON.parse(await readText(client, 'test://template/100/data', 'application/json'));
    assert.deepEqual(data, { id: '100', templateTest: true, data: 'Data for ID: 100' });
    assert.deepEqual((await completeTemplate(client, '1')).completion.values, ['100', '123']);
    const words = await completePrompt(client, 'test_prompt_with_arguments', 'arg1', 'par');
    assert.deepEqual(words.completion.values, ['paris', 'park', 'party']);
    const filled = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'x', arg2: 'y' } });
    assert.equal(filled.messages[0].content.text, "Prompt with arguments: arg1='x', arg2='y'");
    await invalidParams(client.getPrompt({ name: 'test_prompt_with_arguments', arguments: {} }), /arg1|arg2/);

    await client.subscribeResource({ uri: WATCHED });
    await client.callTool({ name: 'update_watched_resource', arguments: {} });
    await until('notifications/resources/updated over HTTP', () => updated.includes(WATCHED));
    assert.deepEqual(updated, [WATCHED]);
  } finally {
    await client.close();
    child.kill('SIGTERM');
  }
});

test('a component built against mcp:tool 0.2.0 works beside a 0.2.1 one', QUICK_TEST, async () => {
  const { client } = await serve(['everything', 'contract-0-2']);
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    assert.ok(names.includes('old_echo'), names.join(', '));
    assert.ok(names.includes('update_watched_resource'), names.join(', '));
    const echo = await client.callTool({ name: 'old_echo', arguments: { text: 'hi' } });
    assert.notEqual(echo.isError, true, JSON.stringify(echo));
    assert.deepEqual(echo.content, [{ type: 'text', text: '{"text":"hi"}' }]);
    // The old component offers no resources; the new one's are served as before.
    const { resources } = await client.listResources();
    assert.deepEqual(resources.map((r) => r.uri), [STATUS_URI, ...EVERYTHING_URIS]);
    assert.equal(await readText(client, 'test://static-text', 'text/plain'), STATIC_TEXT);
  } finally {
    await client.close();
  }
});
