"""Shared by the PyTorch twins of the trainer's benchmarks (run by
trainer/internal/torchbench): importing torch or exiting with status 3, and
timing updates into the one JSON line the Go side reads.
"""

import json
import sys
import time


def require_torch():
    """Returns the torch module, or exits with status 3 (the Go benchmark then skips the comparison)."""
    try:
        import torch
    except ImportError as exc:
        print(f"torch unavailable: {exc}", file=sys.stderr)
        sys.exit(3)
    return torch


def report(torch, update, warmup, iters):
    """Runs update warmup times, then times iters runs and prints
    {"ms_per_update": mean, "min_ms": fastest, "torch": version, "threads": n}.
    On a shared machine the fastest update is the steadier number."""
    for _ in range(warmup):
        update()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        update()
        times.append((time.perf_counter() - start) * 1000)
    print(json.dumps({
        "ms_per_update": sum(times) / len(times),
        "min_ms": min(times),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }))
