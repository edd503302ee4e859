// The schema builder, in Node (it has no imports): what each builder makes
// and what `object()` requires. Run: node --test guest-tools/js/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import * as s from "../schema.js";

test("primitives carry their keywords", () => {
  assert.deepEqual(s.string({ description: "Name", minLength: 1 }), {
    type: "string",
    description: "Name",
    minLength: 1,
  });
  assert.deepEqual(s.integer(), { type: "integer" });
  assert.deepEqual(s.number({ minimum: 0 }), { type: "number", minimum: 0 });
  assert.deepEqual(s.boolean({ default: false }), { type: "boolean", default: false });
});

test("enums get their values' type", () => {
  assert.deepEqual(s.enum(["a", "b"]), { type: "string", enum: ["a", "b"] });
  assert.deepEqual(s.enum([1, 2.5]), { type: "number", enum: [1, 2.5] });
  assert.deepEqual(s.enum([1, "b"]), { enum: [1, "b"] });
});

test("a property is required unless optional or defaulted", () => {
  const schema = s.object({
    query: s.string(),
    limit: s.integer({ default: 10 }),
    near: s.optional(s.object({ x: s.number() })),
    tags: s.array(s.string()),
  });
  assert.deepEqual(schema.required, ["query", "tags"]);
  assert.deepEqual(schema.properties.near, {
    type: "object",
    properties: { x: { type: "number" } },
    required: ["x"],
  });
  assert.equal(JSON.stringify(schema.properties.near).includes("optional"), false);
});

test("nullable widens the type", () => {
  assert.deepEqual(s.nullable(s.integer({ default: null })), { type: ["integer", "null"], default: null });
  assert.deepEqual(s.nullable(s.any()), { anyOf: [{}, { type: "null" }] });
});

test("a tool's schema: a property map or an object, closed for inputs", () => {
  const fromMap = s.toolSchema({ text: s.string() }, { closed: true });
  assert.deepEqual(fromMap, {
    type: "object",
    properties: { text: { type: "string" } },
    required: ["text"],
    additionalProperties: false,
  });
  assert.deepEqual(s.toolSchema(s.object({ text: s.string() }), { closed: true }), fromMap);
  assert.deepEqual(s.toolSchema(undefined), { type: "object", properties: {} });
  assert.deepEqual(s.toolSchema(s.object({}, { additionalProperties: true }), { closed: true }), {
    type: "object",
    properties: {},
    additionalProperties: true,
  });
});
