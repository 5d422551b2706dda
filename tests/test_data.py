import time

import numpy as np
import pytest
import torch

from ncbook import data


@pytest.mark.parametrize("n_max,c,ratio,total", [
    (5000, 10, 100, 12406), (500, 100, 100, 10847), (5000, 10, 10, 20431), (500, 100, 10, 19573),
    (5000, 10, 50, 13996), (500, 100, 50, 12608), (5000, 10, 200, 11203), (500, 100, 200, 9502)])
def test_cifar_lt_totals(n_max, c, ratio, total):
    counts = data.long_tailed_counts(n_max, c, ratio)
    assert counts.sum() == total
    assert counts[0] == n_max and counts[-1] == int(n_max / ratio)
    assert np.all(np.diff(counts) <= 0)


def test_step_profile():
    counts = data.long_tailed_counts(100, 10, 10, "step", minority_fraction=0.3)
    np.testing.assert_array_equal(counts, [100] * 7 + [10] * 3)
    np.testing.assert_array_equal(data.long_tailed_counts(50, 4, 1), [50] * 4)


def test_long_tailed_counts_bad_inputs():
    with pytest.raises(ValueError, match=r"imbalance_ratio must be >= 1"):
        data.long_tailed_counts(100, 10, 0.5)
    with pytest.raises(ValueError, match="n_max must be an integer >= 1"):
        data.long_tailed_counts(-5, 10, 10)
    with pytest.raises(ValueError, match="minority_fraction must be in"):
        data.long_tailed_counts(100, 10, 10, "step", minority_fraction=1.0)
    with pytest.raises(ValueError, match="leaves a class empty"):
        data.long_tailed_counts(10, 10, 100)
    with pytest.raises(ValueError, match="kind must be one of"):
        data.long_tailed_counts(10, 10, 2, "linear")


def test_make_imbalanced_exact_counts_and_errors():
    labels = np.repeat(np.arange(3), [50, 40, 30])
    idx = data.make_imbalanced(labels, [20, 7, 3], seed=1)
    np.testing.assert_array_equal(np.bincount(labels[idx.numpy()]), [20, 7, 3])
    assert len(set(idx.tolist())) == 30
    assert torch.equal(idx, data.make_imbalanced(labels, [20, 7, 3], seed=1))
    with pytest.raises(ValueError, match=r"labels hold 30 samples of class 2 but counts asks for 31"):
        data.make_imbalanced(labels, [20, 7, 31])
    with pytest.raises(ValueError, match=r"class 1 is empty"):
        data.make_imbalanced(labels, [5, 0, 3])
    with pytest.raises(ValueError, match=r"class 0 is negative"):
        data.make_imbalanced(labels, [-1, 2, 3])


def test_load_digits_split():
    s = data.load_digits(test_per_class=50)
    assert s.x_train.shape == (1297, 64) and s.x_test.shape == (500, 64)
    assert s.x_train.dtype == torch.float32 and s.y_train.dtype == torch.int64
    np.testing.assert_array_equal(torch.bincount(s.y_test).numpy(), [50] * 10)
    np.testing.assert_allclose(s.x_train.mean(0).numpy(), 0, atol=1e-5)


def test_cifar_offline_fails_fast_with_a_clear_message(tmp_path):
    start = time.perf_counter()
    with pytest.raises(data.DatasetUnavailableError, match=r"cifar10 is not available under root="):
        data.load_cifar("cifar10", tmp_path, download=False)
    with pytest.raises(ValueError, match="name must be one of"):
        data.load_cifar("mnist", tmp_path)
    assert time.perf_counter() - start < 60  # generous: it must not hang


def test_cifar_augment_keeps_shape_and_content():
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    out = data.cifar_augment(x, torch.Generator().manual_seed(0), padding=0)
    assert out.shape == x.shape
    for i in range(2):  # with no padding, only flips are possible
        assert torch.equal(out[i], x[i]) or torch.equal(out[i], x[i].flip(2))
    out = data.cifar_augment(x, torch.Generator().manual_seed(0), padding=2)
    assert out.shape == x.shape


def test_step_profile_never_silently_balanced():
    with pytest.raises(ValueError, match=r"gives 0 minority classes"):
        data.long_tailed_counts(100, 4, 2, "step", minority_fraction=0.1)
    # half of 5 classes rounds half up: 3 minorities
    np.testing.assert_array_equal(data.long_tailed_counts(10, 5, 2, "step", minority_fraction=0.5), [10, 10, 5, 5, 5])
