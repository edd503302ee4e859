// Builds a JavaScript tool into a WebAssembly component with componentize-js
// (its library API: the `jco componentize` CLI cannot read the WIT folder here).
//
//   node build.mjs [--source app.js] [--wit DIR] [--world NAME] OUT.wasm
//
// Defaults: app.js, the examples' world (../wit-examples, `example-tools`).
// For a tool of your own against the plain contract:
//   node build.mjs --source app.js --wit wit --world tool-component tool.wasm

import { mkdir, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
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
  },
  allowPositionals: true,
});
if (positionals.length !== 1) {
  console.error("usage: node build.mjs [--source app.js] [--wit DIR] [--world NAME] OUT.wasm");
  process.exit(2);
}

_setPreopens({ "/": "/" });
const started = Date.now();
const { component } = await componentize({
  sourcePath: resolve(values.source),
  witPath: resolve(values.wit),
  worldName: values.world,
  // A tool reaches the network only through the host's wasi:http checks;
  // the engine's own fetch() and HTTP server are not needed.
  disableFeatures: ["http", "fetch-event"],
});
const out = resolve(positionals[0]);
await mkdir(dirname(out), { recursive: true });
await writeFile(out, component);
console.error(`built ${out} (${(component.length / 1e6).toFixed(1)} MB) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
