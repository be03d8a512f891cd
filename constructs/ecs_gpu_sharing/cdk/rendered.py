"""The one reader of a construct's CloudFormation properties as they will be written.

aws-cdk-lib keeps an L1 resource's properties in ``_cfn_properties`` (private: its own renderer reads them), with
escape-hatch overrides applied only when the template is written. Checks that must see what a team's code set after
the construct was made (``add_container``, ``add_property_override`` excepted, which the written-template checks
see) read them here, resolved in their stack, so a change in aws-cdk-lib's internals is fixed in one place; and the
key by which the written templates name a resource.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import IConstruct


def rendered_properties(construct: IConstruct) -> Any:
    """The resolved CloudFormation properties of ``construct``'s L1 resource (its default child, or itself)."""
    resource = construct.node.default_child or construct
    return cdk.Stack.of(construct).resolve(resource._cfn_properties)  # type: ignore[attr-defined]


def template_key(resource: cdk.CfnElement) -> tuple[str, str]:
    """How the written templates name ``resource``: its template's file name without ``.template.json`` (the key
    ``limits.WrittenTemplates`` reads them by) and its logical id."""
    stack = cdk.Stack.of(resource)
    return stack.template_file.removesuffix(".template.json"), stack.get_logical_id(resource)
