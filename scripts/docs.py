#!/usr/bin/env python3
"""Writes the generated reference pages (``make docs``): each from the one table it documents, and the constructs'
typed aws-ecs options (``scripts/cdk_options.py``). A test fails when a committed file differs from what this
writes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ecs_gpu_sharing.core import plan_document, rules, service_rules
from ecs_gpu_sharing.core.fleet import json_schema
from ecs_gpu_sharing.core.fleet.schema import reference_markdown

REPO = Path(__file__).resolve().parents[1]


def pages() -> dict[Path, str]:
    """Each generated file and what it should hold."""
    if str(REPO / "scripts") not in sys.path:
        sys.path.insert(0, str(REPO / "scripts"))
    import cdk_options  # scripts/, beside this one; it imports aws-cdk-lib

    return {
        REPO / "docs" / "fleet-file.md": reference_markdown(),
        REPO / "docs" / "rules.md": rules.markdown(),
        REPO / "docs" / "aws-rules.md": service_rules.markdown(),
        REPO / "docs" / "plan-json.md": plan_document.markdown(),
        REPO / "fleet.schema.json": json.dumps(json_schema(), indent=2) + "\n",
        cdk_options.TARGET: cdk_options.source(),
    }


def main() -> int:
    for path, text in pages().items():
        path.parent.mkdir(exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
