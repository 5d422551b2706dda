"""Pipelines that cite a recipe, tested against the recipe itself.

* :func:`ncbook.data.cifar_augment` is the long-tailed CIFAR recipe's augmentation (Cao et al. 2019 and the
  repositories built on it): torchvision's ``RandomCrop(32, padding=4)`` and ``RandomHorizontalFlip()`` on the
  images, then ``Normalize(mean, std)``. Ours runs on normalised batches, so it is checked pixel for pixel
  against that pipeline run on the same images with the same draws (crop offsets and flips read off the
  generator): the border must be black, as the recipe pads before normalising.
* The contrastive sampler of :func:`ncbook.train.fit_contrastive` gives every sampled anchor, positive and
  negative its own augmented view: an anchor drawn as its own positive, or a UCL negative that is the anchor,
  is not compared with an identical copy of itself (similarity exactly 1).
"""

from __future__ import annotations

import pytest
import torch
import torchvision.transforms.v2 as T2
from torchvision import transforms as T

from ncbook import data, losses, models, train
import ncbook.train._contrastive as trainer_module

torch.set_num_threads(1)


def _images(b=6, seed=0):
    """uint8 CIFAR-shaped images (b, 3, 32, 32), with bright pixels at the edges (a padded border shows)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (b, 3, 32, 32), generator=g, dtype=torch.uint8)


def _normalised(img):
    """As :func:`ncbook.data.cifar_tensors` normalises: ``x / 255`` in float32, then ``(x - mean) / std``."""
    x = img.float().div_(255)
    mean = torch.tensor(data.CIFAR_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(data.CIFAR_STD).view(1, 3, 1, 1)
    return (x - mean) / std


def _draws(b, padding, seed):
    """The crop offsets and flips cifar_augment draws from a generator seeded with ``seed`` (its order of draws)."""
    g = torch.Generator().manual_seed(seed)
    dx = torch.randint(0, 2 * padding + 1, (b,), generator=g)
    dy = torch.randint(0, 2 * padding + 1, (b,), generator=g)
    flip = torch.rand(b, generator=g) < 0.5
    return dx, dy, flip


def _torchvision(img, dx, dy, flip, monkeypatch, padding=4):
    """The recipe's pipeline, one image at a time, with RandomCrop's offsets and the flip set to ours."""
    out = []
    for i in range(len(img)):
        monkeypatch.setattr(T.RandomCrop, "get_params", staticmethod(lambda im, size, i=i: (int(dy[i]), int(dx[i]), *size)))
        recipe = T.Compose([T.RandomCrop(32, padding=padding), T.RandomHorizontalFlip(p=1.0 if flip[i] else 0.0),
                            T.ConvertImageDtype(torch.float32), T.Normalize(data.CIFAR_MEAN, data.CIFAR_STD)])
        out.append(recipe(img[i]))
    return torch.stack(out)


def test_draws_cover_offsets_and_both_flips():
    dx, dy, flip = _draws(64, 4, seed=3)
    assert set(dx.tolist()) == set(range(9)) and set(dy.tolist()) == set(range(9))
    assert 0 < int(flip.sum()) < 64


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_crop_and_flip_equal_torchvision_on_the_same_draws(seed, monkeypatch):
    img = _images(8, seed)
    dx, dy, flip = _draws(len(img), 4, seed)
    ours = data.cifar_augment(_normalised(img), torch.Generator().manual_seed(seed), padding=4)
    ref = _torchvision(img, dx, dy, flip, monkeypatch)
    assert ((dx != 4) | (dy != 4)).any(), "no image was shifted: the border would not be compared"
    torch.testing.assert_close(ours, ref, rtol=0, atol=2e-6)  # float32 rounding of the same arithmetic


def _zero_padded(x, generator=None, padding=4):
    """The old augmentation: zero padding of the normalised batch (the mean colour), same draws."""
    b, c, h, w = x.shape
    padded = torch.nn.functional.pad(x, (padding,) * 4)
    dx = torch.randint(0, 2 * padding + 1, (b,), generator=generator)
    dy = torch.randint(0, 2 * padding + 1, (b,), generator=generator)
    out = torch.stack([padded[i, :, int(dy[i]):int(dy[i]) + h, int(dx[i]):int(dx[i]) + w] for i in range(b)])
    flip = torch.rand(b, generator=generator) < 0.5
    return torch.where(flip[:, None, None, None], out.flip(3), out)


def test_the_comparison_catches_padding_after_normalisation(monkeypatch):
    img = _images(8, 0)
    dx, dy, flip = _draws(len(img), 4, 0)
    ref = _torchvision(img, dx, dy, flip, monkeypatch)
    old = _zero_padded(_normalised(img), torch.Generator().manual_seed(0))
    with pytest.raises(AssertionError):
        torch.testing.assert_close(old, ref, rtol=0, atol=2e-6)
    inside = (old - ref).abs().amax(1) < 1e-5  # it agrees off the border: only the padding differs
    assert inside.float().mean() > 0.5


def test_the_border_is_black_not_the_mean_colour():
    img = torch.full((1, 3, 32, 32), 255, dtype=torch.uint8)  # a white image: the border is all that is dark
    out = data.cifar_augment(_normalised(img), torch.Generator().manual_seed(5), padding=4)
    black = (0 - torch.tensor(data.CIFAR_MEAN)) / torch.tensor(data.CIFAR_STD)
    dx, dy, _ = _draws(1, 4, 5)
    assert (dx != 4) | (dy != 4)
    dark = out[0] < 0
    assert dark.any(), "no border pixel in this crop"
    torch.testing.assert_close(out[0][dark].view(3, -1), black[:, None].expand(3, int(dark[0].sum())))


def test_torchvision_v2_agrees_on_the_border():
    """The v2 transforms (what new code uses) pad with the same black before normalising."""
    img = _images(1, 4)
    pad = T2.Pad(4, fill=0)(img[0])
    ref = T2.Normalize(data.CIFAR_MEAN, data.CIFAR_STD)(T2.ToDtype(torch.float32, scale=True)(pad))
    ours = data.cifar_augment(_normalised(img), torch.Generator().manual_seed(0), padding=4)
    dx, dy, flip = _draws(1, 4, 0)
    crop = ref[:, int(dy[0]):int(dy[0]) + 32, int(dx[0]):int(dx[0]) + 32]
    torch.testing.assert_close(ours[0], crop.flip(2) if bool(flip[0]) else crop, rtol=0, atol=2e-6)


def test_raw_images_in_zero_one_pad_with_zero():
    x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    out = data.cifar_augment(x, torch.Generator().manual_seed(0), padding=2, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    assert float(out.min()) >= 0.0
    with pytest.raises(ValueError, match=r"std must be finite and > 0"):
        data.cifar_augment(x, padding=2, std=(1.0, 0.0, 1.0))
    with pytest.raises(ValueError, match=r"mean must have shape \(3,\)"):
        data.cifar_augment(x, padding=2, mean=(0.5,))


# ----------------------------------------------------------------------------------------------- contrastive views
class _Views:
    """An augmentation that gives every row it receives a different view, and the loss spy."""

    def __init__(self):
        self.calls = 0

    def __call__(self, batch, generator):
        self.calls += 1
        bumps = torch.arange(1, len(batch) + 1, dtype=batch.dtype, device=batch.device)
        return batch + 0.01 * bumps.view(-1, *([1] * (batch.ndim - 1)))


def _fit_with_spy(monkeypatch, y, setting, augment):
    seen = []
    real = trainer_module.generalized_contrastive_loss

    def spy(anchor, positive, negatives, **kw):
        seen.append((anchor.detach().clone(), positive.detach().clone(), negatives.detach().clone()))
        return real(anchor, positive, negatives, **kw)

    monkeypatch.setattr(trainer_module, "generalized_contrastive_loss", spy)
    index_log = []
    real_indices = trainer_module.contrastive_batch_indices

    def indices(*args, **kw):
        out = real_indices(*args, **kw)
        index_log.append(out)
        return out

    monkeypatch.setattr(trainer_module, "contrastive_batch_indices", indices)
    torch.manual_seed(0)
    model = models.MLP(4, (8,), 3, int(y.max()) + 1, batchnorm=False)
    x = torch.randn(len(y), 4, generator=torch.Generator().manual_seed(1))
    train.fit_contrastive(model, x, y, k=3, setting=setting, steps=2, batch_size=8, lr=0.01, augment=augment, seed=0)
    return seen, index_log


def test_an_anchor_that_is_its_own_positive_gets_another_view(monkeypatch):
    y = torch.arange(3)  # one sample a class: every positive is its anchor
    seen, idx = _fit_with_spy(monkeypatch, y, "scl", _Views())
    a, p, _ = seen[0]
    anc, pos, _ = idx[0]
    assert torch.equal(anc, pos)
    cos = torch.nn.functional.cosine_similarity(a, p, dim=1)
    assert (cos < 1 - 1e-6).all(), f"anchor and positive views are identical: cosines {cos.tolist()}"


def test_a_ucl_negative_that_is_the_anchor_gets_another_view(monkeypatch):
    y = torch.tensor([0, 0, 1])  # three samples: UCL negatives are often the anchor itself
    seen, idx = _fit_with_spy(monkeypatch, y, "ucl", _Views())
    a, _, n = seen[0]
    anc, _, neg = idx[0]
    same = neg == anc[:, None]
    assert same.any(), "no negative drew its anchor: the check would be empty"
    diff = (n - a[:, None, :]).abs().amax(-1)
    assert (diff[same] > 0).all(), "a negative that is its anchor got the anchor's very view"


def test_without_augmentation_each_drawn_sample_is_forwarded_once(monkeypatch):
    """No augmentation: the same sample gives the same features (the sampler's dedup is exact)."""
    y = torch.arange(3)
    seen, idx = _fit_with_spy(monkeypatch, y, "scl", None)
    a, p, _ = seen[0]
    torch.testing.assert_close(a, p, rtol=0, atol=0)


def test_the_view_check_catches_a_shared_view(monkeypatch):
    """The old sampler (one forward per distinct sample, augmentation after the dedup) is reported."""
    shared = _Views()

    def dedup_then_augment(batch, generator):  # every copy of a sample gets one view: what the old sampler did
        uniq, inverse = torch.unique(batch, dim=0, return_inverse=True)
        return shared(uniq, generator)[inverse]

    y = torch.arange(3)
    seen, _ = _fit_with_spy(monkeypatch, y, "scl", dedup_then_augment)
    a, p, _ = seen[0]
    cos = torch.nn.functional.cosine_similarity(a, p, dim=1)
    assert not (cos < 1 - 1e-6).all()


def test_weighted_trainer_draws_each_sample_once():
    """fit_weighted_contrastive's batch is drawn without replacement: each sample has one view and is never its own
    positive (the loss ignores the diagonal)."""
    y = torch.arange(12) % 3
    x = torch.randn(12, 4, generator=torch.Generator().manual_seed(0))
    rows = []

    def augment(batch, generator):
        rows.append(batch.clone())
        return batch

    torch.manual_seed(0)
    train.fit_weighted_contrastive(models.MLP(4, (8,), 3, 3, batchnorm=False), x, y, losses.supcon_weights,
                                   temperature=0.5, steps=3, batch_size=6, augment=augment, seed=0)
    for batch in rows:
        assert len(torch.unique(batch, dim=0)) == len(batch)
    assert len(rows) == 3


def test_cifar_tensors_normalise_as_torchvision(tmp_path):
    """cifar_tensors (the whole split as one tensor) equals torchvision's ToTensor + Normalize, image for image."""
    data.write_cifar_standin(tmp_path, train_per_class=2, test_per_class=1, cifar100_train_per_class=1,
                             cifar100_test_per_class=1)
    x, y = data.cifar_tensors("cifar10", tmp_path, train=True)
    recipe = T.Compose([T.ToTensor(), T.Normalize(data.CIFAR_MEAN, data.CIFAR_STD)])
    ds = data.load_cifar("cifar10", tmp_path, transform=recipe)
    ref = torch.stack([ds[i][0] for i in range(len(ds))])
    torch.testing.assert_close(x, ref, rtol=0, atol=1e-6)
    assert torch.equal(y, torch.tensor([ds[i][1] for i in range(len(ds))]))


def test_a_loader_that_would_yield_no_batch_is_refused():
    x, y = torch.randn(6, 2), torch.arange(6) % 2
    with pytest.raises(ValueError, match="drop_last=True with 6 samples < batch_size = 8 gives no batch"):
        data.make_loader(x, y, 8, drop_last=True)
    assert len(data.make_loader(x, y, 8, drop_last=False)) == 1
