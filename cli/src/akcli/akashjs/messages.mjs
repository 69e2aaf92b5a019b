// Our messages read by chain-sdk's generated code: for each {type, bytes (base64)}, the
// message type of that name in chain-sdk decodes the bytes, then encodes what it decoded
// and gives it as JSON (its toJSON, with the .proto field names), so a test can tell what
// chain-sdk kept, lost or misread. Every generated module of the package is searched.
import { readdirSync, readFileSync } from "node:fs";

const dist = new URL("./node_modules/@akashnetwork/chain-sdk/dist/esm/", import.meta.url);
const types = new Map();
const visit = (value, depth) => {
  if (!value || typeof value !== "object" || depth > 6) return;
  if (typeof value.$type === "string" && typeof value.decode === "function") {
    types.set(value.$type, value);
    return;
  }
  for (const key of Object.keys(value)) visit(value[key], depth + 1);
};
const modules = [
  ...readdirSync(new URL("generated/protos/", dist)).map((n) => `generated/protos/${n}`),
  ...readdirSync(dist).filter((n) => n.startsWith("chunk-")),
].filter((n) => n.endsWith(".js"));
for (const name of modules) visit(await import(new URL(name, dist)), 0);

const input = JSON.parse(readFileSync(0, "utf8"));
const results = input.messages.map(({ type, bytes }) => {
  const found = types.get(type);
  if (!found) return { type, found: false };
  let decoded;
  try {
    decoded = found.decode(Buffer.from(bytes, "base64"));
  } catch (error) {
    return { type, found: true, error: String(error.message) };
  }
  return {
    type,
    found: true,
    bytes: Buffer.from(found.encode(decoded).finish()).toString("base64"),
    json: found.toJSON(decoded),
  };
});
console.log(JSON.stringify({ results }));
