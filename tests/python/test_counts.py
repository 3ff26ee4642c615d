"""routepack.counts_from_routes: hand cases, the numpy bincount reference, errors."""

import numpy as np
import pytest

import routepack


def reference_counts(routes, valid, moe_layers, num_experts, layer_axis):
    """numpy reference: for each sample, per MoE layer, bincount of its valid routes (-1 dropped)."""
    B, S, L, K = routes.shape
    out = np.zeros((B, len(moe_layers), num_experts), dtype=np.int32)
    for b in range(B):
        rows = routes[b] if valid is None else routes[b][valid[b].astype(bool)]
        for l, layer in enumerate(moe_layers):
            j = layer if layer_axis == "all" else l
            v = rows[:, j, :].reshape(-1).astype(np.int64)
            v = v[v >= 0]
            out[b, l] = np.bincount(v, minlength=num_experts)
    return out


def test_hand_case_all_layers():
    # One sample, 3 tokens, 3 decoder layers (layer 0 dense), top-2, E = 4; MoE layers 1, 2.
    routes = np.array([[
        [[9, 9], [0, 1], [3, 3]],
        [[9, 9], [1, -1], [2, 0]],
        [[9, 9], [1, 2], [-1, -1]],
    ]], dtype=np.int16)
    c = routepack.counts_from_routes(routes, 4, moe_layers=[1, 2])  # the dense row (9s) is ignored
    assert c.dtype == np.int32 and c.shape == (1, 2, 4)
    assert c.tolist() == [[[1, 3, 1, 0], [1, 0, 1, 2]]]
    # The mask drops token 1: layer 1 keeps (0,1),(1,2); layer 2 keeps (3,3).
    valid = np.array([[True, False, True]])
    assert routepack.counts_from_routes(routes, 4, moe_layers=[1, 2], valid=valid).tolist() == [[[1, 2, 1, 0], [0, 0, 0, 2]]]
    # Only the MoE rows, layer_axis='moe'.
    moe_only = np.ascontiguousarray(routes[:, :, 1:, :])
    assert routepack.counts_from_routes(moe_only, 4, moe_layers=[1, 2], layer_axis="moe").tolist() == c.tolist()
    # The same as a list of [T, L, K] arrays.
    assert routepack.counts_from_routes([routes[0]], 4, moe_layers=[1, 2]).tolist() == c.tolist()


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.uint8, np.int64, np.int8])
@pytest.mark.parametrize("layer_axis", ["all", "moe"])
def test_matches_numpy_bincount(dtype, layer_axis):
    rng = np.random.default_rng(4)
    B, S, L, K, E = 5, 37, 6, 3, 16
    moe_layers = [1, 2, 4, 5]
    rows = L if layer_axis == "all" else len(moe_layers)
    routes = rng.integers(0, E, size=(B, S, rows, K))
    if np.dtype(dtype).kind == "i":
        routes[rng.random(routes.shape) < 0.1] = -1
    routes = routes.astype(dtype)
    valid = rng.random((B, S)) < 0.8
    got = routepack.counts_from_routes(routes, E, moe_layers=moe_layers, layer_axis=layer_axis, valid=valid)
    assert (got == reference_counts(routes, valid, moe_layers, E, layer_axis)).all()
    # Non-contiguous input (every other token) is accepted and gives the same as its copy.
    view = routes[:, ::2]
    assert (routepack.counts_from_routes(view, E, moe_layers=moe_layers, layer_axis=layer_axis)
            == reference_counts(np.ascontiguousarray(view), None, moe_layers, E, layer_axis)).all()


def test_list_of_samples_with_different_lengths():
    rng = np.random.default_rng(8)
    samples = [rng.integers(-1, 8, size=(t, 4, 2)).astype(np.int32) for t in (3, 10, 1, 0)]
    got = routepack.counts_from_routes(samples, 8, moe_layers=[0, 3])
    assert got.shape == (4, 2, 8)
    for i, s in enumerate(samples):
        for l, layer in enumerate([0, 3]):
            v = s[:, layer, :].reshape(-1)
            assert got[i, l].tolist() == np.bincount(v[v >= 0], minlength=8).tolist()
    assert routepack.counts_from_routes([], 8, moe_layers=[0]).shape == (0, 1, 8)


def error(*args, **kw):
    with pytest.raises(ValueError) as e:
        routepack.counts_from_routes(*args, **kw)
    return str(e.value)


def test_errors():
    r = np.zeros((2, 3, 4, 2), dtype=np.int16)
    bad = r.copy()
    bad[1, 2, 3, 1] = 7
    assert error(bad, 4, moe_layers=[3]) == "routes[1, 2, 3, 1] = 7 is outside 0..3 (-1 = no route)"
    bad[1, 2, 3, 1] = -2
    assert error(bad, 4, moe_layers=[3]) == "routes[1, 2, 3, 1] = -2 is outside 0..3 (-1 = no route)"
    assert error([r[0], bad[1]], 4, moe_layers=[3]) == "routes[1][2, 3, 1] = -2 is outside 0..3 (-1 = no route)"
    u8 = np.full((1, 1, 1, 1), 255, dtype=np.uint8)
    assert error(u8, 4, moe_layers=[0]) == "routes[0, 0, 0, 0] = 255 is outside 0..3 (-1 = no route)"
    assert error(r.astype(np.float32), 4, moe_layers=[1]) == (
        "routes must be int16, int32 or uint8 (int8 and int64 also accepted; got dtype float32)")
    assert error(r[0], 4, moe_layers=[1]) == (
        "routes must be [B, S, L, K] or a list of [T, L, K] arrays (got shape (3, 4, 2))")
    assert error([r[0, 0]], 4, moe_layers=[1]) == "routes[0] must be 3-dimensional [T, L, K] (got shape (4, 2))"
    assert error([r[0], r[0, :, :2]], 4, moe_layers=[1]) == (
        "routes[1] has shape (3, 2, 2); every sample needs the same [L, K] = [4, 2]")
    assert error(r, 4, moe_layers=[4]) == (
        "routes have 4 layer rows but MoE layer 4 needs layer_axis='all' rows 0..4 "
        "(give layer_axis='moe' when the rows are the MoE layers only)")
    assert error(r, 4, moe_layers=[1, 2], layer_axis="moe") == (
        "routes have 4 layer rows, expected len(moe_layers) = 2 with layer_axis='moe'")
    assert error(r, 4, moe_layers=[1], layer_axis="dense") == "layer_axis must be 'all' or 'moe' (got 'dense')"
    assert error(r, 0, moe_layers=[1]) == "num_experts must be >= 1 (got 0)"
    assert error(r, 4, moe_layers=[1], valid=np.ones((2, 4), bool)) == "valid has shape (2, 4); expected [B, S] = (2, 3)"
    assert error(r, 4, moe_layers=[1], valid=np.ones((2, 3), np.float32)) == (
        "valid must be a bool or integer mask (got dtype float32)")
    assert error([r[0]], 4, moe_layers=[1], valid=np.ones((1, 3), bool)) == (
        "valid applies to a [B, S, L, K] array; a list of [T, L, K] arrays has no mask")
    assert error(r, 4, moe_layers=[]) == "moe_layers must name at least one MoE layer"


@pytest.mark.parametrize("dtype", ["i2", "i4", "i8"])
def test_big_endian_routes_count_as_native(dtype):
    # Expert 6 of 16, stored big-endian: counted as expert 6 (not 6 x 256, not "1536 is outside").
    routes = np.zeros((1, 1, 2, 1), dtype="<" + dtype)
    routes[0, 0, 1, 0] = 6
    got = routepack.counts_from_routes(routes.astype(">" + dtype), 16, moe_layers=[1])
    assert got.tolist() == [[[0, 0, 0, 0, 0, 0, 1] + [0] * 9]]
    # A random batch, as [B, S, L, K] with a big-endian mask, and as a list of big-endian samples:
    # byte for byte the counts of the native array.
    rng = np.random.default_rng(11)
    native = rng.integers(-1, 16, size=(3, 20, 4, 2)).astype("<" + dtype)
    valid = rng.integers(0, 2, size=(3, 20)).astype("<i4")
    want = routepack.counts_from_routes(native, 16, moe_layers=[0, 2, 3], valid=valid)
    swapped = routepack.counts_from_routes(native.astype(">" + dtype), 16, moe_layers=[0, 2, 3],
                                           valid=valid.astype(">i4"))
    assert swapped.tobytes() == want.tobytes()
    assert want.tobytes() == reference_counts(native, valid, [0, 2, 3], 16, "all").tobytes()
    listed = routepack.counts_from_routes([s.astype(">" + dtype) for s in native], 16, moe_layers=[0, 2, 3])
    assert listed.tobytes() == routepack.counts_from_routes(list(native), 16, moe_layers=[0, 2, 3]).tobytes()
    # Non-contiguous big-endian views too.
    view = native.astype(">" + dtype)[:, ::3]
    assert routepack.counts_from_routes(view, 16, moe_layers=[0, 2, 3]).tobytes() == \
        reference_counts(np.ascontiguousarray(native[:, ::3]), None, [0, 2, 3], 16, "all").tobytes()
    # An out-of-range route is named with its own value.
    bad = routes.astype(">" + dtype)
    bad[0, 0, 1, 0] = 17
    assert error(bad, 16, moe_layers=[1]) == "routes[0, 0, 1, 0] = 17 is outside 0..15 (-1 = no route)"


def test_counts_scalar_arguments():
    routes = np.zeros((1, 2, 2, 1), dtype=np.int16)
    routes[0, :, 1, 0] = [3, 1]
    want = [[[0, 1, 0, 1]]]
    # numpy integers are integers, for num_experts and every MoE layer id.
    assert routepack.counts_from_routes(routes, np.int64(4), moe_layers=[np.int32(1)]).tolist() == want
    assert routepack.counts_from_routes(routes, np.uint8(4), moe_layers=np.array([1])).tolist() == want
    assert routepack.counts_from_routes(routes, np.array(4), moe_layers=(1,)).tolist() == want
    # Bools are never integers; out-of-range values are named, not wrapped.
    assert error(routes, True, moe_layers=[1]) == "num_experts must be an integer (got True)"
    assert error(routes, np.bool_(True), moe_layers=[1]) == "num_experts must be an integer (got True)"
    assert error(routes, 4, moe_layers=[True]) == "moe_layers[0] must be an integer (got True)"
    assert error(routes, 4, moe_layers=np.array([True])) == "moe_layers[0] must be an integer (got True)"
    assert error(routes, 4.0, moe_layers=[1]) == "num_experts must be an integer (got 4.0)"
    assert error(routes, 2**40, moe_layers=[1]) == "num_experts = 1099511627776 is too large (at most 2147483647)"
    assert error(routes, 4, moe_layers=[1, np.int64(2**40)]) == (
        "moe_layers[1] = 1099511627776 is too large (at most 2147483647)")
    assert error(routes, 4, moe_layers=1) == "moe_layers must be a list of integers (got int)"
    assert error(routes, 4, moe_layers="1") == "moe_layers must be a list of integers (got str)"
    assert error(routes, 4, moe_layers=[1], layer_axis=1) == "layer_axis must be a str (got int)"
    # A bool route array is not an integer array.
    assert error(routes.astype(bool), 4, moe_layers=[1]) == (
        "routes must be int16, int32 or uint8 (int8 and int64 also accepted; got dtype bool)")


class RaisingIndex:
    """An integer-like whose __index__ raises `exc` (a Ctrl-C arriving during the conversion)."""

    def __init__(self, exc):
        self.exc = exc

    def __index__(self):
        raise self.exc


class RaisingArray:
    def __array__(self, *args, **kwargs):
        raise KeyboardInterrupt


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, MemoryError])
def test_counts_conversion_propagates_base_exceptions(exc):
    routes = np.zeros((1, 1, 2, 1), dtype=np.int16)
    with pytest.raises(exc):
        routepack.counts_from_routes(routes, RaisingIndex(exc), moe_layers=[1])
    with pytest.raises(exc):
        routepack.counts_from_routes(routes, 4, moe_layers=[RaisingIndex(exc)])
    with pytest.raises(KeyboardInterrupt):
        routepack.counts_from_routes(RaisingArray(), 4, moe_layers=[1])
    with pytest.raises(KeyboardInterrupt):
        routepack.counts_from_routes([routes[0], RaisingArray()], 4, moe_layers=[1])
    with pytest.raises(KeyboardInterrupt):
        routepack.counts_from_routes(routes, 4, moe_layers=[1], valid=RaisingArray())
    # A plain conversion failure (TypeError from __index__) stays the argument's ValueError.
    assert error(routes, RaisingIndex(TypeError("no")), moe_layers=[1]).startswith("num_experts must be an integer")


def test_bools_inside_route_lists():
    # A list of samples, each [T=1, L=2, K=1] as nested lists: a bool in one is named by its index.
    assert error([[[0], [1]], [[[0], [True]]]][1:], 4, moe_layers=[1]) == (
        "routes[0][0, 1, 0] = True is a bool, not an integer")
    assert error([np.zeros((1, 2, 1), np.int16), [[[0], [np.bool_(True)]]]], 4, moe_layers=[1]) == (
        "routes[1][0, 1, 0] = True is a bool, not an integer")
    # A mask is made of bools: a list of them is fine.
    got = routepack.counts_from_routes(np.array([[[[1], [2]], [[3], [3]]]], np.int16), 4, moe_layers=[1],
                                       valid=[[True, False]])
    assert got.tolist() == [[[0, 0, 1, 0]]]
