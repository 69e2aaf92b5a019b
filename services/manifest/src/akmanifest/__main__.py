"""``python -m akmanifest``: run the manifest service (``--help`` lists every setting)."""

from akmanifest.service import SPEC
from akservice import main

main(SPEC)
