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
//
// Every call runs in a fresh instance: module state does not survive from
// one call to the next.

import * as client from "mcp:tool/client@0.2.1";
import * as s from "./schema.js";

export { s };

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
    switch (payload?.tag) {
      case "cancelled":
        throw new Cancelled();
      case "unsupported":
        throw new RequestFailed("unsupported", "the client does not support this request");
      case "timed-out":
        throw new RequestFailed("timed-out", "the client did not answer in time");
      case "failed":
        throw new RequestFailed("failed", payload.val);
      default:
        throw error;
    }
  }
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
