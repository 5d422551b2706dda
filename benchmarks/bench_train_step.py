"""Training-step throughput of ResNet-32 on CIFAR-shaped batches (synthetic data, no download).

Prints images per second, milliseconds per step, and the ratio of the measured step time to a
launch-bound estimate (kernels launched per step x the per-launch overhead). A ratio near 1 means
the step is launch-bound (CUDA graphs / torch.compile help); far above 1, compute-bound.
Target (issue: full-profile experiments): 200 epochs of CIFAR-10-LT (about 19k steps of 128) in
under 2 minutes on one H200, i.e. under ~6 ms per step. On a CPU it runs a few steps only.

    python benchmarks/bench_train_step.py [--steps 200] [--batch 128] [--amp] [--channels-last] [--compile]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from ncbook import data, models

LAUNCH_OVERHEAD_US = 4.0  # typical CUDA kernel launch cost from Python (microseconds)
TARGET_STEPS, TARGET_SECONDS = 19_400, 120.0


def count_kernels(step, device) -> int:
    """Kernels launched by one call of ``step`` (CUDA only), via the profiler."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize(device)
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--amp", action="store_true", help="bf16 autocast")
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    steps = args.steps or (200 if device.type == "cuda" else 5)
    torch.manual_seed(0)
    model = models.resnet32(10).to(device)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    fwd = torch.compile(model.forward_features) if args.compile else model.forward_features
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=2e-4)
    x_all = torch.randn(4096, 3, 32, 32, device=device)
    y_all = torch.randint(0, 10, (4096,), device=device)
    gen = torch.Generator(device=device).manual_seed(0)

    def step():
        idx = torch.randint(0, x_all.shape[0], (args.batch,), device=device, generator=gen)
        xb = data.cifar_augment(x_all[idx], gen).contiguous(memory_format=fmt)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.amp and device.type == "cuda"):
            logits, _ = fwd(xb)
        loss = F.cross_entropy(logits.float(), y_all[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(3 if device.type == "cpu" else 20):  # warm-up (and compilation)
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    ms = (time.perf_counter() - start) / steps * 1e3
    print(f"device: {torch.cuda.get_device_name(0) if device.type == 'cuda' else 'cpu'}; batch {args.batch}; "
          f"amp={args.amp} channels_last={args.channels_last} compile={args.compile}")
    print(f"ms per step: {ms:.2f}   images per second: {args.batch / ms * 1e3:,.0f}")
    print(f"ratio to the 200-epoch target ({TARGET_SECONDS / TARGET_STEPS * 1e3:.2f} ms/step): "
          f"{ms / (TARGET_SECONDS / TARGET_STEPS * 1e3):.2f}")
    if device.type == "cuda":
        kernels = count_kernels(step, device)
        bound = kernels * LAUNCH_OVERHEAD_US / 1e3
        print(f"kernels per step: {kernels}; launch-bound estimate {bound:.2f} ms; measured / estimate: {ms / bound:.2f}")
    else:
        print("no CUDA device: the launch-bound estimate needs a GPU")


if __name__ == "__main__":
    main()
