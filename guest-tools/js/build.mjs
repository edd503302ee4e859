// Builds a JavaScript tool into a WebAssembly component with componentize-js
// (its library API: the `jco componentize` CLI cannot read the WIT folder here).
//
//   node build.mjs [--source app.js] [--wit DIR] [--world NAME]
//                  [--weval-bin PATH | --interpreter] OUT.wasm
//
// Defaults: app.js, the examples' world (../wit-examples, `example-tools`).
// For a tool of your own against the plain contract:
//   node build.mjs --source app.js --wit wit --world tool-component tool.wasm
//
// Ahead of time by default: weval partially evaluates the engine's
// interpreter over the tool's own code, so its functions run as compiled
// WebAssembly, not bytecode (componentize-js's `enableAot`). That needs a
// weval binary: --weval-bin PATH, else $WEVAL_BIN, else `weval` on PATH
// (`cargo install weval --locked`). Without one, or with --interpreter,
// the component runs the same code on the interpreter, and says so.

import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { delimiter, dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { componentize } from "@bytecodealliance/componentize-js";
// componentize-js reads the WIT through preview2-shim's filesystem, which
// (since 0.26) starts with no directories: let it see this machine's files.
import { _setPreopens } from "@bytecodealliance/preview2-shim/filesystem";

const here = dirname(new URL(import.meta.url).pathname);
const { values, positionals } = parseArgs({
  options: {
    source: { type: "string", default: resolve(here, "app.js") },
    wit: { type: "string", default: resolve(here, "../wit-examples") },
    world: { type: "string", default: "example-tools" },
    "weval-bin": { type: "string" },
    interpreter: { type: "boolean", default: false },
  },
  allowPositionals: true,
});
if (positionals.length !== 1) {
  console.error(
    "usage: node build.mjs [--source app.js] [--wit DIR] [--world NAME] [--weval-bin PATH | --interpreter] OUT.wasm",
  );
  process.exit(2);
}

// The weval binary for an ahead-of-time build, or null for the interpreter.
// componentize-js would otherwise download one from GitHub; this build
// only uses one the user installed.
function wevalBin() {
  if (values.interpreter) return null;
  const named = values["weval-bin"] ?? process.env.WEVAL_BIN;
  if (named) {
    if (!existsSync(named)) {
      console.error(`no weval binary at ${named}`);
      process.exit(2);
    }
    return resolve(named);
  }
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && existsSync(join(dir, "weval"))) return join(dir, "weval");
  }
  console.error(
    "weval not found: building for the interpreter (compute runs slower); " +
      "`cargo install weval --locked` builds ahead of time",
  );
  return null;
}

_setPreopens({ "/": "/" });
const weval = wevalBin();
const started = Date.now();
const { component } = await componentize({
  sourcePath: resolve(values.source),
  witPath: resolve(values.wit),
  worldName: values.world,
  // A tool reaches the network only through the host's wasi:http checks;
  // the engine's own fetch() and HTTP server are not needed.
  disableFeatures: ["http", "fetch-event"],
  ...(weval ? { enableAot: true, wevalBin: weval } : {}),
});
const out = resolve(positionals[0]);
await mkdir(dirname(out), { recursive: true });
await writeFile(out, component);
const how = weval ? "ahead of time" : "for the interpreter";
console.error(
  `built ${out} ${how} (${(component.length / 1e6).toFixed(1)} MB) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
