"""The GPU telemetry daemon: what each shared-GPU service really uses, measured on every host.

AWS gives no per-task GPU metrics under MPS. This daemon, one task per GPU host (an ECS daemon service built by
``GpuTelemetry``), samples NVML every few seconds: per GPU, memory used and utilization; per compute process, its
GPU memory. A process is mapped to its ECS task and container through its cgroup (the container's runtime id)
and ECS's own record of the host's tasks (``ListTasks``/``DescribeTasks``: each container's ``runtimeId``, each
task's ``group``, ``service:<name>``). Every minute it writes CloudWatch embedded-metric-format lines to stdout
(the awslogs driver carries them; CloudWatch turns them into metrics, no PutMetricData call): per service and per
container, the peak and 99th percentile of GPU memory and the utilization of the GPUs it ran on; per GPU, memory
used and utilization; per host, whether the MPS control daemon is up.

The package is standalone (its own Docker image, ``Dockerfile`` here): it imports nothing else of the library.
"""
