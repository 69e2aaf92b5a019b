import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from akchain._pb.akash.base.deposit.v1 import deposit_pb2 as _deposit_pb2
from akchain._pb.akash.base.resources.v1beta4 import resources_pb2 as _resources_pb2
from akchain._pb.akash.market.v1 import market_pb2 as _market_pb2
from akchain._pb.cosmos.base.v1beta1 import coin_pb2 as _coin_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResourceOffer(_message.Message):
    __slots__ = ("resources", "count")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    resources: _resources_pb2.Resources
    count: int
    def __init__(self, resources: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., count: _Optional[int] = ...) -> None: ...

class MsgCreateBid(_message.Message):
    __slots__ = ("id", "price", "deposit", "resources_offer", "reclamation_window")
    ID_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    DEPOSIT_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_OFFER_FIELD_NUMBER: _ClassVar[int]
    RECLAMATION_WINDOW_FIELD_NUMBER: _ClassVar[int]
    id: _market_pb2.BidID
    price: _coin_pb2.DecCoin
    deposit: _deposit_pb2.Deposit
    resources_offer: _containers.RepeatedCompositeFieldContainer[ResourceOffer]
    reclamation_window: _duration_pb2.Duration
    def __init__(self, id: _Optional[_Union[_market_pb2.BidID, _Mapping]] = ..., price: _Optional[_Union[_coin_pb2.DecCoin, _Mapping]] = ..., deposit: _Optional[_Union[_deposit_pb2.Deposit, _Mapping]] = ..., resources_offer: _Optional[_Iterable[_Union[ResourceOffer, _Mapping]]] = ..., reclamation_window: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class MsgCloseBid(_message.Message):
    __slots__ = ("id", "reason")
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: _market_pb2.BidID
    reason: _market_pb2.LeaseClosedReason
    def __init__(self, id: _Optional[_Union[_market_pb2.BidID, _Mapping]] = ..., reason: _Optional[_Union[_market_pb2.LeaseClosedReason, str]] = ...) -> None: ...

class MsgCreateLease(_message.Message):
    __slots__ = ("bid_id",)
    BID_ID_FIELD_NUMBER: _ClassVar[int]
    bid_id: _market_pb2.BidID
    def __init__(self, bid_id: _Optional[_Union[_market_pb2.BidID, _Mapping]] = ...) -> None: ...

class MsgWithdrawLease(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: _market_pb2.LeaseID
    def __init__(self, id: _Optional[_Union[_market_pb2.LeaseID, _Mapping]] = ...) -> None: ...

class MsgCloseLease(_message.Message):
    __slots__ = ("id", "reason")
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: _market_pb2.LeaseID
    reason: _market_pb2.LeaseClosedReason
    def __init__(self, id: _Optional[_Union[_market_pb2.LeaseID, _Mapping]] = ..., reason: _Optional[_Union[_market_pb2.LeaseClosedReason, str]] = ...) -> None: ...
