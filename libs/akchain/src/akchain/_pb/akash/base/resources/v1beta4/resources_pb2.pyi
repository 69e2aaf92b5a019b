from akchain._pb.akash.base.attributes.v1 import attribute_pb2 as _attribute_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResourceValue(_message.Message):
    __slots__ = ("val",)
    VAL_FIELD_NUMBER: _ClassVar[int]
    val: bytes
    def __init__(self, val: _Optional[bytes] = ...) -> None: ...

class CPU(_message.Message):
    __slots__ = ("units", "attributes")
    UNITS_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    units: ResourceValue
    attributes: _containers.RepeatedCompositeFieldContainer[_attribute_pb2.Attribute]
    def __init__(self, units: _Optional[_Union[ResourceValue, _Mapping]] = ..., attributes: _Optional[_Iterable[_Union[_attribute_pb2.Attribute, _Mapping]]] = ...) -> None: ...

class Memory(_message.Message):
    __slots__ = ("quantity", "attributes")
    QUANTITY_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    quantity: ResourceValue
    attributes: _containers.RepeatedCompositeFieldContainer[_attribute_pb2.Attribute]
    def __init__(self, quantity: _Optional[_Union[ResourceValue, _Mapping]] = ..., attributes: _Optional[_Iterable[_Union[_attribute_pb2.Attribute, _Mapping]]] = ...) -> None: ...

class Storage(_message.Message):
    __slots__ = ("name", "quantity", "attributes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUANTITY_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    quantity: ResourceValue
    attributes: _containers.RepeatedCompositeFieldContainer[_attribute_pb2.Attribute]
    def __init__(self, name: _Optional[str] = ..., quantity: _Optional[_Union[ResourceValue, _Mapping]] = ..., attributes: _Optional[_Iterable[_Union[_attribute_pb2.Attribute, _Mapping]]] = ...) -> None: ...

class GPU(_message.Message):
    __slots__ = ("units", "attributes")
    UNITS_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    units: ResourceValue
    attributes: _containers.RepeatedCompositeFieldContainer[_attribute_pb2.Attribute]
    def __init__(self, units: _Optional[_Union[ResourceValue, _Mapping]] = ..., attributes: _Optional[_Iterable[_Union[_attribute_pb2.Attribute, _Mapping]]] = ...) -> None: ...

class Endpoint(_message.Message):
    __slots__ = ("kind", "sequence_number")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SHARED_HTTP: _ClassVar[Endpoint.Kind]
        RANDOM_PORT: _ClassVar[Endpoint.Kind]
        LEASED_IP: _ClassVar[Endpoint.Kind]
    SHARED_HTTP: Endpoint.Kind
    RANDOM_PORT: Endpoint.Kind
    LEASED_IP: Endpoint.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    kind: Endpoint.Kind
    sequence_number: int
    def __init__(self, kind: _Optional[_Union[Endpoint.Kind, str]] = ..., sequence_number: _Optional[int] = ...) -> None: ...

class Resources(_message.Message):
    __slots__ = ("id", "cpu", "memory", "storage", "gpu", "endpoints")
    ID_FIELD_NUMBER: _ClassVar[int]
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    id: int
    cpu: CPU
    memory: Memory
    storage: _containers.RepeatedCompositeFieldContainer[Storage]
    gpu: GPU
    endpoints: _containers.RepeatedCompositeFieldContainer[Endpoint]
    def __init__(self, id: _Optional[int] = ..., cpu: _Optional[_Union[CPU, _Mapping]] = ..., memory: _Optional[_Union[Memory, _Mapping]] = ..., storage: _Optional[_Iterable[_Union[Storage, _Mapping]]] = ..., gpu: _Optional[_Union[GPU, _Mapping]] = ..., endpoints: _Optional[_Iterable[_Union[Endpoint, _Mapping]]] = ...) -> None: ...
