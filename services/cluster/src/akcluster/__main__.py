"""``python -m akcluster``: run the cluster service (``--help`` lists every setting)."""

from akcluster.service import SPEC
from akservice import main

main(SPEC)
