// A small JSON Schema builder for tool inputs and outputs (JavaScript has no
// type annotations to derive them from). Each function returns a plain JSON
// Schema object; `object()` works out `required` from its properties.
//
//   s.object({
//     name: s.string({ description: "Who to greet" }),
//     times: s.integer({ minimum: 1, default: 1 }),    // a default: not required
//     style: s.enum(["plain", "excited"]),
//     note: s.optional(s.string()),                    // not required
//   })
//
// Options are JSON Schema keywords (`description`, `default`, `minimum`,
// `maxLength`, `format`, ...) copied as they are, plus `optional: true`.
// A property is required unless it has a `default` or is optional.
// No imports: it runs in Node too (test/schema.test.mjs).

const OPTIONAL = Symbol("optional");
const OBJECT = Symbol("object");

function withOptions(schema, options = {}) {
  const { optional, ...keywords } = options;
  const built = { ...schema, ...keywords };
  if (optional) {
    Object.defineProperty(built, OPTIONAL, { value: true });
  }
  return built;
}

function jsonType(value) {
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "string") return "string";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return undefined;
}

/** A string. */
export function string(options) {
  return withOptions({ type: "string" }, options);
}

/** A whole number. */
export function integer(options) {
  return withOptions({ type: "integer" }, options);
}

/** Any number. */
export function number(options) {
  return withOptions({ type: "number" }, options);
}

/** true or false. */
export function boolean(options) {
  return withOptions({ type: "boolean" }, options);
}

/** One of `values` (strings, numbers or booleans). */
function oneOf(values, options) {
  const types = new Set(values.map(jsonType));
  const schema = types.size === 1 && !types.has(undefined) ? { type: [...types][0] } : {};
  if (types.size === 2 && types.has("integer") && types.has("number")) schema.type = "number";
  return withOptions({ ...schema, enum: [...values] }, options);
}
export { oneOf as enum };

/** A list of `items`. */
export function array(items, options) {
  return withOptions({ type: "array", items }, options);
}

/** An object with `properties` (name -> schema); `required` is worked out. */
export function object(properties, options) {
  const required = Object.entries(properties)
    .filter(([, schema]) => !schema[OPTIONAL] && !("default" in schema))
    .map(([name]) => name);
  const schema = { type: "object", properties };
  if (required.length > 0) schema.required = required;
  const built = withOptions(schema, options);
  Object.defineProperty(built, OBJECT, { value: true });
  return built;
}

/** `schema`, but not required in its object. */
export function optional(schema) {
  return withOptions(schema, { optional: true });
}

/** `schema`, or null. */
export function nullable(schema) {
  const { type } = schema;
  if (typeof type === "string") return withOptions({ ...schema, type: [type, "null"] });
  return { anyOf: [schema, { type: "null" }] };
}

/** Anything JSON. */
export function any(options) {
  return withOptions({}, options);
}

/**
 * A tool's input or output schema from `shape`: an `object(...)` as it is,
 * or a map of property name -> schema (shorthand for `object(map)`).
 * Inputs refuse properties nobody declared (`additionalProperties: false`).
 */
export function toolSchema(shape, { closed = false } = {}) {
  const schema = shape && shape[OBJECT] ? { ...shape } : object(shape ?? {});
  if (closed && !("additionalProperties" in schema)) {
    schema.additionalProperties = false;
  }
  return schema;
}
