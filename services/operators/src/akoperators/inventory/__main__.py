"""``python -m akoperators.inventory``: run the inventory operator (``--help`` lists every
setting)."""

from akoperators import without_kubernetes_asyncio

without_kubernetes_asyncio()

from akoperators.inventory.service import SPEC  # noqa: E402 - after the line above
from akservice import main  # noqa: E402

main(SPEC)
