from akchain._pb.akash.base.attributes.v1 import attribute_pb2 as _attribute_pb2
from akgateway._pb.k8s import resource_pb2 as _resource_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResourcePair(_message.Message):
    __slots__ = ("allocatable", "allocated", "attributes", "capacity")
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    allocatable: _resource_pb2.Quantity
    allocated: _resource_pb2.Quantity
    attributes: _containers.RepeatedCompositeFieldContainer[_attribute_pb2.Attribute]
    capacity: _resource_pb2.Quantity
    def __init__(self, allocatable: _Optional[_Union[_resource_pb2.Quantity, _Mapping]] = ..., allocated: _Optional[_Union[_resource_pb2.Quantity, _Mapping]] = ..., attributes: _Optional[_Iterable[_Union[_attribute_pb2.Attribute, _Mapping]]] = ..., capacity: _Optional[_Union[_resource_pb2.Quantity, _Mapping]] = ...) -> None: ...

class CPUInfo(_message.Message):
    __slots__ = ("id", "vendor", "model", "vcores")
    ID_FIELD_NUMBER: _ClassVar[int]
    VENDOR_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    VCORES_FIELD_NUMBER: _ClassVar[int]
    id: str
    vendor: str
    model: str
    vcores: int
    def __init__(self, id: _Optional[str] = ..., vendor: _Optional[str] = ..., model: _Optional[str] = ..., vcores: _Optional[int] = ...) -> None: ...

class CPU(_message.Message):
    __slots__ = ("quantity", "info")
    QUANTITY_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    quantity: ResourcePair
    info: _containers.RepeatedCompositeFieldContainer[CPUInfo]
    def __init__(self, quantity: _Optional[_Union[ResourcePair, _Mapping]] = ..., info: _Optional[_Iterable[_Union[CPUInfo, _Mapping]]] = ...) -> None: ...

class GPUInfo(_message.Message):
    __slots__ = ("vendor", "vendor_id", "name", "modelid", "interface", "memory_size")
    VENDOR_FIELD_NUMBER: _ClassVar[int]
    VENDOR_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MODELID_FIELD_NUMBER: _ClassVar[int]
    INTERFACE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SIZE_FIELD_NUMBER: _ClassVar[int]
    vendor: str
    vendor_id: str
    name: str
    modelid: str
    interface: str
    memory_size: str
    def __init__(self, vendor: _Optional[str] = ..., vendor_id: _Optional[str] = ..., name: _Optional[str] = ..., modelid: _Optional[str] = ..., interface: _Optional[str] = ..., memory_size: _Optional[str] = ...) -> None: ...

class GPU(_message.Message):
    __slots__ = ("quantity", "info")
    QUANTITY_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    quantity: ResourcePair
    info: _containers.RepeatedCompositeFieldContainer[GPUInfo]
    def __init__(self, quantity: _Optional[_Union[ResourcePair, _Mapping]] = ..., info: _Optional[_Iterable[_Union[GPUInfo, _Mapping]]] = ...) -> None: ...

class MemoryInfo(_message.Message):
    __slots__ = ("vendor", "type", "total_size", "speed")
    VENDOR_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    vendor: str
    type: str
    total_size: str
    speed: str
    def __init__(self, vendor: _Optional[str] = ..., type: _Optional[str] = ..., total_size: _Optional[str] = ..., speed: _Optional[str] = ...) -> None: ...

class Memory(_message.Message):
    __slots__ = ("quantity", "info")
    QUANTITY_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    quantity: ResourcePair
    info: _containers.RepeatedCompositeFieldContainer[MemoryInfo]
    def __init__(self, quantity: _Optional[_Union[ResourcePair, _Mapping]] = ..., info: _Optional[_Iterable[_Union[MemoryInfo, _Mapping]]] = ...) -> None: ...

class StorageInfo(_message.Message):
    __slots__ = ("iops",)
    CLASS_FIELD_NUMBER: _ClassVar[int]
    IOPS_FIELD_NUMBER: _ClassVar[int]
    iops: str
    def __init__(self, iops: _Optional[str] = ..., **kwargs) -> None: ...

class Storage(_message.Message):
    __slots__ = ("quantity", "info")
    QUANTITY_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    quantity: ResourcePair
    info: StorageInfo
    def __init__(self, quantity: _Optional[_Union[ResourcePair, _Mapping]] = ..., info: _Optional[_Union[StorageInfo, _Mapping]] = ...) -> None: ...

class NodeResources(_message.Message):
    __slots__ = ("cpu", "memory", "gpu", "ephemeral_storage", "volumes_attached", "volumes_mounted")
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_STORAGE_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_ATTACHED_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_MOUNTED_FIELD_NUMBER: _ClassVar[int]
    cpu: CPU
    memory: Memory
    gpu: GPU
    ephemeral_storage: ResourcePair
    volumes_attached: ResourcePair
    volumes_mounted: ResourcePair
    def __init__(self, cpu: _Optional[_Union[CPU, _Mapping]] = ..., memory: _Optional[_Union[Memory, _Mapping]] = ..., gpu: _Optional[_Union[GPU, _Mapping]] = ..., ephemeral_storage: _Optional[_Union[ResourcePair, _Mapping]] = ..., volumes_attached: _Optional[_Union[ResourcePair, _Mapping]] = ..., volumes_mounted: _Optional[_Union[ResourcePair, _Mapping]] = ...) -> None: ...

class NodeCapabilities(_message.Message):
    __slots__ = ("storage_classes",)
    STORAGE_CLASSES_FIELD_NUMBER: _ClassVar[int]
    storage_classes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, storage_classes: _Optional[_Iterable[str]] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("name", "resources", "capabilities")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    name: str
    resources: NodeResources
    capabilities: NodeCapabilities
    def __init__(self, name: _Optional[str] = ..., resources: _Optional[_Union[NodeResources, _Mapping]] = ..., capabilities: _Optional[_Union[NodeCapabilities, _Mapping]] = ...) -> None: ...

class Cluster(_message.Message):
    __slots__ = ("nodes", "storage")
    NODES_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    storage: _containers.RepeatedCompositeFieldContainer[Storage]
    def __init__(self, nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ..., storage: _Optional[_Iterable[_Union[Storage, _Mapping]]] = ...) -> None: ...
