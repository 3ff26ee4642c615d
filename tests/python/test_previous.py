"""The previous placement as every entry point of the module reads it (plan, place, the cluster
runner): one checked reader for files (no FIFO, device or folder is opened for reading, a size cap) and
one verdict on the window's MoE layers, experts and EP ranks, the same as the CLI's --previous."""

import json
import os
import threading

import numpy as np
import pytest

import routepack
from conftest import make_window

STAGES = [("mla", 27.0, 27.0)]


def topo(ep_ranks=4):
    return routepack.Topology(ep_ranks=ep_ranks, dp_slots=4, edp_shards=2, token_cap=2048, stages=STAGES)


def finishes(fn):
    """Runs fn on a daemon thread; its exception (or None) once it returns. A reader that blocks on a
    FIFO would never return: the join's limit turns that hang into a failure, not a stuck suite."""
    out = {}

    def run():
        try:
            fn()
            out["error"] = None
        except Exception as e:  # noqa: BLE001 - the caller asserts on it
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(120)
    assert "error" in out, "the call blocked"
    return out["error"]


@pytest.fixture
def special(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    return [(str(fifo), "is a pipe (FIFO)"), ("/dev/zero", "is a device"), ("/dev/null", "is a device"),
            (str(folder), "is a folder")]


def test_special_files_refused_unread(special):
    """A FIFO blocked, /dev/zero grew to gigabytes, a folder and /dev/null gave raw Python errors: every
    path is refused before a byte is read, with the path and what it is."""
    lengths, counts = make_window()
    for path, what in special:
        expected = f"{path}: {what}, not a placement file (plan or expert map)"
        for call in (lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], previous=path),
                     lambda: routepack.place(counts.sum(axis=0), 4, moe_layers=[1, 2], previous=path)):
            e = finishes(call)
            assert isinstance(e, ValueError) and str(e) == expected
        e = finishes(lambda: routepack._core._read_placement_text(path))
        assert isinstance(e, ValueError) and str(e) == expected


def test_moe_layers_of_a_plan_are_checked(tmp_path):
    """A plan of MoE layers 0-1 was matched row by row to a window of layers 1-2; as a map it was
    refused. Now both are refused alike, as the plan object, its file and a map."""
    lengths, counts = make_window()
    p0 = routepack.plan(lengths, counts, topo(), moe_layers=[0, 1], seed=3)
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], previous=p0)
    assert str(e.value) == "previous: the plan has MoE layers 0-1, the window 1-2"
    f = tmp_path / "p0.json"
    f.write_text(p0.to_json())
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], previous=str(f))
    assert str(e.value) == f"{f}: the plan has MoE layers 0-1, the window 1-2"
    with pytest.raises(ValueError) as e:
        routepack.place(counts.sum(axis=0), 4, moe_layers=[1, 2], previous=f)
    assert str(e.value) == f"{f}: the plan has MoE layers 0-1, the window 1-2"
    m = tmp_path / "map.json"
    m.write_text(p0.placement.export_map("routepack"))
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], previous=str(m))
    assert str(e.value) == f"{m}: the map has MoE layers 0-1, the window 1-2"
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], previous=json.loads(m.read_text()))
    assert str(e.value) == "previous: the map has MoE layers 0-1, the window 1-2"
    # The same layers are taken, in every form, as the same placement.
    p1 = routepack.plan(lengths, counts, topo(), moe_layers=[0, 1], seed=3, previous=str(f), budgets={"max_moves": 0})
    assert (p1.logical_to_physical == p0.logical_to_physical).all()


def test_ep_ranks_of_a_previous_placement_are_checked(tmp_path):
    """A plan or routepack map on 2 EP ranks was taken silently on 4 (its slots then belong to other
    ranks); Placement.moves refused the pair. Every form is refused now."""
    lengths, counts = make_window()
    p0 = routepack.plan(lengths, counts, topo(ep_ranks=2), moe_layers=[1, 2], seed=3)
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], previous=p0)
    assert str(e.value) == "previous: the plan is on 2 EP ranks, the topology has 4"
    with pytest.raises(ValueError) as e:
        routepack.place(counts.sum(axis=0), 4, moe_layers=[1, 2], previous=p0.placement)
    assert str(e.value) == "previous: the placement is on 2 EP ranks, the topology has 4"
    f = tmp_path / "p0.json"
    f.write_text(p0.to_json())
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], previous=str(f))
    assert str(e.value) == f"{f}: the plan is on 2 EP ranks, the topology has 4"
    m = tmp_path / "map.json"
    m.write_text(p0.placement.export_map("routepack"))
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], previous=str(m))
    assert str(e.value) == f"{m}: the map is on 2 EP ranks, the topology has 4"
    # Maps that carry no ranks (SGLang, vLLM) are placements of slots: taken on any EP size.
    v = tmp_path / "vllm.json"
    v.write_text(p0.placement.export_map("vllm"))
    p1 = routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], previous=str(v), budgets={"max_moves": 0})
    assert (p1.logical_to_physical == p0.logical_to_physical).all()


def test_sglang_dense_rows_must_be_the_identity(tmp_path):
    """SGLang writes one row per decoder layer and the identity for dense ones: a dense row that is not
    the identity is not an SGLang map of this model."""
    lengths, counts = make_window()
    p0 = routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], seed=3, num_hidden_layers=3)
    doc = json.loads(p0.placement.export_map("sglang"))
    assert len(doc["physical_to_logical_map"]) == 3 and doc["physical_to_logical_map"][0] == list(range(8))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(doc))
    p1 = routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], num_hidden_layers=3, previous=str(good),
                        budgets={"max_moves": 0})
    assert (p1.logical_to_physical == p0.logical_to_physical).all()
    doc["physical_to_logical_map"][0] = [5, 1, 2, 3, 4, 0, 6, 7]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], num_hidden_layers=3, previous=str(bad))
    assert str(e.value) == (f"{bad}: physical_to_logical_map[0] is decoder layer 0, a dense layer of the window: "
                            "its row must be the identity 0..7 (SGLang's trivial row), but slot 0 holds expert 5")


def test_unknown_plan_fields_refused(tmp_path):
    """A plan with a field no plan writes (a pad of any size) is refused by a scan that builds no
    document, naming the field."""
    lengths, counts = make_window()
    p0 = routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], seed=3)
    doc = json.loads(p0.to_json())
    doc["pad"] = "x" * 1000
    f = tmp_path / "padded.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], previous=str(f))
    assert str(e.value).startswith(f"{f}: unknown field 'pad' (a plan holds format, version, inputs, ")
    with pytest.raises(ValueError) as e:
        routepack.load_plan(str(f))
    assert str(e.value).startswith(f"{f}: unknown field 'pad' (a plan holds format, version, inputs, ")
    # The pad before the format: neither a plan nor a map; the scan stops at its key.
    f.write_text(json.dumps({"pad": "x" * 1000, **json.loads(p0.to_json())}))
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], previous=str(f))
    assert str(e.value) == f"{f}: unknown field 'pad' (neither a plan nor an expert map holds it)"


def test_unlimited_is_a_budget_that_cannot_bind():
    """No budget (None) plans exactly as a budget of every expert of every layer, and no finite budget
    beats it on max_g U."""
    lengths, counts = make_window(n=32, seed=5)
    p0 = routepack.plan(lengths, counts, topo(), moe_layers=[1, 2], seed=3)
    shifted = counts[:, :, ::-1].copy()
    free = routepack.plan(lengths, shifted, topo(), moe_layers=[1, 2], seed=3, previous=p0)
    assert free.migration["max_moves"] is None
    every = routepack.plan(lengths, shifted, topo(), moe_layers=[1, 2], seed=3, previous=p0,
                           budgets={"max_moves": 2 * 8})
    assert every.rows == free.rows and every.score == free.score
    assert (every.logical_to_physical == free.logical_to_physical).all()
    for budget in (0, 1, 2, 4, 8):
        b = routepack.plan(lengths, shifted, topo(), moe_layers=[1, 2], seed=3, previous=p0,
                           budgets={"max_moves": budget})
        assert free.score[0] <= b.score[0], (budget, b.score, free.score)
    # place(): unlimited is the budget of every expert too.
    loads = shifted.sum(axis=0)
    assert routepack.place(loads, 4, moe_layers=[1, 2], previous=p0) == \
        routepack.place(loads, 4, moe_layers=[1, 2], previous=p0, max_moves=16)


def test_verl_mask_must_be_binary():
    """A mask value other than 0 or 1 was summed into a length (0.3 truncated, 2 doubled, NaN negative);
    it is refused as the NeMo adapter refuses non-integral lengths."""
    from routepack.adapters import verl

    mask = np.zeros((4, 14), dtype=np.float32)
    mask[:, :4] = 1
    for value, shown in ((0.3, "0.3"), (2.0, "2.0"), (float("nan"), "nan")):
        bad = mask.copy()
        bad[1, 2] = value
        expected = f"attention_mask[1, 2] = {shown}: an attention mask holds 0 or 1 (a sample's tokens are its row sum)"
        with pytest.raises(ValueError) as e:
            verl.plan_batch(bad, 2, max_token_len=14)
        assert str(e.value).replace("0.30000001192092896", "0.3") == expected
        with pytest.raises(ValueError) as e:
            verl.rearrange_micro_batches({"attention_mask": bad, verl.ROW_KEY: np.array([0, 0, 1, 1])},
                                         max_token_len=14)
        assert str(e.value).replace("0.30000001192092896", "0.3") == expected
    assert verl.mask_lengths(mask.astype(bool)).tolist() == [4, 4, 4, 4]
    assert verl.mask_lengths(mask).tolist() == [4, 4, 4, 4]
