import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeploymentID(_message.Message):
    __slots__ = ("owner", "dseq")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    DSEQ_FIELD_NUMBER: _ClassVar[int]
    owner: str
    dseq: int
    def __init__(self, owner: _Optional[str] = ..., dseq: _Optional[int] = ...) -> None: ...

class GroupID(_message.Message):
    __slots__ = ("owner", "dseq", "gseq")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    DSEQ_FIELD_NUMBER: _ClassVar[int]
    GSEQ_FIELD_NUMBER: _ClassVar[int]
    owner: str
    dseq: int
    gseq: int
    def __init__(self, owner: _Optional[str] = ..., dseq: _Optional[int] = ..., gseq: _Optional[int] = ...) -> None: ...

class DeploymentReclamation(_message.Message):
    __slots__ = ("min_window",)
    MIN_WINDOW_FIELD_NUMBER: _ClassVar[int]
    min_window: _duration_pb2.Duration
    def __init__(self, min_window: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class EventDeploymentCreated(_message.Message):
    __slots__ = ("id", "hash")
    ID_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    id: DeploymentID
    hash: bytes
    def __init__(self, id: _Optional[_Union[DeploymentID, _Mapping]] = ..., hash: _Optional[bytes] = ...) -> None: ...

class EventDeploymentUpdated(_message.Message):
    __slots__ = ("id", "hash")
    ID_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    id: DeploymentID
    hash: bytes
    def __init__(self, id: _Optional[_Union[DeploymentID, _Mapping]] = ..., hash: _Optional[bytes] = ...) -> None: ...

class EventDeploymentClosed(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: DeploymentID
    def __init__(self, id: _Optional[_Union[DeploymentID, _Mapping]] = ...) -> None: ...

class EventGroupStarted(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: GroupID
    def __init__(self, id: _Optional[_Union[GroupID, _Mapping]] = ...) -> None: ...

class EventGroupPaused(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: GroupID
    def __init__(self, id: _Optional[_Union[GroupID, _Mapping]] = ...) -> None: ...

class EventGroupClosed(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: GroupID
    def __init__(self, id: _Optional[_Union[GroupID, _Mapping]] = ...) -> None: ...

class Deployment(_message.Message):
    __slots__ = ("id", "state", "hash", "created_at")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        invalid: _ClassVar[Deployment.State]
        active: _ClassVar[Deployment.State]
        closed: _ClassVar[Deployment.State]
    invalid: Deployment.State
    active: Deployment.State
    closed: Deployment.State
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: DeploymentID
    state: Deployment.State
    hash: bytes
    created_at: int
    def __init__(self, id: _Optional[_Union[DeploymentID, _Mapping]] = ..., state: _Optional[_Union[Deployment.State, str]] = ..., hash: _Optional[bytes] = ..., created_at: _Optional[int] = ...) -> None: ...
