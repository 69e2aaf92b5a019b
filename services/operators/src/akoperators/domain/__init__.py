"""What the operators decide, as pure functions over Kubernetes JSON: no I/O here."""
