"""``python -m akdevnet``: see :mod:`akdevnet.cli`."""

from akdevnet.cli import app

app(prog_name="akdevnet")
