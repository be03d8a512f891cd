"""Whether a value is a CDK token, and what a deploy-time value fixes of its text. Pure: asks CDK's own
``Token.is_unresolved`` only when CDK is already loaded.

A CDK app has imported ``aws_cdk`` before it can make a token, so a process without it has no tokens; the
planning core never imports jsii itself.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any


def is_token(value: Any) -> bool:
    """True when ``value`` is an unresolved CDK token (a ``CfnParameter`` value, an attribute, a ``Lazy``)."""
    if isinstance(value, bool | int) or value is None:
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False  # inf and nan are no tokens, and jsii cannot carry them
    cdk = sys.modules.get("aws_cdk")
    if cdk is None:
        return False
    if isinstance(value, float | str):
        return bool(cdk.Token.is_unresolved(value))
    return type(value).__module__.startswith(("aws_cdk", "jsii")) and bool(cdk.Token.is_unresolved(value))


def describe(value: Any) -> str:
    """A value for an error message; a token is named as one, never shown as its encoded number."""
    if is_token(value):
        return "a CDK token (a value known only at deploy time)"
    if is_intrinsic(value):
        key = next(iter(value))
        return f"a deploy-time value ({key} {value[key]!r})"
    return repr(value)


RUN_TIME = "Fn::RunTime"
"""Stands in a template's value for one that only a run supplies (an event's field, a state machine's input): an
intrinsic of no resource, so it reads as unknown wherever a deploy-time value does."""


def is_intrinsic(value: Any) -> bool:
    """Whether ``value`` is a CloudFormation intrinsic (``Ref``, ``Fn::If``, ...): a value known only at deploy."""
    return isinstance(value, Mapping) and len(value) == 1 and str(next(iter(value))).startswith(("Ref", "Fn::"))


def at_run_time(value: Any) -> dict[str, Any]:
    """``value`` (a path, a placeholder, an expression) as a value only a run supplies."""
    return {RUN_TIME: value}


def text_pattern(value: Any) -> str:
    """What a CloudFormation value fixes of its text, as a pattern: a string as it is, the parts of an ``Fn::Join``
    joined, and ``*`` for any part known only at deploy (a ``Ref``, an attribute, an ``Fn::Sub``)."""
    if isinstance(value, str):
        return value
    join = value.get("Fn::Join") if isinstance(value, dict) and len(value) == 1 else None
    if isinstance(join, list) and len(join) == 2 and isinstance(join[0], str) and isinstance(join[1], list):
        return join[0].join(text_pattern(part) for part in join[1])
    return "*"
