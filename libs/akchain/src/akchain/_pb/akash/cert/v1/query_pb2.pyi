from akchain._pb.cosmos.base.query.v1beta1 import pagination_pb2 as _pagination_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    invalid: _ClassVar[State]
    valid: _ClassVar[State]
    revoked: _ClassVar[State]
invalid: State
valid: State
revoked: State

class Certificate(_message.Message):
    __slots__ = ("state", "cert", "pubkey")
    STATE_FIELD_NUMBER: _ClassVar[int]
    CERT_FIELD_NUMBER: _ClassVar[int]
    PUBKEY_FIELD_NUMBER: _ClassVar[int]
    state: State
    cert: bytes
    pubkey: bytes
    def __init__(self, state: _Optional[_Union[State, str]] = ..., cert: _Optional[bytes] = ..., pubkey: _Optional[bytes] = ...) -> None: ...

class CertificateFilter(_message.Message):
    __slots__ = ("owner", "serial", "state")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    SERIAL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    owner: str
    serial: str
    state: str
    def __init__(self, owner: _Optional[str] = ..., serial: _Optional[str] = ..., state: _Optional[str] = ...) -> None: ...

class CertificateResponse(_message.Message):
    __slots__ = ("certificate", "serial")
    CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    SERIAL_FIELD_NUMBER: _ClassVar[int]
    certificate: Certificate
    serial: str
    def __init__(self, certificate: _Optional[_Union[Certificate, _Mapping]] = ..., serial: _Optional[str] = ...) -> None: ...

class QueryCertificatesRequest(_message.Message):
    __slots__ = ("filter", "pagination")
    FILTER_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    filter: CertificateFilter
    pagination: _pagination_pb2.PageRequest
    def __init__(self, filter: _Optional[_Union[CertificateFilter, _Mapping]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageRequest, _Mapping]] = ...) -> None: ...

class QueryCertificatesResponse(_message.Message):
    __slots__ = ("certificates", "pagination")
    CERTIFICATES_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    certificates: _containers.RepeatedCompositeFieldContainer[CertificateResponse]
    pagination: _pagination_pb2.PageResponse
    def __init__(self, certificates: _Optional[_Iterable[_Union[CertificateResponse, _Mapping]]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageResponse, _Mapping]] = ...) -> None: ...
