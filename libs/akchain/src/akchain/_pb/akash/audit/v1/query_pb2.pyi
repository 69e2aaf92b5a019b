from akchain._pb.akash.base.attributes.v1 import attribute_pb2 as _attribute_pb2
from akchain._pb.cosmos.base.query.v1beta1 import pagination_pb2 as _pagination_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AuditedProvider(_message.Message):
    __slots__ = ("owner", "auditor", "attributes")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    AUDITOR_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    owner: str
    auditor: str
    attributes: _containers.RepeatedCompositeFieldContainer[_attribute_pb2.Attribute]
    def __init__(self, owner: _Optional[str] = ..., auditor: _Optional[str] = ..., attributes: _Optional[_Iterable[_Union[_attribute_pb2.Attribute, _Mapping]]] = ...) -> None: ...

class QueryProvidersResponse(_message.Message):
    __slots__ = ("providers", "pagination")
    PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    providers: _containers.RepeatedCompositeFieldContainer[AuditedProvider]
    pagination: _pagination_pb2.PageResponse
    def __init__(self, providers: _Optional[_Iterable[_Union[AuditedProvider, _Mapping]]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageResponse, _Mapping]] = ...) -> None: ...

class QueryProviderAttributesRequest(_message.Message):
    __slots__ = ("owner", "pagination")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    owner: str
    pagination: _pagination_pb2.PageRequest
    def __init__(self, owner: _Optional[str] = ..., pagination: _Optional[_Union[_pagination_pb2.PageRequest, _Mapping]] = ...) -> None: ...

class QueryProviderAuditorRequest(_message.Message):
    __slots__ = ("auditor", "owner")
    AUDITOR_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    auditor: str
    owner: str
    def __init__(self, auditor: _Optional[str] = ..., owner: _Optional[str] = ...) -> None: ...
