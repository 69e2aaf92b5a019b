// cosmjs's read-only client (StargateClient.connect) against a CometBFT RPC endpoint (http:// or
// ws://): what a wallet or Akash Console reads first. Answers every query with plain JSON (bigints
// as text).
import { readFileSync } from "node:fs";
import { StargateClient } from "@cosmjs/stargate";

const input = JSON.parse(readFileSync(0, "utf8"));
const client = await StargateClient.connect(input.rpc);
const tx = (found) =>
  found && {
    hash: found.hash,
    height: found.height,
    txIndex: found.txIndex,
    code: found.code,
    gasUsed: found.gasUsed,
    gasWanted: found.gasWanted,
    events: found.events.map((e) => e.type),
    msgResponses: found.msgResponses.map((m) => m.typeUrl),
    txBytes: Buffer.from(found.tx).toString("base64"),
  };
const block = await client.getBlock(input.height);
const account = await client.getAccount(input.address);
const answer = {
  chainId: await client.getChainId(),
  height: await client.getHeight(),
  block: {
    id: block.id,
    header: block.header,
    txs: block.txs.map((t) => Buffer.from(t).toString("base64")),
  },
  account: account && { ...account, pubkey: account.pubkey },
  missingAccount: await client.getAccount(input.missingAddress),
  balance: await client.getBalance(input.address, input.denom),
  allBalances: await client.getAllBalances(input.address),
  tx: tx(await client.getTx(input.txHash)),
  missingTx: await client.getTx("00".repeat(32)),
  searches: await Promise.all(
    input.searches.map(async (query) => (await client.searchTx(query)).map((t) => t.hash)),
  ),
};
client.disconnect();
console.log(JSON.stringify(answer, (_, v) => (typeof v === "bigint" ? v.toString() : v)));
process.exit(0); // cosmjs's websocket client reconnects after disconnect() and keeps Node alive
