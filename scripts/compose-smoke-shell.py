"""From the host: a tenant's shell through the gateway cannot reach the provider.

    python scripts/compose-smoke-shell.py GATEWAY_WSS_LEASE_URL TOKEN SERVICE

Runs one command in the lease's first pod (the gateway's `/shell` websocket, the token as
bearer) that tries to read the provider's key, any process's environment, Redis and the
cluster API, and fails unless every attempt was refused inside kubesim's sandbox.
"""

import asyncio
import json
import ssl
import sys
from urllib.parse import urlencode

from websockets.asyncio.client import connect

PROBE = (
    "cat /shared/devnet/keys/provider.json && echo KEY-READ; "
    "ls /shared && echo SHARED-LISTED; "
    "cat /proc/*/environ | grep -a AP_ && echo ENV-READ; "
    "env | grep -a AP_ && echo ENV-READ; "
    "echo PING | nc -w 2 127.0.0.1 6380 && echo REDIS-REACHED; "
    "echo GET | nc -w 2 127.0.0.1 6443 && echo KUBE-REACHED; "
    "echo GET | nc -w 2 kubesim 6443 && echo KUBE-REACHED; "
    "echo probed"
)


async def main(url: str, token: str, service: str) -> None:
    query = urlencode(
        {"service": service, "podIndex": 0, "cmd0": "sh", "cmd1": "-c", "cmd2": PROBE,
         "tty": 0, "stdin": 0}
    )  # fmt: skip
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    out = b""
    result: dict[str, object] = {}
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(f"{url}/shell?{query}", ssl=context, additional_headers=headers) as ws:
        async for frame in ws:
            data = frame if isinstance(frame, bytes) else frame.encode()
            if data[0] in {100, 101}:
                out += data[1:]
            elif data[0] == 102:
                result = json.loads(data[1:])
                break
    text = out.decode(errors="replace")
    leaks = [m for m in ("KEY-READ", "SHARED-LISTED", "ENV-READ", "REDIS-REACHED", "KUBE-REACHED")
             if m in text]  # fmt: skip
    if "probed" not in text or leaks:
        sys.exit(f"the tenant's shell reached the provider: {leaks or text!r} ({result})")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
