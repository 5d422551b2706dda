#!/usr/bin/env bash
# The chapters' full profile on one CUDA GPU, planned to fit a 10-minute window (WINDOW_S, default 570 s).
#
# 1. Measures ResNet-32 training throughput (batch 128, crops and flips on the device, bf16 autocast, SGD)
#    and prints images/s and its ratio to the target "200 epochs of CIFAR-10-LT (12406 images) in 2 minutes"
#    (20677 images/s).
# 2. Estimates each chapter's full profile (training images over all its runs, plus per-epoch evaluation)
#    at that speed and runs, smallest first, the chapters that fit in what is left of the window; the others
#    are listed with their estimate. Pass chapter stems to choose: tools/run_full_gpu.sh seli nc_primer
#
# The machine needs no network: copy the packs of tools/pack_data.py (ncbook-cifar10.tar.xz, ...) or a
# torchvision download into $NCBOOK_DATA first. Results land in results/<chapter>/ (save_result) and
# results/claims/full/ (record_claim): commit both. Checkpoints go to checkpoints/<chapter>/ (git-ignored):
# a run cut off by the window resumes from there the next time.
# Usage: NCBOOK_DATA=/path/with/packs tools/run_full_gpu.sh [chapter ...]
set -euo pipefail
cd "$(dirname "$0")/.."
export NCBOOK_PROFILE=full PYTHONUNBUFFERED=1
WINDOW_S="${WINDOW_S:-570}"
start=$(date +%s)
python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: the full profile needs a GPU')"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
plan=$(python - "$WINDOW_S" "$@" <<'PY'
import sys, time
import torch
import torch.nn.functional as F
from ncbook import data, models

window, asked = float(sys.argv[1]), sys.argv[2:]
dev = torch.device("cuda")
torch.backends.cudnn.benchmark = True
model = models.resnet32(10).to(dev).to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
x = torch.randn(12406, 3, 32, 32, device=dev)           # throughput does not depend on the pixels
y = torch.randint(0, 10, (12406,), device=dev)
gen = torch.Generator(device=dev).manual_seed(0)

def steps(n):
    for _ in range(n):
        idx = torch.randint(0, len(y), (128,), device=dev, generator=gen)
        xb = data.cifar_augment(x[idx], gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits, _ = model.forward_features(xb)
        loss = F.cross_entropy(logits.float(), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()

steps(30)
t0 = time.perf_counter()
steps(200)
rate = 200 * 128 / (time.perf_counter() - t0)
target = 200 * 12406 / 120
print(f"ResNet-32 training: {rate:,.0f} images/s; target (200 epochs of CIFAR-10-LT in 2 minutes) {target:,.0f} "
      f"images/s; ratio {rate / target:.2f}", file=sys.stderr)

# training images over all runs of each chapter's full profile, and evaluated images (forward only, ~1/3 the cost)
lt10, lt100 = 12406, 10847
chapters = {
    "seli": (200 * 27500, 200 * (27500 + 10000)),
    "nc_primer": (200 * 50000 + 363 * 27500, 200 * 60000 + 363 * 37500),
    "contrastive_imbalance": (4 * 20000 * 256 * 6, 0),
    "weighted_contrastive": (4 * 20000 * 1024, 0),
    "inverse_reweighting": (30 * 200 * (lt10 + lt100), 30 * 200 * (lt10 + lt100 + 20000)),
    "mr2_margins": (21 * 200 * 50000, 21 * 200 * 60000),
}
left = window - 60  # the benchmark and kernel start-up
chosen = []
for name, (train, evals) in sorted(chapters.items(), key=lambda kv: kv[1][0] + kv[1][1] / 3):
    est = (train + evals / 3) / rate
    fits = (not asked or name in asked) and est <= left
    print(f"  {name:24s} ~{est / 60:7.1f} min {'-> run' if fits else '(skipped: does not fit the window)' if not asked or name in asked else '(not asked)'}",
          file=sys.stderr)
    if fits:
        chosen.append(name)
        left -= est
print(" or ".join(chosen))
PY
)
if [ -z "$plan" ]; then
  echo "no chapter fits the window at this speed: run one with a longer WINDOW_S; checkpoints resume it"
  exit 0
fi
echo "running: $plan"
left=$(( WINDOW_S - ($(date +%s) - start) ))
timeout "$left" python -m pytest -m gpu tests/test_notebooks.py -k "$plan" -x -q -p no:cacheprovider
echo "full-profile notebook tests: $(( $(date +%s) - start )) s"
