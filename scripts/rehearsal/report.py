"""What a rehearsal found of each resource, and the emulated account it ran in."""

# This module completes moto (an emulator) at run time: it replaces methods of moto's models and registers models
# of its own, which mypy cannot type against moto's classes.
# mypy: disable-error-code="assignment,method-assign,attr-defined,abstract,arg-type,call-overload,unused-ignore,misc"
from __future__ import annotations

from dataclasses import dataclass, field

ACCOUNT = "123456789012"  # moto's account
REGION = "us-east-1"

CREATED = "created"
ADAPTED = "adapted"
NOT_CHECKED = "not checked"


@dataclass(frozen=True)
class ResourceCheck:
    stack: str
    logical_id: str
    type: str
    status: str  # CREATED, ADAPTED or NOT_CHECKED
    detail: str

    def __str__(self) -> str:
        return f"{self.stack}/{self.logical_id} ({self.type}): {self.status}: {self.detail}"


@dataclass
class Report:
    checks: list[ResourceCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seeded: list[str] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.checks)

    def summary(self) -> str:
        return (
            f"{len(self.checks)} resources: {self.count(CREATED)} created by moto's CloudFormation, "
            f"{self.count(ADAPTED)} adapted through moto's API, {self.count(NOT_CHECKED)} not checked"
        )


# --- seeding what moto's copy of AWS's public data lacks ------------------------------------------------------------
