"""Real validators for synthesized output: cfn-lint's CloudFormation schemas and botocore's ECS model."""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import botocore.validate
import cfnlint.api


def cfn_lint_errors(template: dict[str, Any]) -> list[str]:
    """cfn-lint's errors (E rules) for a template; warnings and informational findings are not errors."""
    matches = cfnlint.api.lint(json.dumps(template), regions=["us-east-1"])
    return [
        f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})"
        for m in matches
        if m.rule.id.startswith("E") and not _split_of_stack_output(m)
    ]


def _split_of_stack_output(match: Any) -> bool:
    """cfn-lint 1.58 does not know that Fn::GetStackOutput (cdk.json's weak cross-stack references) gives a
    string, and refuses it as Fn::Split's input (E1022); aws-cdk splits an imported listener ARN that way for
    request-count scaling. Only that exact finding is set aside."""
    return (
        match.rule.id == "E1022"
        and str(match.message).startswith("{'Fn::GetStackOutput'")
        and "Fn::Split" in map(str, match.path)
    )


def _camel(key: str) -> str:
    return key[:1].lower() + key[1:]


def _resolve_intrinsics(value: Any) -> Any:
    # Intrinsic functions ({"Ref": ...}, {"Fn::Join": ...}) become placeholder strings: the ECS API takes strings.
    if isinstance(value, dict):
        if len(value) == 1 and (next(iter(value)) == "Ref" or next(iter(value)).startswith("Fn::")):
            return "resolved-at-deploy"
        return {k: _resolve_intrinsics(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_intrinsics(v) for v in value]
    return value


def to_ecs_api(value: Any, *, free_keys: bool = False) -> Any:
    """A CloudFormation container definition in the ECS API's shape (camelCase keys)."""
    value = _resolve_intrinsics(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            # Maps whose keys are data, not field names, keep them (log driver options, docker labels).
            nested_free = key in {"Options", "DockerLabels", "SystemControls"} and isinstance(item, dict)
            out[key if free_keys else _camel(key)] = to_ecs_api(item, free_keys=nested_free)
        return out
    if isinstance(value, list):
        return [to_ecs_api(v) for v in value]
    return value


def ecs_register_task_definition_errors(task_definition_properties: dict[str, Any]) -> str:
    """botocore's parameter validation of RegisterTaskDefinition for one synthesized task definition."""
    model = botocore.session.get_session().get_service_model("ecs")
    shape = model.operation_model("RegisterTaskDefinition").input_shape
    props = task_definition_properties
    params: dict[str, Any] = {
        "family": "validated-family",
        "containerDefinitions": to_ecs_api(props["ContainerDefinitions"]),
    }
    for cfn_key in ("NetworkMode", "Cpu", "Memory", "RequiresCompatibilities"):
        if cfn_key in props:
            params[_camel(cfn_key)] = _resolve_intrinsics(props[cfn_key])
    report = botocore.validate.ParamValidator().validate(params, shape)
    return str(report.generate_report()) if report.has_errors() else ""


def ecs_create_capacity_provider_errors(properties: dict[str, Any]) -> str:
    """botocore's verdict on a synthesized AWS::ECS::CapacityProvider as a CreateCapacityProvider request."""
    model = botocore.session.get_session().get_service_model("ecs")
    params = to_ecs_api({k: v for k, v in properties.items() if k not in ("Tags", "ClusterName")})
    params.setdefault("name", "resolved-at-deploy")
    shape = model.operation_model("CreateCapacityProvider").input_shape
    report = botocore.validate.ParamValidator().validate(params, shape)
    return str(report.generate_report()) if report.has_errors() else ""
