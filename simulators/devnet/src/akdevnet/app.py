"""The chain itself: check transactions into the mempool, execute them in blocks, commit;
simulate one on the committed state for a gas estimate.

Like a Cosmos SDK app behind CometBFT: ``check_tx`` runs the ante handler (signature,
account sequence, fee) against the mempool's state so one account can queue several
transactions; ``produce_block`` runs every queued transaction against the block's state —
a failed message rolls back its own writes but keeps the fee and the sequence, as on Akash
— and commits state, block, results and events to disk in one step.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.protobuf.any_pb2 import Any as AnyPb
from google.protobuf.message import DecodeError, Message

from akchain._pb.cosmos.base.abci.v1beta1 import abci_pb2
from akchain.keys import address_of
from akchain.msgs import MESSAGE_TYPES
from akchain.tx import DecodedTx, TxDecodeError, decode_tx, tx_hash
from akdevnet.consensus import Chain, header_hash
from akdevnet.context import FEE_COLLECTOR, Ctx
from akdevnet.errors import (
    INSUFFICIENT_FEE,
    INVALID_PUBKEY,
    MEMPOOL_FULL,
    OUT_OF_GAS,
    TX_DECODE,
    TX_IN_CACHE,
    UNAUTHORIZED,
    UNKNOWN_ADDRESS,
    UNKNOWN_REQUEST,
    WRONG_SEQUENCE,
    TxFailure,
    sdk,
)
from akdevnet.genesis import Genesis
from akdevnet.modules import bank, cert, deployment, market, provider
from akdevnet.store import BlockRecord, Branch, Database, Doc

log = logging.getLogger("akdevnet")

Handler = Callable[[Ctx, Any], None]


@dataclass(frozen=True)
class Route:
    handler: Handler
    signer: Callable[[Any], str]
    module: str


def _routes() -> dict[str, Route]:
    table: dict[str, tuple[Handler, Callable[[Any], str]]] = {
        "MsgCreateBid": (market.create_bid, lambda m: m.id.provider),
        "MsgCloseBid": (market.close_bid, lambda m: m.id.provider),
        "MsgWithdrawLease": (market.withdraw_lease, lambda m: m.id.provider),
        "MsgCreateLease": (market.create_lease, lambda m: m.bid_id.owner),
        "MsgCloseLease": (market.close_lease, lambda m: m.id.owner),
        "MsgCreateDeployment": (deployment.create, lambda m: m.id.owner),
        "MsgUpdateDeployment": (deployment.update, lambda m: m.id.owner),
        "MsgCloseDeployment": (deployment.close, lambda m: m.id.owner),
        "MsgCreateProvider": (provider.create, lambda m: m.owner),
        "MsgUpdateProvider": (provider.update, lambda m: m.owner),
        "MsgSignProviderAttributes": (provider.sign_attributes, lambda m: m.auditor),
        "MsgDeleteProviderAttributes": (provider.delete_attributes, lambda m: m.auditor),
        "MsgCreateCertificate": (cert.create, lambda m: m.owner),
        "MsgRevokeCertificate": (cert.revoke, lambda m: m.id.owner),
        "MsgSend": (bank.msg_send, lambda m: m.from_address),
    }
    routes = {}
    for type_url in MESSAGE_TYPES:
        handler, signer = table[type_url.rsplit(".", 1)[1]]
        routes[type_url] = Route(handler, signer, type_url.lstrip("/").split(".")[1])
    return routes


ROUTES = _routes()
GAS_PER_TX = 60_000
GAS_PER_BYTE = 10
GAS_PER_MSG = 40_000
MAX_BLOCK_TXS = 1_000
MAX_MEMPOOL = 5_000
SIMULATED_SIGNATURE_BYTES = 100
"""What signing adds to a simulated transaction (signature, sign mode, fee), in bytes."""


def now_rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def msg_responses(messages: list[tuple[Route, Message]]) -> list[AnyPb]:
    """One (empty) response per message, typed ``<message type>Response`` as in Cosmos."""
    return [AnyPb(type_url=f"/{m.DESCRIPTOR.full_name}Response") for _, m in messages]


def tx_result(  # noqa: PLR0917 - the fields of an ABCI result, in their order
    code: int = 0,
    codespace: str = "",
    log_text: str = "",
    gas: tuple[int, int] = (0, 0),
    events: list[Doc] | None = None,
    data: bytes = b"",
) -> Doc:
    return {
        "code": code,
        "data": base64.b64encode(data).decode(),
        "log": log_text,
        "info": "",
        "gas_wanted": str(gas[0]),
        "gas_used": str(gas[1]),
        "events": events or [],
        "codespace": codespace,
    }


class App:
    """A single-node Akash-like chain over a :class:`Database`."""

    def __init__(self, db: Database, genesis: Genesis) -> None:
        self.db = db
        self.genesis = genesis
        stored = db.meta("chain_id")
        if stored is None:
            self._init_genesis()
        elif stored != genesis.chain_id:
            raise ValueError(
                f"the state in {db.path} belongs to chain {stored!r}, "
                f"genesis says {genesis.chain_id!r}"
            )
        self.chain_id = genesis.chain_id
        self.chain = Chain(db, genesis.chain_id)
        self.params = genesis.params
        self.height = db.height
        last = db.block(self.height)
        self.last_hash = last[1] if last else ""
        self.last_time = last[0] if last else genesis.genesis_time
        self.app_hash = (
            base64.b64decode(last[3].get("app_hash") or "")
            if last
            else self.chain.genesis_app_hash()
        )
        self.mempool: list[tuple[str, bytes]] = []
        self._seen: OrderedDict[str, None] = OrderedDict()
        self.check_state = db.branch()

    # -- genesis --------------------------------------------------------------------------
    def _init_genesis(self) -> None:
        genesis = self.genesis
        state = self.db.branch()
        ctx = self._ctx(state, 0, datetime.now(UTC))
        for account in genesis.accounts:
            bank.ensure_account(state, account.address)
            for denom, amount in account.balances.items():
                bank.mint(state, account.address, denom, amount)
        for item in genesis.providers:
            owner = genesis.address(item.owner)
            state.set(
                f"provider/{owner}",
                {
                    "owner": owner,
                    "host_uri": item.host_uri,
                    "attributes": [{"key": k, "value": v} for k, v in item.attributes.items()],
                    "info": {"email": item.email, "website": item.website},
                },
            )
        for audit in genesis.audits:
            owner, auditor = genesis.address(audit.provider), genesis.address(audit.auditor)
            attrs = [{"key": k, "value": audit.attributes[k]} for k in sorted(audit.attributes)]
            state.set(
                f"audit/{owner}/{auditor}",
                {"owner": owner, "auditor": auditor, "attributes": attrs},
            )
        del ctx
        app_hash = hashlib.sha256(_writes_digest(state)).hexdigest()
        self.db.commit(state)
        self.db.set_meta("genesis_app_hash", app_hash)
        self.db.set_meta("chain_id", genesis.chain_id)

    def _ctx(self, store: Branch, height: int, moment: datetime) -> Ctx:
        return Ctx(
            store,
            height,
            now_rfc3339(moment),
            int(moment.timestamp()),
            self.genesis.chain_id,
            self.genesis.params,
        )

    # -- ante handler ---------------------------------------------------------------------
    def _decode(
        self, raw: bytes, *, simulation: bool = False
    ) -> tuple[DecodedTx, list[tuple[Route, Message]]]:
        try:
            decoded = decode_tx(raw, simulation=simulation)
        except TxDecodeError as exc:
            raise sdk(TX_DECODE, "tx parse error", str(exc)) from exc
        messages = []
        for item in decoded.messages:
            route = ROUTES.get(item.type_url)
            cls = MESSAGE_TYPES.get(item.type_url)
            if route is None or cls is None:
                raise sdk(
                    UNKNOWN_REQUEST, "unknown request", f"unrecognized message type {item.type_url}"
                )
            try:
                messages.append((route, cls.FromString(item.value)))
            except DecodeError as exc:
                raise sdk(TX_DECODE, "tx parse error", f"{item.type_url}: {exc}") from exc
        return decoded, messages

    def _ante(
        self,
        ctx: Ctx,
        decoded: DecodedTx,
        messages: list[tuple[Route, Message]],
        *,
        simulation: bool = False,
    ) -> None:
        """Cosmos's ante handler; a ``simulation`` checks neither the minimum fee nor the
        signature (as in Cosmos's simulate mode)."""
        signer = address_of(decoded.public_key)
        for route, message in messages:
            wanted = route.signer(message)
            if wanted != signer:
                raise sdk(
                    INVALID_PUBKEY,
                    "invalid pubkey",
                    f"pubKey does not match signer address {wanted} with signer index: 0",
                )
        account = bank.account(ctx.store, signer)
        if account is None:
            raise sdk(UNKNOWN_ADDRESS, "unknown address", f"account {signer} does not exist")
        gas_limit = decoded.gas_limit
        fee = dict(decoded.fee)
        required = 0 if simulation else int(self.params.gas_price_uakt * gas_limit)
        if fee.get("uakt", 0) < required:
            raise sdk(
                INSUFFICIENT_FEE,
                "insufficient fee",
                f"insufficient fees; got: {fee.get('uakt', 0)}uakt required: {required}uakt",
            )
        bank.send(ctx, signer, FEE_COLLECTOR, sorted(fee.items()))
        ctx.event("tx", [("fee", bank.coins_text(sorted(fee.items()))), ("fee_payer", signer)])
        sequence = int(account["sequence"])
        if decoded.sequence != sequence:
            raise sdk(
                WRONG_SEQUENCE,
                "incorrect account sequence",
                f"account sequence mismatch, expected {sequence}, got {decoded.sequence}",
            )
        number = int(account["account_number"])
        if not simulation and not decoded.signature_valid(
            chain_id=self.chain_id, account_number=number
        ):
            raise sdk(
                UNAUTHORIZED,
                "unauthorized",
                "signature verification failed; please verify account number "
                f"({number}) and chain-id ({self.chain_id})",
            )
        account["pub_key"] = {
            "@type": "/cosmos.crypto.secp256k1.PubKey",
            "key": base64.b64encode(decoded.public_key).decode(),
        }
        account["sequence"] = str(sequence + 1)
        ctx.store.set(f"acc/{signer}", account)
        ctx.event("tx", [("acc_seq", f"{signer}/{sequence}")])
        ctx.event("tx", [("signature", base64.b64encode(decoded.signature).decode())])

    @staticmethod
    def _gas(raw: bytes, messages: int) -> int:
        return GAS_PER_TX + GAS_PER_BYTE * len(raw) + GAS_PER_MSG * messages

    def simulate(self, raw: bytes) -> Doc:
        """Cosmos's ``Simulate``: run an unsigned transaction on the committed state and
        forget it; the gas it uses (signed, as the flat gas model counts it) and its result.
        Raises :class:`TxFailure` with what the chain would answer."""
        moment = datetime.now(UTC)
        ctx = self._ctx(self.db.branch(), self.height + 1, moment)
        decoded, messages = self._decode(raw, simulation=True)
        self._ante(ctx, decoded, messages, simulation=True)
        work = ctx.branch()
        self._execute(work, messages)
        gas = self._gas(raw, len(messages)) + GAS_PER_BYTE * SIMULATED_SIGNATURE_BYTES
        return {
            "gas_used": gas,
            "events": ctx.events + work.events,
            "msg_responses": msg_responses(messages),
        }

    @staticmethod
    def _execute(work: Ctx, messages: list[tuple[Route, Message]]) -> None:
        """Run each message on ``work``; :class:`TxFailure` names the message that failed."""
        for index, (route, message) in enumerate(messages):
            work.msg_index = index
            type_url = "/" + message.DESCRIPTOR.full_name
            work.event(
                "message",
                [("action", type_url), ("sender", route.signer(message)), ("module", route.module)],
            )
            try:
                route.handler(work, message)
            except TxFailure as exc:
                text = f"failed to execute message; message index: {index}: {exc.log}"
                raise TxFailure(exc.codespace, exc.code, text) from exc

    # -- mempool --------------------------------------------------------------------------
    def check_tx(self, raw: bytes) -> Doc:
        """CometBFT ``broadcast_tx_sync``: the CheckTx verdict; code 0 puts it in the mempool."""
        digest = tx_hash(raw)
        answer = {"code": 0, "data": "", "log": "", "codespace": "", "hash": digest}
        if digest in self._seen:
            return answer | {
                "code": TX_IN_CACHE,
                "codespace": "sdk",
                "log": "tx already exists in cache",
            }
        if len(self.mempool) >= MAX_MEMPOOL:
            return answer | {"code": MEMPOOL_FULL, "codespace": "sdk", "log": "mempool is full"}
        ctx = self._ctx(self.check_state.branch(), self.height + 1, datetime.now(UTC))
        try:
            decoded, messages = self._decode(raw)
            gas = self._gas(raw, len(messages))
            if decoded.gas_limit < gas:
                raise sdk(
                    OUT_OF_GAS,
                    "out of gas",
                    f"gas wanted {decoded.gas_limit} is less than the {gas} this transaction needs",
                )
            self._ante(ctx, decoded, messages)
        except TxFailure as exc:
            return answer | {"code": exc.code, "codespace": exc.codespace, "log": exc.log}
        ctx.store.write()
        self.mempool.append((digest, raw))
        self._remember(digest)
        return answer

    def _remember(self, digest: str) -> None:
        self._seen[digest] = None
        while len(self._seen) > 20_000:
            self._seen.popitem(last=False)

    # -- blocks ---------------------------------------------------------------------------
    def _deliver(self, block: Branch, height: int, moment: datetime, raw: bytes) -> Doc:
        ante = self._ctx(block.branch(), height, moment)
        try:
            decoded, messages = self._decode(raw)
        except TxFailure as exc:
            return tx_result(exc.code, exc.codespace, exc.log)
        gas = (decoded.gas_limit, self._gas(raw, len(messages)))
        try:
            self._ante(ante, decoded, messages)
        except TxFailure as exc:
            return tx_result(exc.code, exc.codespace, exc.log, gas)
        ante.store.write()
        if gas[1] > gas[0]:
            text = f"out of gas in location: execution; gasWanted: {gas[0]}, gasUsed: {gas[1]}"
            return tx_result(OUT_OF_GAS, "sdk", f"{text}: out of gas", gas, ante.events)
        work = self._ctx(block.branch(), height, moment)
        try:
            self._execute(work, messages)
        except TxFailure as exc:
            return tx_result(exc.code, exc.codespace, exc.log, gas, ante.events)
        work.store.write()
        data = abci_pb2.TxMsgData(msg_responses=msg_responses(messages)).SerializeToString()
        return tx_result(0, "", "", gas, ante.events + work.events, data)

    def produce_block(self, moment: datetime | None = None) -> BlockRecord:
        """Execute the mempool into the next block and commit it."""
        moment = moment or datetime.now(UTC)
        height = self.height + 1
        queued, self.mempool = self.mempool[:MAX_BLOCK_TXS], self.mempool[MAX_BLOCK_TXS:]
        state = self.db.branch()
        results: list[Doc] = []
        rows: list[tuple[str, int, str, Doc]] = []
        events: list[tuple[int, int, str, list[Doc]]] = []
        for index, (digest, raw) in enumerate(queued):
            result = self._deliver(state, height, moment, raw)
            results.append(result)
            rows.append((digest, index, base64.b64encode(raw).decode(), result))
            if result["code"] == 0:
                events.extend(
                    (index, e, ev["type"], ev["attributes"])
                    for e, ev in enumerate(result["events"])
                )
        time_text = now_rfc3339(moment)
        app_hash = hashlib.sha256(self.app_hash + _writes_digest(state)).digest()
        txs = [base64.b64encode(raw).decode() for _, raw in queued]
        block_hash = header_hash(self.chain.header(height, time_text, txs))
        record = BlockRecord(
            height=height,
            time=time_text,
            hash=block_hash,
            txs=txs,
            results={
                "height": str(height),
                "txs_results": results,
                "finalize_block_events": [],
                "validator_updates": [],
                "consensus_param_updates": None,
                "app_hash": base64.b64encode(app_hash).decode(),
            },
            tx_rows=rows,
            events=events,
        )
        self.db.commit(state, record)
        self.height, self.last_hash, self.last_time = height, block_hash, time_text
        self.app_hash = app_hash
        self._recheck()
        return record

    def _recheck(self) -> None:
        """Rebuild the mempool state on the new block (CometBFT's recheck)."""
        self.check_state = self.db.branch()
        pending, self.mempool = self.mempool, []
        for digest, raw in pending:
            self._seen.pop(digest, None)
            self.check_tx(raw)


def _writes_digest(state: Branch) -> bytes:
    """SHA-256 over a branch's writes in key order (a deletion is its key alone)."""
    digest = hashlib.sha256()
    for key in sorted(state.writes):
        value = state.writes[key]
        digest.update(f"{key}\n{value if isinstance(value, str) else ''}\n".encode())
    return digest.digest()
