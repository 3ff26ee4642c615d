"""Shared fixtures of the routepack module tests: a small synthetic window with fixed seeds."""

import os

import numpy as np
import pytest


def make_window(n=24, layers=2, experts=8, k=2, seed=3, max_len=900):
    """n samples with lengths in 100..max_len and routing counts a[i][l][e] summing to
    k * (t_i - 1) per layer (replay rows), skewed towards low expert ids."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(100, max_len, size=n).astype(np.int64)
    weights = 1.0 / np.arange(1, experts + 1)
    weights /= weights.sum()
    counts = np.zeros((n, layers, experts), dtype=np.uint32)
    for i in range(n):
        for l in range(layers):
            counts[i, l] = rng.multinomial(k * (int(lengths[i]) - 1), np.roll(weights, l))
    return lengths, counts


@pytest.fixture
def window():
    return make_window()


def shared_dir():
    d = os.environ.get("ROUTEPACK_SHARED_DIR", "")
    return d if d and os.path.isdir(d) else None


def cli():
    return os.environ.get("ROUTEPACK_CLI", "")


def cli_env():
    """The environment for running the CLI as a child: the sanitizer pass preloads its runtime into Python,
    which a sanitizer-built CLI refuses to load a second time."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
