// What this component offers, written with `mcp-tool.js`: tools (each an
// object with an input schema built with `s` and a `run(args, ctx)`),
// resources (a `skill://` one is part of a skill) and a prompt.

import { defineServer, s, user } from "./mcp-tool.js";

export const { tool, resources, prompts, completion, tasks } = defineServer({
  tools: [
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
  ],
  resources: [
    {
      uri: "greet://styles",
      name: "styles",
      description: "The greeting styles `greet` knows.",
      mimeType: "text/plain",
      read: () => "plain: Hello, NAME.\nexcited: Hello, NAME!",
    },
    {
      // A skill (SEP-2640): when a model should use `greet`. The host hashes it at load.
      uri: "skill://greeting/SKILL.md",
      name: "greeting",
      mimeType: "text/markdown",
      read: () => "---\nname: greeting\ndescription: Greets people by name with the greet tool.\n---\nCall `greet` with their name.\n",
    },
  ],
  prompts: [
    {
      name: "welcome",
      description: "Asks the model to welcome someone with the `greet` tool.",
      arguments: {
        name: s.string({ description: "Who to welcome" }),
        style: s.enum(["plain", "excited"], { default: "plain", description: "How to greet them" }),
      },
      get: ({ name, style }) => [
        user(`Welcome ${name} to the team: greet them with \`greet\` (${style}), then add a kind word.`),
      ],
    },
  ],
});
