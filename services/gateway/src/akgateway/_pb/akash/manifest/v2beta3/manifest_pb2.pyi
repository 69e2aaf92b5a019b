from akchain._pb.akash.base.resources.v1beta4 import resources_pb2 as _resources_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ServiceExposeHTTPOptions(_message.Message):
    __slots__ = ("max_body_size", "read_timeout", "send_timeout", "next_tries", "next_timeout", "next_cases")
    MAX_BODY_SIZE_FIELD_NUMBER: _ClassVar[int]
    READ_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    SEND_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    NEXT_TRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    NEXT_CASES_FIELD_NUMBER: _ClassVar[int]
    max_body_size: int
    read_timeout: int
    send_timeout: int
    next_tries: int
    next_timeout: int
    next_cases: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, max_body_size: _Optional[int] = ..., read_timeout: _Optional[int] = ..., send_timeout: _Optional[int] = ..., next_tries: _Optional[int] = ..., next_timeout: _Optional[int] = ..., next_cases: _Optional[_Iterable[str]] = ...) -> None: ...

class ServiceExpose(_message.Message):
    __slots__ = ("port", "external_port", "proto", "service", "hosts", "http_options", "ip", "endpoint_sequence_number")
    PORT_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_PORT_FIELD_NUMBER: _ClassVar[int]
    PROTO_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    HTTP_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    IP_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_SEQUENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    port: int
    external_port: int
    proto: str
    service: str
    hosts: _containers.RepeatedScalarFieldContainer[str]
    http_options: ServiceExposeHTTPOptions
    ip: str
    endpoint_sequence_number: int
    def __init__(self, port: _Optional[int] = ..., external_port: _Optional[int] = ..., proto: _Optional[str] = ..., service: _Optional[str] = ..., hosts: _Optional[_Iterable[str]] = ..., http_options: _Optional[_Union[ServiceExposeHTTPOptions, _Mapping]] = ..., ip: _Optional[str] = ..., endpoint_sequence_number: _Optional[int] = ..., **kwargs) -> None: ...

class StorageParams(_message.Message):
    __slots__ = ("name", "mount", "read_only")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MOUNT_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    name: str
    mount: str
    read_only: bool
    def __init__(self, name: _Optional[str] = ..., mount: _Optional[str] = ..., read_only: _Optional[bool] = ...) -> None: ...

class ServicePermissions(_message.Message):
    __slots__ = ("read",)
    READ_FIELD_NUMBER: _ClassVar[int]
    read: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, read: _Optional[_Iterable[str]] = ...) -> None: ...

class ServiceParams(_message.Message):
    __slots__ = ("storage", "credentials", "permissions")
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    storage: _containers.RepeatedCompositeFieldContainer[StorageParams]
    credentials: ImageCredentials
    permissions: ServicePermissions
    def __init__(self, storage: _Optional[_Iterable[_Union[StorageParams, _Mapping]]] = ..., credentials: _Optional[_Union[ImageCredentials, _Mapping]] = ..., permissions: _Optional[_Union[ServicePermissions, _Mapping]] = ...) -> None: ...

class ImageCredentials(_message.Message):
    __slots__ = ("host", "email", "username", "password")
    HOST_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    host: str
    email: str
    username: str
    password: str
    def __init__(self, host: _Optional[str] = ..., email: _Optional[str] = ..., username: _Optional[str] = ..., password: _Optional[str] = ...) -> None: ...

class Service(_message.Message):
    __slots__ = ("name", "image", "command", "args", "env", "resources", "count", "expose", "params", "credentials")
    NAME_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    EXPOSE_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    name: str
    image: str
    command: _containers.RepeatedScalarFieldContainer[str]
    args: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.RepeatedScalarFieldContainer[str]
    resources: _resources_pb2.Resources
    count: int
    expose: _containers.RepeatedCompositeFieldContainer[ServiceExpose]
    params: ServiceParams
    credentials: ImageCredentials
    def __init__(self, name: _Optional[str] = ..., image: _Optional[str] = ..., command: _Optional[_Iterable[str]] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Iterable[str]] = ..., resources: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., count: _Optional[int] = ..., expose: _Optional[_Iterable[_Union[ServiceExpose, _Mapping]]] = ..., params: _Optional[_Union[ServiceParams, _Mapping]] = ..., credentials: _Optional[_Union[ImageCredentials, _Mapping]] = ...) -> None: ...

class Group(_message.Message):
    __slots__ = ("name", "services")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    name: str
    services: _containers.RepeatedCompositeFieldContainer[Service]
    def __init__(self, name: _Optional[str] = ..., services: _Optional[_Iterable[_Union[Service, _Mapping]]] = ...) -> None: ...
