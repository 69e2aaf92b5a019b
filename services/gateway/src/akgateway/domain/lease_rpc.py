"""Messages of ``akash.provider.lease.v1.LeaseRPC`` to and from what the services use.

:func:`lease_of` checks a request's lease: the numbers must be set, the provider must be
this one, and the owner the caller (another tenant's lease is :class:`NotFound`, as on
REST). :func:`manifest_from_pb` reads ``SendManifest``'s groups into the manifest model as
Akash's SDL builder writes it, so the version hash is the one the tenant computed from its
SDL: an empty repeated field is ``null`` except a service's ``expose``, which is ``[]``
(protobuf cannot tell the two apart). :func:`manifest_pb` is its inverse.
:func:`status_response` is ``ServiceStatus``'s answer from the cluster's lease status, one
entry per service in the manifest's order, as Akash builds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from akchain._pb.akash.market.v1 import market_pb2
from akchain.convert import resources_from_pb, resources_pb
from akgateway._pb.akash.manifest.v2beta3 import manifest_pb2 as mpb
from akgateway._pb.akash.provider.lease.v1 import lease_pb2 as lease
from akgateway.errors import BadRequest, NotFound
from aktypes.errors import ManifestError
from aktypes.events import LeaseStatusReport
from aktypes.ids import MAX_UINT32, MAX_UINT64, LeaseID
from aktypes.manifest import Group, Manifest


def lease_of(pb: market_pb2.LeaseID, *, owner: str, provider: str) -> LeaseID:
    """The request's lease, refused unless it is one of ``owner``'s on ``provider``."""
    for name, value, top in (
        ("dseq", pb.dseq, MAX_UINT64),
        ("gseq", pb.gseq, MAX_UINT32),
        ("oseq", pb.oseq, MAX_UINT32),
    ):
        if not 1 <= value <= top:
            raise BadRequest(f"lease_id.{name}: {value} is not a number from 1 to {top}")
    if pb.provider and pb.provider != provider:
        raise NotFound(f"lease_id.provider: {pb.provider} is not this provider ({provider})")
    found = LeaseID(owner=owner, dseq=pb.dseq, gseq=pb.gseq, oseq=pb.oseq, provider=provider)
    if pb.owner and pb.owner != owner:  # another tenant's: the answer of a lease not here
        raise NotFound(f"lease {pb.owner}/{pb.dseq}/{pb.gseq}/{pb.oseq} not found")
    return found


def _list(values: Sequence[Any]) -> list[Any] | None:
    return list(values) or None  # Go decodes an absent repeated field as nil: null in JSON


def _credentials(pb: mpb.ImageCredentials) -> dict[str, str]:
    return {"host": pb.host, "email": pb.email, "username": pb.username, "password": pb.password}


def _expose(pb: mpb.ServiceExpose) -> dict[str, Any]:
    http = pb.http_options
    return {
        "port": pb.port,
        "external_port": pb.external_port,
        "proto": pb.proto,
        "service": pb.service,
        "global_": getattr(pb, "global"),
        "hosts": _list(pb.hosts),
        "http_options": {
            "max_body_size": http.max_body_size,
            "read_timeout": http.read_timeout,
            "send_timeout": http.send_timeout,
            "next_tries": http.next_tries,
            "next_timeout": http.next_timeout,
            "next_cases": _list(http.next_cases),
        },
        "ip": pb.ip,
        "endpoint_sequence_number": pb.endpoint_sequence_number,
    }


def _params(pb: mpb.ServiceParams) -> dict[str, Any]:
    return {
        "storage": _list(
            [{"name": s.name, "mount": s.mount, "read_only": s.read_only} for s in pb.storage]
        ),
        "credentials": _credentials(pb.credentials) if pb.HasField("credentials") else None,
        "permissions": {"read": _list(pb.permissions.read)} if pb.HasField("permissions") else None,
    }


def _service(pb: mpb.Service) -> dict[str, Any]:
    return {
        "name": pb.name,
        "image": pb.image,
        "command": _list(pb.command),
        "args": _list(pb.args),
        "env": _list(pb.env),
        "resources": resources_from_pb(pb.resources),
        "count": pb.count,
        "expose": [_expose(e) for e in pb.expose],  # [] without one, as the SDL makes it
        "params": _params(pb.params) if pb.HasField("params") else None,
        "credentials": _credentials(pb.credentials) if pb.HasField("credentials") else None,
    }


def manifest_from_pb(groups: Sequence[mpb.Group]) -> Manifest:
    """``SendManifest``'s groups as a manifest; :class:`BadRequest` naming what does not fit."""
    if not groups:
        raise BadRequest("manifest: at least one group is required")
    try:
        return Manifest.from_data(
            [{"name": g.name, "services": _list([_service(s) for s in g.services])} for g in groups]
        )
    except (ManifestError, ValueError) as exc:
        problems = exc.problems if isinstance(exc, ManifestError) else [str(exc)]
        raise BadRequest("manifest: " + "; ".join(problems[:10])) from None


def _group_pb(group: Group) -> mpb.Group:
    services = []
    for s in group.services or ():
        service = mpb.Service(
            name=s.name,
            image=s.image,
            command=s.command or (),
            args=s.args or (),
            env=s.env or (),
            resources=resources_pb(s.resources),
            count=s.count,
        )
        for e in s.expose or ():
            h = e.http_options
            service.expose.append(
                mpb.ServiceExpose(
                    port=e.port,
                    external_port=e.external_port,
                    proto=e.proto,
                    service=e.service,
                    hosts=e.hosts or (),
                    http_options=mpb.ServiceExposeHTTPOptions(
                        max_body_size=h.max_body_size,
                        read_timeout=h.read_timeout,
                        send_timeout=h.send_timeout,
                        next_tries=h.next_tries,
                        next_timeout=h.next_timeout,
                        next_cases=h.next_cases or (),
                    ),
                    ip=e.ip,
                    endpoint_sequence_number=e.endpoint_sequence_number,
                    **{"global": e.global_},
                )
            )
        if s.params is not None:
            service.params.SetInParent()
            for st in s.params.storage or ():
                service.params.storage.add(name=st.name, mount=st.mount, read_only=st.read_only)
            if s.params.credentials is not None:
                service.params.credentials.CopyFrom(
                    mpb.ImageCredentials(**s.params.credentials.model_dump())
                )
            if s.params.permissions is not None:
                service.params.permissions.read.extend(s.params.permissions.read or ())
                service.params.permissions.SetInParent()
        if s.credentials is not None:
            service.credentials.CopyFrom(mpb.ImageCredentials(**s.credentials.model_dump()))
        services.append(service)
    return mpb.Group(name=group.name, services=services)


def manifest_pb(manifest: Manifest) -> list[mpb.Group]:
    """The manifest as ``SendManifest`` carries it (the inverse of :func:`manifest_from_pb`)."""
    return [_group_pb(g) for g in manifest.groups]


def status_response(report: LeaseStatusReport) -> lease.ServiceStatusResponse:
    """``ServiceStatus``: each service the cluster reported (in the manifest's order), with
    its forwarded ports and leased IPs."""
    answer = lease.ServiceStatusResponse()
    for name, found in report.services.items():
        answer.services.append(
            lease.ServiceStatus(
                name=name,
                status=lease.LeaseServiceStatus(
                    available=found.available,
                    total=found.total,
                    uris=found.uris or (),
                    observed_generation=found.observed_generation,
                    replicas=found.replicas,
                    updated_replicas=found.updated_replicas,
                    ready_replicas=found.ready_replicas,
                    available_replicas=found.available_replicas,
                ),
                ports=[
                    lease.ForwarderPortStatus(
                        host=p.host,
                        port=p.port,
                        external_port=p.external_port,
                        proto=p.proto,
                        name=p.name,
                    )
                    for p in report.forwarded_ports.get(name, ())
                ],
                ips=[
                    lease.LeaseIPStatus(
                        port=i.port, external_port=i.external_port, protocol=i.protocol, ip=i.ip
                    )
                    for i in report.ips.get(name, ())
                ],
            )
        )
    return answer
