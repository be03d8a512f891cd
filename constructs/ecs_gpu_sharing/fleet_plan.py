"""``FleetPlan``: plans, at synth, every shared-GPU service of an app on its capacity, together.

One per app, created on first use. It turns the pure checks (``checks.assess``) into synth errors on the
service or capacity concerned, warnings users acknowledge by id, a derived ``max_capacity``, and the plan
files written next to the templates (``gpu-fleet-plan.json`` and ``.md``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import aws_cdk as cdk
import jsii
from constructs import Construct, IConstruct, IValidation

from . import plan_report
from .checks import Assessment, assess
from .planner import CapacityInput, ServiceInput

if TYPE_CHECKING:
    from .capacity import GpuCapacity

PLAN_FILE = "gpu-fleet-plan"
_ID = "EcsGpuSharingFleetPlan"


class FleetPlan(Construct):
    """The app-wide fleet plan. Use :meth:`of`; constructs register themselves."""

    @staticmethod
    def of(scope: IConstruct) -> FleetPlan:
        root = scope.node.root
        existing = root.node.try_find_child(_ID)
        if isinstance(existing, FleetPlan):
            return existing
        return FleetPlan(root, _ID)  # type: ignore[arg-type]

    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        self._capacities: list[GpuCapacity] = []
        # (service, capacity, planner input); the input is read at synth, after every add_container.
        self._services: list[tuple[Construct, GpuCapacity, Callable[[], ServiceInput]]] = []
        self._assessment: Assessment | None = None
        self.node.add_validation(_WritePlan(self))

    def add_capacity(self, capacity: GpuCapacity) -> None:
        self._capacities.append(capacity)
        self._assessment = None
        capacity.node.add_validation(_Findings(self, capacity, "capacity", capacity.node.path))

    def add_service(self, service: Construct, capacity: GpuCapacity, planned: Callable[[], ServiceInput]) -> None:
        self._services.append((service, capacity, planned))
        self._assessment = None
        service.node.add_validation(_Findings(self, service, "service", service.node.path))

    def has_services(self, capacity: GpuCapacity) -> bool:
        return any(cap is capacity for _, cap, _ in self._services)

    @property
    def assessment(self) -> Assessment:
        """The plan of every registered service (computed once, at synth)."""
        if self._assessment is None:
            inputs = [
                CapacityInput.from_facts(
                    c.node.path, c.facts, c.max_capacity if c.max_capacity_given else None, c.min_capacity
                )
                for c in self._capacities
            ]
            self._assessment = assess(inputs, [planned() for _, _, planned in self._services])
        return self._assessment

    def findings_for(self, scope: Construct, kind: str, subject: str) -> list[str]:
        """Errors for ``subject``; its warnings become annotations on ``scope`` (acknowledgeable by id)."""
        errors = []
        for finding in self.assessment.about(kind, subject):
            if finding.error:
                errors.append(finding.message)
            else:
                cdk.Annotations.of(scope).add_warning_v2(
                    finding.rule_id, f"{finding.message} (acknowledge '{finding.rule_id}' if intended)"
                )
        return errors

    def write(self) -> None:
        if not self._services:
            return
        result = self.assessment
        if result.errors:
            return
        app = self.node.root
        outdir = Path(app.outdir) if isinstance(app, cdk.Stage) else None
        if outdir is not None:
            outdir.mkdir(parents=True, exist_ok=True)
            (outdir / f"{PLAN_FILE}.json").write_text(
                json.dumps(plan_report.to_json(result.steady), indent=1) + "\n", encoding="utf-8"
            )
            (outdir / f"{PLAN_FILE}.md").write_text(plan_report.to_markdown(result), encoding="utf-8")
        for line in plan_report.summary_lines(result):
            print(line, file=sys.stderr)


@jsii.implements(IValidation)
class _Findings:
    def __init__(self, plan: FleetPlan, scope: Construct, kind: str, subject: str) -> None:
        self._plan, self._scope, self._kind, self._subject = plan, scope, kind, subject

    def validate(self) -> list[str]:
        return self._plan.findings_for(self._scope, self._kind, self._subject)


@jsii.implements(IValidation)
class _WritePlan:
    def __init__(self, plan: FleetPlan) -> None:
        self._plan = plan

    def validate(self) -> list[str]:
        self._plan.write()
        return []
