# Sourced by the scripts: puts uv on PATH (installing it into .cache/uv from PyPI when the
# machine has none) and makes it use the machine's own Python.
if ! command -v uv >/dev/null 2>&1; then
  if [ ! -x .cache/uv/bin/uv ]; then
    echo "==> installing uv into .cache/uv" >&2
    python3 -m venv .cache/uv
    .cache/uv/bin/python -m pip install --quiet --disable-pip-version-check uv
  fi
  export PATH="$PWD/.cache/uv/bin:$PATH"
fi
export UV_PYTHON_DOWNLOADS=never
# Trust the machine's certificate store (and SSL_CERT_FILE) rather than uv's bundled roots,
# so a registry behind a local TLS proxy works; older uv releases read UV_NATIVE_TLS.
export UV_SYSTEM_CERTS=1 UV_NATIVE_TLS=1
