from akchain._pb.akash.base.deposit.v1 import deposit_pb2 as _deposit_pb2
from akchain._pb.akash.escrow.id.v1 import id_pb2 as _id_pb2
from akchain._pb.cosmos.base.v1beta1 import coin_pb2 as _coin_pb2
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
    open: _ClassVar[State]
    closed: _ClassVar[State]
    overdrawn: _ClassVar[State]
invalid: State
open: State
closed: State
overdrawn: State

class Balance(_message.Message):
    __slots__ = ("denom", "amount")
    DENOM_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    denom: str
    amount: str
    def __init__(self, denom: _Optional[str] = ..., amount: _Optional[str] = ...) -> None: ...

class Depositor(_message.Message):
    __slots__ = ("owner", "height", "source", "balance", "direct")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    BALANCE_FIELD_NUMBER: _ClassVar[int]
    DIRECT_FIELD_NUMBER: _ClassVar[int]
    owner: str
    height: int
    source: _deposit_pb2.Source
    balance: _coin_pb2.DecCoin
    direct: bool
    def __init__(self, owner: _Optional[str] = ..., height: _Optional[int] = ..., source: _Optional[_Union[_deposit_pb2.Source, str]] = ..., balance: _Optional[_Union[_coin_pb2.DecCoin, _Mapping]] = ..., direct: _Optional[bool] = ...) -> None: ...

class AccountState(_message.Message):
    __slots__ = ("owner", "state", "transferred", "settled_at", "funds", "deposits")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TRANSFERRED_FIELD_NUMBER: _ClassVar[int]
    SETTLED_AT_FIELD_NUMBER: _ClassVar[int]
    FUNDS_FIELD_NUMBER: _ClassVar[int]
    DEPOSITS_FIELD_NUMBER: _ClassVar[int]
    owner: str
    state: State
    transferred: _containers.RepeatedCompositeFieldContainer[_coin_pb2.DecCoin]
    settled_at: int
    funds: _containers.RepeatedCompositeFieldContainer[Balance]
    deposits: _containers.RepeatedCompositeFieldContainer[Depositor]
    def __init__(self, owner: _Optional[str] = ..., state: _Optional[_Union[State, str]] = ..., transferred: _Optional[_Iterable[_Union[_coin_pb2.DecCoin, _Mapping]]] = ..., settled_at: _Optional[int] = ..., funds: _Optional[_Iterable[_Union[Balance, _Mapping]]] = ..., deposits: _Optional[_Iterable[_Union[Depositor, _Mapping]]] = ...) -> None: ...

class Account(_message.Message):
    __slots__ = ("id", "state")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    id: _id_pb2.Account
    state: AccountState
    def __init__(self, id: _Optional[_Union[_id_pb2.Account, _Mapping]] = ..., state: _Optional[_Union[AccountState, _Mapping]] = ...) -> None: ...

class PaymentState(_message.Message):
    __slots__ = ("owner", "state", "rate", "balance", "unsettled", "withdrawn")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    BALANCE_FIELD_NUMBER: _ClassVar[int]
    UNSETTLED_FIELD_NUMBER: _ClassVar[int]
    WITHDRAWN_FIELD_NUMBER: _ClassVar[int]
    owner: str
    state: State
    rate: _coin_pb2.DecCoin
    balance: _coin_pb2.DecCoin
    unsettled: _coin_pb2.DecCoin
    withdrawn: _coin_pb2.Coin
    def __init__(self, owner: _Optional[str] = ..., state: _Optional[_Union[State, str]] = ..., rate: _Optional[_Union[_coin_pb2.DecCoin, _Mapping]] = ..., balance: _Optional[_Union[_coin_pb2.DecCoin, _Mapping]] = ..., unsettled: _Optional[_Union[_coin_pb2.DecCoin, _Mapping]] = ..., withdrawn: _Optional[_Union[_coin_pb2.Coin, _Mapping]] = ...) -> None: ...

class Payment(_message.Message):
    __slots__ = ("id", "state")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    id: _id_pb2.Payment
    state: PaymentState
    def __init__(self, id: _Optional[_Union[_id_pb2.Payment, _Mapping]] = ..., state: _Optional[_Union[PaymentState, _Mapping]] = ...) -> None: ...
