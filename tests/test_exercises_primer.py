import numpy as np

from ncbook import metrics
from ncbook.exercises import check_class_means, check_nc2


def my_nc2(x):  # the chapter's solution
    x = np.asarray(x, dtype=float)
    g = x @ x.T
    c = len(x)
    return np.linalg.norm(g / np.linalg.norm(g) - (np.eye(c) - 1 / c) / np.sqrt(c - 1))


def my_class_means(features, labels, num_classes):
    features, labels = np.asarray(features, dtype=float), np.asarray(labels)
    return np.stack([features[labels == c].mean(0) for c in range(num_classes)])


def test_independent_solutions_pass():
    assert check_nc2(my_nc2)
    assert check_class_means(my_class_means)


def test_the_package_functions_are_not_solutions():
    res = check_nc2(metrics.nc2)
    assert not res and "ncbook.metrics.nc2 itself" in res.message
    res = check_class_means(lambda features, labels, num_classes: metrics.class_means(features, labels, num_classes))
    assert not res and "calls ncbook.metrics.class_means" in res.message


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


def test_missing_return_and_integer_labels_in_messages():
    res = check_nc2(lambda x: None)
    assert not res and "returned None" in res.message and "return" in res.message
    res = check_class_means(lambda features, labels, num_classes: np.zeros((num_classes, 5)))
    assert not res and "labels=[0 1 2]" in res.message
