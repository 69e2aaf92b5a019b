"""Finding committed transactions the way CometBFT's ``tx_search`` does.

A query is CometBFT's event query language: conditions joined by ``AND``, each a composite
key (``tx.hash``, ``tx.height``, or ``<event type>.<attribute>`` such as
``message.sender`` or ``transfer.recipient``), an operator (``=``, ``<``, ``<=``, ``>``,
``>=``, ``CONTAINS``, ``EXISTS``) and a quoted string or a number. A transaction matches
when every condition holds for some attribute of its result's events (failed transactions
keep their fee events, as CometBFT indexes them). ``TIME`` and ``DATE`` operands are not
supported.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from akdevnet.consensus import merkle_proof, merkle_root
from akdevnet.store import Database, Doc, TxRow

MAX_PER_PAGE = 100
DEFAULT_PER_PAGE = 30
_CONDITION = re.compile(
    r"\s*(?P<key>[^\s=<>']+)\s*"
    r"(?:(?P<exists>EXISTS)|(?P<op><=|>=|=|<|>|CONTAINS)\s*"
    r"(?:'(?P<text>[^']*)'|(?P<number>-?\d+(?:\.\d+)?)))\s*",
)


class QueryError(ValueError):
    """A query the devnet cannot read; the message says where."""


@dataclass(frozen=True)
class Condition:
    key: str
    op: str  # "=", "<", "<=", ">", ">=", "CONTAINS", "EXISTS"
    text: str | None = None
    number: Decimal | None = None

    def holds(self, value: str) -> bool:
        if self.op == "EXISTS":
            return True
        if self.op == "CONTAINS":
            return self.text is not None and self.text in value
        if self.text is not None:
            return self.op == "=" and value == self.text
        try:
            have = Decimal(value)
        except InvalidOperation:
            return False
        return (
            self.number is not None
            and {
                "=": have == self.number,
                "<": have < self.number,
                "<=": have <= self.number,
                ">": have > self.number,
                ">=": have >= self.number,
            }[self.op]
        )


def parse_query(query: str) -> list[Condition]:
    """The conditions of ``query``; :class:`QueryError` when it is not one the devnet reads."""
    if not query.strip():
        raise QueryError("query cannot be empty")
    conditions = []
    for part in re.split(r"\s+AND\s+", query.strip()):
        found = _CONDITION.fullmatch(part)
        if found is None:
            raise QueryError(f"cannot parse condition {part[:200]!r}")
        if found["exists"]:
            conditions.append(Condition(found["key"], "EXISTS"))
        elif found["text"] is not None:
            conditions.append(Condition(found["key"], found["op"], text=found["text"]))
        else:
            op = found["op"]
            if op == "CONTAINS":
                raise QueryError(f"CONTAINS needs a quoted string in {part[:200]!r}")
            conditions.append(Condition(found["key"], op, number=Decimal(found["number"])))
    return conditions


def _attributes(row: TxRow) -> list[tuple[str, str]]:
    pairs = [("tx.hash", row.hash), ("tx.height", str(row.height))]
    pairs.extend(
        (f"{event['type']}.{attribute['key']}", str(attribute.get("value", "")))
        for event in row.result.get("events") or []
        for attribute in event.get("attributes") or []
    )
    return pairs


def search(db: Database, conditions: list[Condition]) -> list[TxRow]:
    """Every committed transaction matching all ``conditions``, in chain order."""
    tx_hash = None
    low, high = 0, 2**62
    containing: list[str] = []
    for c in conditions:
        if c.key == "tx.hash" and c.op == "=" and c.text is not None:
            tx_hash = c.text
        elif c.key == "tx.height" and c.number is not None:
            value = int(c.number)
            if c.op in ("=", ">=", ">"):
                low = max(low, value + (c.op == ">"))
            if c.op in ("=", "<=", "<"):
                high = min(high, value - (c.op == "<"))
        elif c.op == "=" and c.text is not None:
            containing.append(json.dumps(c.text))
    rows = db.txs(tx_hash=tx_hash, heights=(low, high), containing=tuple(containing))
    return [
        row
        for row in rows
        if all(
            any(key == c.key and c.holds(value) for key, value in _attributes(row))
            for c in conditions
        )
    ]


def tx_proof(db: Database, row: TxRow) -> Doc:
    """CometBFT's ``TxProof``: the transaction's Merkle proof up to its block's data hash."""
    found = db.block(row.height)
    txs = [base64.b64decode(tx) for tx in (found[2] if found else [row.tx])]
    leaves = [hashlib.sha256(tx).digest() for tx in txs]
    return {
        "root_hash": merkle_root(leaves).hex().upper(),
        "data": row.tx,
        "proof": {
            "total": str(len(leaves)),
            "index": str(row.index),
            "leaf_hash": base64.b64encode(
                hashlib.sha256(b"\x00" + leaves[row.index]).digest()
            ).decode(),
            "aunts": [base64.b64encode(a).decode() for a in merkle_proof(leaves, row.index)],
        },
    }


def rpc_tx(db: Database, row: TxRow, *, prove: bool = False) -> Doc:
    """A transaction as CometBFT's ``tx`` and ``tx_search`` answer it."""
    answer: Doc = {
        "hash": row.hash,
        "height": str(row.height),
        "index": row.index,
        "tx_result": row.result,
        "tx": row.tx,
    }
    if prove:
        answer["proof"] = tx_proof(db, row)
    return answer
