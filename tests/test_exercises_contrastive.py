"""The contrastive chapter's autograder checks: references pass, planted mistakes fail helpfully."""

import itertools
import math

import numpy as np

from ncbook.contrastive import class_means_from_gram, negative_distribution
from ncbook.exercises import check_means_from_gram, check_multiset_risk, check_ucl_collapse_k1


def _risk(gram, class_probs, k, setting, t, *, drop_collisions=False):
    lam = np.asarray(class_probs)
    q = negative_distribution(lam, setting=setting)
    total = 0.0
    for y in range(lam.size):
        for tup in itertools.product(range(lam.size), repeat=k):
            p = np.prod([q[y, c] for c in tup])
            if p:
                inner = sum(np.exp((gram[y, c] - 1) / t) for c in tup if not (drop_collisions and c == y))
                total += lam[y] * p * np.log1p(inner)
    return total


def test_multiset_risk_reference_passes_and_mistake_fails():
    assert check_multiset_risk(_risk)
    bad = check_multiset_risk(lambda **kw: _risk(**kw, drop_collisions=True))
    assert not bad and "expected" in bad.message and "setting='ucl'" in bad.message


def test_ucl_collapse_k1():
    assert check_ucl_collapse_k1(lambda t: 1 / (1 + 2 / (1 + math.exp(2 / t))))
    bad = check_ucl_collapse_k1(lambda t: 1 / (1 + 2 / (1 + math.exp(2))))  # forgot the temperature
    assert not bad and "t=0.25" in bad.message


def test_means_from_gram():
    def by_eigh(gram):
        vals, vecs = np.linalg.eigh(gram)
        return vecs * np.sqrt(np.clip(vals, 0, None))

    assert check_means_from_gram(by_eigh)
    assert "itself" in check_means_from_gram(class_means_from_gram).message
    res = check_means_from_gram(lambda gram: class_means_from_gram(gram))
    assert not res and "calls ncbook.contrastive.class_means_from_gram" in res.message
    res = check_means_from_gram(lambda a: by_eigh(a))
    assert not res and "(gram)" in res.message and "(a)" in res.message

    def no_sqrt(gram):
        vals, vecs = np.linalg.eigh(gram)
        return vecs * np.clip(vals, 0, None)  # eigenvalues instead of their square roots

    bad = check_means_from_gram(no_sqrt)
    assert not bad and "means @ means.T" in bad.message
    assert "not implemented" in check_means_from_gram(lambda gram: (_ for _ in ()).throw(NotImplementedError())).message
