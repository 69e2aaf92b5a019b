"""``python -m akcli`` is the same as ``akash-provider``."""

from akcli.main import app

app(prog_name="akash-provider")
