"""Whether a value is a CDK token. Pure: asks CDK's own ``Token.is_unresolved`` only when CDK is already loaded.

A CDK app has imported ``aws_cdk`` before it can make a token, so a process without it has no tokens; the
planning core never imports jsii itself.
"""

from __future__ import annotations

import math
import sys
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
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        if key == "Ref" or key.startswith("Fn::"):
            return f"a deploy-time value ({key} {value[key]!r})"
    return repr(value)
