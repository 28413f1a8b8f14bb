// Gravitino's JSON for types, expressions and partitioning transforms, as the table pages show them.

export function typeText(type) {
  return typeof type === "string" ? type : JSON.stringify(type);
}

/** Gravitino's expression JSON as text: a field path, a literal, or a function of them. */
export function exprText(e) {
  if (e === null || e === undefined) return "";
  if (Array.isArray(e)) return e.map(exprText).join(", ");
  if (e.type === "field") return (e.fieldName || []).join(".");
  if (e.type === "literal") return e.value === null ? "NULL" : `${e.value} (${e.dataType})`;
  if (e.type === "function") return `${e.funcName}(${exprText(e.funcArgs || [])})`;
  if (e.type === "unparsed") return e.unparsedExpression;
  return JSON.stringify(e);
}

/** A partitioning transform: identity(dt), bucket(4, id), truncate(10, name), list(a, b), ... */
export function transformText(p) {
  const fields = p.fieldName ? [p.fieldName.join(".")] : (p.fieldNames || []).map((f) => f.join("."));
  const args = [p.numBuckets ?? p.width, ...fields].filter((x) => x !== undefined);
  return `${p.strategy}(${args.join(", ")})`;
}
