"""A CUDA client for the GPU checks (scripts/gpu_check.sh, scripts/mps_facts.py): one context and, with N > 0, one
allocation of N MiB through the driver API (libcuda.so.1 by ctypes: no CUDA toolkit needed), held until it is killed.

    python3 scripts/cuda_client.py N

Its first line is "ready free=F total=T" (MiB, as cuMemGetInfo tells it) or "refused WHAT CODE" (the step the driver
refused, and its CUDA error), so a caller can tell a limit that held from one that did not.
"""

import ctypes
import sys
import time


def check(result: int, what: str) -> None:
    if result != 0:
        print(f"refused {what} {result}", flush=True)
        sys.exit(3)


def main() -> None:
    mib = int(sys.argv[1])
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        print(f"refused load {error}", flush=True)
        sys.exit(3)
    check(cuda.cuInit(0), "cuInit")
    device, context, pointer = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    check(cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device), "cuCtxCreate")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    check(cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
    if mib:
        check(cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(mib * 2**20)), "cuMemAlloc")
    print(f"ready free={free.value // 2**20} total={total.value // 2**20}", flush=True)
    time.sleep(900)


if __name__ == "__main__":
    main()
