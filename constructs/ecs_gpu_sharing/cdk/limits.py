"""``AwsLimitsChecks``: AWS's limits (``core.quotas``) and its service-side rules (``core.service_rules``) checked
over every synthesized template, at ``cdk synth``.

A policy-validation plugin, like cdk-nag's packs: it sees the templates of every stack at once, so it also finds a
security group rule that two stacks declare. An app with a GPU capacity runs the same checks already (``FleetPlan``);
an app without one adds the plugin once::

    cdk.Validations.of(app).add_plugins(AwsLimitsChecks())
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii

from ..core.nested_stacks import joined, read_nested
from ..core.service_rules import check_all, rule_ids
from ..core.template_limits import Violation


@jsii.implements(cdk.IPolicyValidationPlugin)
class AwsLimitsChecks:
    """Fails the synth, naming the stack, the resource and the number, when a template breaks one of AWS's limits
    listed in ``core.quotas``, repeats a security group rule (which EC2 refuses), or breaks a rule the real services
    enforce at deploy (``core.service_rules``)."""

    @property
    def name(self) -> str:
        return "ecs-gpu-sharing-aws-limits"

    @property
    def version(self) -> str | None:
        return None

    @property
    def rule_ids(self) -> list[str] | None:
        return rule_ids()

    def validate(self, context: cdk.IPolicyValidationContext) -> cdk.PolicyValidationPluginReport:
        violations = template_violations(list(context.template_paths))
        return cdk.PolicyValidationPluginReport(success=not violations, violations=violations)


class WrittenTemplates:
    """The templates a synth wrote, read once: by stack (the file name without ``.template.json``), with their paths,
    the nested stacks' templates included (``core.nested_stacks``). ``as_written`` holds them as written, for the
    per-template limits; ``templates`` as the checks read them, each nested one joined to its parent."""

    def __init__(self, template_paths: list[str]) -> None:
        self.paths = {_key(p): str(p) for p in template_paths}
        self.as_written: dict[str, Any] = {
            name: json.loads(Path(path).read_text()) for name, path in self.paths.items()
        }
        files = {name: Path(path) for name, path in self.paths.items()}
        nested = read_nested(self.as_written, files, lambda _parent, _id, file: _key(file))
        for child, path, template in nested.values():
            self.paths[child], self.as_written[child] = str(path), template
        joinable = {at: (child, template) for at, (child, _, template) in nested.items()}
        self.templates = joined(self.as_written, joinable) if nested else self.as_written

    def policy_violations(self, violations: Iterable[Violation]) -> list[cdk.PolicyViolation]:
        """The core's violations as CDK's policy report shows them: rule, message, stack and resource."""
        fallback = next(iter(self.paths.values()), "")
        return [
            cdk.PolicyViolation(
                rule_name=v.rule_id,
                description=v.message,
                violating_resources=[
                    cdk.PolicyViolatingResource(
                        locations=[v.logical_id or "Resources"],
                        resource_logical_id=v.logical_id or v.stack,
                        template_path=self.paths.get(v.stack, fallback),
                    )
                ],
            )
            for v in violations
        ]


def template_violations(template_paths: list[str]) -> list[cdk.PolicyViolation]:
    """What ``core.service_rules.check_all`` finds in the written templates, as policy violations."""
    written = WrittenTemplates(template_paths)
    return written.policy_violations(check_all(written.templates, as_written=written.as_written))


def _key(path: str | Path) -> str:
    """A template's key: its file name without ``.template.json`` (``rendered.template_key``)."""
    return Path(path).name.removesuffix(".template.json")
