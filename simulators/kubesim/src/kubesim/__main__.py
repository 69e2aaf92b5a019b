from kubesim.cli import app

app(prog_name="kubesim")
