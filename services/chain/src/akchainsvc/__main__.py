"""``python -m akchainsvc``: run the chain relay (``--help`` lists every setting)."""

from akchainsvc.service import SPEC
from akservice import main

main(SPEC)
