#!/usr/bin/python3
"""Export real PyTorch models to ONNX for reprokit's real-model tests.

reprokit's tests import the ONNX files written here and compare against the
PyTorch eager output saved next to them. Weights are random from a fixed seed
(torch.manual_seed(0) before constructing each model), so nothing is downloaded.

Usage: /usr/bin/python3 tests/models/export_models.py OUT_DIR [--only NAME,NAME] [--batch N]
(--only also exports EXTRA_MODELS: more torchvision models and torch.nn modules, which the suite
does not use; --batch N makes the input's first dimension, the batch, N instead of the model's own.)

For each model, OUT_DIR/<name>/ gets model.onnx, input.npy (batch-1 float32
input, or batch N), expected.npy (eager float32 output) and info.json.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
import torch
import torchvision

OPSET = 17


class EncoderWrapper(torch.nn.Module):
    """TransformerEncoder taking one tensor [batch, seq, d_model].

    norm_first=True keeps torch 1.13's eager no_grad call off the fused fast
    path (_transformer_encoder_layer_fwd), so expected.npy comes from the same
    op-by-op math that the ONNX export traces.
    """

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(
            d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
            batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(
            layer, num_layers=2, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


class Gpt2Block(torch.nn.Module):
    """One GPT-2 block (pre-norm, causal self-attention, tanh-GELU MLP) on [batch, seq, 64]."""

    def __init__(self, d=64, heads=4, seq=16):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc = torch.nn.Linear(d, 4 * d)
        self.proj = torch.nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask, need_weights=False)[0]
        return x + self.proj(torch.nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Recurrent(torch.nn.Module):
    """A two-layer bidirectional nn.LSTM or nn.GRU on [batch, seq, features], batch_first, with
    initial states given: the output sequence plus the final hidden state, flattened into one
    tensor so the tests compare one output."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(input_size=12, hidden_size=16, num_layers=2, batch_first=True, bidirectional=True)
        self.register_buffer("h0", torch.randn(4, 2, 16, generator=torch.Generator().manual_seed(3)))
        self.is_lstm = cell is torch.nn.LSTM

    def forward(self, x):
        if self.is_lstm:
            y, (h, c) = self.rnn(x, (self.h0, self.h0 * 0.5))
            return torch.cat([y.flatten(), h.flatten(), c.flatten()])
        y, h = self.rnn(x, self.h0)
        return torch.cat([y.flatten(), h.flatten()])


class Bag(torch.nn.Module):
    """nn.EmbeddingBag (mean) over fixed offsets, then a linear layer: the export is a Loop over
    the bags. The input is float (the tests feed input.npy as float32); indices are derived from it."""

    def __init__(self):
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(50, 16, mode="mean")
        self.fc = torch.nn.Linear(16, 4)
        self.register_buffer("offsets", torch.tensor([0, 3, 4, 8]))

    def forward(self, x):
        idx = (torch.sigmoid(x) * 49.99).long()
        return self.fc(self.bag(idx.flatten(), self.offsets))


class SelfAttention(torch.nn.Module):
    """nn.MultiheadAttention as self-attention on [batch, seq, 64]."""

    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(64, 4, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class DecoderLayer(torch.nn.Module):
    """nn.TransformerDecoderLayer with its memory the input itself, on [batch, seq, 64]."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerDecoderLayer(64, 4, 128, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x, x)


class FakeQuantMlp(torch.nn.Module):
    """An MLP quantised as quantisation-aware training leaves it: activations (u8) and weights (i8)
    through fake_quantize, exported as QuantizeLinear/DequantizeLinear pairs."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    @staticmethod
    def q(t, scale, zero_point, lo, hi):
        return torch.fake_quantize_per_tensor_affine(t, scale, zero_point, lo, hi)

    def forward(self, x):
        h = self.q(x, 0.02, 128, 0, 255)
        h = torch.nn.functional.linear(h, self.q(self.fc1.weight, 0.005, 0, -128, 127), self.fc1.bias)
        h = self.q(torch.relu(h), 0.01, 0, 0, 255)
        return torch.nn.functional.linear(h, self.q(self.fc2.weight, 0.005, 0, -128, 127), self.fc2.bias)


class Segmentation(torch.nn.Module):
    """A torchvision segmentation model returning its "out" map (its forward returns a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class VideoNet(torch.nn.Module):
    """A small video classifier on [batch, 3, frames, height, width], as the 3-D ResNets begin:
    Conv3d, BatchNorm3d, ReLU, MaxPool3d, then AdaptiveAvgPool3d and a linear head."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv3d(3, 8, kernel_size=(3, 5, 5), stride=(1, 2, 2), padding=(1, 2, 2), bias=False)
        self.bn = torch.nn.BatchNorm3d(8)
        self.pool = torch.nn.MaxPool3d(kernel_size=3, stride=2, padding=1)
        self.conv2 = torch.nn.Conv3d(8, 8, kernel_size=3, padding=1, groups=2)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        x = torch.nn.functional.adaptive_avg_pool3d(torch.relu(self.conv2(x)), 1)
        return self.head(torch.flatten(x, 1))


class DcganGenerator(torch.nn.Module):
    """A small DCGAN generator: a [batch, 16, 1, 1] code through ConvTranspose2d, BatchNorm2d and
    ReLU up to a 3 x 16 x 16 image (tanh)."""

    def __init__(self, nz=16, ngf=8):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), torch.nn.BatchNorm2d(ngf * 4), torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), torch.nn.BatchNorm2d(ngf * 2), torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(ngf * 2, 3, 4, 2, 1, bias=False), torch.nn.Tanh())

    def forward(self, x):
        return self.net(x)


MODELS = {  # name: (constructor, input shape, keep BatchNormalization nodes)
    # resnet18's BatchNorms are folded into its convolutions by the export; mobilenet_v2 keeps
    # them as BatchNormalization nodes (training_mode=0), so both forms are covered.
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), [1, 3, 224, 224], False),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), [1, 3, 224, 224], True),
    "squeezenet1_0": (lambda: torchvision.models.squeezenet1_0(weights=None), [1, 3, 224, 224], False),
    "vit_small": (lambda: torchvision.models.vision_transformer.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=64,
        mlp_dim=128, num_classes=10), [1, 3, 32, 32], False),
    "transformer_encoder": (EncoderWrapper, [1, 8, 32], False),
    "lstm": (lambda: Recurrent(torch.nn.LSTM), [2, 5, 12], False),
    "gru": (lambda: Recurrent(torch.nn.GRU), [2, 5, 12], False),
    "embedding_bag": (Bag, [1, 10], False),  # a Loop over the bags, unrolled at import
    "fake_quant_mlp": (FakeQuantMlp, [4, 32], False),  # QuantizeLinear/DequantizeLinear, u8 and i8
    "video_net": (VideoNet, [1, 3, 8, 16, 16], True),  # Conv3d, MaxPool3d, BatchNorm3d
    "dcgan_generator": (DcganGenerator, [1, 16, 1, 1], True),  # ConvTranspose2d
    "unet": (lambda: TinyUNet(), [1, 3, 32, 32], False),  # GroupNorm written out, imported as group_norm
    # Resize (bilinear, pytorch_half_pixel) upsampling the segmentation map to the input's size.
    "lraspp_mobilenet_v3_large": (lambda: Segmentation(torchvision.models.segmentation.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None)), [1, 3, 128, 128], False),
}

# Exported only when named with --only: models a user would debug (trials of real models), too
# slow to export and run in every suite run.
EXTRA_MODELS = {
    "densenet121": (lambda: torchvision.models.densenet121(weights=None), [1, 3, 224, 224], False),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(weights=None), [1, 3, 224, 224], False),
    "gpt2_block": (Gpt2Block, [1, 16, 64], False),
    "swin_t": (lambda: torchvision.models.swin_t(weights=None), [1, 3, 224, 224], False),
    "inception_v3": (lambda: torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=True), [1, 3, 299, 299], False),
    "googlenet": (lambda: torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True), [1, 3, 224, 224], False),
    "regnet_y_400mf": (lambda: torchvision.models.regnet_y_400mf(weights=None), [1, 3, 224, 224], False),
    "convnext_tiny": (lambda: torchvision.models.convnext_tiny(weights=None), [1, 3, 224, 224], False),
    "shufflenet_v2_x1_0": (lambda: torchvision.models.shufflenet_v2_x1_0(weights=None), [1, 3, 224, 224], False),
    "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(weights=None), [1, 3, 224, 224], False),
    "mnasnet0_5": (lambda: torchvision.models.mnasnet0_5(weights=None), [1, 3, 224, 224], False),
    "resnext50_32x4d": (lambda: torchvision.models.resnext50_32x4d(weights=None), [1, 3, 224, 224], False),
    "vit_b_16": (lambda: torchvision.models.vit_b_16(weights=None), [1, 3, 224, 224], False),
    "mha": (SelfAttention, [2, 16, 64], False),
    "decoder_layer": (DecoderLayer, [2, 16, 64], False),
    "fcn_resnet50": (lambda: Segmentation(torchvision.models.segmentation.fcn_resnet50(
        weights=None, weights_backbone=None, aux_loss=False)), [1, 3, 128, 128], False),
}


class TinyUNet(torch.nn.Module):
    """A two-level U-Net with GroupNorm, a transposed-convolution decoder and a skip connection."""

    def __init__(self, c=8):
        super().__init__()
        block = lambda i, o: torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.GroupNorm(2, o), torch.nn.ReLU())
        self.down1, self.down2 = block(3, c), block(c, 2 * c)
        self.pool = torch.nn.MaxPool2d(2)
        self.up = torch.nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.dec = block(2 * c, c)
        self.head = torch.nn.Conv2d(c, 2, 1)

    def forward(self, x):
        a = self.down1(x)
        b = self.down2(self.pool(a))
        return self.head(self.dec(torch.cat([self.up(b), a], dim=1)))


class AudioCnn(torch.nn.Module):
    """A 1-D CNN over a waveform with InstanceNorm1d and GroupNorm, pooled to class scores."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv1d(1, 8, 9, stride=2), torch.nn.InstanceNorm1d(8, affine=True), torch.nn.ReLU(),
            torch.nn.Conv1d(8, 16, 5, stride=2), torch.nn.GroupNorm(4, 16), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool1d(1), torch.nn.Flatten(), torch.nn.Linear(16, 5))

    def forward(self, x):
        return self.net(x)


class SamplingDecoder(torch.nn.Module):
    """A GPT block whose logits are cut to the top 4 per position, as a sampler does: TopK's values
    weight the logits gathered at its indices."""

    def __init__(self):
        super().__init__()
        self.block = Gpt2Block()
        self.lm_head = torch.nn.Linear(64, 50)

    def forward(self, x):
        logits = self.lm_head(self.block(x))
        values, indices = torch.topk(logits, 4, dim=-1)
        return torch.gather(logits, -1, indices) * torch.softmax(values, dim=-1)


class ShuffleScanEinsum(torch.nn.Module):
    """Super-resolution's PixelShuffle, a cumulative sum and an einsum contraction."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 16, 3, padding=1)
        self.mix = torch.nn.Parameter(torch.randn(4, 3))

    def forward(self, x):
        y = torch.nn.functional.pixel_shuffle(self.conv(x), 2)
        y = torch.cumsum(y, dim=-1) / y.shape[-1]
        return torch.einsum("bchw,cd->bdhw", y, self.mix)


class AffineWarp(torch.nn.Module):
    """A spatial transformer: an affine grid from pooled features (affine_grid written out, as the
    ONNX export has no form for it), then grid_sample."""

    def __init__(self, size=16):
        super().__init__()
        self.loc = torch.nn.Linear(3 * 4 * 4, 6)
        t = (torch.arange(size, dtype=torch.float32) * 2 + 1) / size - 1
        ys, xs = torch.meshgrid(t, t, indexing="ij")
        self.register_buffer("base", torch.stack([xs, ys, torch.ones_like(xs)], -1).reshape(1, size * size, 3))
        self.size = size

    def forward(self, x):
        theta = self.loc(torch.nn.functional.adaptive_avg_pool2d(x, 4).flatten(1)).view(-1, 2, 3)
        grid = torch.matmul(self.base, theta.transpose(1, 2)).view(-1, self.size, self.size, 2)
        return torch.nn.functional.grid_sample(x, grid, align_corners=False)


# One model of each family whose ops reprokit learnt last: video (3-D convolution), U-Net decoders
# (transposed convolution, GroupNorm), audio (InstanceNorm1d), sampling decoders (TopK),
# super-resolution and tensor algebra (DepthToSpace, CumSum, Einsum), spatial transformers
# (GridSample).
FAMILY_MODELS = {
    "r3d_18": (lambda: torchvision.models.video.r3d_18(weights=None), [1, 3, 8, 56, 56], False),
    "mc3_18": (lambda: torchvision.models.video.mc3_18(weights=None), [1, 3, 8, 56, 56], False),
    "r2plus1d_18": (lambda: torchvision.models.video.r2plus1d_18(weights=None), [1, 3, 8, 56, 56], False),
    # S3D's last pooling window is 2x7x7: it needs 16 frames of 224x224.
    "s3d": (lambda: torchvision.models.video.s3d(weights=None), [1, 3, 16, 224, 224], False),
    "audio_cnn": (AudioCnn, [1, 1, 400], False),
    "sampling_decoder": (SamplingDecoder, [1, 16, 64], False),
    "shuffle_scan_einsum": (ShuffleScanEinsum, [1, 4, 8, 8], False),
    "affine_warp": (AffineWarp, [1, 3, 16, 16], False),
}

EXTRA_MODELS.update(FAMILY_MODELS)


def make_outputs_meaningful(model, shape):
    """Random-init models can give outputs that are all zero (ViT's zero-initialized head) or
    vanishingly small (BatchNorm statistics that do not fit the activations), which would make
    any comparison pass. Give zero-filled parameters random values and set every BatchNorm's
    running statistics from a few random batches, so outputs are of order one."""
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and not p.any():
                p.normal_(0.0, 1.0 / max(p.shape[-1], 1) ** 0.5, generator=g)
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:
        for m in bns:
            m.reset_running_stats()
            m.momentum = None  # a cumulative average over the batches below
        model.train()
        with torch.no_grad():
            for _ in range(3):
                model(torch.randn([4] + shape[1:], generator=g))
    return model.eval()


def export_one(name, make, shape, keep_bn, out_dir):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    model = make_outputs_meaningful(make(), shape)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(x)
    path = os.path.join(d, "model.onnx")
    mode = torch.onnx.TrainingMode.PRESERVE if keep_bn else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, (x,), path, opset_version=OPSET,
                      do_constant_folding=not keep_bn, training=mode,
                      input_names=["input"], output_names=["output"])
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    ops = sorted({n.op_type for n in proto.graph.node})
    np.save(os.path.join(d, "input.npy"), np.ascontiguousarray(x.numpy(), dtype=np.float32))
    np.save(os.path.join(d, "expected.npy"),
            np.ascontiguousarray(expected.numpy(), dtype=np.float32))
    info = {
        "name": name,
        "input_name": proto.graph.input[0].name,
        "input_shape": list(shape),
        "output_name": proto.graph.output[0].name,
        "output_shape": list(expected.shape),
        "onnx_ops": ops,
        "opset": OPSET,
        "torch_version": torch.__version__,
    }
    with open(os.path.join(d, "info.json"), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    print(f"{name}: ops={ops} size={os.path.getsize(path)} bytes "
          f"output std={expected.std().item():.3g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--batch", type=int, help="the input's first dimension (the batch)")
    args = ap.parse_args()
    if args.batch is not None and args.batch < 1:
        sys.exit(f"--batch {args.batch}: expected a positive batch size")
    known = {**MODELS, **EXTRA_MODELS}
    names = args.only.split(",") if args.only else list(MODELS)
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"unknown model(s): {', '.join(unknown)}; known: {', '.join(known)}")
    failed = []
    for name in names:
        make, shape, keep_bn = known[name]
        if args.batch is not None:
            shape = [args.batch] + list(shape[1:])
        try:
            export_one(name, make, shape, keep_bn, args.out_dir)
        except Exception as e:  # report and keep going with the other models
            print(f"FAILED {name}: {type(e).__name__}: {e}", file=sys.stderr)
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
