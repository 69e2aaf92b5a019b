"""The relay's pure rules: which events concern the provider, what chain errors mean."""
