"""Connection and delivery settings (pydantic-settings; ``REDIS_*`` and ``AKBUS_*``).

An empty ``REDIS_URL`` means the embedded server (:func:`akbus.embedded.shared_server`),
never whatever happens to listen on localhost:6379.
``REDIS_URL`` accepts ``redis://`` and ``rediss://`` (TLS) with host, port, password and
database, ``unix:///path/to/redis.sock``, and Sentinel as
``redis+sentinel://[:password@]host:26379[,host:26379…]/service-name[/db]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

SCHEMES = ("redis", "rediss", "unix", "redis+sentinel", "sentinel")


def redact(url: str) -> str:
    """``url`` with any password replaced, safe to log."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


@dataclass(frozen=True)
class SentinelTarget:
    hosts: list[tuple[str, int]]
    service: str
    db: int
    password: str | None


def parse_sentinel(url: str) -> SentinelTarget:
    """Split a ``redis+sentinel://`` URL into sentinel hosts, service name and database."""
    rest = url.split("://", 1)[1]
    auth, _, location = rest.rpartition("@")
    password = unquote(auth.split(":", 1)[1]) if ":" in auth else (unquote(auth) or None)
    hosts_part, _, path = location.partition("/")
    hosts = []
    for host in hosts_part.split(","):
        name, _, port = host.partition(":")
        if not name:
            raise ValueError(f"sentinel URL {redact(url)!r} has an empty host")
        hosts.append((name, int(port or 26379)))
    segments = [s for s in path.split("/") if s]
    if not segments:
        raise ValueError(f"sentinel URL {redact(url)!r} names no service (…/service-name)")
    db = int(segments[1]) if len(segments) > 1 else 0
    return SentinelTarget(hosts=hosts, service=segments[0], db=db, password=password)


class RedisSettings(BaseSettings):
    """Where Redis is and how to talk to it."""

    model_config = SettingsConfigDict(
        env_prefix="REDIS_", extra="ignore", hide_input_in_errors=True
    )

    url: str = Field(
        default="",
        description="where Redis is; empty: the embedded server in REDIS_EMBEDDED_DIR",
    )
    embedded_dir: Path = Field(
        default=Path(".akash-provider/redis"),
        description="data folder of the embedded server used when REDIS_URL is empty",
    )
    password: SecretStr | None = Field(default=None, description="password (kept out of URLs)")
    socket_timeout_s: float = Field(default=5.0, gt=0, description="timeout of one command")
    connect_timeout_s: float = Field(default=5.0, gt=0, description="timeout of a connection")
    max_connections: int = Field(
        default=64, ge=4, description="connections per process; more callers wait their turn"
    )

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, url: str) -> str:
        if not url:
            return url
        scheme = url.split("://", 1)[0] if "://" in url else ""
        if scheme not in SCHEMES:
            raise ValueError(
                f"REDIS_URL {redact(url)!r} must start with one of "
                + ", ".join(f"{s}://" for s in SCHEMES)
            )
        if scheme in ("redis+sentinel", "sentinel"):
            parse_sentinel(url)
        return url

    @property
    def is_sentinel(self) -> bool:
        return self.url.startswith(("redis+sentinel://", "sentinel://"))

    @property
    def where(self) -> str:
        """The URL without its password, or where the embedded server lives: for messages."""
        return redact(self.url) if self.url else f"the embedded server in {self.embedded_dir}"


class BusSettings(BaseSettings):
    """How the bus delivers, retries, dead-letters and keeps entries."""

    model_config = SettingsConfigDict(env_prefix="AKBUS_", extra="ignore")

    batch: int = Field(default=100, ge=1, description="entries read per XREADGROUP")
    block_ms: int = Field(default=2000, ge=1, description="how long a read waits for entries")
    concurrency: int = Field(default=32, ge=1, description="handlers running at once")
    max_deliveries: int = Field(default=5, ge=1, description="deliveries before dead-lettering")
    retry_initial_s: float = Field(default=0.2, gt=0)
    retry_max_s: float = Field(default=30.0, gt=0)
    claim_interval_s: float = Field(
        default=5.0, gt=0, description="how often to look for stuck entries"
    )
    claim_idle_s: float = Field(
        default=30.0, gt=0, description="idle time after which a consumer is dead"
    )
    consumer_idle_delete_s: float = Field(
        default=3600.0,
        gt=0,
        description="delete consumers of the group idle this long that hold no pending entries",
    )
    ack_interval_s: float = Field(
        default=0.005, gt=0, description="how long acks may wait to be batched"
    )
    drain_timeout_s: float = Field(
        default=10.0, ge=0, description="how long shutdown waits for handlers"
    )
    dedupe_ttl_s: int = Field(
        default=7 * 24 * 3600, ge=60, description="how long 'applied' marks live"
    )
    reply_ttl_s: int = Field(
        default=600, ge=1, description="how long replies and reply streams live"
    )
    status_maxlen: int = Field(default=10, ge=1, description="entries kept on a status stream")
    retention_s: float = Field(
        default=24 * 3600, ge=0, description="keep consumed entries this long"
    )
    retention_interval_s: float = Field(default=60.0, gt=0)
    stats_interval_s: float = Field(
        default=15.0, gt=0, description="how often pending/lag are sampled"
    )
    wait_replicas: int = Field(
        default=1,
        ge=0,
        description="replicas a durable commit waits for (WAIT; at most those connected; "
        "0: never wait)",
    )
    wait_timeout_ms: int = Field(
        default=1000, ge=1, description="how long a durable commit waits for its replicas"
    )
