"""``ami refresh``: adds the AL2023 GPU AMI releases AWS has published to the table of known releases.

Reads the public SSM parameters under the GPU path (``GetParametersByPath``, recursive, paginated): each AMI's
parameter holds its metadata, ``ecs_agent_version`` among it. Releases at or above the floor are added with their
agent; releases already in the table stay (a region that lacks one does not drop it).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ..core import ami_release
from ..core.ami_release import KnownRelease
from ..core.files import check_output_path, write_atomic

GPU_PATH = "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu"


def _metadata(value: str) -> dict[str, Any]:
    # AWS stores the metadata as JSON; moto's copy of the public parameters stores it as a Python dict's repr.
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return {}
    return parsed if isinstance(parsed, dict) else {}


def published(ssm: Any) -> dict[str, str | None]:
    """Every release at or above the floor that the client's region publishes, with its ECS agent version."""
    found: dict[str, str | None] = {}
    for page in ssm.get_paginator("get_parameters_by_path").paginate(Path=GPU_PATH, Recursive=True):
        for parameter in page["Parameters"]:
            name = parameter["Name"].rsplit("/", 1)[-1]
            release = ami_release.release_of(name)
            if release is None or release < ami_release.AMI_RELEASE_FLOOR:
                continue
            agent = _metadata(parameter.get("Value", "")).get("ecs_agent_version")
            found[release] = str(agent) if agent else found.get(release)
    return found


@dataclass(frozen=True)
class Added:
    releases: list[str]
    total: int


def refresh(ssm: Any, output: Path) -> Added:
    """Merges what the region publishes into the table at ``output`` (atomically); never drops a release."""
    check_output_path(output, what="AMI release table", option="--output")
    existing = ami_release.parse_releases(output.read_text(encoding="utf-8")) if output.exists() else {}
    source = f"SSM GetParametersByPath {GPU_PATH} ({ssm.meta.region_name}, {date.today().isoformat()})"
    merged = dict(existing)
    added = []
    for release, agent in sorted(published(ssm).items()):
        old = merged.get(release)
        if old is None:
            added.append(release)
            merged[release] = KnownRelease(release, agent, source)
        elif old.ecs_agent_version is None and agent:
            merged[release] = KnownRelease(release, agent, source)
    write_atomic(output, ami_release.render_releases(merged))
    return Added(added, len(merged))
