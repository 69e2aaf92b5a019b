// Versions of the installed client packages: proves the install and the harness.
import { readFileSync } from "node:fs";

const version = (name) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
const input = JSON.parse(readFileSync(0, "utf8"));
const sdk = await import("@akashnetwork/chain-sdk");
console.log(JSON.stringify({
  echo: input,
  chainSdk: version("@akashnetwork/chain-sdk"),
  stargate: version("@cosmjs/stargate"),
  exports: ["createProviderSDK", "certificateManager", "generateManifest"].filter((n) => n in sdk),
}));
