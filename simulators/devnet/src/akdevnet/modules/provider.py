"""Providers (host URI, attributes, contact info) and the attributes auditors sign for them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from akchain._pb.akash.audit.v1 import audit_pb2
from akchain._pb.akash.base.attributes.v1 import attribute_pb2
from akchain._pb.akash.provider.v1beta4 import provider_pb2
from akdevnet.context import Ctx
from akdevnet.errors import fail
from akdevnet.modules import bank
from akdevnet.store import Doc

_KEY = re.compile(r"^([a-zA-Z][\w/.\-]{1,126})$")


def _check_attributes(attributes: Sequence[attribute_pb2.Attribute]) -> list[Doc]:
    seen: set[str] = set()
    for attribute in attributes:
        if not _KEY.match(attribute.key):
            raise fail("akash", 2, "attribute key does not match regexp", attribute.key)
        if attribute.key in seen:
            raise fail("akash", 1, "attributes cannot have duplicate keys", attribute.key)
        seen.add(attribute.key)
    return [{"key": a.key, "value": a.value} for a in attributes]


def _check_host_uri(uri: str) -> None:
    parts = urlsplit(uri)
    if not parts.scheme or not parts.netloc:
        raise fail("provider", 2, "invalid provider: not absolute host uri", uri)
    if parts.scheme != "https":
        raise fail(
            "provider",
            1,
            "invalid provider: invalid host uri",
            f'scheme in "{uri}" should be https',
        )
    if parts.path not in ("", "/"):
        raise fail("provider", 1, "invalid provider: invalid host uri", f'"{uri}" has a path')


def _provider_doc(msg: provider_pb2.MsgCreateProvider | provider_pb2.MsgUpdateProvider) -> Doc:
    bank.check_address(msg.owner, "provider")
    _check_host_uri(msg.host_uri)
    return {
        "owner": msg.owner,
        "host_uri": msg.host_uri,
        "attributes": _check_attributes(msg.attributes),
        "info": {"email": msg.info.email, "website": msg.info.website},
    }


def create(ctx: Ctx, msg: provider_pb2.MsgCreateProvider) -> None:
    doc = _provider_doc(msg)
    if ctx.store.has(f"provider/{msg.owner}"):
        raise fail("provider", 4, "invalid provider: already exists", f"id: {msg.owner}")
    ctx.store.set(f"provider/{msg.owner}", doc)
    ctx.typed("akash.provider.v1beta4.EventProviderCreated", owner=msg.owner)


def update(ctx: Ctx, msg: provider_pb2.MsgUpdateProvider) -> None:
    doc = _provider_doc(msg)
    if not ctx.store.has(f"provider/{msg.owner}"):
        raise fail("provider", 3, "invalid provider: address not found", f"id: {msg.owner}")
    ctx.store.set(f"provider/{msg.owner}", doc)
    ctx.typed("akash.provider.v1beta4.EventProviderUpdated", owner=msg.owner)


def sign_attributes(ctx: Ctx, msg: audit_pb2.MsgSignProviderAttributes) -> None:
    bank.check_address(msg.owner, "owner")
    bank.check_address(msg.auditor, "auditor")
    new = _check_attributes(msg.attributes)
    key = f"audit/{msg.owner}/{msg.auditor}"
    record = ctx.store.get(key) or {"owner": msg.owner, "auditor": msg.auditor, "attributes": []}
    merged = {a["key"]: a for a in record["attributes"]} | {a["key"]: a for a in new}
    record["attributes"] = [merged[k] for k in sorted(merged)]
    ctx.store.set(key, record)
    ctx.typed("akash.audit.v1.EventTrustedAuditorCreated", auditor=msg.auditor, owner=msg.owner)


def delete_attributes(ctx: Ctx, msg: audit_pb2.MsgDeleteProviderAttributes) -> None:
    bank.check_address(msg.owner, "owner")  # Akash's ValidateBasic, as for signing
    bank.check_address(msg.auditor, "auditor")
    key = f"audit/{msg.owner}/{msg.auditor}"
    record = ctx.store.get(key)
    if record is None:
        raise fail("audit", 1, "invalid provider: address not found")
    if msg.keys:
        present = {a["key"] for a in record["attributes"]}
        for name in msg.keys:
            if name not in present:
                raise fail(
                    "audit",
                    3,
                    "attribute not found",
                    f'trying to delete non-existing attribute "{name}" '
                    f'for auditor/provider "{msg.auditor}/{msg.owner}"',
                )
        record["attributes"] = [a for a in record["attributes"] if a["key"] not in set(msg.keys)]
    if msg.keys and record["attributes"]:
        ctx.store.set(key, record)
    else:
        ctx.store.delete(key)
    ctx.typed("akash.audit.v1.EventTrustedAuditorDeleted", auditor=msg.auditor, owner=msg.owner)
