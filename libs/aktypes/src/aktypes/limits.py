"""The chain's validation limits for deployment groups (Akash ``deployment/v1beta4``)."""

from __future__ import annotations

from typing import Final

TI: Final = 1024**4
MI: Final = 1024**2

UNIT_MAX_CPU: Final = 384_000  # millicpu per replica
UNIT_MIN_CPU: Final = 10
UNIT_MAX_GPU: Final = 24
UNIT_MAX_MEMORY: Final = 2 * TI
UNIT_MIN_MEMORY: Final = MI
UNIT_MAX_STORAGE: Final = 32 * TI  # per volume
UNIT_MIN_STORAGE: Final = 5 * MI
UNIT_MAX_COUNT: Final = 50  # replicas of a resource unit
UNIT_MIN_COUNT: Final = 1
UNIT_MAX_PRICE: Final = 10_000_000  # per-unit price amount
UNIT_MAX_VOLUMES: Final = 4  # storage volumes per resource unit
GROUP_MAX_UNITS: Final = 20  # resource units per group

GROUP_MAX_CPU: Final = UNIT_MAX_CPU * UNIT_MAX_COUNT
GROUP_MAX_GPU: Final = UNIT_MAX_GPU * UNIT_MAX_COUNT
GROUP_MAX_MEMORY: Final = UNIT_MAX_MEMORY * UNIT_MAX_COUNT
GROUP_MAX_STORAGE: Final = UNIT_MAX_STORAGE * UNIT_MAX_COUNT
