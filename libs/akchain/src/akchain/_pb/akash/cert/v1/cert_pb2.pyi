from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ID(_message.Message):
    __slots__ = ("owner", "serial")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    SERIAL_FIELD_NUMBER: _ClassVar[int]
    owner: str
    serial: str
    def __init__(self, owner: _Optional[str] = ..., serial: _Optional[str] = ...) -> None: ...

class MsgCreateCertificate(_message.Message):
    __slots__ = ("owner", "cert", "pubkey")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CERT_FIELD_NUMBER: _ClassVar[int]
    PUBKEY_FIELD_NUMBER: _ClassVar[int]
    owner: str
    cert: bytes
    pubkey: bytes
    def __init__(self, owner: _Optional[str] = ..., cert: _Optional[bytes] = ..., pubkey: _Optional[bytes] = ...) -> None: ...

class MsgRevokeCertificate(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: ID
    def __init__(self, id: _Optional[_Union[ID, _Mapping]] = ...) -> None: ...
