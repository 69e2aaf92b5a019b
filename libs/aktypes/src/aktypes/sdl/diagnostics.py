"""Problems found in an SDL file, each with its YAML path, position and reason."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem: ``path`` is the YAML path (``services.web.expose[0].port``)."""

    path: str
    message: str
    severity: Severity = Severity.ERROR
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    @property
    def position(self) -> str:
        if self.line is None:
            return ""
        return f"{self.line}:{self.column}" if self.column is not None else str(self.line)

    def __str__(self) -> str:
        where = f"line {self.position}: " if self.line is not None else ""
        path = self.path or "(document)"
        return f"{where}{path}: {self.message}"
