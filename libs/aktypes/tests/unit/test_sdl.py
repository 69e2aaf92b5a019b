from __future__ import annotations

import textwrap

import pytest

from aktypes.errors import SDLError
from aktypes.manifest import check_against_groups
from aktypes.resources import EndpointKind
from aktypes.sdl import SDL, Diagnostic, Severity, parse_sdl, sdl_version

BASE = """\
version: "{version}"
services:
  web:
    image: nginx:1.27
    expose:
      - port: 80
        as: 80
        to:
          - global: true
  db:
    image: postgres:16
    env:
      - POSTGRES_PASSWORD=secret
    expose:
      - port: 5432
        to:
          - service: web
profiles:
  compute:
    small:
      resources:
        cpu:
          units: 0.5
        memory:
          size: 512Mi
        storage:
          size: 1Gi
  placement:
    dcloud:
      attributes:
        region: us-west
        host: akash
      signedBy:
        anyOf:
          - akash1365yvmc4s7awdyj3n2sav7xfx76adc6dnmlx63
      pricing:
        small:
          denom: uakt
          amount: 1000
deployment:
  web:
    dcloud:
      profile: small
      count: 2
  db:
    dcloud:
      profile: small
      count: 1
"""


def sdl(text: str, **kwargs: bool) -> SDL:
    return parse_sdl(textwrap.dedent(text), **kwargs)


def errors_of(text: str, *, strict: bool = False) -> list[Diagnostic]:
    with pytest.raises(SDLError) as info:
        parse_sdl(textwrap.dedent(text), strict=strict)
    return [d for d in info.value.diagnostics if d.is_error]


def has_error(diagnostics: list[Diagnostic], path: str, fragment: str) -> bool:
    return any(d.path == path and fragment in d.message for d in diagnostics)


def test_v20_builds_one_unit_per_service() -> None:
    result = sdl(BASE.format(version="2.0"))
    assert result.version == "2.0"
    (group,) = result.groups
    assert group.name == "dcloud"
    assert [a.key for a in group.requirements.attributes or ()] == ["host", "region"]
    assert group.requirements.signed_by.any_of == ["akash1365yvmc4s7awdyj3n2sav7xfx76adc6dnmlx63"]
    # services are built in name order: db gets unit 1, web unit 2
    assert [(u.resource.id, u.count) for u in group.resources] == [(1, 1), (2, 2)]
    assert str(group.price().amount.normalized()) == "3000"
    web_unit = group.resources[1].resource
    assert web_unit.cpu_millis == 500 and web_unit.memory_bytes == 512 * 2**20
    assert [ep.kind for ep in web_unit.endpoints or ()] == [EndpointKind.SHARED_HTTP]
    services = result.manifest.groups[0].services or []
    assert [s.name for s in services] == ["db", "web"]
    assert services[0].resources.id == 1 and services[1].resources.id == 2
    check_against_groups(result.manifest, result.groups)


def test_v21_shares_a_unit_between_services_of_the_same_profile() -> None:
    result = sdl(BASE.format(version="2.1"))
    (group,) = result.groups
    (unit,) = group.resources
    assert unit.count == 3
    assert [ep.kind for ep in unit.resource.endpoints or ()] == [EndpointKind.SHARED_HTTP]
    assert {s.resources.id for s in result.manifest.groups[0].services or ()} == {1}
    check_against_groups(result.manifest, result.groups)


def test_manifest_defaults_match_akash() -> None:
    result = sdl(BASE.format(version="2.0"))
    data = result.manifest.go_json()[0]["services"]
    web = data[1]
    assert web["command"] is None and web["args"] is None and web["env"] is None
    assert web["credentials"] is None and "params" not in web
    (expose,) = web["expose"]
    assert expose["proto"] == "TCP" and expose["externalPort"] == 80 and expose["global"]
    assert expose["httpOptions"] == {
        "maxBodySize": 1048576, "readTimeout": 60000, "sendTimeout": 60000,
        "nextTries": 3, "nextTimeout": 0, "nextCases": ["error", "timeout"],
    }  # fmt: skip
    assert data[0]["expose"][0]["service"] == "web" and not data[0]["expose"][0]["global"]
    assert web["resources"]["gpu"] == {"units": {"val": "0"}}


IP_SDL = """\
version: "2.0"
services:
  web:
    image: nginx
    expose:
      - port: 80
        to:
          - global: true
            ip: myep
      - port: 8080
        as: 8080
        proto: udp
        to:
          - global: true
          - service: api
  api:
    image: api
    expose:
      - port: 9000
        to:
          - service: web
profiles:
  compute:
    p:
      resources: {cpu: {units: 1}, memory: {size: 1Gi}, storage: [{size: 1Gi}]}
  placement:
    g:
      pricing: {p: {denom: uakt, amount: 10}}
deployment:
  web: {g: {profile: p, count: 1}}
  api: {g: {profile: p, count: 1}}
endpoints:
  myep:
    kind: ip
"""


def test_endpoint_sequence_numbers_follow_akash_including_local_targets() -> None:
    result = sdl(IP_SDL)
    services = {s.name: s for s in result.manifest.groups[0].services or ()}
    ip_expose = next(e for e in services["web"].expose or () if e.ip)
    # Akash numbers every non-plain-global target's IP name, empty ones included:
    # ["", "", "myep"] → myep gets 3.
    assert ip_expose.endpoint_sequence_number == 3
    kinds = [(ep.kind, ep.sequence_number) for ep in services["web"].resources.endpoints or ()]
    assert (EndpointKind.LEASED_IP, 3) in kinds
    assert (EndpointKind.RANDOM_PORT, 0) in kinds  # the UDP port
    exposes = services["web"].expose or []
    assert [(e.service, e.port, e.global_) for e in exposes] == [
        ("", 80, True),
        ("", 8080, True),
        ("api", 8080, False),
    ]
    check_against_groups(result.manifest, result.groups)


def test_storage_gpu_params_and_credentials() -> None:
    result = sdl(
        """\
        version: "2.1"
        services:
          app:
            image: registry.example.com/app:1
            credentials:
              host: registry.example.com
              email: " me@example.com "
              username: me
              password: hunter22
            params:
              storage:
                data:
                  mount: /data
                cache:
                  mount: /cache
                  readOnly: false
              permissions:
                read: [logs]
            expose:
              - port: 8080
                as: 80
                accept: [app.example.com]
                http_options: {max_body_size: 2097152, next_cases: ["502", "timeout"]}
                to: [{global: true}]
        profiles:
          compute:
            gpu:
              resources:
                cpu: {units: 4, attributes: {arch: amd64}}
                memory: {size: 16Gi}
                gpu:
                  units: 2
                  attributes:
                    vendor:
                      nvidia:
                        - model: a100
                          ram: 80Gi
                          interface: sxm
                        - model: h100
                storage:
                  - size: 10Gi
                  - name: data
                    size: 100Gi
                    attributes: {persistent: true, class: beta3}
                  - name: cache
                    size: 1Gi
                    attributes: {class: ram}
          placement:
            g:
              pricing: {gpu: {denom: uact, amount: "1.5"}}
        deployment:
          app: {g: {profile: gpu, count: 1}}
        """
    )
    (unit,) = result.groups[0].resources
    res = unit.resource
    assert [a.key for a in res.gpu.attributes or ()] == [  # type: ignore[union-attr]
        "vendor/nvidia/model/a100/ram/80Gi/interface/sxm",
        "vendor/nvidia/model/h100",
    ]
    assert res.cpu is not None and [(a.key, a.value) for a in res.cpu.attributes or ()] == [
        ("arch", "amd64")
    ]
    volumes = [(v.name, v.size.val, v.storage_class) for v in res.storage or ()]
    assert volumes == [
        ("cache", 2**30, "ram"),
        ("default", 10 * 2**30, "ephemeral"),
        ("data", 100 * 2**30, "beta3"),
    ]
    data_volume = (res.storage or [])[2]
    assert [(a.key, a.value) for a in data_volume.attributes or ()] == [
        ("class", "beta3"),
        ("persistent", "true"),
    ]
    (service,) = result.manifest.groups[0].services or []
    assert service.credentials is not None and service.credentials.email == "me@example.com"
    assert service.params is not None
    assert [(p.name, p.mount) for p in service.params.storage or ()] == [
        ("cache", "/cache"),
        ("data", "/data"),
    ]
    assert service.params.permissions is not None and service.params.permissions.read == ["logs"]
    (expose,) = service.expose or []
    assert expose.hosts == ["app.example.com"] and expose.is_ingress
    assert expose.http_options.max_body_size == 2097152
    assert expose.http_options.next_cases == ["502", "timeout"]
    assert str(result.groups[0].price()) == "1.500000000000000000uact"


def test_v20_credentials_drop_email_and_are_not_trimmed() -> None:
    text = BASE.format(version="2.0").replace(
        "    image: nginx:1.27\n",
        "    image: nginx:1.27\n    credentials: {host: h, email: e@x.io, username: ' u', password: p}\n",
    )
    web = (sdl(text).manifest.groups[0].services or [])[1]
    assert web.credentials is not None
    assert (web.credentials.email, web.credentials.username) == ("", " u")


def test_tee_adds_a_requirement() -> None:
    text = BASE.format(version="2.1").replace(
        "    image: nginx:1.27\n", "    image: nginx:1.27\n    params:\n      tee: cpu\n"
    )
    result = sdl(text)
    attrs = [(a.key, a.value) for a in result.groups[0].requirements.attributes or ()]
    assert ("tee/type", "cpu") in attrs
    assert result.manifest.go_json()[0]["services"][1]["params"]["tee"] == {
        "type": "cpu",
        "attestation": True,
    }


# -- the broken SDLs the acceptance list names ------------------------------------------------


def test_unknown_top_level_key_is_an_error() -> None:
    found = errors_of(BASE.format(version="2.0") + "extras: {}\n")
    assert has_error(found, "extras", "unknown key 'extras'")


def test_unknown_nested_key_is_a_warning_and_an_error_when_strict() -> None:
    text = BASE.format(version="2.0").replace(
        "    image: nginx:1.27\n", "    image: nginx:1.27\n    cmd: [sh]\n"
    )
    result = sdl(text)
    (warning,) = [w for w in result.warnings if "cmd" in w.path]
    assert warning.severity is Severity.WARNING and warning.path == "services.web.cmd"
    assert "Akash ignores it" in warning.message and warning.line == 5
    assert has_error(errors_of(text, strict=True), "services.web.cmd", "did you mean 'command'")


def test_persistent_volume_without_mount() -> None:
    text = BASE.format(version="2.1").replace(
        "          size: 1Gi\n",
        "          - size: 1Gi\n          - name: data\n            size: 5Gi\n"
        "            attributes: {persistent: true, class: beta2}\n",
    )
    found = errors_of(text)
    assert has_error(
        found,
        "profiles.compute.small.resources.storage[1]",
        "persistent volume 'data' needs a mount",
    )


def test_ram_class_marked_persistent() -> None:
    text = BASE.format(version="2.0").replace(
        "          size: 1Gi\n",
        "          - size: 1Gi\n          - name: shm\n            size: 1Gi\n"
        "            attributes: {persistent: true, class: ram}\n",
    )
    found = errors_of(text)
    assert has_error(
        found,
        "profiles.compute.small.resources.storage[1].attributes.persistent",
        "'ram' cannot be persistent",
    )


def test_unused_ip_endpoint() -> None:
    found = errors_of(BASE.format(version="2.0") + "endpoints:\n  spare:\n    kind: ip\n")
    assert has_error(found, "endpoints.spare", "declared but never used")


def test_gpu_units_without_attributes() -> None:
    text = BASE.format(version="2.0").replace(
        "        storage:\n          size: 1Gi\n",
        "        storage:\n          size: 1Gi\n        gpu:\n          units: 1\n",
    )
    found = errors_of(text)
    assert has_error(
        found, "profiles.compute.small.resources.gpu.attributes", "required when units > 0"
    )


def test_count_zero() -> None:
    found = errors_of(BASE.format(version="2.0").replace("count: 2", "count: 0"))
    (error,) = found
    assert (
        error.path == "deployment.web.dcloud.count" and "count 0 must be in 1..50" in error.message
    )
    assert error.line is not None and error.line > 1


# -- more rules -------------------------------------------------------------------------------


def test_every_error_of_a_file_is_reported() -> None:
    text = (
        BASE.format(version="2.0")
        .replace("count: 2", "count: 0")
        .replace("units: 0.5", "units: lots")
        .replace("port: 5432", "port: 70000")
        .replace("amount: 1000", "amount: -1")
        + "bogus: true\n"
    )
    paths = {d.path for d in errors_of(text)}
    assert {
        "deployment.web.dcloud.count",
        "profiles.compute.small.resources.cpu.units",
        "services.db.expose[0].port",
        "profiles.placement.dcloud.pricing.small.amount",
        "bogus",
    } <= paths


@pytest.mark.parametrize(
    ("old", "new", "path", "fragment"),
    [
        ("profile: small\n      count: 2", "profile: large\n      count: 2", "deployment.web.dcloud.profile", "no compute profile named 'large'"),
        ("  web:\n    dcloud:", "  web:\n    elsewhere:", "deployment.web.elsewhere", "no placement profile"),
        ("  db:\n    dcloud:\n      profile", "  cache:\n    dcloud:\n      profile", "deployment.cache", "no service named 'cache'"),
        ("image: nginx:1.27", "image: ''", "services.web.image", "image is required"),
        ("image: nginx:1.27", "image: 'nginx 1.27'", "services.web.image", "blanks or control characters"),
        ("as: 80", "as: 70000", "services.web.expose[0].as", "must be in 1..65535"),
        ("as: 80", "as: 80\n        http_options: {next_cases: ['timeout;}']}", "services.web.expose[0].http_options.next_cases[0]", "unknown next case"),
        ("POSTGRES_PASSWORD=secret", "1PASS=x", "services.db.env[0]", "invalid environment variable name"),
        ("units: 0.5", "units: 0.001", "profiles.compute.small.resources.cpu.units", "1 millicpu is outside 10..384000"),
        ("size: 512Mi", "size: 3Ti", "profiles.compute.small.resources.memory.size", "outside 1Mi..2Ti"),
        ("amount: 1000", "amount: 0", "profiles.placement.dcloud.pricing.small.amount", "greater than zero"),
        ("denom: uakt", "denom: x", "profiles.placement.dcloud.pricing.small.denom", "invalid denomination"),
        ("amount: 1000", "amount: 10000001", "profiles.placement.dcloud.pricing.small.amount", "maximum unit price"),
        ("- global: true", "- global: yes please", "services.web.expose[0].to[0].global", "true or false"),
        ("as: 80", "as: 80\n        accept: [Not_A_Host]", "services.web.expose[0].accept[0]", "not a valid hostname"),
        ("as: 80", "as: 80\n        proto: sctp", "services.web.expose[0].proto", "unsupported protocol"),
        ("as: 80", "as: 80\n        http_options: {next_cases: [off, error]}", "services.web.expose[0].http_options.next_cases", "'off' cannot be combined"),
        ("as: 80", "as: 80\n        http_options: {read_timeout: 60001}", "services.web.expose[0].http_options.read_timeout", "exceeds the maximum 60000"),
        ("          - global: true\n", "          - global: false\n", "services", "no service is exposed globally"),
        ("count: 1\n", "count: 1\n      count: 3\n", "deployment.db.dcloud.count", "key defined twice"),
        ("count: 2", "count: '2'", "deployment.web.dcloud.count", "number without quotes, got the text '2'"),
        ("- global: true", "- global: 'true'", "services.web.expose[0].to[0].global", "without quotes"),
    ],
)  # fmt: skip
def test_rules(old: str, new: str, path: str, fragment: str) -> None:
    text = BASE.format(version="2.0")
    assert old in text
    found = errors_of(text.replace(old, new, 1))
    assert has_error(found, path, fragment), [str(d) for d in found]


def test_service_names_fit_kubernetes_object_names() -> None:
    long = "w" * 61  # "<name>-np" would be 64 characters: no Kubernetes Service
    found = errors_of(BASE.format(version="2.0").replace("web", long))
    assert has_error(found, f"services.{long}", "at most 60 characters"), [str(d) for d in found]
    sdl(BASE.format(version="2.0").replace("web", "w" * 60))  # 60 is fine


def test_ip_rules() -> None:
    found = errors_of(
        IP_SDL.replace("          - global: true\n            ip: myep", "          - ip: myep")
    )
    assert has_error(found, "services.web.expose[0].to[0].ip", "needs 'global: true'")
    found = errors_of(IP_SDL.replace("ip: myep", "ip: nope"))
    assert has_error(found, "services.web.expose[0].to[0].ip", "no endpoint named 'nope'")
    found = errors_of(IP_SDL.replace("  myep:\n", "  MyEp:\n").replace("ip: myep", "ip: MyEp"))
    assert has_error(found, "endpoints.MyEp", "is invalid")


def test_yaml_syntax_error_names_the_line() -> None:
    (error,) = errors_of("--\nversion: '2.0'\nservices: {}\n")
    assert error.line == 2 and "not valid YAML" in error.message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("", "empty"), ("- a\n- b\n", "mapping at the top level"), ("services: {}\n", "no version")],
)
def test_documents_that_are_not_sdl(text: str, fragment: str) -> None:
    found = errors_of(text)
    assert any(fragment in d.message for d in found)


def test_unsupported_version() -> None:
    assert has_error(
        errors_of(BASE.format(version="1.0")), "version", "unsupported SDL version '1.0'"
    )


@pytest.mark.parametrize(
    ("text", "version"),
    [("2.0", "2.0"), ("2", "2.0"), ("v2.0", "2.0"), ("2.1", "2.1"), ("2.2", "2.1"), ("2.1.0", "2.1"),
     ("2.0.1", None), ("2.1.0-rc1", None), ("1.9", None), ("two", None)],
)  # fmt: skip
def test_versions_are_read_tolerantly_like_akash(text: str, version: str | None) -> None:
    assert sdl_version(text) == version


def test_anchors_and_merge_keys() -> None:
    text = (
        BASE.format(version="2.0")
        .replace(
            "    small:\n      resources:",
            "    base: &base\n      resources:\n        cpu: {units: 1}\n        memory: {size: 1Gi}\n"
            "        storage: {size: 1Gi}\n    small:\n      resources:",
        )
        .replace("deployment:\n", "x-unused: &price {denom: uakt, amount: 5}\ndeployment:\n")
    )
    found = errors_of(text)  # x-unused is an unknown top-level key
    assert has_error(found, "x-unused", "unknown key")
    merged = BASE.format(version="2.0").replace(
        "      pricing:\n        small:\n          denom: uakt\n          amount: 1000\n",
        "      pricing:\n        small:\n          <<: {denom: uakt, amount: 7}\n          amount: 1000\n",
    )
    assert str(sdl(merged).groups[0].resources[0].price.amount.normalized()) == "1000"


def test_console_only_sizes_and_float_drift_are_warnings() -> None:
    text = (
        BASE.format(version="2.0")
        .replace("size: 512Mi", "size: 1gb")
        .replace("units: 0.5", "units: 2.01")
    )
    result = sdl(text)
    messages = {w.path: w.message for w in result.warnings}
    assert "Akash Console" in messages["profiles.compute.small.resources.memory.size"]
    assert "2009" in messages["profiles.compute.small.resources.cpu.units"]
    assert result.groups[0].resources[0].resource.memory_bytes == 10**9
    errors = errors_of(text, strict=True)
    assert {e.path for e in errors} >= {"profiles.compute.small.resources.memory.size"}


def test_unused_profiles_and_services_are_warnings() -> None:
    text = (
        BASE.format(version="2.0")
        .replace("profiles:\n", "  lonely:\n    image: x\nprofiles:\n")
        .replace("  placement:\n", "    spare:\n      resources: {cpu: {units: 1}}\n  placement:\n")
    )
    paths = {w.path for w in sdl(text).warnings}
    assert {"services.lonely", "profiles.compute.spare"} <= paths


def test_bytes_input_and_bad_encoding() -> None:
    assert parse_sdl(BASE.format(version="2.0").encode()).version == "2.0"
    with pytest.raises(SDLError, match="UTF-8"):
        parse_sdl(b"\xff\xfe")
