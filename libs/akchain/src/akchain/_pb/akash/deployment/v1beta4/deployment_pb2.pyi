from akchain._pb.akash.base.attributes.v1 import attribute_pb2 as _attribute_pb2
from akchain._pb.akash.base.deposit.v1 import deposit_pb2 as _deposit_pb2
from akchain._pb.akash.base.resources.v1beta4 import resources_pb2 as _resources_pb2
from akchain._pb.akash.deployment.v1 import deployment_pb2 as _deployment_pb2
from akchain._pb.cosmos.base.v1beta1 import coin_pb2 as _coin_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResourceUnit(_message.Message):
    __slots__ = ("resource", "count", "price")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    resource: _resources_pb2.Resources
    count: int
    price: _coin_pb2.DecCoin
    def __init__(self, resource: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., count: _Optional[int] = ..., price: _Optional[_Union[_coin_pb2.DecCoin, _Mapping]] = ...) -> None: ...

class GroupSpec(_message.Message):
    __slots__ = ("name", "requirements", "resources")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    name: str
    requirements: _attribute_pb2.PlacementRequirements
    resources: _containers.RepeatedCompositeFieldContainer[ResourceUnit]
    def __init__(self, name: _Optional[str] = ..., requirements: _Optional[_Union[_attribute_pb2.PlacementRequirements, _Mapping]] = ..., resources: _Optional[_Iterable[_Union[ResourceUnit, _Mapping]]] = ...) -> None: ...

class MsgCreateDeployment(_message.Message):
    __slots__ = ("id", "groups", "hash", "deposit", "reclamation")
    ID_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    DEPOSIT_FIELD_NUMBER: _ClassVar[int]
    RECLAMATION_FIELD_NUMBER: _ClassVar[int]
    id: _deployment_pb2.DeploymentID
    groups: _containers.RepeatedCompositeFieldContainer[GroupSpec]
    hash: bytes
    deposit: _deposit_pb2.Deposit
    reclamation: _deployment_pb2.DeploymentReclamation
    def __init__(self, id: _Optional[_Union[_deployment_pb2.DeploymentID, _Mapping]] = ..., groups: _Optional[_Iterable[_Union[GroupSpec, _Mapping]]] = ..., hash: _Optional[bytes] = ..., deposit: _Optional[_Union[_deposit_pb2.Deposit, _Mapping]] = ..., reclamation: _Optional[_Union[_deployment_pb2.DeploymentReclamation, _Mapping]] = ...) -> None: ...

class MsgUpdateDeployment(_message.Message):
    __slots__ = ("id", "hash")
    ID_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    id: _deployment_pb2.DeploymentID
    hash: bytes
    def __init__(self, id: _Optional[_Union[_deployment_pb2.DeploymentID, _Mapping]] = ..., hash: _Optional[bytes] = ...) -> None: ...

class MsgCloseDeployment(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: _deployment_pb2.DeploymentID
    def __init__(self, id: _Optional[_Union[_deployment_pb2.DeploymentID, _Mapping]] = ...) -> None: ...
