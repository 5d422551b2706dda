import numpy as np

from ncbook import metrics
from ncbook.exercises import check_class_means, check_nc2


def test_reference_passes():
    assert check_nc2(metrics.nc2)
    assert check_class_means(lambda features, labels, num_classes: metrics.class_means(features, labels, num_classes))


def test_planted_errors_fail_with_a_message():
    def nc2_wrong_target(x):  # forgets the 1/sqrt(C-1) normalisation
        g = x @ x.T
        c = len(x)
        return np.linalg.norm(g / np.linalg.norm(g) - (np.eye(c) - 1 / c))

    res = check_nc2(nc2_wrong_target)
    assert not res and "expected" in res.message and "got" in res.message

    res = check_class_means(lambda features, labels, num_classes: np.zeros((num_classes, 1)))
    assert not res and "shape" in res.message

    def raises(x):
        raise NotImplementedError

    assert "not implemented" in check_nc2(raises).message
