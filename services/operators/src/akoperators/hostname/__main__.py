"""``python -m akoperators.hostname``: the hostname operator (``--help`` lists its settings)."""

from akoperators.hostname.service import SPEC
from akservice import main

main(SPEC)
