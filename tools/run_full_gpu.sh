#!/usr/bin/env bash
# Full-profile notebook tests on one CUDA GPU, sized to finish within 10 minutes on an H200-class card.
# Usage: NCBOOK_DATA=/path/with/cifar tools/run_full_gpu.sh [pytest -k expression]
# The CIFAR files must already be under $NCBOOK_DATA (torchvision layout) on a machine without network.
# Each chapter writes its full results as JSON under results/; commit them afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
export NCBOOK_PROFILE=full PYTHONUNBUFFERED=1
python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: the full profile needs a GPU')"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
expr="${1:-nc_primer or seli or inverse_reweighting or mr2}"
start=$(date +%s)
timeout 570 python -m pytest -m gpu tests/test_notebooks.py -k "$expr" -x -q -p no:cacheprovider
echo "full-profile notebook tests: $(( $(date +%s) - start )) s"
