# One image for every service; the command picks the service (python -m akbidengine, …).
# Built from uv.lock: `DOCKER_BUILDKIT=1 docker build -t akash-provider:0.1.0 .`
# BASE may be any Debian bookworm image; without Python in it, Python comes from apt
# (scripts/compose-smoke builds on a local Debian base that way). Behind a TLS-inspecting
# proxy, pass its CA bundle: --secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt
ARG BASE=python:3.11-slim-bookworm

FROM ${BASE} AS python
RUN if ! command -v python3 >/dev/null; then \
      apt-get update -qq && \
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        python3 python3-venv ca-certificates && \
      rm -rf /var/lib/apt/lists/*; \
    fi

FROM python AS build
RUN --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then export PIP_CERT=/run/secrets/ca_bundle; fi; \
    python3 -m venv /opt/uv && /opt/uv/bin/pip install --no-cache-dir --quiet "uv==0.13.9"
WORKDIR /src
COPY pyproject.toml uv.lock README.md ./
COPY libs libs
COPY services services
COPY simulators simulators
COPY cli cli
ENV UV_PYTHON_DOWNLOADS=never UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1 \
    UV_PROJECT_ENVIRONMENT=/opt/venv
RUN --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then export SSL_CERT_FILE=/run/secrets/ca_bundle; fi; \
    /opt/uv/bin/uv sync --frozen --no-dev --all-packages --no-editable

FROM python AS runtime
# bubblewrap and a static busybox: kubesim runs a pod's exec in a sandbox made of them;
# bash, curl, jq, bc, mawk and ca-certificates: what price scripts need (Akash's Helm
# price_script_generic.sh, services/bidengine/examples/price_script.sh)
RUN apt-get update -qq && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      bubblewrap busybox-static bash curl jq bc mawk ca-certificates && \
    rm -rf /var/lib/apt/lists/*
RUN useradd --uid 10001 --user-group --create-home --home-dir /home/akash akash \
    && mkdir -p /data && chown akash:akash /data
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /home/akash
CMD ["akash-provider", "--help"]

# Redis with AOF, for the compose stack where no registry image is at hand
FROM python AS redis
RUN apt-get update -qq && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server && \
    rm -rf /var/lib/apt/lists/* && mkdir -p /data && chown redis:redis /data
USER redis
CMD ["redis-server", "--appendonly", "yes", "--dir", "/data", "--bind", "0.0.0.0", "--protected-mode", "no"]

FROM runtime
