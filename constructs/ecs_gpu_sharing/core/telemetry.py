"""What the GPU telemetry daemon takes of every host it runs on, so plans can leave it out. Pure Python."""

from __future__ import annotations

DAEMON_CPU_UNITS = 128
DAEMON_MEMORY_MIB = 192
DAEMON_NAME = "Telemetry"  # its name in plans: the GpuTelemetry construct's id in the app
