"""The capture: what Dynamo hands a backend, as a reprokit graph that computes what PyTorch does."""
import os
import subprocess

import pytest
import torch
import torch.nn.functional as F

from models import MODELS
from reprokit.torch.capture import capture
from reprokit.torch.rk_text import UnsupportedGraph


def captured_through_dynamo(fn, inputs, name="g"):
    """Each graph Dynamo hands the backend, captured (or the UnsupportedGraph it raised)."""
    got = []

    def backend(gm, example_inputs):
        try:
            got.append(capture(gm, example_inputs, name))
        except UnsupportedGraph as e:
            got.append(e)
        return gm.forward

    with torch.no_grad():
        torch.compile(fn, backend=backend)(*inputs)
    return got


@pytest.mark.parametrize("model", sorted(MODELS))
def test_model_is_captured_and_matches_pytorch(model, tmp_path, reprokit_exe, monkeypatch):
    """Every node of the model's graph is captured, and reprokit's float64 reference on the
    captured graph agrees with PyTorch's own outputs (reprokit compare, the noise floor)."""
    if model == "lstm":
        monkeypatch.setattr(torch._dynamo.config, "allow_rnn", True)  # Dynamo's switch to capture RNNs
    module, inputs = MODELS[model]()
    graphs = captured_through_dynamo(module, inputs, model)
    assert len(graphs) == 1, graphs
    g = graphs[0]
    assert not isinstance(g, UnsupportedGraph), f"{g} ({g.op} at {g.where})"
    path = g.write(str(tmp_path), with_outputs=True)
    r = subprocess.run([reprokit_exe, "compare", path, "--inputs", str(tmp_path / "inputs"), "--outputs", str(tmp_path / "outputs"),
                        "--tolerance", "auto"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_parameters_are_inputs_named_as_in_the_program(tmp_path):
    lin = torch.nn.Linear(4, 3)
    (g,) = captured_through_dynamo(lambda x: torch.relu(lin(x)), [torch.randn(2, 4)])
    header = g.text.splitlines()[1]
    assert "%x: f32[2, 4]" in header
    assert "weight: f32[3, 4]" in header and "bias: f32[3]" in header
    assert "  %addmm = linear(%x, " in g.text  # F.linear is written as one linear node, as captured


def test_group_and_instance_norm_are_captured_as_their_ops():
    gn = torch.nn.GroupNorm(2, 4)
    inorm = torch.nn.InstanceNorm1d(4, affine=True)
    (g,) = captured_through_dynamo(lambda x: inorm(gn(x).flatten(2)), [torch.randn(3, 4, 2, 5)])
    assert not isinstance(g, UnsupportedGraph), g
    assert "group_norm(%x, " in g.text and "num_groups=2" in g.text
    assert g.text.count("instance_norm(") == 1 and "batch_norm(" not in g.text
    bn = torch.nn.BatchNorm1d(4, track_running_stats=False)  # the batch's statistics, no running statistics
    (g,) = captured_through_dynamo(lambda x: bn(x), [torch.randn(3, 4, 5)])
    assert not isinstance(g, UnsupportedGraph), g
    assert "instance_norm(" in g.text and "transpose(" in g.text


def test_pixel_shuffle_and_unshuffle_are_captured_as_their_ops():
    (g,) = captured_through_dynamo(lambda x: F.pixel_unshuffle(F.pixel_shuffle(x, 2) * 2, 3), [torch.randn(2, 8, 3, 3)])
    assert not isinstance(g, UnsupportedGraph), g
    assert "pixel_shuffle(%x, upscale_factor=2)" in g.text and "downscale_factor=3" in g.text


def test_grid_sample_and_affine_grid_are_captured_as_their_ops():
    def warp(x, theta):
        grid = F.affine_grid(theta, [2, 3, 4, 5], align_corners=True)
        return F.grid_sample(x, grid, mode="nearest", padding_mode="border", align_corners=True)

    (g,) = captured_through_dynamo(warp, [torch.randn(2, 3, 6, 7), torch.randn(2, 2, 3)])
    assert not isinstance(g, UnsupportedGraph), g
    assert "affine_grid(%theta, size=[2, 3, 4, 5], align_corners=true)" in g.text
    assert 'mode="nearest", padding_mode="border", align_corners=true' in g.text
    (e,) = captured_through_dynamo(lambda x, grid: F.grid_sample(x, grid, mode="bicubic", align_corners=False),
                                   [torch.randn(1, 1, 3, 3), torch.rand(1, 2, 2, 2)])
    assert isinstance(e, UnsupportedGraph) and "bicubic" in str(e)


def test_an_op_reprokit_lacks_is_named_with_its_source_line():
    (e,) = captured_through_dynamo(lambda x: torch.logcumsumexp(x, 0) + 1, [torch.randn(5)])
    assert isinstance(e, UnsupportedGraph)
    assert "logcumsumexp" in e.op
    assert e.where.endswith("test_capture.py:" + str(test_an_op_reprokit_lacks_is_named_with_its_source_line.__code__.co_firstlineno + 1))


def test_a_constant_computed_from_no_input_becomes_an_input():
    def masked(x):
        mask = torch.tril(torch.ones(4, 4, dtype=torch.bool))
        return x.masked_fill(~mask, 0.0)

    (g,) = captured_through_dynamo(masked, [torch.randn(4, 4)])
    assert not isinstance(g, UnsupportedGraph), g
    assert len(g.inputs) == 2 and g.inputs[1].dtype == torch.bool
    assert torch.equal(g.inputs[1], ~torch.tril(torch.ones(4, 4, dtype=torch.bool)))  # ~mask: computed from no input
    assert "where(" in g.text


def test_a_graph_of_an_aten_graph_with_unused_results_keeps_only_what_the_outputs_need():
    bn = torch.nn.BatchNorm2d(3).eval()
    (g,) = captured_through_dynamo(bn, [torch.randn(1, 3, 4, 4)])
    body = [l for l in g.text.splitlines() if l.startswith("  %")]
    assert len(body) == 1 and "batch_norm(" in body[0], g.text


def test_scans_sorts_and_top_k_are_captured_and_match_pytorch(tmp_path, reprokit_exe):
    """cumsum, cumprod, sort (both of its results), argsort and topk (both results) with their
    attributes, against PyTorch's outputs (reprokit compare on the float64 reference)."""

    def f(x, i):
        s = torch.sort(x, dim=0, descending=True)
        t = torch.topk(x, 2, dim=-1, largest=False)
        return (torch.cumsum(x, 1), torch.cumprod(x, dim=0), torch.cumsum(i, 0), s.values, s.indices,
                torch.argsort(x, dim=1), t.values * 2, t.indices, torch.topk(x, 3).values)

    (g,) = captured_through_dynamo(f, [torch.randn(4, 5), torch.randint(-9, 9, (6,), dtype=torch.int32)], "scans")
    assert not isinstance(g, UnsupportedGraph), f"{g} ({g.op} at {g.where})"
    for op in ("cumsum(", "cumprod(", "sort(", "argsort(", "topk(", "topk_indices("):
        assert op in g.text, g.text
    path = g.write(str(tmp_path), with_outputs=True)
    r = subprocess.run([reprokit_exe, "compare", path, "--inputs", str(tmp_path / "inputs"), "--outputs", str(tmp_path / "outputs"),
                        "--tolerance", "auto"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_convolutions_backward_is_captured_as_its_gradients(tmp_path, reprokit_exe):
    """The backward graph AOTAutograd makes for a strided, padded, grouped convolution holds
    aten.convolution_backward: captured as conv2d_input_grad, conv2d_weight_grad and the bias's sum,
    its values agree with PyTorch's (reprokit compare, the noise floor)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    torch.manual_seed(0)
    conv = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, dilation=(1, 2), groups=2)
    got = []

    def keep_backward(gm, example_inputs):  # captured on its first run, with the real inputs
        def run(*args):
            got.append(capture(gm, list(args), "backward"))
            return gm(*args)

        return make_boxed_func(run)

    step = torch.compile(lambda x: torch.tanh(conv(x)).sum(), backend=aot_autograd(fw_compiler=lambda gm, _: make_boxed_func(gm.forward), bw_compiler=keep_backward))
    step(torch.randn(2, 4, 9, 10, requires_grad=True)).backward()
    (g,) = got
    assert not isinstance(g, UnsupportedGraph), g
    for op in ("conv2d_input_grad(", "conv2d_weight_grad(", "sum("):
        assert op in g.text, g.text
    path = g.write(str(tmp_path), with_outputs=True)
    r = subprocess.run([reprokit_exe, "compare", path, "--inputs", str(tmp_path / "inputs"), "--outputs", str(tmp_path / "outputs"),
                        "--tolerance", "auto"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_max_poolings_backward_under_inductors_decompositions_is_captured(tmp_path, reprokit_exe):
    """With Inductor's decompositions, max pooling keeps offsets inside each window and its backward
    scatter-adds the gradient at indices computed from them (prims._low_memory_max_pool_offsets_to_indices,
    aten.scatter_add): captured, the backward graph's values agree with PyTorch's."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
    import torch._inductor.lowering  # noqa: F401 (the decompositions consult it)
    from torch._inductor.decomposition import select_decomp_table

    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    pool = torch.nn.MaxPool2d(3, stride=2, padding=1, dilation=(1, 2))
    got = []

    def keep_backward(gm, example_inputs):
        def run(*args):
            got.append(capture(gm, list(args), "backward"))
            return gm(*args)

        return make_boxed_func(run)

    backend = aot_autograd(fw_compiler=lambda gm, _: make_boxed_func(gm.forward), bw_compiler=keep_backward, decompositions=select_decomp_table())
    step = torch.compile(lambda x: pool(torch.relu(conv(x))).square().sum(), backend=backend)
    step(torch.randn(2, 3, 11, 12, requires_grad=True)).backward()
    (g,) = got
    assert not isinstance(g, UnsupportedGraph), f"{g} ({g.op} at {g.where})"
    assert "scatter_add(" in g.text and "conv2d_input_grad(" in g.text, g.text
    path = g.write(str(tmp_path), with_outputs=True)
    r = subprocess.run([reprokit_exe, "compare", path, "--inputs", str(tmp_path / "inputs"), "--outputs", str(tmp_path / "outputs"),
                        "--tolerance", "auto"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
