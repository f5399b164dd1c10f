"""Scores of estimates against the synthetic city's ground truth."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from traffic.em import Params, Priors
from traffic.generate import Traversal
from traffic.mstep import gamma_logpdf

__all__ = ["heldout_loglik", "l1_error", "parameter_arrays"]


def parameter_arrays(state: Mapping[int, Params], priors: Priors) -> tuple[np.ndarray, np.ndarray]:
    """(shape, scale) of every link: the estimate where there is one, else the prior."""
    k = np.full(len(priors), priors.shape)
    theta = np.array(priors.scale)
    for link, (kl, tl) in state.items():
        k[link], theta[link] = kl, tl
    return k, theta


def l1_error(
    estimated_mean: np.ndarray, true_mean: np.ndarray, mask: np.ndarray | None = None
) -> float:
    """Mean absolute error (s) of the mean travel time over the links in ``mask``."""
    err = np.abs(np.asarray(estimated_mean) - np.asarray(true_mean))
    if mask is not None:
        err = err[mask]
    return float(err.mean()) if len(err) else float("nan")


def heldout_loglik(k: np.ndarray, theta: np.ndarray, traversals: Sequence[Traversal]) -> float:
    """Mean log-density of held-out vehicles' true link travel times under the estimates
    (the log-likelihood of held-out trips per link traversal, links independent)."""
    if not traversals:
        return float("nan")
    links = np.array([t.link for t in traversals])
    x = np.array([t.seconds for t in traversals])
    return float(gamma_logpdf(x, k[links], theta[links]).mean())
