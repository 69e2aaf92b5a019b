// chain-sdk's own chain client (createChainNodeSDK) reading the chain over gRPC, as Akash
// Console does: each call named by its service path (akash.deployment.v1beta4.getDeployments),
// each answer as chain-sdk's JSON of the response type (toJSON), or the error it raised.
import { readFileSync } from "node:fs";
import { createChainNodeSDK } from "@akashnetwork/chain-sdk";

const input = JSON.parse(readFileSync(0, "utf8"));
const sdk = createChainNodeSDK({ query: { baseUrl: input.grpc } });
const answers = [];
for (const call of input.calls) {
  const method = call.service.split(".").reduce((node, name) => node[name], sdk)[call.method];
  const types = await import(`@akashnetwork/chain-sdk/private-types/${call.module}`);
  try {
    const response = await method(call.input);
    answers.push({ response: types[call.response].toJSON(response) });
  } catch (error) {
    answers.push({ error: String(error.message ?? error), code: error.code ?? null });
  }
}
console.log(JSON.stringify(answers));
