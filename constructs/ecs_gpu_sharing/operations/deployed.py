"""A fleet's stacks as deployed: their resources' physical ids, and their templates, for the pre-deploy checks that
compare what is there with what the fleet file asks for. A stack not deployed yet reads as ``None``."""

from __future__ import annotations

import json
from typing import Any

from ..core.errors import AwsOperationError


def _not_deployed(error: Exception) -> bool:
    return "does not exist" in str(error)  # CloudFormation's ValidationError: "Stack with id X does not exist"


def physical_ids(cloudformation: Any, stack: str) -> dict[str, str] | None:
    """Logical id -> physical id of each resource of ``stack`` that has one; ``None`` for a stack not deployed."""
    try:
        pages = cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack)
        return {
            r["LogicalResourceId"]: r["PhysicalResourceId"]
            for page in pages
            for r in page["StackResourceSummaries"]
            if r.get("PhysicalResourceId")
        }
    except cloudformation.exceptions.ClientError as error:
        if _not_deployed(error):
            return None
        raise


def deployed_ids(cloudformation: Any, stack: str) -> dict[str, str]:
    """Logical id -> physical id of a deployed stack's resources, a nested stack's (``<parent>/<logical id>``) found
    through its parent's; empty where it is not deployed."""
    top, *nested = stack.split("/")
    ids = physical_ids(cloudformation, top) or {}
    for logical_id in nested:
        arn = ids.get(logical_id)
        ids = (physical_ids(cloudformation, arn) or {}) if arn else {}
    return ids


def deployed_template(cloudformation: Any, stack: str) -> tuple[dict[str, Any], dict[str, str]] | None:
    """The deployed stack's template and its physical ids by logical id; ``None`` for a stack not deployed."""
    body = template_of(cloudformation, stack)
    return None if body is None else (body, physical_ids(cloudformation, stack) or {})


def template_of(cloudformation: Any, stack: str) -> dict[str, Any] | None:
    """The deployed stack's template as it was written; ``None`` for a stack not deployed."""
    try:
        body = cloudformation.get_template(StackName=stack, TemplateStage="Original")["TemplateBody"]
    except cloudformation.exceptions.ClientError as error:
        if _not_deployed(error):
            return None
        raise
    if isinstance(body, str):  # botocore decodes a JSON body itself; a string left is YAML, which CDK never writes
        try:
            body = json.loads(body)
        except ValueError:
            raise AwsOperationError(f"stack {stack}'s template is not JSON: was it deployed by CDK?") from None
    return dict(body)
