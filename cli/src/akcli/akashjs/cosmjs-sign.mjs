// Signing with cosmjs the way Akash Console and Cosmos wallets do: SigningStargateClient on the
// CometBFT RPC, a wallet from a mnemonic, Akash's message types from chain-sdk's registry. Sends
// tokens with fee "auto" (simulated gas) and creates a certificate (made by chain-sdk's
// generator) with a fixed fee; then creates a second certificate through chain-sdk's own
// SDK, createChainNodeSDK with createStargateClient as its signer (the fee estimated by
// simulation), as Akash Console sends transactions.
import { readFileSync } from "node:fs";
import {
  certificateManager,
  createChainNodeSDK,
  createStargateClient,
} from "@akashnetwork/chain-sdk";
import { MsgCreateCertificate } from "@akashnetwork/chain-sdk/private-types/akash.v1";
import { DirectSecp256k1HdWallet, Registry } from "@cosmjs/proto-signing";
import { defaultRegistryTypes, GasPrice, SigningStargateClient } from "@cosmjs/stargate";

const input = JSON.parse(readFileSync(0, "utf8"));
const certUrl = "/akash.cert.v1.MsgCreateCertificate";
const registry = new Registry([...defaultRegistryTypes, [certUrl, MsgCreateCertificate]]);
const wallet = await DirectSecp256k1HdWallet.fromMnemonic(input.mnemonic, { prefix: "akash" });
const [{ address }] = await wallet.getAccounts();
const client = await SigningStargateClient.connectWithSigner(input.rpc, wallet, {
  registry,
  gasPrice: GasPrice.fromString(input.gasPrice),
  broadcastPollIntervalMs: 100,
});
const delivered = (result) => ({
  code: result.code,
  height: result.height,
  hash: result.transactionHash,
  gasUsed: result.gasUsed,
  gasWanted: result.gasWanted,
  rawLog: result.rawLog,
  msgResponses: (result.msgResponses ?? []).map((m) => m.typeUrl),
});
const send = {
  typeUrl: "/cosmos.bank.v1beta1.MsgSend",
  value: { fromAddress: address, toAddress: input.recipient, amount: [input.amount] },
};

const simulated = await client.simulate(address, [send], "");
const sendAuto = await client.signAndBroadcast(address, [send], "auto");
const certificate = async () => {
  const pem = await certificateManager.generatePEM(address);
  const message = {
    typeUrl: certUrl,
    value: MsgCreateCertificate.fromPartial({
      owner: address,
      cert: new TextEncoder().encode(pem.cert),
      pubkey: new TextEncoder().encode(pem.publicKey),
    }),
  };
  return { pem: pem.cert, message };
};
const first = await certificate();
const certFixed = await client.signAndBroadcast(address, [first.message], input.fixedFee, "by cosmjs");
client.disconnect();

const signer = createStargateClient({
  baseUrl: input.rpc,
  signerMnemonic: input.mnemonic,
  defaultGasPrice: input.gasPrice,
  stargateOptions: { broadcastPollIntervalMs: 100 },
});
// transactions only: the query transport (gRPC) is never called
const sdk = createChainNodeSDK({ query: { baseUrl: "http://127.0.0.1:9" }, tx: { signer } });
const second = await certificate();
let sdkCert;
const sdkResponse = await sdk.akash.cert.v1.createCertificate(second.message.value, {
  afterBroadcast: (result) => {
    sdkCert = result;
  },
});
await signer.disconnect();

console.log(JSON.stringify({
  address,
  simulated,
  sendAuto: delivered(sendAuto),
  certFixed: delivered(certFixed),
  certs: [first.pem, second.pem],
  sdkCert: { ...delivered(sdkCert), response: sdkResponse },
}, (_, v) => (typeof v === "bigint" ? v.toString() : v)));
