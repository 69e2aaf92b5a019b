// A tenant as Akash Console is one: chain-sdk's certificate generator and SDL tools, cosmjs
// signing its transactions (SigningStargateClient on the node's CometBFT RPC, a wallet from
// its mnemonic, Akash's message types from chain-sdk), and Node's own HTTPS client presenting
// the certificate to the provider's gateway.
// Input: {"steps": [{"do": ..., ...}, ...]}; output: one result per step, in order.
//   {"do": "certificate", "address"}            → {cert, publicKey, privateKey} (PEM)
//   {"do": "manifest", "sdl"}                    → {body, version} (what is PUT; hash, hex)
//   {"do": "publish", "rpc", "mnemonic", "cert", "publicKey"} → the transaction's result
//   {"do": "deploy", "rpc", "mnemonic", "sdl", "dseq", "deposit"} → the transaction's result
//     (the groups and version of chain-sdk's generateManifest, the deposit from the balance)
//   {"do": "request", "url", "method", "body"?, "cert", "key"} → {status, body}
import { readFileSync } from "node:fs";
import https from "node:https";

import { certificateManager, generateManifest, generateManifestVersion, SDL, yaml } from "@akashnetwork/chain-sdk";
import { MsgCreateCertificate, Source } from "@akashnetwork/chain-sdk/private-types/akash.v1";
import { MsgCreateDeployment } from "@akashnetwork/chain-sdk/private-types/akash.v1beta4";
import { DirectSecp256k1HdWallet, Registry } from "@cosmjs/proto-signing";
import { defaultRegistryTypes, GasPrice, SigningStargateClient } from "@cosmjs/stargate";

const CERTIFICATE = "/akash.cert.v1.MsgCreateCertificate";
const DEPLOYMENT = "/akash.deployment.v1beta4.MsgCreateDeployment";
const registry = new Registry([
  ...defaultRegistryTypes,
  [CERTIFICATE, MsgCreateCertificate],
  [DEPLOYMENT, MsgCreateDeployment],
]);

async function sign(s, message) {
  const wallet = await DirectSecp256k1HdWallet.fromMnemonic(s.mnemonic, { prefix: "akash" });
  const [{ address }] = await wallet.getAccounts();
  const client = await SigningStargateClient.connectWithSigner(s.rpc, wallet, {
    registry,
    gasPrice: GasPrice.fromString("0.025uakt"),
    broadcastPollIntervalMs: 100,
  });
  try {
    const result = await client.signAndBroadcast(address, [message(address)], "auto");
    return { code: result.code, hash: result.transactionHash, height: result.height, rawLog: result.rawLog };
  } finally {
    client.disconnect();
  }
}

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
    case "publish":
      return sign(s, (owner) => ({
        typeUrl: CERTIFICATE,
        value: MsgCreateCertificate.fromPartial({
          owner,
          cert: new TextEncoder().encode(s.cert),
          pubkey: new TextEncoder().encode(s.publicKey),
        }),
      }));
    case "deploy": {
      const made = generateManifest(yaml([s.sdl]));
      if (!made.ok) throw new Error(`chain-sdk refused the SDL: ${JSON.stringify(made.value)}`);
      const version = await generateManifestVersion(made.value.groups);
      return sign(s, (owner) => ({
        typeUrl: DEPLOYMENT,
        value: MsgCreateDeployment.fromPartial({
          id: { owner, dseq: BigInt(s.dseq) },
          groups: made.value.groupSpecs,
          hash: version,
          deposit: { amount: s.deposit, sources: [Source.balance] },
        }),
      }));
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
