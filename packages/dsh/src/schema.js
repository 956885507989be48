/**
 * The tool's JSON Schemas in the subset the DeepSeek Harness's tool registry
 * takes (`type`, `oneOf`, `properties`, `required`, `additionalProperties`,
 * `items`, `enum`, `const`, and annotations): references inlined, and the
 * keywords it has no words for left out. What they said (the limits on
 * lengths and counts) the component still checks on every call, and says so
 * in its `INVALID_ARGS`. A field that may be null (`["string", "null"]`, for
 * models that send null for what they leave out) is shown as its type alone,
 * as the reference tool's schema shows it; the component still takes null.
 * @module ask-user-dsh/schema
 */

/** The keywords the registry takes. */
const KEPT = new Set([
  'type', 'oneOf', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const',
  'title', 'description', 'default', 'examples',
]);

/**
 * `schema` (a schemars draft 2020-12 schema, its `$defs` referred to by
 * `$ref`) in the registry's subset.
 * @param {object} schema
 * @returns {object}
 */
export function registrySchema(schema) {
  const defs = schema.$defs ?? {};
  const walk = (node, seen) => {
    if (Array.isArray(node)) return node.map((item) => walk(item, seen));
    if (typeof node !== 'object' || node === null) return node;
    if (typeof node.$ref === 'string') {
      const name = node.$ref.replace(/^#\/\$defs\//, '');
      if (!(name in defs)) throw new Error(`the schema refers to ${node.$ref}, which it does not define`);
      if (seen.includes(name)) throw new Error(`the schema's ${node.$ref} refers to itself`);
      return walk(defs[name], [...seen, name]);
    }
    const out = {};
    for (const [key, value] of Object.entries(node)) {
      if (!KEPT.has(key)) continue;
      if (key === 'properties') {
        out.properties = Object.fromEntries(
          Object.entries(value).map(([name, property]) => [name, walk(property, seen)]),
        );
      } else if (key === 'type' && Array.isArray(value)) {
        const types = value.filter((type) => type !== 'null');
        if (types.length === 1) out.type = types[0];
        else out.oneOf = types.map((type) => ({ type }));
      } else if (key === 'items' || key === 'oneOf' || key === 'additionalProperties') {
        out[key] = walk(value, seen);
      } else {
        out[key] = value;
      }
    }
    return out;
  };
  return walk(schema, []);
}
