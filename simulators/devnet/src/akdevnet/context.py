"""What a message handler works with: the state branch, the block, and the events it emits.

Events follow the Cosmos SDK's encoding, which the provider's decoder and Akash's own tools
read: a typed event's ABCI type is its proto name, one attribute per field whose value is
that field's JSON, attributes sorted by key, and ``msg_index`` appended to every event a
message emits.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.message import Message

from akdevnet.genesis import Params
from akdevnet.store import Branch, Doc
from aktypes.address import encode_address
from aktypes.coin import Dec


def module_address(name: str) -> str:
    """A module account's address (Cosmos ``authtypes.NewModuleAddress``)."""
    return encode_address(hashlib.sha256(name.encode()).digest()[:20], "akash")


ESCROW_MODULE = module_address("escrow")
FEE_COLLECTOR = module_address("fee_collector")


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def attribute(key: str, value: str) -> Doc:
    return {"key": key, "value": value, "index": True}


@dataclass
class Ctx:
    """One message's (or the ante handler's) view of the chain."""

    store: Branch
    height: int
    time: str
    unix_time: int
    chain_id: str
    params: Params
    events: list[Doc] = field(default_factory=list)
    msg_index: int | None = None

    def event(self, kind: str, attributes: list[tuple[str, str]]) -> None:
        """A plain (untyped) ABCI event."""
        attrs = [attribute(k, v) for k, v in attributes]
        if self.msg_index is not None:
            attrs.append(attribute("msg_index", str(self.msg_index)))
        self.events.append({"type": kind, "attributes": attrs})

    def typed(self, name: str, **fields: Any) -> None:
        """A typed event: ``name`` is the proto full name, values are the fields' JSON."""
        self.event(name, [(k, compact(fields[k])) for k in sorted(fields)])

    def branch(self) -> Ctx:
        return Ctx(
            self.store.branch(),
            self.height,
            self.time,
            self.unix_time,
            self.chain_id,
            self.params,
            msg_index=self.msg_index,
        )


# -- identifiers in their JSON form, and the store keys built from them ---------------------


def deployment_id(owner: str, dseq: int | str) -> Doc:
    return {"owner": owner, "dseq": str(dseq)}


def group_id(owner: str, dseq: int | str, gseq: int) -> Doc:
    return {**deployment_id(owner, dseq), "gseq": int(gseq)}


def order_id(owner: str, dseq: int | str, gseq: int, oseq: int) -> Doc:
    return {**group_id(owner, dseq, gseq), "oseq": int(oseq)}


def bid_id(order: Doc, provider: str) -> Doc:
    return {
        **order_id(order["owner"], order["dseq"], order["gseq"], order["oseq"]),
        "provider": provider,
        "bseq": 0,
    }


def key(kind: str, ident: Doc) -> str:
    """``deployment/<owner>/<dseq>/…`` with numbers zero-padded, so keys sort like the chain's."""
    parts = [kind, ident["owner"], f"{int(ident['dseq']):020d}"]
    if "gseq" in ident:
        parts.append(f"{int(ident['gseq']):010d}")
    if "oseq" in ident:
        parts.append(f"{int(ident['oseq']):010d}")
    if "provider" in ident:
        parts.append(ident["provider"])
    return "/".join(parts)


def id_text(ident: Doc) -> str:
    """Akash's ``String()`` of an id: ``owner/dseq/gseq/oseq/provider``."""
    return "/".join(
        str(ident[k]) for k in ("owner", "dseq", "gseq", "oseq", "provider") if k in ident
    )


def dec_text(wire: str) -> str:
    """A LegacyDec from its protobuf wire text (scaled integer) to its JSON text."""
    return str(Dec.from_raw(int(wire or "0")))


def dec_coin(denom: str, amount: Dec) -> Doc:
    return {"denom": denom, "amount": str(amount)}


def to_json(message: Message) -> Doc:
    """A protobuf message in the LCD's JSON form.

    protojson with proto field names and defaults, plus the two Cosmos custom types the
    generic encoder cannot know: LegacyDec (``DecCoin.amount``) as decimal text and
    ``ResourceValue.val`` (a ``math.Int`` in bytes) as integer text.
    """
    doc = MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    _fix_custom_types(message, doc)
    return doc


def from_json(doc: Doc, message: Message) -> Message:
    """Fill ``message`` from its LCD JSON form (the inverse of :func:`to_json`): LegacyDec
    amounts (``DecCoin``, escrow ``Balance``) become the integer scaled by 10^18 and
    ``ResourceValue.val`` integer text its bytes. Raises ``json_format.ParseError``."""
    ParseDict(_wire_doc(doc, message.DESCRIPTOR), message)
    return message


def _wire_doc(doc: Doc, descriptor: Any) -> Doc:
    name = descriptor.full_name
    if name in ("cosmos.base.v1beta1.DecCoin", "akash.escrow.types.v1.Balance"):
        amount = doc.get("amount")
        return doc | {"amount": str(Dec(amount).raw)} if amount else doc
    if name.endswith(".ResourceValue"):
        return doc | {"val": base64.b64encode(str(doc.get("val") or "0").encode()).decode()}
    out = dict(doc)
    for member in descriptor.fields:
        value = doc.get(member.name)
        if member.message_type is None or value is None:
            continue
        if isinstance(value, list):
            out[member.name] = [
                _wire_doc(v, member.message_type) if isinstance(v, dict) else v for v in value
            ]
        elif isinstance(value, dict) and not member.message_type.GetOptions().map_entry:
            out[member.name] = _wire_doc(value, member.message_type)
    return out


def _fix_custom_types(message: Message, doc: Doc) -> None:
    name = message.DESCRIPTOR.full_name
    if name == "cosmos.base.v1beta1.DecCoin":
        doc["amount"] = dec_text(getattr(message, "amount", ""))
        return
    if name.endswith(".ResourceValue"):
        doc["val"] = getattr(message, "val", b"").decode() or "0"
        return
    for descriptor in message.DESCRIPTOR.fields:
        if descriptor.message_type is None or descriptor.name not in doc:
            continue
        value = getattr(message, descriptor.name)
        if descriptor.is_repeated and not descriptor.message_type.GetOptions().map_entry:
            for item, item_doc in zip(value, doc[descriptor.name], strict=True):
                _fix_custom_types(item, item_doc)
        elif not descriptor.is_repeated and isinstance(doc[descriptor.name], dict):
            _fix_custom_types(value, doc[descriptor.name])
