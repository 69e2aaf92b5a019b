from akchain._pb.akash.deployment.v1 import deployment_pb2 as _deployment_pb2
from akchain._pb.akash.deployment.v1beta4 import deployment_pb2 as _deployment_pb2_1
from akchain._pb.akash.escrow.types.v1 import types_pb2 as _types_pb2
from akchain._pb.cosmos.base.query.v1beta1 import pagination_pb2 as _pagination_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Group(_message.Message):
    __slots__ = ("id", "state", "group_spec", "created_at")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        invalid: _ClassVar[Group.State]
        open: _ClassVar[Group.State]
        paused: _ClassVar[Group.State]
        insufficient_funds: _ClassVar[Group.State]
        closed: _ClassVar[Group.State]
    invalid: Group.State
    open: Group.State
    paused: Group.State
    insufficient_funds: Group.State
    closed: Group.State
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    GROUP_SPEC_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: _deployment_pb2.GroupID
    state: Group.State
    group_spec: _deployment_pb2_1.GroupSpec
    created_at: int
    def __init__(self, id: _Optional[_Union[_deployment_pb2.GroupID, _Mapping]] = ..., state: _Optional[_Union[Group.State, str]] = ..., group_spec: _Optional[_Union[_deployment_pb2_1.GroupSpec, _Mapping]] = ..., created_at: _Optional[int] = ...) -> None: ...

class DeploymentFilters(_message.Message):
    __slots__ = ("owner", "dseq", "state")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    DSEQ_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    owner: str
    dseq: int
    state: str
    def __init__(self, owner: _Optional[str] = ..., dseq: _Optional[int] = ..., state: _Optional[str] = ...) -> None: ...

class QueryDeploymentsRequest(_message.Message):
    __slots__ = ("filters", "pagination")
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    filters: DeploymentFilters
    pagination: _pagination_pb2.PageRequest
    def __init__(self, filters: _Optional[_Union[DeploymentFilters, _Mapping]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageRequest, _Mapping]] = ...) -> None: ...

class QueryDeploymentsResponse(_message.Message):
    __slots__ = ("deployments", "pagination")
    DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    deployments: _containers.RepeatedCompositeFieldContainer[QueryDeploymentResponse]
    pagination: _pagination_pb2.PageResponse
    def __init__(self, deployments: _Optional[_Iterable[_Union[QueryDeploymentResponse, _Mapping]]] = ..., pagination: _Optional[_Union[_pagination_pb2.PageResponse, _Mapping]] = ...) -> None: ...

class QueryDeploymentRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: _deployment_pb2.DeploymentID
    def __init__(self, id: _Optional[_Union[_deployment_pb2.DeploymentID, _Mapping]] = ...) -> None: ...

class QueryDeploymentResponse(_message.Message):
    __slots__ = ("deployment", "groups", "escrow_account")
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    ESCROW_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    deployment: _deployment_pb2.Deployment
    groups: _containers.RepeatedCompositeFieldContainer[Group]
    escrow_account: _types_pb2.Account
    def __init__(self, deployment: _Optional[_Union[_deployment_pb2.Deployment, _Mapping]] = ..., groups: _Optional[_Iterable[_Union[Group, _Mapping]]] = ..., escrow_account: _Optional[_Union[_types_pb2.Account, _Mapping]] = ...) -> None: ...

class QueryGroupRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: _deployment_pb2.GroupID
    def __init__(self, id: _Optional[_Union[_deployment_pb2.GroupID, _Mapping]] = ...) -> None: ...

class QueryGroupResponse(_message.Message):
    __slots__ = ("group",)
    GROUP_FIELD_NUMBER: _ClassVar[int]
    group: Group
    def __init__(self, group: _Optional[_Union[Group, _Mapping]] = ...) -> None: ...
