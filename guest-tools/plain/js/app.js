// A plain component in JavaScript for the host's tests (issue 25): it
// exports the interface `example:plain-js/calc` (wit/world.wit) and knows
// nothing of the `mcp:tool` contract; the host makes a tool of each function.
//
// Built with componentize-js through guest-tools/js/build.mjs (xtask does
// this into target/guests/plain-js.wasm):
//
//   node ../../js/build.mjs --source app.js --wit wit --world plain-js plain-js.wasm
//
// componentize-js maps the enum `op` to its case name as a string, a record
// to an object, an option to undefined or the value, a tuple to an array and
// a char to a one-character string.

import { get } from "wasi:config/store@0.2.0-rc.1";

/** s32 arithmetic wraps, as a WIT s32 does in the Rust fixtures. */
const apply = {
  add: (a, b) => (a + b) | 0,
  sub: (a, b) => (a - b) | 0,
  mul: (a, b) => Math.imul(a, b),
};

export const calc = {
  run(start, steps) {
    return steps.reduce((acc, step) => apply[step.op](acc, step.value), start);
  },

  /** With no separator, the words are joined with a space. */
  join(words, sep) {
    return words.join(sep ?? " ");
  },

  same(x, flag, c) {
    return [x, flag, c];
  },

  /** A `result` import throws its error; a missing key is undefined (none). */
  setting(key) {
    try {
      return get(key);
    } catch {
      return undefined;
    }
  },
};
