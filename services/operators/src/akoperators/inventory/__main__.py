"""``python -m akoperators.inventory``: run the inventory operator (``--help`` lists every
setting)."""

from akoperators.inventory.service import SPEC
from akservice import main

main(SPEC)
