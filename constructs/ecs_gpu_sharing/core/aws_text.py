"""Text the library writes into AWS resources from what a team named (a construct's path), fitted to what each AWS
field takes: its characters and its length. A construct id may hold any character and a path any length, while EC2
refuses a security group whose description has a character outside ASCII's few ("character sets beyond ASCII are not
supported"), and IAM a role description past Latin-1. aws-cdk's own CloudFormation schema check reports such a value
only as a warning unless ``@aws-cdk/core:validateAgainstDefaultRules`` is set, and moto takes it, so without this the
synth and the rehearsal pass and the first real deploy fails.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class TextField:
    """One AWS field a name goes into: the characters it takes (a regex character class) and its most characters."""

    what: str
    characters: str  # a regex character class of what the field takes
    max_length: int
    source: str

    def fitted(self, text: str, *, unique: bool = False, room: int | None = None) -> str:
        """``text`` as the field takes it: each character it refuses as ``-``, then cut to its length (or to ``room``,
        where the text is one part of the field's value). ``unique``: where a cut could make two texts one (a name),
        the cut text ends with a short hash of the whole."""
        allowed = re.sub(f"[^{self.characters[1:-1]}]", "-", text)
        limit = self.max_length if room is None else min(room, self.max_length)
        if len(allowed) <= limit:
            return allowed
        if not unique:
            return allowed[:limit]
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        return f"{allowed[: limit - len(digest) - 1]}-{digest}"


SECURITY_GROUP_DESCRIPTION = TextField(
    "a security group's description",
    r"[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]",
    255,
    'Amazon EC2 API Reference, CreateSecurityGroup, GroupDescription: "Up to 255 characters in length. Valid '
    'characters: a-z, A-Z, 0-9, spaces, and ._-:/()#,@[]+=&;{}!$*"',
)
IAM_ROLE_DESCRIPTION = TextField(
    "an IAM role's description",
    r"[\t\n\r\x20-\x7e\xa1-\xff]",
    1000,
    "IAM API Reference, CreateRole, Description: length 0-1000, pattern [\\u0009\\u000A\\u000D\\u0020-\\u007E"
    "\\u00A1-\\u00FF]*",
)
DASHBOARD_NAME = TextField(
    "a CloudWatch dashboard's name",
    r"[A-Za-z0-9_\-]",
    255,
    'Amazon CloudWatch API Reference, PutDashboard, DashboardName: "The maximum length is 255, and valid characters '
    'are A-Z, a-z, 0-9, "-", and "_""',
)
STACK_NAME_MAX_LENGTH = (
    128  # CloudFormation API Reference, CreateStack, StackName: "can't be longer than 128 characters"
)
REGION_MAX_LENGTH = 20  # the longest region name, with room: "ap-southeast-5" is 14
