// The example tools in JavaScript: the same names and behaviours as the Rust
// `demo` component and the Python example, so one test runs the same
// assertions against each (tests/e2e/languages.rs). See ../python/app.py for
// the list.
//
// Besides the tools, a resource, a resource template and a prompt, named
// `js://...` and `js_...` so they do not clash with the Python example's when
// both are served: `js://examples/about` (text/plain), `js://snapshots/{id}`
// (application/json, `id` completed from the snapshots there are) and
// `js_plan_prune` (`keep`, required and completed; `reason`, optional).
//
// Built against guest-tools/wit-examples (the contract plus
// `wasi:filesystem` and `wasi:clocks/monotonic-clock`): JavaScript has no
// files or blocking sleep of its own, so the lock file and the countdown's
// steps use those WASI interfaces directly. `node build.mjs OUT.wasm`.

import { getDirectories } from "wasi:filesystem/preopens@0.2.6";
import { subscribeDuration } from "wasi:clocks/monotonic-clock@0.2.6";
import {
  defineServer,
  s,
  user,
  assistant,
  embedded,
  InvalidArguments,
  NotFound,
  ToolError,
  NotApproved,
  RequestFailed,
} from "./mcp-tool.js";

/** Blocks for `ms` milliseconds (parked in the host). */
function sleep(ms) {
  subscribeDuration(BigInt(Math.round(ms * 1e6))).block();
}

/** The directory the user granted (the first preopen), if any. */
function grantedDir() {
  const granted = getDirectories();
  return granted.length > 0 ? granted[0][0] : undefined;
}

function holdLock(callId) {
  const dir = grantedDir();
  if (!dir) return;
  const lock = dir.openAt({}, `${callId}.lock`, { create: true, truncate: true }, { write: true });
  lock.write(new TextEncoder().encode(callId), 0n);
}

function releaseLock(callId) {
  try {
    grantedDir()?.unlinkFileAt(`${callId}.lock`);
  } catch {
    // Already gone is fine: cleanup must be safe to run for any call.
  }
}

const calm = { readOnly: true, destructive: false, idempotent: true, openWorld: false };

// The (pretend) snapshots `prune` deletes.
const SNAPSHOTS = {
  "2024-01-31": { id: "2024-01-31", sizeMb: 512, tables: ["customers", "orders"] },
  "2024-02-29": { id: "2024-02-29", sizeMb: 640, tables: ["customers", "orders", "order_items"] },
  "2024-03-31": { id: "2024-03-31", sizeMb: 702, tables: ["customers", "orders", "order_items"] },
};

export const { tool, resources, prompts, completion, tasks } = defineServer({
  resources: [
    {
      uri: "js://examples/about",
      name: "about",
      description: "What this component is.",
      mimeType: "text/plain",
      read: () => "The JavaScript example tools for mcp-wasm-host, built with componentize-js.",
    },
  ],
  templates: [
    {
      uriTemplate: "js://snapshots/{id}",
      name: "snapshot",
      description: "One snapshot: its date, size and the tables it holds.",
      mimeType: "application/json",
      read({ id }) {
        const snapshot = SNAPSHOTS[id];
        if (!snapshot) throw new NotFound();
        return snapshot;
      },
      complete: { id: Object.keys(SNAPSHOTS) },
    },
  ],
  prompts: [
    {
      name: "js_plan_prune",
      description: "Asks for a plan to prune old snapshots, keeping the newest `keep`.",
      arguments: {
        keep: s.string({ description: "How many of the newest snapshots to keep" }),
        reason: s.optional(s.string({ description: "Why space is needed" })),
      },
      complete: { keep: ["1", "2", "3"] },
      get({ keep, reason }) {
        const count = Number(keep);
        if (!Number.isInteger(count) || count < 0) throw new InvalidArguments("`keep` is a whole number");
        const ids = Object.keys(SNAPSHOTS).sort();
        const doomed = ids.slice(0, Math.max(0, ids.length - count));
        return [
          user(
            `Plan how to prune our snapshots, keeping the newest ${count}${reason ? ` (${reason})` : ""}. ` +
              `That deletes ${doomed.length ? doomed.join(", ") : "none"}.`,
          ),
          ...doomed.map((id) =>
            user(embedded(`js://snapshots/${id}`, JSON.stringify(SNAPSHOTS[id]), "application/json")),
          ),
          assistant("I will check what depends on each snapshot before suggesting `prune`."),
        ];
      },
    },
  ],
  tools: [
    {
      name: "echo",
      description: "Returns the text it is given.",
      input: { text: s.string({ description: "Text to return" }) },
      output: { text: s.string() },
      ...calm,
      // Never a task: it answers at once, so a task would only add polling.
      tasks: "forbidden",
      run: ({ text }) => ({ text }),
    },
    {
      name: "countdown",
      description:
        "Counts down from `steps`, one step every `step_ms` milliseconds; stops early when cancelled.",
      input: {
        steps: s.integer({ minimum: 0, maximum: 100000, default: 50 }),
        step_ms: s.integer({ minimum: 0, maximum: 60000, default: 20 }),
        quiet: s.boolean({
          default: false,
          description: "Report no progress and log nothing (benchmarks compare both)",
        }),
      },
      ...calm,
      run({ steps, step_ms, quiet }, ctx) {
        for (let left = steps; left > 0; left--) {
          ctx.checkCancelled();
          // Goes to the host's log on stderr, never to the MCP stream.
          console.log(`countdown: ${left}`);
          sleep(step_ms);
          if (!quiet) ctx.progress(steps - left + 1, steps, `${left} to go`);
        }
        if (!quiet) ctx.log(`counted down from ${steps}`, { logger: "countdown" });
        return `counted down from ${steps}`;
      },
    },
    {
      name: "wait_for_cancel",
      description: "Waits, parked in wasi:io/poll on its `cancelled` pollable, until the call is cancelled.",
      input: {},
      ...calm,
      run: (_, ctx) => ctx.waitForCancel(),
    },
    {
      // Destructive (it holds external state), but only a demo of
      // cancellation: it says so rather than asking every time.
      name: "spin",
      description: "Computes forever and ignores cancellation; holds <call-id>.lock in the granted directory.",
      input: {},
      readOnly: false,
      destructive: true,
      idempotent: false,
      openWorld: false,
      needsApproval: false,
      run(_, ctx) {
        holdLock(ctx.callId);
        let x = 1;
        for (;;) {
          x = (Math.imul(x, 1103515245) + 12345) | 0;
        }
      },
    },
    {
      name: "survey",
      description: "Asks the user `questions` short questions in a row and returns the answers.",
      input: { questions: s.integer({ minimum: 1, maximum: 20, default: 3 }) },
      ...calm,
      run({ questions }, ctx) {
        const schema = s.object({ answer: s.string({ title: "Answer" }) });
        const answers = [];
        for (let n = 1; n <= questions; n++) {
          let answer;
          try {
            answer = ctx.elicit(`Question ${n} of ${questions}: what should happen next?`, schema);
          } catch (error) {
            if (error instanceof RequestFailed && error.kind === "unsupported") {
              throw new ToolError("this client cannot ask the user questions");
            }
            if (error instanceof RequestFailed && error.kind === "timed-out") {
              throw new ToolError(`no answer to question ${n} in time`);
            }
            throw error;
          }
          if (answer.action !== "accept") return `the user stopped after ${answers.length} answers`;
          answers.push(answer.content.answer ?? "");
          ctx.checkCancelled();
        }
        return answers.join("\n");
      },
    },
    {
      name: "plan_trip",
      description: "Asks the user where to go and the model for an idea at once, and names the client's roots.",
      input: {},
      ...calm,
      run(_, ctx) {
        const roots = ctx.listRoots();
        const { where, idea } = ctx.ask({
          where: { form: ["Where to?", s.object({ answer: s.string() })] },
          idea: {
            sample: { messages: [{ role: "user", content: { type: "text", text: "An idea?" } }], maxTokens: 20 },
          },
        });
        for (const got of [where, idea]) {
          if (got instanceof Error) throw new ToolError(`no answer: ${got.message}`);
        }
        const names = roots.map((root) => root.name ?? root.uri).join(", ");
        return `roots: ${names}; where: ${where.content.answer}; idea: ${idea.content.text}`;
      },
    },
    {
      name: "delete_records",
      description: "Deletes every record of `table` (pretend). The user must approve each call first.",
      input: { table: s.string({ description: "Which table to empty" }) },
      readOnly: false,
      destructive: true,
      idempotent: false,
      openWorld: false,
      needsApproval: true,
      // Only reached once the user approved (the host asked first).
      run: ({ table }) => `deleted every record of ${table}`,
    },
    {
      // Finding is harmless; only the one step that deletes asks.
      name: "prune",
      description:
        "Finds `count` old snapshots, then asks the user's approval before deleting them. " +
        "Holds <call-id>.lock in the granted directory meanwhile.",
      input: { count: s.integer({ minimum: 1, maximum: 1000, default: 3 }) },
      readOnly: false,
      destructive: false,
      idempotent: false,
      openWorld: false,
      run({ count }, ctx) {
        // Stands in for a lock or transaction held while the user decides.
        // If the call is stopped while waiting, `cleanup` releases it.
        holdLock(ctx.callId);
        try {
          ctx.requestApproval(`Delete ${count} old snapshots for good?`);
        } catch (error) {
          if (error instanceof NotApproved) {
            releaseLock(ctx.callId);
            throw new ToolError(`nothing pruned: ${error.message}`);
          }
          throw error;
        }
        releaseLock(ctx.callId);
        return `pruned ${count} snapshots`;
      },
    },
    {
      name: "stats",
      description: "Counts, sums and averages `numbers`, and sorts them.",
      input: {
        numbers: s.array(s.number(), { description: "The numbers to describe" }),
        order: s.enum(["ascending", "descending"], { default: "ascending" }),
        digits: s.nullable(s.integer({ minimum: 0, maximum: 12, default: null })),
      },
      output: {
        count: s.integer(),
        total: s.number(),
        mean: s.nullable(s.number()),
        median: s.nullable(s.number()),
        order: s.array(s.number()),
      },
      ...calm,
      run({ numbers, order, digits }) {
        const round = (x) => (digits === null ? x : Number(x.toFixed(digits)));
        const sorted = [...numbers].sort((a, b) => a - b);
        const total = numbers.reduce((sum, x) => sum + x, 0);
        const mid = Math.floor(sorted.length / 2);
        const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
        return {
          count: numbers.length,
          total: round(total),
          mean: numbers.length ? round(total / numbers.length) : null,
          median: numbers.length ? round(median) : null,
          order: order === "descending" ? sorted.reverse() : sorted,
        };
      },
    },
  ],
  cleanup(callId, reason) {
    console.log(`cleanup ${callId}: ${reason}`);
    releaseLock(callId);
  },
});
