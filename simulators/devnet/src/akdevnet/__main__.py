"""``python -m akdevnet``: see :mod:`akdevnet.cli`."""

import sys

from akdevnet.cli import main

sys.exit(main())
