"""``python -m akbidengine``: run the bid engine (``--help`` lists every setting)."""

from akbidengine.service import SPEC
from akservice import main

main(SPEC)
