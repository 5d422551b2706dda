import pytest
import torch

from ncbook import models


@pytest.mark.parametrize("make,shape", [
    (lambda: models.MLP(64, (32,), 16, 10), (5, 64)),
    (lambda: models.SmallCNN(1, 10, 16, width=8), (5, 1, 8, 8)),
    (lambda: models.resnet32(10), (2, 3, 32, 32)),
])
def test_protocol(make, shape):
    m = make()
    x = torch.randn(*shape)
    m.eval()
    logits, feats = m.forward_features(x)
    assert logits.shape == (shape[0], 10)
    assert feats.shape == (shape[0], m.feat_dim)
    assert m.classifier.weight.shape == (10, m.feat_dim) and m.classifier.bias is None
    torch.testing.assert_close(logits, feats @ m.classifier.weight.T)
    torch.testing.assert_close(m(x), logits)


def test_resnet32_size_and_depth_check():
    assert sum(p.numel() for p in models.resnet32(10).parameters()) == 464144  # 0.46M as in He et al.
    with pytest.raises(ValueError, match="depth must be 6k \\+ 2"):
        models.ResNetCIFAR(31)


def test_normalized_features_have_unit_norm():
    m = models.MLP(8, (16,), 4, 3, normalize=True).eval()
    torch.testing.assert_close(m.features(torch.randn(6, 8)).norm(dim=1), torch.ones(6))
