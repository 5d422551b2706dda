"""Models whose penultimate features the chapters measure.

Every model follows one protocol: ``model.features(x)`` returns the penultimate
features ``(n, d)``; ``model.classifier`` is an ``nn.Linear(d, C, bias=False)`` whose
weight is the ``(C, d)`` classifier ``W``; ``model(x)`` returns logits ``(n, C)``;
``model.forward_features(x)`` returns ``(logits, features)`` in one pass.

Non-finite inputs: :func:`cosine_logits` runs in the forward pass and does not check for NaN or
infinity: such a feature gives NaN logits (the trainers stop on the loss it makes).
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from ._validation import check_bool, check_features, check_int, check_positive, unit_rows

__all__ = ["CosineClassifier", "FeatureClassifier", "MLP", "SmallCNN", "ResNetCIFAR", "cosine_logits", "resnet32"]


class FeatureClassifier(nn.Module):
    """Base class: a feature extractor ``self.body`` and a bias-free linear ``self.classifier``.

    Parameters
    ----------
    body : nn.Module
        Maps inputs to features ``(n, d)``.
    feat_dim : int
        ``d``.
    num_classes : int
        ``C``.
    normalize : bool
        L2-normalise the features (contrastive chapters).
    bias : bool
        Give the classifier a bias (off by default: NC theory is bias-free).

    Examples
    --------
    >>> net = FeatureClassifier(nn.Flatten(), 4, 3)
    >>> logits, feats = net.forward_features(torch.ones(2, 2, 2))
    >>> logits.shape, feats.shape, net.classifier.weight.shape
    (torch.Size([2, 3]), torch.Size([2, 4]), torch.Size([3, 4]))
    """

    def __init__(self, body: nn.Module, feat_dim: int, num_classes: int, *, normalize: bool = False, bias: bool = False):
        super().__init__()
        if not isinstance(body, nn.Module):
            raise TypeError(f"body must be a torch.nn.Module mapping inputs to features; got {type(body).__name__}.")
        self.body = body
        self.normalize = check_bool("normalize", normalize)
        self.feat_dim = check_int("feat_dim", feat_dim, 1)
        self.num_classes = check_int("num_classes", num_classes, 1)
        self.classifier = nn.Linear(self.feat_dim, self.num_classes, bias=check_bool("bias", bias))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features ``(n, d)``."""
        h = self.body(x)
        return F.normalize(h, dim=1) if self.normalize else h

    def forward_features(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits (n, C), features (n, d))`` in one pass."""
        h = self.features(x)
        return self.classifier(h), h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class MLP(FeatureClassifier):
    """Multilayer perceptron for digits: Linear-BN-ReLU blocks, then a Linear-BN feature layer.

    The feature layer has no ReLU: a ReLU there keeps features in the positive orthant
    and hides the imbalanced geometry (measured on digits; see the primer chapter).

    Parameters
    ----------
    in_dim : int
        Input size (64 for digits).
    hidden : sequence of int
        Hidden widths.
    feat_dim : int
        Feature dimension ``d`` (``>= C - 1`` for a simplex ETF to fit).
    num_classes : int
    batchnorm : bool
    normalize : bool
        L2-normalise features.

    Examples
    --------
    >>> net = MLP()
    >>> net(torch.zeros(2, 64)).shape, net.features(torch.zeros(2, 64)).shape
    (torch.Size([2, 10]), torch.Size([2, 32]))
    """

    def __init__(self, in_dim: int = 64, hidden: Sequence[int] = (512, 512), feat_dim: int = 32, num_classes: int = 10,
                 *, batchnorm: bool = True, normalize: bool = False, bias: bool = False):
        layers: list[nn.Module] = []
        width = check_int("in_dim", in_dim, 1)
        if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__iter__"):
            raise TypeError(f"hidden must be a sequence of layer widths; got {type(hidden).__name__} {hidden!r}.")
        hidden = [check_int("hidden", h, 1, what="each layer width") for h in hidden]
        feat_dim, num_classes = check_int("feat_dim", feat_dim, 1), check_int("num_classes", num_classes, 1)
        batchnorm = check_bool("batchnorm", batchnorm)
        for h in hidden:
            layers += [nn.Linear(width, h), *( [nn.BatchNorm1d(h)] if batchnorm else []), nn.ReLU()]
            width = h
        layers += [nn.Linear(width, feat_dim)] + ([nn.BatchNorm1d(feat_dim)] if batchnorm else [])
        super().__init__(nn.Sequential(*layers), feat_dim, num_classes, normalize=normalize, bias=bias)


class SmallCNN(FeatureClassifier):
    """A small convolutional network: three conv-BN-ReLU-pool stages, then a linear feature layer.

    Parameters
    ----------
    in_channels : int
        1 for digits/MNIST, 3 for CIFAR.
    num_classes : int
    feat_dim : int
    width : int
        Channels of the first stage (doubled at each stage).

    Examples
    --------
    >>> net = SmallCNN()
    >>> net(torch.zeros(2, 3, 32, 32)).shape
    torch.Size([2, 10])
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 10, feat_dim: int = 128, *, width: int = 32,
                 normalize: bool = False, bias: bool = False):
        in_channels, width = check_int("in_channels", in_channels, 1), check_int("width", width, 1)
        feat_dim, num_classes = check_int("feat_dim", feat_dim, 1), check_int("num_classes", num_classes, 1)
        chans = [in_channels, width, 2 * width, 4 * width]
        blocks: list[nn.Module] = []
        for a, b in zip(chans[:-1], chans[1:]):
            blocks += [nn.Conv2d(a, b, 3, padding=1, bias=False), nn.BatchNorm2d(b), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True)]
        body = nn.Sequential(*blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(chans[-1], feat_dim), nn.BatchNorm1d(feat_dim))
        super().__init__(body, feat_dim, num_classes, normalize=normalize, bias=bias)


class _BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.pad = cout - cin if (stride != 1 or cin != cout) else 0
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        short = x
        if self.pad or self.stride != 1:  # option A: subsample and zero-pad channels (He et al. 2016, CIFAR)
            short = F.pad(x[:, :, :: self.stride, :: self.stride], (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))
        return F.relu(out + short)


class _ResNetBody(nn.Module):
    def __init__(self, depth: int, in_channels: int):
        super().__init__()
        if (depth - 2) % 6:
            raise ValueError(f"depth must be 6k + 2 (20, 32, 44, 56, 110); got {depth}.")
        n = (depth - 2) // 6
        self.stem = nn.Sequential(nn.Conv2d(in_channels, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        stages, cin = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(n):
                stages.append(_BasicBlock(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.stages = nn.Sequential(*stages)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.adaptive_avg_pool2d(self.stages(self.stem(x)), 1).flatten(1)


class ResNetCIFAR(FeatureClassifier):
    """The CIFAR ResNet of He et al. (2016), Section 4.2: ``6k + 2`` layers, widths 16/32/64.

    Features are the 64-d global-average-pooled output, as in LDAM-DRW's ResNet-32.

    References
    ----------
    He, Zhang, Ren, Sun, "Deep residual learning for image recognition", CVPR 2016;
    Cao et al., NeurIPS 2019 (ResNet-32 for CIFAR-LT).
    """

    def __init__(self, depth: int = 32, num_classes: int = 10, *, in_channels: int = 3, normalize: bool = False, bias: bool = False):
        depth = check_int("depth", depth, 8, what="6k + 2: 20, 32, 44, 56, 110")
        in_channels, num_classes = check_int("in_channels", in_channels, 1), check_int("num_classes", num_classes, 1)
        normalize, bias = check_bool("normalize", normalize), check_bool("bias", bias)
        super().__init__(_ResNetBody(depth, in_channels), 64, num_classes, normalize=normalize, bias=bias)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight)


def resnet32(num_classes: int = 10, **kwargs) -> ResNetCIFAR:
    """ResNet-32 for 32x32 inputs (0.46M parameters), see :class:`ResNetCIFAR`.

    Examples
    --------
    >>> resnet32(10)(torch.zeros(1, 3, 32, 32)).shape
    torch.Size([1, 10])
    """
    return ResNetCIFAR(32, num_classes, **kwargs)


# ----------------------------------------------------------------------------- heads
def cosine_logits(features: torch.Tensor, weight: torch.Tensor, *, scale: float = 16.0) -> torch.Tensor:
    r"""Cosine-classifier logits ``z_c = scale * cos(h, w_c)``.

    Parameters
    ----------
    features : torch.Tensor of shape (n, d)
    weight : torch.Tensor of shape (C, d)
    scale : float, default 16
        ``> 0`` (the logits lie in ``[-scale, scale]``; papers write ``s``).

    Returns
    -------
    torch.Tensor of shape (n, C)

    Examples
    --------
    >>> cosine_logits(torch.tensor([[1.0, 1.0]]), torch.tensor([[1.0, 0.0], [0.0, 2.0]]), scale=2.0)
    tensor([[1.4142, 1.4142]])
    """
    features = check_features(features)
    weight = check_features(weight, "weight")
    if weight.shape[1] != features.shape[1]:
        raise ValueError(f"weight must have shape (C, {features.shape[1]}) (the features' width d); "
                         f"got {tuple(weight.shape)}.")
    scale = check_positive("scale", scale)
    dtype = torch.promote_types(features.dtype, weight.dtype)
    features, weight = features.to(dtype), weight.to(device=features.device, dtype=dtype)
    return scale * unit_rows(features, dim=1) @ unit_rows(weight, dim=1).T


class CosineClassifier(nn.Module):
    r"""A cosine head with a ``(C, d)`` weight: ``z = scale * normalize(h) normalize(W)^T``.

    With L2-normalised features, ``||mu_c||_2^2 + sigma_c^2 = mean ||h_i||_2^2 = 1``
    for every class, so MR2 with ``p = 2`` gives every class the mean margin ``gamma_bar`` (``c_bar``); use
    :class:`ncbook.losses.MR2Loss` with ``normalize_features=True`` and ``p != 2`` (e.g. 3).

    Parameters
    ----------
    in_features : int
        ``d``.
    num_classes : int
        ``C``.
    scale : float, default 16

    References
    ----------
    MR2, arXiv:2602.00205 (cosine classifiers with the L_p statistics).

    Examples
    --------
    >>> head = CosineClassifier(4, 3, scale=16.0)
    >>> head(torch.randn(5, 4)).shape, head.bias is None
    (torch.Size([5, 3]), True)
    """

    #: No bias: the head is a drop-in for the bias-free ``nn.Linear`` classifier of
    #: :class:`FeatureClassifier`, and code that reads ``classifier.bias`` gets ``None``.
    bias = None

    def __init__(self, in_features: int, num_classes: int, *, scale: float = 16.0) -> None:
        super().__init__()
        in_features = check_int("in_features", in_features, 1)
        num_classes = check_int("num_classes", num_classes, 1)
        self.scale = check_positive("scale", scale)
        self.in_features, self.out_features = in_features, num_classes
        self.weight = nn.Parameter(torch.empty(num_classes, in_features))
        nn.init.normal_(self.weight, std=1.0 / math.sqrt(in_features))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return cosine_logits(features, self.weight, scale=self.scale)
