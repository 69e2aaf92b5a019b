// Akash's provider client (chain-sdk's createProviderSDK, as Akash Console uses it) against
// our gateway's gRPC: GetStatus, BidScreening and the LeaseRPC calls a tenant makes, with
// its bearer token as a call header, and with its client certificate (input.mtls) instead. For each call, what chain-sdk decoded, encoded again
// (base64, to compare with our own stubs) and as its JSON; or the error it raised.
import { readFileSync } from "node:fs";
import { createProviderSDK } from "@akashnetwork/chain-sdk";
import { GroupSpec } from "@akashnetwork/chain-sdk/private-types/akash.v1beta4";
import {
  BidScreeningResponse,
  ServiceLogsResponse,
  ServiceStatusResponse,
  Status,
} from "@akashnetwork/chain-sdk/private-types/provider.akash.v1";

const input = JSON.parse(readFileSync(0, "utf8"));
const sdk = createProviderSDK({ baseUrl: input.baseUrl });
const tenant = { header: { authorization: `Bearer ${input.token}` }, timeoutMs: 30000 };
const lease = input.lease;
const leaseId = { ...lease, dseq: String(lease.dseq) };

const seen = (type, message) => ({
  bytes: Buffer.from(type.encode(message).finish()).toString("base64"),
  json: type.toJSON(message),
});
const attempt = async (work) => {
  try {
    return await work();
  } catch (error) {
    return { error: { code: error.code ?? null, message: String(error.rawMessage ?? error.message) } };
  }
};

const answers = {};
answers.getStatus = await attempt(async () => seen(Status, await sdk.akash.provider.v1.getStatus()));
answers.bidScreening = await attempt(async () => {
  const groupSpec = GroupSpec.decode(Buffer.from(input.groupSpec, "base64"));
  const answer = await sdk.akash.provider.v1.bidScreening({ groupSpec, hostnames: [] }, tenant);
  return seen(BidScreeningResponse, answer);
});
answers.bidScreeningWithoutToken = await attempt(async () => {
  const groupSpec = GroupSpec.decode(Buffer.from(input.groupSpec, "base64"));
  return seen(BidScreeningResponse, await sdk.akash.provider.v1.bidScreening({ groupSpec }));
});
answers.serviceStatus = await attempt(async () =>
  seen(ServiceStatusResponse, await sdk.akash.provider.lease.v1.serviceStatus({ leaseId }, tenant)),
);
answers.serviceStatusOfAnother = await attempt(async () => {
  const other = { ...leaseId, dseq: String(BigInt(lease.dseq) + 1000000n) };
  return seen(ServiceStatusResponse, await sdk.akash.provider.lease.v1.serviceStatus({ leaseId: other }, tenant));
});
answers.streamServiceStatus = await attempt(async () => {
  const stream = await sdk.akash.provider.lease.v1.streamServiceStatus({ leaseId }, tenant);
  for await (const message of stream) return seen(ServiceStatusResponse, message);
  return { error: { code: null, message: "the stream ended without a message" } };
});
answers.serviceLogs = await attempt(async () =>
  seen(ServiceLogsResponse, await sdk.akash.provider.lease.v1.serviceLogs({ leaseId }, tenant)),
);
if (input.mtls) {
  // the tenant's certificate instead of a token, as Akash Console authenticates
  const viaCertificate = createProviderSDK({
    baseUrl: input.baseUrl,
    authentication: { type: "mtls", cert: input.mtls.cert, key: input.mtls.key },
  });
  answers.serviceStatusByCertificate = await attempt(async () =>
    seen(
      ServiceStatusResponse,
      await viaCertificate.akash.provider.lease.v1.serviceStatus({ leaseId }, { timeoutMs: 30000 }),
    ),
  );
}
console.log(JSON.stringify(answers));
process.exit(0); // the HTTP/2 sessions would keep Node alive
