// A tenant as Akash Console is one: chain-sdk's certificate generator and SDL tools, and
// Node's own HTTPS client presenting the certificate to the provider's gateway.
// Input: {"steps": [{"do": ..., ...}, ...]}; output: one result per step, in order.
//   {"do": "certificate", "address"}            → {cert, publicKey, privateKey} (PEM)
//   {"do": "manifest", "sdl"}                    → {body, version} (what is PUT; hash, hex)
//   {"do": "request", "url", "method", "body"?, "cert", "key"} → {status, body}
import { readFileSync } from "node:fs";
import https from "node:https";

import { certificateManager, SDL } from "@akashnetwork/chain-sdk";

const input = JSON.parse(readFileSync(0, "utf8"));

function request({ url, method, body, cert, key }) {
  return new Promise((resolve, reject) => {
    const call = https.request(
      url,
      // the provider's certificate is self-signed; Akash's clients check it against the chain
      { method, cert, key, rejectUnauthorized: false, headers: { "content-type": "application/json" } },
      (response) => {
        const chunks = [];
        response.on("data", (chunk) => chunks.push(chunk));
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed = text;
          try {
            parsed = text ? JSON.parse(text) : null;
          } catch {
            // not JSON: kept as text
          }
          resolve({ status: response.statusCode, body: parsed });
        });
      },
    );
    call.on("error", (error) => resolve({ status: 0, body: String(error.code || error.message) }));
    if (body !== undefined) call.write(body);
    call.end();
  });
}

async function step(s) {
  switch (s.do) {
    case "certificate":
      return certificateManager.generatePEM(s.address);
    case "manifest": {
      const sdl = SDL.fromString(s.sdl, "beta3");
      const version = Buffer.from(await sdl.manifestVersion()).toString("hex");
      return { body: sdl.manifestSortedJSON(), version };
    }
    case "request":
      return request(s);
    default:
      throw new Error(`unknown step ${s.do}`);
  }
}

const results = [];
for (const s of input.steps) results.push(await step(s));
console.log(JSON.stringify(results));
