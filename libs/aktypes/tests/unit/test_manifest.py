from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

from aktypes.errors import ManifestCrossValidationError, ManifestError
from aktypes.groupspec import GroupSpec
from aktypes.manifest import (
    HTTPOptions,
    Manifest,
    check_against_groups,
    cross_validation_problems,
    manifest_problems,
    validate_manifest,
)
from aktypes.manifest.nginx import NGINX, SAFE_VALUE, ingress_annotations, safe_annotations


def expose(
    port: int,
    *,
    external: int = 0,
    proto: str = "TCP",
    glob: bool = True,
    hosts: list[str] | None = None,
    ip: str = "",
    seq: int = 0,
) -> dict[str, Any]:
    return {
        "port": port, "externalPort": external, "proto": proto, "service": "", "global": glob,
        "hosts": hosts, "httpOptions": {"maxBodySize": 1048576, "readTimeout": 60000,
        "sendTimeout": 60000, "nextTries": 3, "nextTimeout": 0, "nextCases": ["error", "timeout"]},
        "ip": ip, "endpointSequenceNumber": seq,
    }  # fmt: skip


def resources(uid: int, endpoints: list[dict[str, int]]) -> dict[str, Any]:
    return {
        "id": uid,
        "cpu": {"units": {"val": "500"}},
        "memory": {"size": {"val": "536870912"}},
        "storage": [{"name": "default", "size": {"val": "1073741824"}}],
        "gpu": {"units": {"val": "0"}},
        "endpoints": endpoints,
    }


def manifest_data() -> list[dict[str, Any]]:
    """Two services: web (HTTP ingress + a leased IP port) and db (internal only)."""
    return [
        {
            "name": "dcloud",
            "services": [
                {
                    "name": "db", "image": "postgres:16", "command": None, "args": None,
                    "env": ["POSTGRES_PASSWORD=x"], "resources": resources(2, []), "count": 1,
                    "expose": [expose(5432, glob=False)], "credentials": None,
                },
                {
                    "name": "web", "image": "nginx", "command": ["nginx"], "args": [],
                    "env": None,
                    "resources": resources(1, [{"sequence_number": 0}, {"kind": 2, "sequence_number": 1},
                                               {"kind": 1, "sequence_number": 0}]),
                    "count": 2,
                    "expose": [expose(80, hosts=["example.com"]),
                               expose(443, ip="myip", seq=1)],
                    "credentials": None,
                },
            ],
        }
    ]  # fmt: skip


def groups_data() -> list[dict[str, Any]]:
    data = manifest_data()[0]["services"]
    unit = {"price": {"denom": "uakt", "amount": "100.000000000000000000"}}
    return [
        {
            "name": "dcloud",
            "requirements": {"signed_by": {"all_of": None, "any_of": None}, "attributes": None},
            "resources": [
                {"resource": data[1]["resources"], "count": 2, **unit},
                {"resource": data[0]["resources"], "count": 1, **unit},
            ],
        }
    ]


def parse(data: Any) -> Manifest:
    return Manifest.from_json(json.dumps(data))


def groups(data: Any) -> list[GroupSpec]:
    return [GroupSpec.model_validate_json(json.dumps(g)) for g in data]


def test_json_round_trip_keeps_nulls_and_omissions() -> None:
    data = manifest_data()
    manifest = parse(data)
    assert manifest.go_json() == data
    web = manifest.go_json()[0]["services"][1]
    assert web["args"] == [] and web["env"] is None  # Go's empty vs nil survive
    assert "kind" not in web["resources"]["endpoints"][0]  # SHARED_HTTP (0) is omitted
    assert "params" not in web and "proxyBufferSize" not in web["expose"][0]["httpOptions"]


def test_version_is_sha256_of_sorted_compact_json() -> None:
    manifest = parse(manifest_data())
    text = json.dumps(manifest_data(), sort_keys=True, separators=(",", ":"))
    assert manifest.canonical_json() == text.encode()
    assert manifest.version() == hashlib.sha256(text.encode()).digest()
    assert manifest.version_hex() == hashlib.sha256(text.encode()).hexdigest()


def test_canonical_json_escapes_like_go() -> None:
    data = manifest_data()
    data[0]["services"][1]["env"] = ["A=<b>&c", "B=é\u2028"]
    canonical = parse(data).canonical_json().decode()
    assert '"A=\\u003cb\\u003e\\u0026c"' in canonical
    assert '"B=é\\u2028"' in canonical


def test_unknown_fields_are_ignored_like_akash() -> None:
    data = manifest_data()
    data[0]["services"][0]["future_field"] = {"x": 1}
    assert parse(data).version() == parse(manifest_data()).version()


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d[0]["services"][0].__setitem__("count", "1"), "[0].services[0].count"),
        (lambda d: d[0]["services"][0]["expose"][0].__setitem__("port", -1), "port"),
        (lambda d: d[0]["services"][0].__setitem__("command", "ls"), "command"),
        (lambda d: d[0]["services"][0]["resources"]["cpu"]["units"].__setitem__("val", 5), "val"),
    ],
)
def test_bad_json_names_the_field(mutate: Any, fragment: str) -> None:
    data = manifest_data()
    mutate(data)
    with pytest.raises(ManifestError) as info:
        parse(data)
    assert any(fragment in p for p in info.value.problems), info.value.problems


def test_not_json_is_a_clear_error() -> None:
    with pytest.raises(ManifestError, match="JSON"):
        Manifest.from_json(b"{not json")


def test_valid_manifest_passes_validation() -> None:
    manifest = parse(manifest_data())
    assert manifest_problems(manifest) == []
    validate_manifest(manifest)
    check_against_groups(manifest, groups(groups_data()))


def _set(path: list[Any], value: Any) -> Any:
    def mutate(data: Any) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


WEB = [0, "services", 1]
DB = [0, "services", 0]


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (_set([*WEB, "name"], "Web"), "service name 'Web' is invalid"),
        (_set([*WEB, "image"], ""), "image is empty"),
        (_set([*WEB, "env"], ["1BAD=x"]), "invalid environment variable name '1BAD'"),
        (_set([*WEB, "expose", 0, "port"], 0), "port 0 must be in 1..65535"),
        (_set([*WEB, "expose", 0, "proto"], "SCTP"), "protocol 'SCTP' unknown"),
        (_set([*WEB, "expose", 0, "hosts"], ["Bad_Host"]), "invalid hostname 'Bad_Host'"),
        (
            _set([*WEB, "expose", 1, "hosts"], ["example.com"]),
            "hostname 'example.com' is duplicated",
        ),
        (_set([*WEB, "expose"], [expose(443), expose(80)]), "expose is not sorted"),
        (_set([0, "services"], [{"name": "web"}, {"name": "db"}]), "not sorted by name"),
        (_set([*WEB, "resources", "cpu"], None), "CPU must not be null"),
        (_set([*WEB, "resources", "id"], 0), "resources ID must be > 0"),
        (_set([0, "services"], []), "contains no services"),
        (lambda d: d.append(copy.deepcopy(d[0])), "duplicate group 'dcloud'"),
        (_set([*DB, "name"], "web"), "service name 'web' is duplicated"),
        # values Kubernetes or ingress-nginx would refuse or interpret
        (_set([*WEB, "name"], "web\n"), "service name 'web\\n' is invalid"),
        (_set([*WEB, "name"], "w" * 61), "at most 60 characters"),
        (_set([*WEB, "image"], "nginx latest"), "blanks or control characters"),
        (_set([*WEB, "image"], "nginx\n"), "blanks or control characters"),
        (_set([*WEB, "env"], ["A\n=x"]), "invalid environment variable name"),
        (_set([*WEB, "count"], 51), "count 51 is above 50"),
        (_set([*WEB, "expose", 0, "externalPort"], 70000), "external port 70000 must be in"),
        (_set([*WEB, "expose", 0, "hosts"], ["example.org\n"]), "invalid hostname"),
        (_set([*WEB, "expose", 0, "hosts"], ["10.0.0.1"]), "invalid hostname '10.0.0.1'"),
        (_set([*WEB, "expose", 1, "ip"], "My IP"), "IP endpoint name 'My IP' is invalid"),
        (
            _set([*WEB, "expose", 0, "httpOptions", "nextCases"], ["timeout;}\n location /x {"]),
            "unknown next case 'timeout;}",
        ),
        (
            _set([*WEB, "expose", 0, "httpOptions", "nextCases"], ["off", "error"]),
            "'off' cannot be combined",
        ),
        (
            _set([*WEB, "expose", 0, "httpOptions", "readTimeout"], 60001),
            "readTimeout 60001 is above the maximum 60000",
        ),
        (
            _set([*WEB, "params"], {"storage": [{"name": "Data", "mount": "/d"}]}),
            "volume 'Data' cannot name a Kubernetes volume",
        ),
        (
            _set([*WEB, "params"], {"storage": [{"name": "data", "mount": "/d/../etc"}]}),
            "must be an absolute path",
        ),
    ],
)
def test_validation_rules(mutate: Any, fragment: str) -> None:
    data = manifest_data()
    mutate(data)
    problems = manifest_problems(parse(data))
    assert any(fragment in p for p in problems), problems
    with pytest.raises(ManifestError):
        validate_manifest(parse(data))


def test_at_least_one_global_expose() -> None:
    data = manifest_data()
    for service in data[0]["services"]:
        for item in service["expose"]:
            item["global"] = False
    assert "zero global services" in manifest_problems(parse(data))
    assert manifest_problems(Manifest([])) == ["manifest is empty"]


@pytest.mark.parametrize(
    ("mutate_groups", "fragment"),
    [
        (_set([0, "resources", 0, "count"], 1), "over-utilized replicas (2) > group spec resources count (1)"),
        (_set([0, "resources", 0, "count"], 3), "under-utilized (1) resources"),
        (_set([0, "resources", 0, "resource", "cpu", "units", "val"], "1000"), "CPU resources mismatch"),
        (_set([0, "resources", 0, "resource", "memory", "size", "val"], "1"), "Memory resources mismatch"),
        (_set([0, "resources", 0, "resource", "storage"], []), "Storage resources mismatch"),
        (_set([0, "resources", 0, "resource", "id"], 9), "no resource unit with ID 1"),
        (_set([0, "resources", 0, "resource", "endpoints"], [{"kind": 2, "sequence_number": 1}]),
         "over-utilized HTTP endpoints"),
        (_set([0, "resources", 0, "resource", "endpoints"],
              [{"sequence_number": 0}, {"sequence_number": 0}, {"kind": 1, "sequence_number": 0},
               {"kind": 2, "sequence_number": 1}]),
         "under-utilized (1) HTTP endpoints"),
        (_set([0, "name"], "other"), "unknown deployment group 'dcloud'"),
        (lambda g: g.append(copy.deepcopy(g[0])), "group count mismatch (1 != 2)"),
    ],
)  # fmt: skip
def test_cross_validation(mutate_groups: Any, fragment: str) -> None:
    data = groups_data()
    mutate_groups(data)
    manifest = parse(manifest_data())
    problems = cross_validation_problems(manifest, groups(data))
    assert any(fragment in p for p in problems), problems
    with pytest.raises(ManifestCrossValidationError):
        check_against_groups(manifest, groups(data))


def test_invalid_manifest_is_not_reported_as_a_cross_validation_error() -> None:
    data = manifest_data()
    data[0]["services"][1]["image"] = ""
    with pytest.raises(ManifestError) as info:
        check_against_groups(parse(data), groups(groups_data()))
    assert not isinstance(info.value, ManifestCrossValidationError)


def test_nginx_spellings_of_next_cases_are_accepted() -> None:
    data = manifest_data()
    cases = ["error", "timeout", "invalid_header", "http_502", "429"]
    data[0]["services"][1]["expose"][0]["httpOptions"]["nextCases"] = cases
    assert manifest_problems(parse(data)) == []


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"[" * 5000 + b"]" * 5000, "JSON nested far too deep"),
        (b"[" * 40 + b"]" * 40, "JSON nested 40 deep; at most 32"),
        (b'[{"name": "g", "services": [{"count": ' + b"9" * 4400 + b"}]}]", "4400 digits"),
        (b'[{"name": "\xff"}]', "not UTF-8"),
        (b'[{"name": }]', "invalid JSON at line 1, column 11"),
    ],
)
def test_hostile_json_is_refused_with_a_message(body: bytes, fragment: str) -> None:
    with pytest.raises(ManifestError) as info:
        Manifest.from_json(body)
    assert fragment in str(info.value)


def test_bounded_json_keeps_brackets_inside_strings_out_of_the_depth() -> None:
    data = manifest_data()
    data[0]["services"][1]["env"] = ["A=" + "[" * 1000]
    assert parse(data).group("dcloud") is not None


def test_ingress_annotations_never_carry_configuration_syntax() -> None:
    hostile = HTTPOptions(
        max_body_size=1024,
        next_cases=["timeout;}\n location /x {", "error", "502", "off\n"],
    )
    annotations = ingress_annotations(hostile)
    assert annotations[f"{NGINX}/proxy-next-upstream"] == "error http_502"
    assert all(SAFE_VALUE.fullmatch(value) for value in annotations.values())
    assert f"{NGINX}/proxy-next-upstream" not in ingress_annotations(
        HTTPOptions(max_body_size=1024, next_cases=["bogus;"])
    )
    assert safe_annotations({"a": "1", "b": "x;y", "c": 'x"', "d": "a\nb", "e": "{"}) == {"a": "1"}
