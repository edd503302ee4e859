// Write mcp-wasm-host tools in JavaScript: a tool is an object with a name,
// a description, an input schema (built with `s`, see schema.js) and a `run`
// function. `defineTools` turns a list of them into the `mcp:tool/tool`
// export, which the module must export as `tool`:
//
//   import { defineTools, s } from "./mcp-tool.js";
//
//   export const tool = defineTools([
//     {
//       name: "greet",
//       description: "Greets someone by name.",
//       input: { name: s.string({ description: "Who to greet" }), excited: s.boolean({ default: false }) },
//       readOnly: true,
//       run: ({ name, excited }) => `Hello, ${name}${excited ? "!" : "."}`,
//     },
//   ]);
//
// Build it with componentize-js 0.23.0 against the `mcp:tool` contract
// (`mcp-wasm-host wit wit` writes it); see build.mjs.
//
// A component built against the `server-component` world (or one that
// includes it) exports resources, prompts, completion and tasks too: make all five
// exports with `defineServer` (see there):
//
//   export const { tool, resources, prompts, completion, tasks } = defineServer({
//     tools: [/* as above */],
//     resources: [{ uri: "notes://readme", name: "readme", mimeType: "text/markdown", read: () => "# Notes" }],
//     templates: [{ uriTemplate: "notes://{day}", name: "day", read: ({ day }) => notes(day),
//                   complete: { day: ["monday", "tuesday"] } }],
//     prompts: [{ name: "summarize", description: "Summarizes a day's notes",
//                 arguments: { day: s.string({ description: "Which day" }) },
//                 get: ({ day }) => [user(`Summarize the notes of ${day}.`)] }],
//   });
//
// - `input` / `output`: a map of property -> schema (or an `s.object(...)`);
//   the host validates every call against the input schema before `run`.
//   `inputSchema` / `outputSchema` take a JSON Schema object as it is.
// - `run(args, ctx)` gets the arguments (with the schema's defaults filled
//   in) and the call's context (see `Context`): cancellation, progress,
//   logging, questions, approval.
// - What `run` returns: a string is a text result; a plain object is the
//   structured content (with its JSON as text, as MCP recommends); `result()`
//   says exactly what to send.
// - Throwing `ToolError` fails the call with a message the model sees;
//   `Cancelled` (thrown by `ctx.checkCancelled()` and by questions the host
//   withdrew) stops it as cancelled, and the host then runs `cleanup`.
// - Hints: `readOnly`, `destructive`, `idempotent`, `openWorld`; and
//   `needsApproval: true` to have the host ask the user before every call.
// - `tasks`: whether a call may run as a task, for a client that speaks
//   MCP's tasks extension: "optional" (the default: one that takes more
//   than a moment, or asks the user something, becomes one), "forbidden"
//   (it always answers in its own response) or "required" (only as a task;
//   other clients are refused).
//
// Every call runs in a fresh instance: module state does not survive from
// one call to the next.

import * as client from "mcp:tool/client@0.2.3";
import * as s from "./schema.js";

export { s };

// Done once, at build time, for every call. componentize-js runs its
// generated bindings (which lift a call's arguments, `await` the export and
// lower its result) in a global of their own, where SpiderMonkey makes each
// standard class, and compiles each of its built-in functions, on first
// use. Nothing at build time used them there, so every fresh instance did
// it again during its call: `Promise`, `Uint8Array`, `String` and
// `SavedFrame` were about 40 % of a JavaScript call's time in the guest, and
// the built-ins the bindings call take another tenth off a call's p50
// (BENCHMARKS.md). The functions of `client` belong to that global, so its
// `Function` runs the same steps there, before componentize-js snapshots
// the engine. A no-op if the bindings ever share this module's global,
// whose classes exist from the start; an engine that refused it would cost
// its calls that time again, not the build.
try {
  const binding = Object.values(client).find((value) => typeof value === "function");
  const BindingsFunction = binding && Object.getPrototypeOf(binding).constructor;
  if (BindingsFunction && BindingsFunction !== Function) {
    BindingsFunction(`return (async () => {
      await null;
      const memory = new ArrayBuffer(16);
      new Uint8Array(memory, 0, 8).set(new Uint8Array(4));
      const view = new DataView(memory);
      view.setInt8(0, 0, true);
      view.setUint32(4, "a".charCodeAt(0), true);
      const handle = Object.create(Object.prototype);
      Object.defineProperty(handle, Symbol("handle"), { writable: true, value: 1 });
      new FinalizationRegistry(() => {}).register(handle, 1, handle);
      const { text, rest } = { text: String(0), rest: ((...args) => args)(1) };
      return [text, rest];
    })();`)();
  }
} catch {
  // Only time is lost: see above.
}

/** The tool failed; the message is shown to the model (an isError result). */
export class ToolError extends Error {}

/** The arguments passed the schema but make no sense to the tool. */
export class InvalidArguments extends ToolError {}

/**
 * The call was cancelled: stop now. Let it propagate; the call ends as
 * cancelled and the host runs `cleanup`.
 */
export class Cancelled extends Error {
  constructor() {
    super("cancelled");
  }
}

/**
 * A question to the client got no answer; `kind` says why: `unsupported`
 * (the client cannot be asked this), `timed-out` or `failed`.
 */
export class RequestFailed extends ToolError {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

/** The user did not approve the operation; the tool must not go ahead. */
export class NotApproved extends ToolError {}

const RESULT = Symbol("result");

/**
 * Exactly what a call sends back: `content` (strings are text; or blocks
 * from `text()`, `image()`, `audio()`, `embedded()`), optional `structured`
 * content (an object) and `isError`.
 */
export function result({ content = [], structured, isError = false } = {}) {
  return { [RESULT]: true, content, structured, isError };
}

/** A text content block. */
export function text(value) {
  return { tag: "text", val: String(value) };
}

/** An image content block. */
export function image(data, mimeType = "image/png") {
  return { tag: "image", val: { data: new Uint8Array(data), mimeType } };
}

/** An audio content block. */
export function audio(data, mimeType = "audio/wav") {
  return { tag: "audio", val: { data: new Uint8Array(data), mimeType } };
}

/** A resource embedded with its contents (a string, or bytes). */
export function embedded(uri, body, mimeType) {
  const resourceBody =
    typeof body === "string" ? { tag: "text", val: body } : { tag: "blob", val: new Uint8Array(body) };
  return { tag: "embedded", val: { uri, mimeType, body: resourceBody } };
}

/** One call's link to the host: who it is, whether it should stop, and how
 * to talk to the client and the user. */
export class Context {
  constructor(callId, cancelled) {
    /** Unique for this host process; name external state by it. */
    this.callId = callId;
    this._cancelled = cancelled;
  }

  /** True once the call should stop (client cancel, deadline, shutdown). */
  get cancelled() {
    return this._cancelled.isCancelled();
  }

  /** Why the call should stop (`client-cancelled`, `deadline-exceeded`,
   * `shutdown`, `no-answer`), or undefined while it should carry on. */
  get stopReason() {
    return this._cancelled.reason();
  }

  /** Throws `Cancelled` if the call should stop. Call it between steps. */
  checkCancelled() {
    if (this.cancelled) throw new Cancelled();
  }

  /** A `wasi:io/poll` pollable that becomes ready on cancel. */
  cancelPollable() {
    return this._cancelled.subscribe();
  }

  /** Blocks (parked in the host, using no CPU) until the call is cancelled,
   * then throws `Cancelled`. */
  waitForCancel() {
    this._cancelled.subscribe().block();
    throw new Cancelled();
  }

  /** Reports progress (sent if the client asked for it); must increase. */
  progress(progress, total, message) {
    client.progress(progress, total, message);
  }

  /** Logs `data` (any JSON value) to the host's log and to the client. */
  log(data, { level = "info", logger } = {}) {
    client.log(level, logger, JSON.stringify(data));
  }

  /**
   * Asks the user to fill in a form; `schema` is an `s.object(...)` (or a
   * map of property -> schema) with flat primitive properties. Returns
   * `{ action: "accept" | "decline" | "cancel", content }`. Throws
   * `Cancelled` if the call was cancelled meanwhile (the question is
   * withdrawn), `RequestFailed` if no answer came.
   */
  elicit(message, schema) {
    return answer(ask(() => client.elicit(message, JSON.stringify(s.toolSchema(schema)))));
  }

  /** Sends the user to `url` (e.g. to sign in); see `elicit`. */
  elicitUrl(message, url) {
    return answer(ask(() => client.elicitUrl(message, url)));
  }

  /** Asks the client's model (`sampling/createMessage` params); returns its answer. */
  sample(request) {
    return JSON.parse(ask(() => client.sample(JSON.stringify(request))));
  }

  /**
   * The client's roots (`roots/list`): directories or files the user lets
   * servers work in, each `{ uri, name }` (`name` may be undefined). Throws
   * `RequestFailed` (`unsupported` when the client declared no roots) or
   * `Cancelled`.
   */
  listRoots() {
    return ask(() => client.listRoots()).map(root);
  }

  /**
   * Puts several questions to the client at once and waits for all of them.
   * `questions` maps a key you name (1 to 64 of `A-Z a-z 0-9 _ - .`) to
   * `{ form: [message, schema] }`, `{ url: [message, url] }`,
   * `{ sample: request }` or `{ roots: true }`; on protocol 2026-07-28 they
   * reach the client in one `input_required` result under those keys.
   *
   * Returns an object with the same keys: `{ action, content }` for a form
   * or a URL, the client's answer for a sample, a list of roots, or a
   * `RequestFailed` (not thrown) for a question that got no answer, so one
   * the client cannot take does not lose the others. Throws `Cancelled` if
   * the call was cancelled meanwhile (every question is withdrawn).
   */
  ask(questions) {
    const asked = Object.entries(questions).map(([key, question]) => [key, toQuestion(question)]);
    const answers = ask(() => client.ask(asked));
    const got = {};
    asked.forEach(([key], at) => {
      const result = answers[at];
      if (result.tag === "err") {
        const failure = failureOf(result.val);
        if (failure instanceof Cancelled) throw failure;
        got[key] = failure;
      } else if (result.val.tag === "elicit") {
        got[key] = answer(result.val.val);
      } else if (result.val.tag === "sample") {
        got[key] = JSON.parse(result.val.val);
      } else {
        got[key] = result.val.val.map(root);
      }
    });
    return got;
  }

  /**
   * Asks the user to approve `operation` (one sentence they will read).
   * Returns once approved; throws `NotApproved` with the reason otherwise,
   * or `Cancelled` if the call was stopped while waiting.
   */
  requestApproval(operation) {
    let refused;
    try {
      client.requestApproval(operation);
    } catch (error) {
      refused = String(error?.payload ?? error);
    }
    if (this.cancelled) throw new Cancelled();
    if (refused !== undefined) throw new NotApproved(refused);
  }
}

/** Runs a client request, turning its error into `Cancelled` or `RequestFailed`. */
function ask(request) {
  try {
    return request();
  } catch (error) {
    const payload = error?.payload;
    if (!payload?.tag) throw error;
    throw failureOf(payload);
  }
}

/** A contract `request-error` as the error it means. */
function failureOf(error) {
  switch (error.tag) {
    case "cancelled":
      return new Cancelled();
    case "unsupported":
      return new RequestFailed("unsupported", "the client does not support this request");
    case "timed-out":
      return new RequestFailed("timed-out", "the client did not answer in time");
    default:
      return new RequestFailed("failed", String(error.val));
  }
}

/** A question of `Context.ask` as the contract's `question`. */
function toQuestion(question) {
  if (question.form) {
    const [message, schema] = question.form;
    return { tag: "elicit", val: [message, JSON.stringify(s.toolSchema(schema))] };
  }
  if (question.url) return { tag: "elicit-url", val: question.url };
  if (question.sample) return { tag: "sample", val: JSON.stringify(question.sample) };
  if (question.roots) return { tag: "list-roots" };
  throw new TypeError("a question for ask is { form }, { url }, { sample } or { roots: true }");
}

function root({ uri, name }) {
  return { uri, name };
}

function answer(response) {
  if (response.tag === "accept") return { action: "accept", content: JSON.parse(response.val) };
  return { action: response.tag, content: undefined };
}

/** A value `run` returned, as a WIT `call-result`. */
function toCallResult(value, declaredOutput) {
  if (value && value[RESULT]) {
    return {
      content: value.content.map((c) => (typeof c === "string" ? text(c) : c)),
      structuredContent: value.structured === undefined ? undefined : JSON.stringify(value.structured),
      isError: value.isError,
    };
  }
  if (value === undefined || value === null) {
    return { content: [], structuredContent: undefined, isError: false };
  }
  if (typeof value === "string") {
    return { content: [text(value)], structuredContent: undefined, isError: false };
  }
  const body = JSON.stringify(value);
  const structured = declaredOutput || (typeof value === "object" && !Array.isArray(value));
  return { content: [text(body)], structuredContent: structured ? body : undefined, isError: false };
}

/** A thrown value as a WIT `call-error`. */
function toCallError(error) {
  if (error instanceof Cancelled) return { tag: "cancelled" };
  if (error instanceof InvalidArguments) return { tag: "invalid-arguments", val: error.message };
  if (error instanceof ToolError) return { tag: "failed", val: error.message };
  if (error instanceof Error) return { tag: "failed", val: `${error.name}: ${error.message}` };
  return { tag: "failed", val: String(error) };
}

/**
 * The `mcp:tool/tool` export for `tools`; export it as `tool`.
 * `cleanup(callId, reason)`, if given, runs in a fresh instance for every
 * call that did not return normally (`reason`: `client-cancelled`,
 * `deadline-exceeded`, `shutdown`, `no-answer`, `limit-exceeded`): release
 * what the call left outside the sandbox, named by its call id, quickly.
 */
export function defineTools(tools, { cleanup } = {}) {
  const byName = new Map();
  for (const t of tools) {
    if (byName.has(t.name)) throw new Error(`two tools are named ${t.name}`);
    if (!["forbidden", "optional", "required", undefined].includes(t.tasks)) {
      throw new Error(`tool ${t.name}: tasks is "forbidden", "optional" or "required", not ${t.tasks}`);
    }
    const input = t.inputSchema ?? s.toolSchema(t.input, { closed: true });
    const output = t.outputSchema ?? (t.output ? s.toolSchema(t.output) : undefined);
    // The host validates arguments but does not fill in defaults: do it here.
    const defaults = Object.entries(input.properties ?? {}).filter(([, schema]) => "default" in schema);
    byName.set(t.name, {
      run: t.run,
      defaults,
      info: {
        name: t.name,
        title: t.title,
        description: t.description,
        inputSchema: JSON.stringify(input),
        outputSchema: output === undefined ? undefined : JSON.stringify(output),
        annotations: {
          readOnly: t.readOnly,
          destructive: t.destructive,
          idempotent: t.idempotent,
          openWorld: t.openWorld,
        },
        needsApproval: t.needsApproval,
      },
    });
  }
  return {
    listTools() {
      return [...byName.values()].map((t) => t.info);
    },

    call(callId, name, args, cancelled) {
      const t = byName.get(name);
      if (!t) throw { tag: "unknown-tool", val: name };
      const ctx = new Context(callId, cancelled);
      try {
        const given = args ? JSON.parse(args) : {};
        for (const [name, schema] of t.defaults) {
          if (!(name in given)) given[name] = JSON.parse(JSON.stringify(schema.default));
        }
        return toCallResult(t.run(given, ctx), t.info.outputSchema !== undefined);
      } catch (error) {
        throw toCallError(error);
      }
    },

    cleanup(callId, reason) {
      if (!cleanup) return;
      try {
        cleanup(callId, reason);
      } catch (error) {
        console.error(`cleanup failed: ${error}`);
      }
    },
  };
}

// ---- Resources, resource templates and prompts ---------------------------
//
// The `server-component` world's other exports, made by `defineServer`
// beside the tool export.

/**
 * There is no resource at that URI (throw it from a template's `read` for a
 * URI that matches but names nothing); the client gets "resource not found".
 */
export class NotFound extends Error {
  constructor(message = "not found") {
    super(message);
  }
}

/**
 * A message of a prompt from the user: a string (text) or a content block,
 * e.g. `user(image(png))` or `user(embedded(uri, body, mimeType))`.
 */
export function user(content) {
  return { role: "user", content };
}

/** A message of a prompt from the assistant: a string or a content block. */
export function assistant(content) {
  return { role: "assistant", content };
}

// The most variables a template may hold, as the host counts them.
const MAX_TEMPLATE_VARIABLES = 16;

/**
 * `template` as `{ literal }` and `{ variable }` parts; refuses what the host
 * refuses (only `{name}` expressions, text between two variables, at least
 * one variable), so the build fails, not the load.
 */
function parseTemplate(template) {
  const parts = [];
  let rest = template;
  while (rest.length > 0) {
    if (rest.startsWith("{")) {
      const end = rest.indexOf("}");
      if (end < 0) throw new Error(`URI template ${template} has an unclosed \`{\``);
      const name = rest.slice(1, end);
      if (!/^[A-Za-z0-9_]+$/.test(name)) {
        throw new Error(`URI template ${template} has a variable other than \`{name}\` (letters, digits, _)`);
      }
      if (parts.length > 0 && "variable" in parts[parts.length - 1]) {
        throw new Error(`URI template ${template} has two variables with no text between them`);
      }
      parts.push({ variable: name });
      rest = rest.slice(end + 1);
    } else {
      let end = rest.indexOf("{");
      if (end < 0) end = rest.length;
      if (rest.slice(0, end).includes("}")) throw new Error(`URI template ${template} has a \`}\` with no \`{\``);
      parts.push({ literal: rest.slice(0, end) });
      rest = rest.slice(end);
    }
  }
  const variables = parts.filter((part) => "variable" in part).length;
  if (variables === 0) throw new Error(`URI template ${template} has no \`{variable}\` (make it a resource)`);
  if (variables > MAX_TEMPLATE_VARIABLES) {
    throw new Error(`URI template ${template} has more than ${MAX_TEMPLATE_VARIABLES} variables`);
  }
  return parts;
}

/**
 * The host's rule (host/src/component/uri_template.rs): a `{name}` matches
 * one or more characters other than `/`, up to the first place the text
 * after it matches; the whole URI must be used up. The variables by name,
 * or undefined.
 */
function matchParts(parts, uri) {
  let rest = uri;
  const values = {};
  for (let index = 0; index < parts.length; index++) {
    const part = parts[index];
    if ("literal" in part) {
      if (!rest.startsWith(part.literal)) return undefined;
      rest = rest.slice(part.literal.length);
      continue;
    }
    let segmentEnd = rest.indexOf("/");
    if (segmentEnd < 0) segmentEnd = rest.length;
    const following = parts[index + 1]?.literal;
    let end = segmentEnd;
    if (following !== undefined) {
      // The value stops at or before the next `/`: the text after it starts
      // there at the latest (it may start with the `/`).
      end = -1;
      for (let at = 1; at <= segmentEnd; at++) {
        if (rest.startsWith(following, at)) {
          end = at;
          break;
        }
      }
      if (end < 0) return undefined;
    }
    if (end === 0) return undefined;
    values[part.variable] = rest.slice(0, end);
    rest = rest.slice(end);
  }
  return rest.length === 0 ? values : undefined;
}

/** The variables of `uri` by name if it matches `uriTemplate` as the host matches it, else undefined. */
export function matchTemplate(uriTemplate, uri) {
  return matchParts(parseTemplate(uriTemplate), uri);
}

/**
 * A completion spec as `(value, context) => string[]`: a list of values
 * (those starting with what the user typed), or a function of the typed
 * value and the arguments already filled in (an object).
 */
function completer(spec) {
  if (typeof spec === "function") return (value, context) => [...spec(value, context)].map(String);
  const choices = [...spec].map(String);
  return (value) => choices.filter((choice) => choice.startsWith(value));
}

/** `complete` (argument -> spec) as argument -> completer, checked against `names`. */
function completers(complete, names, what) {
  const made = new Map();
  for (const [name, spec] of Object.entries(complete ?? {})) {
    if (!names.includes(name)) throw new Error(`${what}: \`complete\` names ${name}, which it does not take`);
    made.set(name, completer(spec));
  }
  return made;
}

/** What a resource's `read` returned, as a WIT `resource-body`. */
function resourceBody(value) {
  if (typeof value === "string") return { tag: "text", val: value };
  if (value instanceof Uint8Array) return { tag: "blob", val: value };
  if (value instanceof ArrayBuffer) return { tag: "blob", val: new Uint8Array(value) };
  if (ArrayBuffer.isView(value)) {
    return { tag: "blob", val: new Uint8Array(value.buffer, value.byteOffset, value.byteLength) };
  }
  return { tag: "text", val: JSON.stringify(value) };
}

/** What a prompt's `get` returned, as WIT `prompt-message`s. */
function promptMessages(value) {
  const messages = Array.isArray(value) ? value : [value];
  return messages.map((message) => {
    if (typeof message === "string") message = user(message);
    if (!message || (message.role !== "user" && message.role !== "assistant")) {
      throw new Error("a prompt returns messages (`user(...)`, `assistant(...)`) or a string");
    }
    const content = typeof message.content === "string" ? text(message.content) : message.content;
    return { role: message.role, content };
  });
}

/** What a failed read or prompt says: a `ToolError`'s message, or what a bug threw. */
function failure(error) {
  if (error instanceof ToolError) return error.message;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

function checkUri(uri) {
  // eslint-disable-next-line no-control-regex
  if (typeof uri !== "string" || uri.length === 0 || /[\u0000-\u001f\u007f]/.test(uri)) {
    throw new Error(`resource URI ${JSON.stringify(uri)} is empty or has control characters`);
  }
}

/** The `mcp:tool/resources` export for `resources` and `templates`. */
function resourcesExport(resources, templates) {
  const byUri = new Map();
  for (const r of resources) {
    checkUri(r.uri);
    if (byUri.has(r.uri)) throw new Error(`two resources have the URI ${r.uri}`);
    if (typeof r.read !== "function") throw new Error(`resource ${r.uri} has no read()`);
    byUri.set(r.uri, r);
  }
  const byTemplate = new Map();
  for (const t of templates) {
    if (byTemplate.has(t.uriTemplate)) throw new Error(`two resource templates are ${t.uriTemplate}`);
    if (typeof t.read !== "function") throw new Error(`resource template ${t.uriTemplate} has no read()`);
    const parts = parseTemplate(t.uriTemplate);
    const variables = parts.filter((part) => "variable" in part).map((part) => part.variable);
    byTemplate.set(t.uriTemplate, {
      ...t,
      parts,
      completers: completers(t.complete, variables, `resource template ${t.uriTemplate}`),
    });
  }
  const info = (r) => ({ name: r.name ?? r.uri, title: r.title, description: r.description, mimeType: r.mimeType });
  return {
    templates: byTemplate,
    export: {
      listResources() {
        return [...byUri.values()].map((r) => ({ uri: r.uri, ...info(r), size: undefined }));
      },

      listTemplates() {
        return [...byTemplate.values()].map((t) => ({ uriTemplate: t.uriTemplate, ...info(t) }));
      },

      read(callId, uri, cancelled) {
        const ctx = new Context(callId, cancelled);
        try {
          let value;
          let mimeType;
          const found = byUri.get(uri);
          if (found) {
            value = found.read(ctx);
            mimeType = found.mimeType;
          } else {
            let matched;
            for (const template of byTemplate.values()) {
              const vars = matchParts(template.parts, uri);
              if (vars) {
                matched = { template, vars };
                break;
              }
            }
            if (!matched) throw new NotFound();
            value = matched.template.read(matched.vars, ctx);
            mimeType = matched.template.mimeType;
          }
          if (value === undefined) throw new Error("read() returned nothing");
          return [{ uri, mimeType, body: resourceBody(value) }];
        } catch (error) {
          if (error instanceof NotFound) throw { tag: "not-found" };
          if (error instanceof Cancelled) throw { tag: "cancelled" };
          throw { tag: "failed", val: failure(error) };
        }
      },
    },
  };
}

/** The `mcp:tool/prompts` export for `prompts`. */
function promptsExport(prompts) {
  const byName = new Map();
  for (const p of prompts) {
    if (typeof p.name !== "string" || !/^[A-Za-z0-9_.-]{1,128}$/.test(p.name)) {
      throw new Error(`prompt name ${p.name}: 1-128 characters of A-Z a-z 0-9 _ - .`);
    }
    if (byName.has(p.name)) throw new Error(`two prompts are named ${p.name}`);
    if (typeof p.get !== "function") throw new Error(`prompt ${p.name} has no get()`);
    // The arguments are a map of name -> `s.string(...)` / `s.enum([...])`,
    // required unless optional or defaulted, as a tool's input is.
    const schema = s.toolSchema(p.arguments ?? {});
    const required = new Set(schema.required ?? []);
    const args = Object.entries(schema.properties).map(([name, argument]) => {
      const strings = argument.type === undefined || argument.type === "string";
      if (!strings || !(argument.enum ?? []).every((value) => typeof value === "string")) {
        throw new Error(`prompt ${p.name}: argument ${name} is a string (s.string() or s.enum([...]))`);
      }
      return { name, argument };
    });
    const made = completers(p.complete, args.map((a) => a.name), `prompt ${p.name}`);
    for (const { name, argument } of args) {
      if (argument.enum && !made.has(name)) made.set(name, completer(argument.enum));
    }
    byName.set(p.name, {
      get: p.get,
      args,
      completers: made,
      info: {
        name: p.name,
        title: p.title,
        description: p.description,
        arguments: args.map(({ name, argument }) => ({
          name,
          title: argument.title,
          description: argument.description,
          required: required.has(name),
        })),
      },
    });
  }
  return {
    prompts: byName,
    export: {
      listPrompts() {
        return [...byName.values()].map((p) => p.info);
      },

      getPrompt(callId, name, argumentPairs, cancelled) {
        const p = byName.get(name);
        if (!p) throw { tag: "invalid-arguments", val: `no prompt named ${name}` };
        const ctx = new Context(callId, cancelled);
        try {
          const given = Object.fromEntries(argumentPairs);
          for (const { name, argument } of p.args) {
            if (!(name in given) && "default" in argument) given[name] = argument.default;
            if (name in given && argument.enum && !argument.enum.includes(given[name])) {
              throw new InvalidArguments(`\`${name}\` must be one of ${argument.enum.join(", ")}`);
            }
          }
          // The host checked these; a component may be served by another.
          for (const { name, required } of p.info.arguments) {
            if (required && !(name in given)) throw new InvalidArguments(`argument \`${name}\` is required`);
          }
          return { description: undefined, messages: promptMessages(p.get(given, ctx)) };
        } catch (error) {
          if (error instanceof InvalidArguments) throw { tag: "invalid-arguments", val: error.message };
          if (error instanceof Cancelled) throw { tag: "cancelled" };
          throw { tag: "failed", val: failure(error) };
        }
      },
    },
  };
}

/**
 * Everything a component offers, as the exports of the `server-component`
 * world; export them under these names:
 *
 *   export const { tool, resources, prompts, completion, tasks } = defineServer({
 *     tools: [...],            // as for defineTools
 *     cleanup(callId, reason) {},
 *     resources: [{ uri, name, title, description, mimeType, read(ctx) }],
 *     templates: [{ uriTemplate, name, title, description, mimeType, read(vars, ctx), complete }],
 *     prompts: [{ name, title, description, arguments, get(args, ctx), complete }],
 *   });
 *
 * - A resource's `read` returns a string (text), bytes (a `Uint8Array`: a
 *   blob) or any other JSON value (its JSON text). A template's gets its
 *   variables by name (each `{name}` matches one or more characters other
 *   than `/`, as the host matches it) and throws `NotFound` for a URI that
 *   names nothing.
 * - A prompt's `arguments` map each name to `s.string({ description })` or
 *   `s.enum([...])`, required unless `s.optional(...)` or given a
 *   `default`; `get(args, ctx)` returns messages (`user(...)`,
 *   `assistant(...)`: a string or a content block) or a string (one user
 *   message). Throwing `InvalidArguments` refuses the arguments.
 * - `complete` maps an argument (or variable) to its suggestions while the
 *   user types: a list (those starting with the typed text), or a function
 *   `(value, context) => [...]` (`context`: the arguments already given).
 *   An `s.enum` argument is suggested from its values.
 *
 * What is left out is offered as none (an empty list).
 */
export function defineServer({ tools = [], cleanup, resources = [], templates = [], prompts = [] } = {}) {
  const offered = resourcesExport(resources, templates);
  const asked = promptsExport(prompts);
  return {
    tool: defineTools(tools, { cleanup }),
    resources: offered.export,
    prompts: asked.export,
    tasks: {
      listTaskSupport() {
        return tools.filter((t) => (t.tasks ?? "optional") !== "optional").map((t) => [t.name, t.tasks]);
      },
    },
    completion: {
      complete(callId, request) {
        const { reference, argument, value, context } = request;
        const entry =
          reference.tag === "prompt" ? asked.prompts.get(reference.val) : offered.templates.get(reference.val);
        const complete = entry?.completers.get(argument);
        let values = [];
        if (complete) {
          try {
            values = complete(value, Object.fromEntries(context));
          } catch (error) {
            throw `completing \`${argument}\` failed: ${failure(error)}`;
          }
        }
        return { values, total: values.length, hasMore: false };
      },
    },
  };
}
