"""Message builders: the protobuf each one makes, and that the devnet knows its type."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from akchain import msgs
from akchain._pb.akash.audit.v1 import audit_pb2
from akchain._pb.akash.cert.v1 import cert_pb2
from akchain._pb.akash.provider.v1beta4 import provider_pb2
from akchain.keys import Signer
from akchain.tx import decode_tx, pack, sign_tx
from aktypes.attributes import Attribute
from aktypes.events import BroadcastTx, CreateProvider, RevokeCertificate, UpdateProvider
from aktypes.testing import address

OWNER = address(1)
AUDITOR = address(2)
REGION = [Attribute(key="region", value="local"), Attribute(key="tier", value="community")]


def test_update_provider_carries_everything_a_provider_record_holds() -> None:
    message = msgs.update_provider(
        OWNER, "https://p.example.com:8443", REGION, email="ops@example.com", website="https://x"
    )
    assert isinstance(message, provider_pb2.MsgUpdateProvider)
    assert message.owner == OWNER
    assert message.host_uri == "https://p.example.com:8443"
    assert [(a.key, a.value) for a in message.attributes] == [
        ("region", "local"),
        ("tier", "community"),
    ]
    assert (message.info.email, message.info.website) == ("ops@example.com", "https://x")
    assert pack(message).type_url == "/akash.provider.v1beta4.MsgUpdateProvider"
    # the same fields, in the same places, as MsgCreateProvider
    created = msgs.create_provider(
        OWNER, "https://p.example.com:8443", REGION, email="ops@example.com", website="https://x"
    )
    assert message.SerializeToString() == created.SerializeToString()


def test_update_provider_without_attributes_clears_them() -> None:
    message = msgs.update_provider(OWNER, "https://p.example.com:8443", [])
    assert list(message.attributes) == []
    assert (message.info.email, message.info.website) == ("", "")


def test_delete_provider_attributes_names_the_auditor_first() -> None:
    message = msgs.delete_provider_attributes(AUDITOR, OWNER, ["region", "tier"])
    assert isinstance(message, audit_pb2.MsgDeleteProviderAttributes)
    assert (message.auditor, message.owner) == (AUDITOR, OWNER)
    assert list(message.keys) == ["region", "tier"]
    assert pack(message).type_url == "/akash.audit.v1.MsgDeleteProviderAttributes"
    # no keys: every attribute the auditor signed (the chain deletes the whole record)
    assert list(msgs.delete_provider_attributes(AUDITOR, OWNER, []).keys) == []


def test_sign_provider_attributes_names_the_owner_first() -> None:
    message = msgs.sign_provider_attributes(OWNER, AUDITOR, REGION)
    assert (message.owner, message.auditor) == (OWNER, AUDITOR)
    assert pack(message).type_url == "/akash.audit.v1.MsgSignProviderAttributes"


def test_provider_and_audit_messages_are_known_and_survive_a_signed_transaction() -> None:
    signer = Signer.from_mnemonic(" ".join(["abandon"] * 11 + ["about"]))
    sent = [
        msgs.create_provider(signer.address, "https://p.example.com:8443", REGION),
        msgs.update_provider(signer.address, "https://q.example.com:8443", REGION[:1]),
        msgs.sign_provider_attributes(OWNER, signer.address, REGION),
        msgs.delete_provider_attributes(signer.address, OWNER, ["tier"]),
    ]
    raw = sign_tx(signer, sent, chain_id="c", account_number=1, sequence=0)
    decoded = decode_tx(raw)
    assert [m.type_url for m in decoded.messages] == [
        "/akash.provider.v1beta4.MsgCreateProvider",
        "/akash.provider.v1beta4.MsgUpdateProvider",
        "/akash.audit.v1.MsgSignProviderAttributes",
        "/akash.audit.v1.MsgDeleteProviderAttributes",
    ]
    for packed, original in zip(decoded.messages, sent, strict=True):
        kind = msgs.MESSAGE_TYPES[packed.type_url]
        assert kind.FromString(packed.value) == original


def test_provider_commands_become_the_sender_s_create_and_update_messages() -> None:
    command = BroadcastTx.model_validate_json(
        BroadcastTx(
            key="update-provider/x",
            msgs=[
                CreateProvider(host_uri="https://p.example.com:8443", attributes=REGION),
                UpdateProvider(
                    host_uri="https://q.example.com:8443", email="ops@example.com", website="w"
                ),
            ],
        ).model_dump_json()
    )
    created, updated = (msgs.from_command(m, sender=OWNER) for m in command.msgs)
    assert created == msgs.create_provider(OWNER, "https://p.example.com:8443", REGION)
    assert updated == msgs.update_provider(
        OWNER, "https://q.example.com:8443", [], email="ops@example.com", website="w"
    )
    assert isinstance(updated, provider_pb2.MsgUpdateProvider)


def test_a_revoke_certificate_command_revokes_the_senders_certificate_by_serial() -> None:
    command = BroadcastTx(key="revoke-certificate/42", msgs=[RevokeCertificate(serial="42")])
    [message] = [msgs.from_command(m, sender=OWNER) for m in command.msgs]
    assert isinstance(message, cert_pb2.MsgRevokeCertificate)
    assert (message.id.owner, message.id.serial) == (OWNER, "42")
    assert pack(message).type_url == "/akash.cert.v1.MsgRevokeCertificate"
    assert pack(message).type_url in msgs.MESSAGE_TYPES  # the devnet executes it


def test_a_revoke_certificate_serial_is_decimal() -> None:
    with pytest.raises(ValidationError):
        RevokeCertificate(serial="0x2a")
