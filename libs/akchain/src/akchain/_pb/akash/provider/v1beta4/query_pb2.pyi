from akchain._pb.akash.base.attributes.v1 import attribute_pb2 as _attribute_pb2
from akchain._pb.akash.provider.v1beta4 import provider_pb2 as _provider_pb2
from akchain._pb.cosmos.base.query.v1beta1 import pagination_pb2 as _pagination_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Provider(_message.Message):
    __slots__ = ("owner", "host_uri", "attributes", "info")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    HOST_URI_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    owner: str
    host_uri: str
    attributes: _containers.RepeatedCompositeFieldContainer[_attribute_pb2.Attribute]
    info: _provider_pb2.Info
    def __init__(self, owner: _Optional[str] = ..., host_uri: _Optional[str] = ..., attributes: _Optional[_Iterable[_Union[_attribute_pb2.Attribute, _Mapping]]] = ..., info: _Optional[_Union[_provider_pb2.Info, _Mapping]] = ...) -> None: ...

class QueryProvidersRequest(_message.Message):
    __slots__ = ("pagination",)
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    pagination: _pagination_pb2.PageRequest
    def __init__(self, pagination: _Optional[_Union[_pagination_pb2.PageRequest, _Mapping]] = ...) -> None: ...

class QueryProvidersResponse(_message.Message):
    __slots__ = ("providers", "pagination")
    PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    providers: _containers.RepeatedCompositeFieldContainer[Provider]
    pagination: _pagination_pb2.PageResponse
    def __init__(self, providers: _Optional[_Iterable[_Union[Provider, _Mapping]]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageResponse, _Mapping]] = ...) -> None: ...

class QueryProviderRequest(_message.Message):
    __slots__ = ("owner",)
    OWNER_FIELD_NUMBER: _ClassVar[int]
    owner: str
    def __init__(self, owner: _Optional[str] = ...) -> None: ...

class QueryProviderResponse(_message.Message):
    __slots__ = ("provider",)
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    provider: Provider
    def __init__(self, provider: _Optional[_Union[Provider, _Mapping]] = ...) -> None: ...
