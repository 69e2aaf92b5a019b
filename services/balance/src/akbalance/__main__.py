"""``python -m akbalance``: run the balance service (``--help`` lists every setting)."""

from akbalance.service import SPEC
from akservice import main

main(SPEC)
