#!/usr/bin/env bash
# Full-profile notebook tests on one CUDA GPU, cut off after 570 s so that a 10-minute slot holds it.
# The default subset (primer and SELI: one or two ResNet-32 runs each, plus UFMs) is the one meant to fit; the
# reweighting and MR2 comparisons train tens of ResNet-32 runs and need far longer: pass -k for them.
# Usage: NCBOOK_DATA=/path/with/cifar tools/run_full_gpu.sh [pytest -k expression]
# The CIFAR files must already be under $NCBOOK_DATA (torchvision layout) on a machine without network.
# Every chapter records its checks under results/claims/full/ and the reweighting chapter its runs under
# results/inverse_reweighting/: commit both, and the reproduction page shows them next to the quick ones.
set -euo pipefail
cd "$(dirname "$0")/.."
export NCBOOK_PROFILE=full PYTHONUNBUFFERED=1
python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: the full profile needs a GPU')"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
expr="${1:-nc_primer or seli}"
start=$(date +%s)
timeout 570 python -m pytest -m gpu tests/test_notebooks.py -k "$expr" -x -q -p no:cacheprovider
echo "full-profile notebook tests: $(( $(date +%s) - start )) s"
