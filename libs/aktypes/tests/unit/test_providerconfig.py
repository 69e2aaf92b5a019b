"""provider.yaml as Go's provider-services reads it, checked as the chain checks it; the
difference from the chain's record; the capabilities merge."""

from __future__ import annotations

import pytest

from aktypes.attributes import Attribute
from aktypes.providerconfig import (
    Change,
    ProviderConfig,
    ProviderConfigError,
    changes,
    parse_provider_config,
)

SAMPLE = """\
host: https://provider.example.com:8443
jwt-host: https://provider.example.com:8444   # not part of the record: ignored
info:
  email: ops@example.com
  website: https://example.com
attributes:
  - key: region
    value: us-west
  - key: location
    value:
  - key: tier
    value: 5
  - key: capabilities/storage/1/persistent
    value: true
capabilities:      # Akash's sample file carries this too; Go ignores it
  storage:
    - class: beta3
"""


def attrs(**pairs: str) -> list[Attribute]:
    return [Attribute(key=k.replace("_", "/"), value=v) for k, v in pairs.items()]


def test_the_go_format_is_read_with_scalars_as_their_source_text() -> None:
    config = parse_provider_config(SAMPLE)
    assert config.host == "https://provider.example.com:8443"
    assert (config.email, config.website) == ("ops@example.com", "https://example.com")
    assert [(a.key, a.value) for a in config.attributes] == [
        ("region", "us-west"),
        ("location", ""),
        ("tier", "5"),
        ("capabilities/storage/1/persistent", "true"),
    ]


def test_info_and_attributes_are_optional() -> None:
    config = parse_provider_config("host: https://p.example.com\n")
    assert config == ProviderConfig(host="https://p.example.com")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("host: [\n", "not valid YAML"),
        ("attributes: []\n", "host URI is missing"),
        ("- a\n- b\n", "must be a mapping"),
        ("host: http://p.example.com\n", "scheme of host 'http://p.example.com' must be https"),
        ("host: p.example.com:8443\n", "must be https"),
        ("host: /just/a/path\n", "absolute URI"),
        ("host: https://p.example.com:8443/api\n", "must have no path"),
        ("host: https://p.example.com/\n", "must have no path"),
        ("host: https://p.example.com:99999\n", "is not a URI"),
        ("host: https://\n", "names no host"),
        ("host: https://p.example.com\nattributes: region\n", "attributes: must be a list"),
        ("host: https://p.example.com\nattributes:\n  - key: a\n    value: [1]\n", "single value"),
        (
            "host: https://p.example.com\nattributes:\n  - {key: r, value: a}\n  - {key: r, value: b}\n",
            "duplicated attribute: r",
        ),
        ("host: https://p.example.com\nattributes:\n  - {key: 9lives, value: a}\n", "9lives"),
        ("host: https://p.example.com\nattributes:\n  - {key: gpu/*, value: a}\n", "gpu/*"),
        ("host: https://p.example.com\nhost: https://q.example.com\n", "defined twice"),
    ],
)
def test_what_go_or_the_chain_refuses_is_one_message(text: str, message: str) -> None:
    with pytest.raises(ProviderConfigError, match="^p.yaml: .*" + message.replace("[", r"\[")):
        parse_provider_config(text, "p.yaml")


def test_changes_name_the_host_each_attribute_and_the_info() -> None:
    chain = ProviderConfig(
        host="https://old.example.com", attributes=attrs(region="eu", tier="3", gone="x")
    )
    wanted = ProviderConfig(
        host="https://new.example.com",
        attributes=attrs(tier="5", region="eu", new="y"),
        email="ops@example.com",
    )
    found = changes(chain, wanted)
    assert [str(c) for c in found] == [
        "host: 'https://old.example.com' -> 'https://new.example.com'",
        "info.email: '' -> 'ops@example.com'",
        "attribute gone: removed (was 'x')",
        "attribute new: added 'y'",
        "attribute tier: '3' -> '5'",
    ]
    assert changes(wanted, wanted.model_copy(update={"attributes": wanted.attributes[::-1]})) == []
    created = changes(None, ProviderConfig(host="https://p.example.com", attributes=attrs(a="1")))
    assert created == [
        Change("host", "", None, "https://p.example.com"),
        Change("attribute", "a", None, "1"),
    ]
