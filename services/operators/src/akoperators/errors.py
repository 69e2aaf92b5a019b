"""Errors of the operators, as their callers see them.

    KubeError   Kubernetes could not be reached or refused a request: ``status`` is the
                HTTP status (0 when nothing answered)

A pure rule's own refusal stays beside the rule in ``domain/`` (``InvalidHost``,
``InvalidLeasedIP``, ``RegistryError``).
"""

from __future__ import annotations


class KubeError(Exception):
    """A request the API server refused or could not answer (``status`` 0: no answer)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status or 'no answer'}: {message}" if status else message)
        self.status = status
        self.message = message
