// Plain components (issue 25) seen from the official TypeScript SDK client:
// components written for no MCP host at all — Rust wit-bindgen
// (plain-types), the cargo-component template (plain-template),
// componentize-py (plain-python) and componentize-js (plain-js) — served
// with each exported function as a tool. Each value goes through JSON,
// the host's conversion to WIT values, the guest's own bindings and back,
// and must come back exactly. tests/e2e/plain.rs covers the rest (limits,
// grants, config, prefixes) with the rmcp client.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { collectLines, guest, hostBinary } from './helpers.mjs';

/** Request options for anything that may wait for a component to compile:
 * the Python and JS interpreters are ~20 MB of wasm, which takes tens of
 * seconds on a busy machine, and the SDK gives up after 60 s by default. */
const SLOW = { timeout: 300_000 };
/** Bounds a whole test: a hang fails it instead of stalling the run. */
const QUICK_TEST = { timeout: 60_000 };
const SLOW_TEST = { timeout: 600_000 };

/** Validates results in JSON Schema 2020-12, the dialect MCP 2025-11-25
 * makes the default (SEP-1613) and docs/plain-components.md promises. The SDK's own
 * default validator is draft-07: see the last test. */
const draft2020 = () =>
  new AjvJsonSchemaValidator(new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true }));

/** Serves component `name` and connects a client to it, validating with
 * `validator` (null: the SDK's default). `tools` maps each listed tool's
 * name to it; listing them also makes the SDK check every later
 * structuredContent against the tool's outputSchema. */
async function serve(name, { validator = draft2020() } = {}) {
  const transport = new StdioClientTransport({
    command: hostBinary,
    args: ['--component', guest(name)],
    stderr: 'pipe',
    env: { ...process.env, NO_COLOR: '1' },
  });
  // Drained, so a chatty host never blocks on a full pipe; kept for failures.
  const log = collectLines(transport.stderr);
  const options = validator ? { jsonSchemaValidator: validator } : {};
  const client = new Client({ name: 'mcp-wasm-host-ts-plain', version: '1.0.0' }, options);
  await client.connect(transport);
  const { tools } = await client.listTools(undefined, SLOW);
  return { client, log, tools: new Map(tools.map((tool) => [tool.name, tool])) };
}

const call = (host, name, args) => host.client.callTool({ name, arguments: args }, undefined, SLOW);

/** Calls `name`, checks the result is `{"result": value}` with the value as
 * its text (a string as it is, anything else as JSON), and returns the value. */
async function roundTrip(host, name, args) {
  const result = await call(host, name, args);
  const shown = `${name}(${JSON.stringify(args)}) -> ${JSON.stringify(result)}`;
  assert.notEqual(result.isError, true, shown);
  assert.deepEqual(Object.keys(result.structuredContent ?? {}), ['result'], shown);
  const value = result.structuredContent.result;
  assert.equal(result.content.length, 1, shown);
  assert.equal(result.content[0].type, 'text', shown);
  const text = result.content[0].text;
  assert.deepEqual(typeof value === 'string' ? text : JSON.parse(text), value, shown);
  return value;
}

async function same(host, name, args, expected) {
  assert.deepEqual(await roundTrip(host, name, args), expected, `${name}(${JSON.stringify(args)})`);
}

/** A `result` err: an error result whose text is the error, and no structured result. */
async function failsWith(host, name, args, error) {
  const result = await call(host, name, args);
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.deepEqual(result.content, [{ type: 'text', text: error }]);
  assert.equal(result.structuredContent, undefined);
}

/** Bad arguments: a JSON-RPC invalid-params error whose message matches `named`. */
async function refused(host, name, args, named) {
  await assert.rejects(call(host, name, args), (err) => {
    assert.ok(err instanceof McpError, `${name}(${JSON.stringify(args)}): ${err}`);
    assert.equal(err.code, ErrorCode.InvalidParams, err.message);
    assert.match(err.message, named);
    return true;
  });
}

/** Every tool has an output schema `{"result": ...}`, except those in `none`. */
function assertOutputSchemas(tools, none = []) {
  for (const tool of tools.values()) {
    if (none.includes(tool.name)) {
      assert.equal(tool.outputSchema, undefined, tool.name);
    } else {
      assert.deepEqual(tool.outputSchema?.required, ['result'], tool.name);
    }
  }
}

const names = (tools) => [...tools.keys()].sort();
const int = (minimum, maximum) => ({ type: 'integer', minimum, maximum });
const float = { anyOf: [{ type: 'number' }, { enum: ['NaN', 'Infinity', '-Infinity'] }] };
const char = { type: 'string', minLength: 1, maxLength: 1 };
/** The parts of a 64-bit integer's argument schema a client relies on. JSON
 * numbers lose digits past 2^53 in JS, so the decimal-string pattern is the
 * exact bound; `maximum` and `minimum` are compared as JS reads them. */
const int64 = ({ type, minimum, maximum, pattern }) => ({ type, minimum, maximum, pattern });
const U64 = { type: ['integer', 'string'], minimum: 0, maximum: 18446744073709551615, pattern: '^[0-9]{1,20}$' };
const S64 = {
  type: ['integer', 'string'],
  minimum: -9223372036854775808,
  maximum: 9223372036854775807,
  pattern: '^-?[0-9]{1,19}$',
};
const tupleOf = (schema) => schema.prefixItems.length;

describe('plain-types (Rust wit-bindgen, world-level functions)', () => {
  let host;
  before(async () => {
    host = await serve('plain-types');
  }, SLOW_TEST);
  after(() => host?.client.close());

  test('every function but the one returning a handle is a tool, with schemas from its WIT types', QUICK_TEST, () => {
    const { tools } = host;
    assert.deepEqual(names(tools), [
      'bytes', 'config', 'counters.describe', 'crash', 'divide', 'echo', 'fetch', 'floats',
      'integers', 'lists', 'nothing', 'options', 'read-file', 'shapes', 'spin', 'text',
    ]);
    const integers = tools.get('integers');
    const params = integers.inputSchema.properties;
    assert.deepEqual(integers.inputSchema.required, ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
    assert.deepEqual(
      ['a', 'b', 'c', 'd', 'e', 'f'].map((p) => params[p]),
      [
        int(0, 255), int(-128, 127), int(0, 65535), int(-32768, 32767),
        int(0, 4294967295), int(-2147483648, 2147483647),
      ],
    );
    assert.deepEqual(int64(params.g), U64);
    assert.deepEqual(int64(params.h), S64);
    // In results a 64-bit integer is always a decimal string.
    const out = integers.outputSchema.properties.result;
    assert.equal(tupleOf(out), 8);
    assert.equal(out.minItems, 8);
    assert.equal(out.maxItems, 8);
    assert.deepEqual([out.prefixItems[6].type, out.prefixItems[6].pattern], ['string', '^[0-9]{1,20}$']);
    assert.deepEqual([out.prefixItems[7].type, out.prefixItems[7].pattern], ['string', '^-?[0-9]{1,19}$']);

    const shapes = tools.get('shapes').inputSchema;
    assert.deepEqual(shapes.required, ['p', 's', 'c', 'f']);
    assert.deepEqual(shapes.properties.p.required, ['x', 'y']);
    const cases = shapes.properties.s.oneOf;
    assert.deepEqual(cases.map((branch) => branch.properties.tag.const), ['circle', 'rect', 'empty']);
    assert.deepEqual(cases.map((branch) => branch.required), [['tag', 'value'], ['tag', 'value'], ['tag']]);
    assert.deepEqual(cases[0].properties.value, float);
    assert.deepEqual(shapes.properties.c, { type: 'string', enum: ['red', 'green', 'blue'] });
    const flags = { type: 'array', items: { enum: ['read', 'write', 'exec'] }, uniqueItems: true };
    assert.deepEqual(shapes.properties.f, flags);

    const options = tools.get('options').inputSchema;
    assert.deepEqual(options.required, [], 'option parameters are optional');
    assert.deepEqual(options.properties.a, { anyOf: [{ type: 'null' }, { type: 'string' }] });
    const some = options.properties.b.anyOf[1];
    assert.deepEqual([some.required, some.properties.some.anyOf[1]], [['some'], int(0, 4294967295)]);
    assert.deepEqual(tools.get('text').inputSchema.properties.c, char);
    assert.deepEqual(tools.get('floats').inputSchema.properties.a, float);
    const data = tools.get('bytes').inputSchema.properties.data;
    assert.deepEqual([data.type, data.contentEncoding], ['string', 'base64']);
    assert.equal(tools.get('echo').description, 'Returns its text unchanged.');
    assertOutputSchemas(tools, ['nothing']);
  });

  test('64-bit integers come back as exact decimal strings, sent as strings or JSON numbers', QUICK_TEST, async () => {
    const zeros = { a: 0, b: 0, c: 0, d: 0, e: 0, f: 0 };
    const edges = { a: 255, b: -128, c: 65535, d: -32768, e: 4294967295, f: -2147483648 };
    await same(host, 'integers', { ...edges, g: '18446744073709551615', h: '-9223372036854775808' },
      [255, -128, 65535, -32768, 4294967295, -2147483648, '18446744073709551615', '-9223372036854775808']);
    await same(host, 'integers', { ...zeros, g: '9007199254740993', h: '-9007199254740993' },
      [0, 0, 0, 0, 0, 0, '9007199254740993', '-9007199254740993']);
    // A JS number cannot hold 2^53 + 1 (the Rust test sends it raw); these
    // are exact doubles, one of them past i64's range, written out in full.
    assert.equal(JSON.stringify(1e19), '10000000000000000000');
    await same(host, 'integers', { ...zeros, g: 1e19, h: 2 ** 53 },
      [0, 0, 0, 0, 0, 0, '10000000000000000000', '9007199254740992']);
    await same(host, 'integers', { ...zeros, g: Number.MAX_SAFE_INTEGER, h: -Number.MAX_SAFE_INTEGER },
      [0, 0, 0, 0, 0, 0, '9007199254740991', '-9007199254740991']);
    await same(host, 'divide', { a: '9223372036854775807', b: -1 }, '-9223372036854775807');
    await same(host, 'divide', { a: '-9', b: 2 }, '-4');
  });

  test('unicode, empty values and nested options come back exactly', QUICK_TEST, async () => {
    const astral = 'a\u0000b 👩‍👩‍👧 e\u0301 𝄞 \u{10FFFF} \uFEFF';
    for (const c of ['🦀', '\u0301', '\u0000', '𝄞', 'ß']) {
      await same(host, 'text', { c, s: astral }, [c, astral]);
    }
    await same(host, 'text', { c: ' ', s: '' }, [' ', '']);
    await same(host, 'echo', { text: '' }, '');
    await same(host, 'echo', { text: astral }, astral);
    await same(host, 'bytes', { data: '' }, '');
    await same(host, 'bytes', { data: 'AP+A/w==' }, 'AP+A/w==');
    await same(host, 'lists', { words: [], matrix: [] }, [[], []]);
    await same(host, 'lists', { words: ['', '🦀'], matrix: [[], [2147483647, -2147483648]] },
      [['', '🦀'], [[], [2147483647, -2147483648]]]);
    // none, some(none) and some(some(x)) stay apart; left out is none.
    for (const [a, b] of [[null, null], ['', { some: null }], ['x', { some: 0 }], ['🦀', { some: 4294967295 }]]) {
      await same(host, 'options', { a, b }, [a, b]);
    }
    await same(host, 'options', {}, [null, null]);
    await same(host, 'config', { key: 'unset' }, null);
  });

  test('floats: 0.1 stays 0.1 in f32 and f64; NaN and the infinities travel as strings', QUICK_TEST, async () => {
    await same(host, 'floats', { a: 0.1, b: 0.1 }, [0.1, 0.1]);
    await same(host, 'floats', { a: 'NaN', b: 'Infinity' }, ['NaN', 'Infinity']);
    await same(host, 'floats', { a: '-Infinity', b: 'NaN' }, ['-Infinity', 'NaN']);
    await same(host, 'floats', { a: 1.5, b: 5e-324 }, [1.5, 5e-324]);
    // An f32 comes back as the shortest decimal of the same f32.
    const [f32] = await roundTrip(host, 'floats', { a: 3.4028234663852886e38, b: 0 });
    assert.equal(Math.fround(f32), Math.fround(3.4028234663852886e38));
  });

  test('every variant case, enum case and set of flags comes back', QUICK_TEST, async () => {
    const p = { x: 3, y: -4 };
    for (const [s, c] of [
      [{ tag: 'circle', value: 1.5 }, 'red'],
      [{ tag: 'circle', value: 'NaN' }, 'green'],
      [{ tag: 'rect', value: { x: -2147483648, y: 2147483647 } }, 'blue'],
      [{ tag: 'empty' }, 'red'],
    ]) {
      await same(host, 'shapes', { p, s, c, f: [] }, [p, s, c, []]);
    }
    // Flags come back in their WIT order, whatever order they went in.
    for (const [f, back] of [[['write'], ['write']], [['exec', 'write', 'read'], ['read', 'write', 'exec']]]) {
      await same(host, 'shapes', { p, s: { tag: 'empty' }, c: 'blue', f }, [p, { tag: 'empty' }, 'blue', back]);
    }
  });

  test('a result err is an error result carrying the error; no result is no content', QUICK_TEST, async () => {
    await failsWith(host, 'divide', { a: 7, b: 0 }, 'division by zero');
    await failsWith(host, 'divide', { a: '-9223372036854775808', b: -1 }, 'overflow');
    const nothing = await call(host, 'nothing', {});
    assert.deepEqual([nothing.isError, nothing.content, nothing.structuredContent], [false, [], undefined]);
  });

  test('bad arguments are an invalid-params error naming the parameter', QUICK_TEST, async () => {
    const zeros = { a: 0, b: 0, c: 0, d: 0, e: 0, f: 0, g: 0, h: 0 };
    await refused(host, 'divide', { a: 7 }, /"b" is a required property/);
    await refused(host, 'divide', { a: 'x', b: 1 }, /\/a/);
    await refused(host, 'divide', { a: '99999999999999999999', b: 1 }, /\/a/);
    await refused(host, 'integers', { ...zeros, a: 256 }, /\/a/);
    await refused(host, 'integers', { ...zeros, g: '-1' }, /\/g/);
    await refused(host, 'integers', { ...zeros, g: 1.5 }, /\/g/);
    await refused(host, 'integers', { ...zeros, g: 2 ** 64 }, /\/g/);
    await refused(host, 'text', { c: 'e\u0301', s: '' }, /\/c/);
    await refused(host, 'text', { c: '', s: '' }, /\/c/);
    await refused(host, 'floats', { a: 'nan', b: 0 }, /\/a/);
    await refused(host, 'options', { b: 7 }, /\/b/);
    const shape = { p: { x: 0, y: 0 }, s: { tag: 'empty' }, c: 'red', f: [] };
    await refused(host, 'shapes', { ...shape, s: { tag: 'square' } }, /\/s/);
    await refused(host, 'shapes', { ...shape, s: { tag: 'empty', value: null } }, /\/s/);
    await refused(host, 'shapes', { ...shape, c: 'purple' }, /\/c/);
    await refused(host, 'shapes', { ...shape, f: ['read', 'read'] }, /\/f/);
    await refused(host, 'shapes', { ...shape, p: { x: 0 } }, /\/p.*"y"/);
    await refused(host, 'echo', { text: 'x', extra: 1 }, /extra/);
    await same(host, 'echo', { text: 'still serving' }, 'still serving');
  });

  test(
    'arguments that pass the schema but do not convert are invalid-params errors too',
    QUICK_TEST,
    async () => {
      const zeros = { a: 0, b: 0, c: 0, d: 0, e: 0, f: 0, g: 0, h: 0 };
      await refused(host, 'integers', { ...zeros, g: '18446744073709551616' }, /\/g/);
      await refused(host, 'divide', { a: '9999999999999999999', b: 1 }, /\/a/);
      await refused(host, 'bytes', { data: 'not base64!' }, /\/data/);
      await refused(host, 'floats', { a: 1e39, b: 0 }, /\/a/);
    },
  );
});

describe('plain-template (cargo component new --lib)', () => {
  let host;
  before(async () => {
    host = await serve('plain-template');
  }, SLOW_TEST);
  after(() => host?.client.close());

  test('its one function is a tool without parameters, returning a string', QUICK_TEST, async () => {
    assert.deepEqual(names(host.tools), ['hello-world']);
    const tool = host.tools.get('hello-world');
    assert.deepEqual([tool.inputSchema.properties, tool.inputSchema.required], [{}, []]);
    assert.deepEqual(tool.outputSchema.properties.result, { type: 'string' });
    assertOutputSchemas(host.tools);
    await same(host, 'hello-world', {}, 'Hello, World!');
    await refused(host, 'hello-world', { name: 'x' }, /name/);
  });
});

describe('plain-python (componentize-py, interface text-tools)', () => {
  let host;
  before(async () => {
    host = await serve('plain-python');
  }, SLOW_TEST);
  after(() => host?.client.close());

  test('the interface functions are tools named interface.function, with schemas', SLOW_TEST, () => {
    const { tools } = host;
    assert.deepEqual(names(tools), [
      'text-tools.big', 'text-tools.count', 'text-tools.non-empty', 'text-tools.reverse', 'text-tools.tokens',
    ]);
    const big = tools.get('text-tools.big');
    assert.deepEqual(big.inputSchema.required, ['n', 'm']);
    assert.deepEqual(int64(big.inputSchema.properties.n), U64);
    assert.deepEqual(int64(big.inputSchema.properties.m), S64);
    const pair = big.outputSchema.properties.result;
    assert.deepEqual(pair.prefixItems.map((item) => [item.type, item.pattern]),
      [['string', '^[0-9]{1,20}$'], ['string', '^-?[0-9]{1,19}$']]);
    const token = tools.get('text-tools.tokens').outputSchema.properties.result.items;
    assert.deepEqual(token.oneOf.map((branch) => branch.properties.tag.const), ['word', 'number', 'blank']);
    assert.equal(token.oneOf[1].properties.value.type, 'string', 'an s64 in a result is a string');
    const stats = tools.get('text-tools.count').outputSchema.properties.result;
    assert.deepEqual(stats.required, ['words', 'chars'], 'an option field may be left out');
    assert.deepEqual(stats.properties.words, int(0, 4294967295));
    // The ok type of a result<string, string> is the result.
    assert.deepEqual(tools.get('text-tools.non-empty').outputSchema.properties.result, { type: 'string' });
    assertOutputSchemas(tools);
  });

  test('64-bit integers, unicode and empty strings come back exactly', SLOW_TEST, async () => {
    await same(host, 'text-tools.big', { n: '18446744073709551615', m: '-9223372036854775808' },
      ['18446744073709551615', '-9223372036854775808']);
    await same(host, 'text-tools.big', { n: '9007199254740993', m: '9223372036854775807' },
      ['9007199254740993', '9223372036854775807']);
    await same(host, 'text-tools.big', { n: 1e19, m: -(2 ** 53) }, ['10000000000000000000', '-9007199254740992']);
    await same(host, 'text-tools.reverse', { text: '' }, '');
    await same(host, 'text-tools.reverse', { text: 'ab🦀c\u0000' }, '\u0000c🦀ba');
    // Python reverses code points: the combining mark comes first.
    await same(host, 'text-tools.reverse', { text: 'e\u0301' }, '\u0301e');
    await same(host, 'text-tools.count', { text: '' }, { words: 0, chars: 0, longest: null });
    const counted = { words: 2, chars: 5, longest: 'e\u0301\u0000' };
    await same(host, 'text-tools.count', { text: '🦀 e\u0301\u0000' }, counted);
  });

  test('every variant case comes back, an s64 payload as a string', SLOW_TEST, async () => {
    await same(host, 'text-tools.tokens', { text: '' }, [{ tag: 'blank' }]);
    await same(host, 'text-tools.tokens', { text: 'w -42 9223372036854775807 9223372036854775808  ２ 🦀' }, [
      { tag: 'word', value: 'w' },
      { tag: 'number', value: '-42' },
      { tag: 'number', value: '9223372036854775807' },
      { tag: 'word', value: '9223372036854775808' },
      { tag: 'blank' },
      { tag: 'word', value: '２' },
      { tag: 'word', value: '🦀' },
    ]);
  });

  test('a result err is an error result; bad arguments are named', SLOW_TEST, async () => {
    await failsWith(host, 'text-tools.non-empty', { text: '' }, '');
    await same(host, 'text-tools.non-empty', { text: 'x' }, 'x');
    await refused(host, 'text-tools.big', { n: '-1', m: 0 }, /\/n/);
    await refused(host, 'text-tools.big', { n: 0 }, /"m" is a required property/);
    await refused(host, 'text-tools.tokens', { text: ['a'] }, /\/text/);
  });
});

describe('plain-js (componentize-js, interface calc)', () => {
  let host;
  before(async () => {
    host = await serve('plain-js');
  }, SLOW_TEST);
  after(() => host?.client.close());

  test('the interface functions are tools, with records, enums and options in their schemas', SLOW_TEST, () => {
    const { tools } = host;
    assert.deepEqual(names(tools), ['calc.join', 'calc.run', 'calc.same', 'calc.setting']);
    const run = tools.get('calc.run').inputSchema;
    assert.deepEqual(run.required, ['start', 'steps']);
    assert.deepEqual(run.properties.start, int(-2147483648, 2147483647));
    const step = run.properties.steps.items;
    assert.deepEqual(step.required, ['op', 'value']);
    assert.deepEqual(step.properties.op, { type: 'string', enum: ['add', 'sub', 'mul'] });
    const join = tools.get('calc.join').inputSchema;
    assert.deepEqual(join.required, ['words']);
    assert.deepEqual(join.properties.sep, { anyOf: [{ type: 'null' }, { type: 'string' }] });
    const same3 = tools.get('calc.same');
    assert.deepEqual(same3.inputSchema.properties, { x: float, flag: { type: 'boolean' }, c: char });
    assert.deepEqual(same3.outputSchema.properties.result.prefixItems, [float, { type: 'boolean' }, char]);
    assertOutputSchemas(tools);
  });

  test('every enum case applies, and s32 arithmetic wraps', SLOW_TEST, async () => {
    await same(host, 'calc.run', { start: 7, steps: [] }, 7);
    const steps = [{ op: 'add', value: 2 }, { op: 'mul', value: -3 }, { op: 'sub', value: 4 }];
    await same(host, 'calc.run', { start: 1, steps }, -13);
    await same(host, 'calc.run', { start: 2147483647, steps: [{ op: 'add', value: 1 }] }, -2147483648);
  });

  test('strings, options, floats and chars come back exactly', SLOW_TEST, async () => {
    await same(host, 'calc.join', { words: [] }, '');
    await same(host, 'calc.join', { words: ['a', 'b'] }, 'a b');
    await same(host, 'calc.join', { words: ['a', 'b'], sep: null }, 'a b');
    await same(host, 'calc.join', { words: ['', ''], sep: '' }, '');
    const words = ['x\u0000', 'e\u0301', '👩‍👩‍👧'];
    await same(host, 'calc.join', { words, sep: '→' }, 'x\u0000→e\u0301→👩‍👩‍👧');
    for (const [x, flag, c] of [
      [0.1, true, '🦀'],
      ['NaN', false, '\u0000'],
      ['Infinity', true, '\u0301'],
      ['-Infinity', false, 'a'],
      [5e-324, true, '\u{10FFFF}'],
      [-1e300, false, '𝄞'],
    ]) {
      await same(host, 'calc.same', { x, flag, c }, [x, flag, c]);
    }
  });

  test('bad arguments are named', SLOW_TEST, async () => {
    await refused(host, 'calc.run', { start: 0, steps: [{ op: 'div', value: 1 }] }, /\/steps\/0\/op/);
    await refused(host, 'calc.run', { start: 2147483648, steps: [] }, /\/start/);
    await refused(host, 'calc.same', { x: 0, flag: false, c: 'ab' }, /\/c/);
    await refused(host, 'calc.join', { words: 'a b' }, /\/words/);
  });
});

test(
  "the SDK's default output validation (draft-07 Ajv) accepts tuple results",
  SLOW_TEST,
  async () => {
    const host = await serve('plain-types', { validator: null });
    try {
      await same(host, 'floats', { a: 0.5, b: 0.25 }, [0.5, 0.25]);
    } finally {
      await host.client.close();
    }
  },
);
