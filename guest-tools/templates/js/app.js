// The tools of this component, written with `mcp-tool.js`: each is an
// object with an input schema built with `s` and a `run(args, ctx)`.

import { defineTools, s } from "./mcp-tool.js";

export const tool = defineTools([
  {
    name: "greet",
    description: "Greets someone by name.",
    input: {
      name: s.string({ description: "Who to greet" }),
      style: s.enum(["plain", "excited"], { default: "plain" }),
    },
    readOnly: true,
    run: ({ name, style }) => `Hello, ${name}${style === "excited" ? "!" : "."}`,
  },
  {
    name: "count",
    description: "Counts to `to`, reporting progress; stops when cancelled.",
    input: { to: s.integer({ minimum: 1, maximum: 100000, default: 10 }) },
    readOnly: true,
    run({ to }, ctx) {
      for (let n = 1; n <= to; n++) {
        ctx.checkCancelled();
        ctx.progress(n, to);
      }
      return `counted to ${to}`;
    },
  },
]);
