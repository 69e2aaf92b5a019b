"""``python -m akoperators.hostname``: the hostname operator (``--help`` lists its settings)."""

from akoperators import without_kubernetes_asyncio

without_kubernetes_asyncio()

from akoperators.hostname.service import SPEC  # noqa: E402 - after the line above
from akservice import main  # noqa: E402

main(SPEC)
