// Akash's gRPC queries through the CometBFT RPC's abci_query, as cosmjs's QueryClient sends
// them: each request encoded and each response decoded with chain-sdk's generated protobuf
// types; answers the decoded responses as chain-sdk's JSON (toJSON).
import { readFileSync } from "node:fs";
import { connectComet } from "@cosmjs/tendermint-rpc";
import { QueryClient } from "@cosmjs/stargate";

const input = JSON.parse(readFileSync(0, "utf8"));
const comet = await connectComet(input.rpc);
const client = new QueryClient(comet);
const answers = [];
for (const query of input.queries) {
  const types = await import(`@akashnetwork/chain-sdk/private-types/${query.module}`);
  const [Request, Response] = [types[query.request], types[query.response]];
  const data = Request.encode(Request.fromPartial(query.fields)).finish();
  try {
    const { value } = await client.queryAbci(query.path, data);
    answers.push({ response: Response.toJSON(Response.decode(value)) });
  } catch (error) {
    answers.push({ error: String(error.message ?? error) });
  }
}
comet.disconnect();
console.log(JSON.stringify(answers));
