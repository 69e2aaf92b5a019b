"""``python -m akoperators.ip``: the IP operator (``--help`` lists its settings)."""

from akoperators.ip.service import SPEC
from akservice import main

main(SPEC)
