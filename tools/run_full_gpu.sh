#!/usr/bin/env bash
# The chapters' gpu profile on one CUDA GPU, and how fast each chapter's model trains there.
#
# 1. Benchmarks every chapter's model at its gpu batch size (ResNet-32 training steps: crops and flips on the
#    device, data held on the device, SGD) in the precisions and layouts that matter: float32 (what fit(amp=True)
#    runs on a GPU without native bf16, e.g. a T4), bf16 autocast (native from compute capability 8.0), fp16
#    autocast with a GradScaler (tensor cores on a T4), each in channels-last, and with torch.compile when
#    COMPILE=1. It prints images/s next to the plan's assumed speed for this device (ncbook.profiles.DEVICE_SPEEDS)
#    and marks the configuration the chapters actually run.
# 2. Estimates each chapter's gpu profile (ncbook.profiles.planned_work) at the measured speed and runs, smallest
#    first, those that fit what is left of a 10-minute window (WINDOW_S, default 570 s); pass chapter stems to
#    choose: tools/run_full_gpu.sh seli nc_primer. Each runs on the real CIFAR files (tests/test_gpu_smoke.py,
#    marker gpu): claims land in results/claims/gpu/ and each long cell's estimate and measured seconds in
#    results/costs/gpu/<chapter>.json: commit both, with the images/s printed here.
#
# The machine needs no network: copy the pack of tools/pack_data.py (ncbook-cifar10.tar.xz: exactly what the gpu
# profile reads) into $NCBOOK_DATA first. Checkpoints go to checkpoints/gpu/<chapter>/ (git-ignored): a run cut off
# by the window resumes from there the next time.
#
# --dry-run: no GPU needed; benchmarks on the CPU with tiny batches and a few steps, prints the same table and the
# plan, and runs no chapter (CI runs it so that this script cannot rot).
# Usage: NCBOOK_DATA=/path/with/packs tools/run_full_gpu.sh [--dry-run] [chapter ...]
set -euo pipefail
cd "$(dirname "$0")/.."
export NCBOOK_PROFILE=gpu PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
WINDOW_S="${WINDOW_S:-570}"
DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
start=$(date +%s)
if [ "$DRY" = 0 ]; then
  python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: run with --dry-run, or on a GPU')"
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
fi
plan=$(python - "$WINDOW_S" "$DRY" "${COMPILE:-0}" "$@" <<'PY'
import sys, time
import torch
import torch.nn.functional as F
from ncbook import data, models, profiles

window, dry, compile_too, asked = float(sys.argv[1]), sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4:]
dev = torch.device("cpu" if dry else "cuda")
if dev.type == "cuda":
    torch.backends.cudnn.benchmark = True
name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu (dry run)"
assumed = next((d for d in profiles.DEVICE_SPEEDS if d.device in name), None)
native = profiles.native_bf16(dev)
warm, timed = (1, 2) if dry else (20, 100)

# each chapter's model and the images one of its gpu steps forwards (its batch; distinct rows for contrastive sampling)
work = {}
for stem, plan in profiles.PLANS.items():
    p = plan.params["gpu"]
    if stem == "contrastive_imbalance":
        work[stem] = (3, p["NET_BATCH"] * (2 + p["K_NET"]))
    elif stem == "weighted_contrastive":
        work[stem] = (10, p["NET_BATCH"])
    else:
        work[stem] = (10, p["BATCH"])
if dry:
    work = {k: (c, 4) for k, (c, _) in work.items()}

configs = [("float32", None, False), ("float32 channels-last", None, True)]
if native:
    configs += [("bf16 autocast", torch.bfloat16, False), ("bf16 autocast channels-last", torch.bfloat16, True)]
if dev.type == "cuda":  # tensor cores on a T4 (not a CPU path: fp16 products are emulated there)
    configs += [("fp16 autocast + GradScaler channels-last", torch.float16, True)]
chapters_run = "bf16 autocast" if native else "float32"   # what ncbook.train.fit(amp=True) runs here


def rate(classes, batch, dtype, channels_last, compiled=False):
    torch.manual_seed(0)
    model = models.resnet32(classes).to(dev)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    step_model = torch.compile(model) if compiled else model
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    scaler = torch.amp.GradScaler(dev.type, enabled=dtype is torch.float16 and dev.type == "cuda")
    x = torch.randn(4 * batch, 3, 32, 32, device=dev)          # throughput does not depend on the pixels
    y = torch.randint(0, classes, (4 * batch,), device=dev)
    gen = torch.Generator(device=dev).manual_seed(0)

    def steps(n):
        for _ in range(n):
            idx = torch.randint(0, len(y), (batch,), device=dev, generator=gen)
            xb = data.cifar_augment(x[idx], gen)
            if channels_last:
                xb = xb.contiguous(memory_format=torch.channels_last)
            with torch.autocast(dev.type, dtype=dtype or torch.float32, enabled=dtype is not None):
                logits = step_model(xb)
            loss = F.cross_entropy(logits.float(), y[idx])
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        if dev.type == "cuda":
            torch.cuda.synchronize()

    steps(warm)
    t0 = time.perf_counter()
    steps(timed)
    return timed * batch / (time.perf_counter() - t0)


print(f"device: {name}; native bf16: {native}; the chapters run {chapters_run} (ncbook.train.fit(amp=True))", file=sys.stderr)
if assumed:
    print(f"the plan assumes {assumed.train_images_per_s:,.0f} images/s on a {assumed.device} ({assumed.precision}; "
          f"{assumed.source})", file=sys.stderr)
measured, cache = {}, {}
for stem, (classes, batch) in work.items():
    for label, dtype, cl in configs + ([("float32 torch.compile", None, False)] if compile_too else []):
        key = (classes, batch, label)
        if key not in cache:
            try:
                cache[key] = rate(classes, batch, dtype, cl, compiled="compile" in label)
            except Exception as exc:  # e.g. torch.compile without a compiler: say so, go on
                print(f"  {stem:22s} batch {batch:4d}  {label:42s} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
        r = cache[key]
        mark = "  <- what the chapters run" if label == chapters_run else ""
        vs = f"  {r / assumed.train_images_per_s:5.2f} x the plan" if assumed else ""
        print(f"  {stem:22s} batch {batch:4d}  {label:42s} {r:10,.0f} images/s{vs}{mark}", file=sys.stderr)
        if label == chapters_run:
            measured[stem] = r

left = window - 60  # kernel start-up and data loading
chosen = []
for stem in sorted(work, key=lambda s: profiles.planned_seconds(s, "gpu", "T4")):
    speed = measured.get(stem)
    if speed is None:
        continue
    est = sum(t / speed + e / (profiles.EVAL_SPEEDUP * speed) for _, t, e in profiles.planned_work(stem, "gpu"))
    wanted = not asked or stem in asked
    fits = wanted and est <= left and not dry
    why = "-> run" if fits else ("(dry run)" if dry else "(does not fit the window)" if wanted else "(not asked)")
    print(f"  {stem:24s} gpu profile ~{est / 60:6.1f} min at {speed:,.0f} images/s "
          f"(plan on a T4: {profiles.planned_seconds(stem, 'gpu', 'T4') / 60:.1f} min) {why}", file=sys.stderr)
    if fits:
        chosen.append(stem)
        left -= est
print(" or ".join(chosen))
PY
)
if [ "$DRY" = 1 ]; then
  echo "dry run: benchmark and plan printed, no chapter run"
  exit 0
fi
if [ -z "$plan" ]; then
  echo "no chapter fits the window at this speed: run one with a longer WINDOW_S; checkpoints resume it"
  exit 0
fi
echo "running: $plan"
left=$(( WINDOW_S - ($(date +%s) - start) ))
timeout "$left" python -m pytest -m gpu tests/test_gpu_smoke.py -k "$plan" -x -q -s -p no:cacheprovider
echo "gpu-profile chapters: $(( $(date +%s) - start )) s"
