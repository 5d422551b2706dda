import os

import pytest
import torch

os.environ.setdefault("NCBOOK_PROFILE", "quick")


@pytest.fixture(autouse=True)
def _seed_and_threads():
    torch.manual_seed(0)
    yield


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (full profile); none is available here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
