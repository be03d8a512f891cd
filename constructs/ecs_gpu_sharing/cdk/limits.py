"""``AwsLimitsChecks``: AWS's limits (``core.quotas``) checked over every synthesized template, at ``cdk synth``.

A policy-validation plugin, like cdk-nag's packs: it sees the templates of every stack at once, so it also finds a
security group rule that two stacks declare. Add it once per app::

    cdk.Validations.of(app).add_plugins(AwsLimitsChecks())
"""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import jsii

from ..core import quotas
from ..core.template_limits import check_templates


@jsii.implements(cdk.IPolicyValidationPlugin)
class AwsLimitsChecks:
    """Fails the synth, naming the stack, the resource and the number, when a template breaks one of AWS's limits
    listed in ``core.quotas`` (or repeats a security group rule, which EC2 refuses)."""

    @property
    def name(self) -> str:
        return "ecs-gpu-sharing-aws-limits"

    @property
    def version(self) -> str | None:
        return None

    @property
    def rule_ids(self) -> list[str] | None:
        return [*(limit.rule_id for limit in quotas.LIMITS), quotas.DUPLICATE_RULE_ID]

    def validate(self, context: cdk.IPolicyValidationContext) -> cdk.PolicyValidationPluginReport:
        paths = {Path(p).name.removesuffix(".template.json"): p for p in context.template_paths}
        templates = {name: json.loads(Path(path).read_text()) for name, path in paths.items()}
        violations = [
            cdk.PolicyViolation(
                rule_name=v.rule_id,
                description=v.message,
                violating_resources=[
                    cdk.PolicyViolatingResource(
                        locations=[v.logical_id or "Resources"],
                        resource_logical_id=v.logical_id or v.stack,
                        template_path=paths[v.stack],
                    )
                ],
            )
            for v in check_templates(templates)
        ]
        return cdk.PolicyValidationPluginReport(success=not violations, violations=violations)
