"""AWS quotas that bound the counts a fleet may ask for. Pure Python; the source of each is named beside it."""

from __future__ import annotations

MAX_TASKS_PER_SERVICE = 5000
"""Amazon ECS service quota "Tasks per service": 5,000. A larger count can never run."""

MAX_INSTANCES_PER_CLUSTER = 5000
"""Amazon ECS service quota "Container instances per cluster": 5,000. A capacity cannot have more hosts."""
