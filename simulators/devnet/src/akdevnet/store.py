"""The devnet's state: a key/value store of JSON documents, cache-wrapped like Cosmos's.

Committed state lives in memory and in SQLite (``state.db`` in the devnet's home). A block
works on a :class:`Branch` of it; each transaction on a branch of the block's branch, so a
failed message leaves no trace while its fee and sequence stay paid. A block's writes reach
SQLite together with the block itself, its results and its events, in one SQLite
transaction: a killed devnet restarts at the last block it announced.

Documents are stored in the form the LCD serves them (proto field names, 64-bit integers as
strings), which keeps the REST API a plain read.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Doc = dict[str, Any]
_DELETED = object()

SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blocks (
    height INTEGER PRIMARY KEY, time TEXT NOT NULL, hash TEXT NOT NULL,
    txs TEXT NOT NULL, results TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS txs (
    hash TEXT PRIMARY KEY, height INTEGER NOT NULL, idx INTEGER NOT NULL,
    tx TEXT NOT NULL, result TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    height INTEGER NOT NULL, tx_index INTEGER NOT NULL, event_index INTEGER NOT NULL,
    type TEXT NOT NULL, attributes TEXT NOT NULL,
    PRIMARY KEY (height, tx_index, event_index)
);
"""


class Reader:
    """Read access shared by the committed store and its branches."""

    def get(self, key: str) -> Doc | None:
        raw = self._raw(key)
        return None if raw is None else json.loads(raw)

    def has(self, key: str) -> bool:
        return self._raw(key) is not None

    def scan(self, prefix: str) -> Iterator[tuple[str, Doc]]:
        """Documents whose key starts with ``prefix``, in key order."""
        for key in sorted(self._keys(prefix)):
            raw = self._raw(key)
            if raw is not None:
                yield key, json.loads(raw)

    def _raw(self, key: str) -> str | None:
        raise NotImplementedError

    def _keys(self, prefix: str) -> set[str]:
        raise NotImplementedError


class Branch(Reader):
    """Writes kept aside until :meth:`write` applies them to the parent."""

    def __init__(self, parent: Reader) -> None:
        self.parent = parent
        self.writes: dict[str, object] = {}

    def _raw(self, key: str) -> str | None:
        if key in self.writes:
            value = self.writes[key]
            return None if value is _DELETED else str(value)
        return self.parent._raw(key)

    def _keys(self, prefix: str) -> set[str]:
        keys = self.parent._keys(prefix)
        for key, value in self.writes.items():
            if key.startswith(prefix):
                if value is _DELETED:
                    keys.discard(key)
                else:
                    keys.add(key)
        return keys

    def set(self, key: str, doc: Doc) -> None:
        self.writes[key] = json.dumps(doc, separators=(",", ":"))

    def delete(self, key: str) -> None:
        self.writes[key] = _DELETED

    def branch(self) -> Branch:
        return Branch(self)

    def write(self) -> None:
        """Apply this branch's writes to its parent branch."""
        if not isinstance(self.parent, Branch):
            raise TypeError("a top-level branch is committed with Database.commit")
        self.parent.writes.update(self.writes)
        self.writes = {}


@dataclass(frozen=True)
class BlockRecord:
    """Everything a block leaves behind, written in one SQLite transaction."""

    height: int
    time: str
    hash: str
    txs: list[str]  # base64 TxRaw
    results: Doc  # the CometBFT block_results "result" object
    tx_rows: list[tuple[str, int, str, Doc]]  # hash, index, base64 tx, tx_result
    events: list[
        tuple[int, int, str, list[Doc]]
    ]  # tx index (-1 = block), event index, type, attributes


class Database(Reader):
    """The committed state and the chain's history, in memory and in SQLite."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        self._data: dict[str, str] = dict(self._db.execute("SELECT key, value FROM kv").fetchall())

    def close(self) -> None:
        self._db.close()

    def _raw(self, key: str) -> str | None:
        return self._data.get(key)

    def _keys(self, prefix: str) -> set[str]:
        return {k for k in self._data if k.startswith(prefix)}

    def branch(self) -> Branch:
        return Branch(self)

    # -- metadata -------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @property
    def height(self) -> int:
        row = self._db.execute("SELECT MAX(height) FROM blocks").fetchone()
        return int(row[0] or 0)

    # -- commit ---------------------------------------------------------------------------
    def commit(self, branch: Branch, block: BlockRecord | None = None) -> None:
        """Make ``branch``'s writes (and ``block``) durable, then visible."""
        if branch.parent is not self:
            raise ValueError("only a branch of this database can be committed to it")
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for key, value in branch.writes.items():
                if value is _DELETED:
                    db.execute("DELETE FROM kv WHERE key = ?", (key,))
                else:
                    db.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (key, value))
            if block is not None:
                self._insert_block(block)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        for key, value in branch.writes.items():
            if value is _DELETED:
                self._data.pop(key, None)
            else:
                self._data[key] = str(value)
        branch.writes = {}

    def _insert_block(self, block: BlockRecord) -> None:
        db = self._db
        db.execute(
            "INSERT INTO blocks (height, time, hash, txs, results) VALUES (?, ?, ?, ?, ?)",
            (
                block.height,
                block.time,
                block.hash,
                json.dumps(block.txs),
                json.dumps(block.results),
            ),
        )
        db.executemany(
            "INSERT INTO txs (hash, height, idx, tx, result) VALUES (?, ?, ?, ?, ?)",
            [(h, block.height, i, tx, json.dumps(r)) for h, i, tx, r in block.tx_rows],
        )
        db.executemany(
            "INSERT INTO events (height, tx_index, event_index, type, attributes) "
            "VALUES (?, ?, ?, ?, ?)",
            [(block.height, t, e, kind, json.dumps(a)) for t, e, kind, a in block.events],
        )

    # -- history --------------------------------------------------------------------------
    def block(self, height: int) -> tuple[str, str, list[str], Doc] | None:
        """``(time, hash, txs, results)`` of a block."""
        row = self._db.execute(
            "SELECT time, hash, txs, results FROM blocks WHERE height = ?", (height,)
        ).fetchone()
        if row is None:
            return None
        return row[0], row[1], json.loads(row[2]), json.loads(row[3])

    def tx(self, tx_hash: str) -> tuple[int, int, str, Doc] | None:
        """``(height, index, base64 tx, tx_result)`` of a committed transaction."""
        row = self._db.execute(
            "SELECT height, idx, tx, result FROM txs WHERE hash = ?", (tx_hash.upper(),)
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2], json.loads(row[3]))

    def txs(
        self,
        *,
        tx_hash: str | None = None,
        heights: tuple[int, int] = (0, 2**62),
        containing: tuple[str, ...] = (),
    ) -> list[TxRow]:
        """Committed transactions in chain order, narrowed by hash, a height range and texts
        their result must contain (a coarse filter; the caller checks what it asked for)."""
        sql = "SELECT hash, height, idx, tx, result FROM txs WHERE height >= ? AND height <= ?"
        args: list[Any] = [heights[0], heights[1]]
        if tx_hash is not None:
            sql += " AND hash = ?"
            args.append(tx_hash.upper())
        for text in containing:
            sql += " AND instr(result, ?) > 0"
            args.append(text)
        rows = self._db.execute(sql + " ORDER BY height, idx", args).fetchall()
        return [TxRow(h, height, i, tx, json.loads(r)) for h, height, i, tx, r in rows]

    def events(self, from_height: int = 0, to_height: int | None = None) -> list[LoggedEvent]:
        """The event log in chain order: each block's transactions, then the block's own."""
        rows = self._db.execute(
            "SELECT height, tx_index, event_index, type, attributes FROM events "
            "WHERE height >= ? AND height <= ? "
            "ORDER BY height, tx_index < 0, tx_index, event_index",
            (from_height, to_height if to_height is not None else 2**62),
        ).fetchall()
        return [
            LoggedEvent(h, None if t < 0 else t, e, kind, json.loads(a))
            for h, t, e, kind, a in rows
        ]


@dataclass(frozen=True)
class TxRow:
    hash: str
    height: int
    index: int
    tx: str  # base64 TxRaw
    result: Doc


@dataclass(frozen=True)
class LoggedEvent:
    height: int
    tx_index: int | None
    event_index: int
    type: str
    attributes: list[Doc]

    @property
    def position(self) -> str:
        """Same form as :attr:`aktypes.events.chain.ChainEvent.position`."""
        tx = "block" if self.tx_index is None else str(self.tx_index)
        return f"{self.height}/{tx}/{self.event_index}"
