#!/usr/bin/env python3
"""scripts/make_fixtures.py — records kfuse's golden test data from real PyTorch.

For every small model below it writes, into tests/fixtures/:
  <name>.default.pt2   torch.export.export(model, args), saved as is (the
                       default "training" IR: aten.linear, aten.conv2d, ...)
  <name>.core.pt2      the same program after the core ATen decompositions,
                       with scaled_dot_product_attention kept whole
  <name>.kfio          the random inputs and PyTorch's eager fp32 outputs, with
                       the tolerance the CPU interpreter must meet
                       (format: see frontend/kfio.c and docs/FORMATS.md)
plus tests/fixtures/MANIFEST.md (generated: the aten targets in each file; --only
replaces its fixtures' entries and keeps the rest) and
the bundled example examples/resnet_block.pt2.

Run it with PyTorch 2.11 (CPU is enough):  python3 scripts/make_fixtures.py
Options: --only NAME[,NAME...]  --out DIR  --no-example

Everything is deterministic: each model is built and fed under a seed derived
from its name, in float32, in eval mode, under torch.no_grad().

Tolerances. kfuse's interpreter computes in float64 from the recorded fp32
inputs and weights, and is compared with PyTorch's fp32 eager outputs. So the
script checks each stated tolerance right here: it runs the model once more in
float64 (model.double() on the same inputs, widened exactly) and fails if the
fp32 outputs are not within a quarter of the tolerance of that fp64 reference.
A tolerance is loosened only where that check needs it, with the reason
written next to the model.

Half precision (the HALF table: llama_layer_bf16). A model deployed in bf16
or fp16 is recorded in that precision: its weights, buffers and floating
inputs are converted (model.to(dtype)) and the .kfio holds the eager half
outputs. The fp32-vs-fp64 check above cannot serve: it asks half-typed
results to agree exactly after rounding, which holds for a lone cast but not
for a whole layer, where PyTorch rounds every op's result to the half type.
So the reference is the same model widened to fp64 from its half weights
(exact; the model's own fp32 islands, such as transformers' RMSNorm
statistics and rotary angles, stay fp32, ~1e-7), and check_half_tolerance
requires the eager half output's relative error norm against it to stay
within a few unit roundoffs of the type, and its element-wise error within
half of the recorded atol/rtol. The tolerance is that of the type
(HALF_ATOL/HALF_RTOL: a few bf16 ulps at the outputs' magnitude), because
kfuse cannot reproduce PyTorch's roundings: it computes in fp32 inside a
group and rounds to the half type at group boundaries (its interpreter and
per-op fp64 emulation round after every op, as PyTorch does, but compute
each op exactly). The same model widened to fp32 with one rounding at the
end, the far end of what a fused kfuse module does, must be within half of
the tolerance of the eager output as well.
"""
import argparse
import copy
import inspect
import json
import os
import re
import struct
import sys
import warnings
import zipfile
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils import _pytree as pytree

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KFIO_MAGIC = b"KFIO0001"
KFIO_ALIGN = 64
DTYPE_NAMES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
    torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32",
    torch.int16: "i16", torch.int8: "i8", torch.uint8: "ui8", torch.bool: "i1",
}

# default tolerance: fp32 eager vs the fp64 reference
ATOL = 1e-5
RTOL = 1e-5

# ---------------------------------------------------------------------------
# input helpers (all draw from the global generator, seeded per model)


def uni(shape, lo, hi):
    return torch.rand(shape) * (hi - lo) + lo


def nonzero(shape, lo, hi, minabs=0.1):
    """Uniform in [lo, hi] with |x| >= minabs (no zeros, no near-zero divisors)."""
    x = uni(shape, lo, hi)
    small = x.abs() < minabs
    return torch.where(small, torch.where(x < 0, x - minabs, x + minabs), x)


def grid(shape, lo, hi, step=0.5):
    """Values on a coarse grid, so that comparisons see exact ties."""
    n = int(round((hi - lo) / step)) + 1
    return torch.randint(0, n, shape).float() * step + lo


def randn(*shape, scale=1.0):
    return torch.randn(*shape) * scale


def randomize_norms(model):
    """Give batch-norm layers non-trivial statistics and affine parameters
    (the defaults 0/1 would make their arithmetic invisible)."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            if m.running_mean is not None:
                m.running_mean.copy_(torch.randn_like(m.running_mean) * 0.2)
                m.running_var.copy_(torch.rand_like(m.running_var) * 1.5 + 0.5)
            if m.affine:
                m.weight.data.copy_(torch.rand_like(m.weight) + 0.5)
                m.bias.data.copy_(torch.randn_like(m.bias) * 0.2)
        elif isinstance(m, (nn.LayerNorm, nn.GroupNorm)) and m.weight is not None:
            m.weight.data.copy_(torch.rand_like(m.weight) + 0.5)
            m.bias.data.copy_(torch.randn_like(m.bias) * 0.2)
    return model


# ---------------------------------------------------------------------------
# architecture blocks


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.drop = nn.Dropout(0.1)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = self.drop(F.gelu(self.fc2(x)))
        return F.log_softmax(self.fc3(x), dim=-1)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        idn = x if self.down is None else self.down(x)
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + idn)


class ResNetBlock(nn.Module):
    """Stem, one identity basic block, one downsampling block, head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.block1 = BasicBlock(8, 8, 1)
        self.block2 = BasicBlock(8, 16, 2)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.stem(x))))
        x = self.block2(self.block1(x))
        return self.fc(torch.flatten(self.avg(x), 1))


def TvBottlenecks():
    """torchvision's ResNet-50 bottleneck as torchvision builds it (1x1, 3x3
    with the stride, 1x1 expanding 4x, batch norms, a strided 1x1 + batch
    norm downsample, the residual add and ReLU), two blocks in an
    nn.Sequential, so weight names start with a digit ("0.conv1.weight")."""
    from torchvision.models.resnet import Bottleneck
    ds = nn.Sequential(nn.Conv2d(8, 16, 1, 2, bias=False), nn.BatchNorm2d(16))
    return nn.Sequential(Bottleneck(8, 4, 2, ds), Bottleneck(16, 4))


def TvVideoBlocks():
    """torchvision's r3d_18 basic blocks (3x3x3 convolutions, batch norms, a
    strided 1x1x1 + batch norm downsample, residual add, ReLU) in an
    nn.Sequential."""
    from torchvision.models.video.resnet import BasicBlock, Conv3DSimple
    ds = nn.Sequential(nn.Conv3d(4, 8, 1, 2, bias=False), nn.BatchNorm3d(8))
    return nn.Sequential(BasicBlock(4, 8, Conv3DSimple, 2, ds), BasicBlock(8, 8, Conv3DSimple))


def SwinBlocks():
    """torchvision's Swin transformer blocks as swin_t builds them (layer
    norm, window attention with the relative position bias, MLP, residuals;
    input [B, H, W, C] channels-last), twice in an nn.Sequential: one with
    unshifted windows, one shifted by half a window, which rolls the image
    and masks the attention across the wrapped-around windows (the mask is
    built in the graph by writes into slices of a zero tensor). The bias
    table is drawn larger than its 0.02 initialisation, so the bias is
    visible in the scores."""
    from torchvision.models.swin_transformer import SwinTransformerBlock
    m = nn.Sequential(SwinTransformerBlock(16, 2, [4, 4], [0, 0]),
                      SwinTransformerBlock(16, 2, [4, 4], [2, 2]))
    with torch.no_grad():
        for b in m:
            b.attn.relative_position_bias_table.normal_(0.0, 0.5)
    return m


class LlamaLayer(nn.Module):
    """A Llama model of one decoder layer from transformers (LlamaConfig,
    random weights, no download): token embedding, RMSNorm, attention with
    rotary embeddings and grouped-query attention (4 query heads over 2
    key/value heads, SDPA with the causal mask), SwiGLU MLP, final RMSNorm;
    the last hidden state is the output. Recorded in bf16 (see HALF).
    Weights are redrawn so that the layer matters: transformers' 0.02
    initialisation leaves the attention and MLP branches ~1e-3 of the
    residual stream at this width; N(0, 1/fan_in) linear weights, N(0, 1)
    embeddings and RMSNorm gains in [0.5, 1.5) make the layer ~75 % of
    the output."""

    def __init__(self):
        super().__init__()
        from transformers import LlamaConfig, LlamaModel
        cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                          num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                          max_position_embeddings=32, use_cache=False,
                          attn_implementation="sdpa")
        self.model = LlamaModel(cfg)
        with torch.no_grad():
            for m in self.model.modules():
                if isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, std=m.in_features ** -0.5)
                elif isinstance(m, nn.Embedding):
                    nn.init.normal_(m.weight)
                elif type(m).__name__.endswith("RMSNorm"):
                    m.weight.copy_(torch.rand_like(m.weight) + 0.5)

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).last_hidden_state


class VGGBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2, ceil_mode=True)  # odd input: ceil matters

    def forward(self, x):
        return self.pool(F.relu(self.c2(F.relu(self.c1(x)))))


class InvertedResidual(nn.Module):
    """MobileNetV2 block (expand, depthwise, project, residual) + hardswish."""

    def __init__(self, c=8, t=3):
        super().__init__()
        h = c * t
        self.expand = nn.Sequential(nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(h, h, 3, 1, 1, groups=h, bias=False),
                                nn.BatchNorm2d(h), nn.ReLU6())
        self.project = nn.Sequential(nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c))
        self.act = nn.Hardswish()

    def forward(self, x):
        return self.act(x + self.project(self.dw(self.expand(x))))


class MBConv(nn.Module):
    """EfficientNet MBConv: expand, depthwise stride 2, squeeze-excite, project."""

    def __init__(self, cin=8, cout=12, t=4, se=4):
        super().__init__()
        h = cin * t
        self.expand = nn.Sequential(nn.Conv2d(cin, h, 1, bias=False), nn.BatchNorm2d(h), nn.SiLU())
        self.dw = nn.Sequential(nn.Conv2d(h, h, 3, 2, 1, groups=h, bias=False),
                                nn.BatchNorm2d(h), nn.SiLU())
        self.se_reduce = nn.Conv2d(h, se, 1)
        self.se_expand = nn.Conv2d(se, h, 1)
        self.project = nn.Sequential(nn.Conv2d(h, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.dw(self.expand(x))
        s = F.adaptive_avg_pool2d(y, 1)
        s = torch.sigmoid(self.se_expand(F.silu(self.se_reduce(s))))
        return self.project(y * s)


class DenseLayer(nn.Module):
    """DenseNet layer (bottleneck, concat) followed by a transition."""

    def __init__(self, c=8, growth=4):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(c)
        self.conv1 = nn.Conv2d(c, 4 * growth, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(4 * growth)
        self.conv2 = nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False)
        self.tbn = nn.BatchNorm2d(c + growth)
        self.tconv = nn.Conv2d(c + growth, 6, 1, bias=False)

    def forward(self, x):
        y = self.conv1(F.relu(self.bn1(x)))
        y = self.conv2(F.relu(self.bn2(y)))
        y = torch.cat([x, y], 1)
        return F.avg_pool2d(self.tconv(F.relu(self.tbn(y))), 2, 2)


class FireInception(nn.Module):
    """SqueezeNet fire modules (squeeze 1x1, expand 1x1 and 3x3, each with
    ReLU, concatenated) and an Inception-style concatenation whose pieces
    are an epilogue, a value also used elsewhere, the block's input and a
    pooled branch: the cat that computes its pieces where it writes them."""

    def __init__(self, c=8):
        super().__init__()
        self.squeeze = nn.Conv2d(c, 4, 1)
        self.e1 = nn.Conv2d(4, 5, 1)
        self.e3 = nn.Conv2d(4, 3, 3, padding=1)
        self.squeeze2 = nn.Conv2d(8, 4, 1)
        self.f1 = nn.Conv2d(4, 6, 1)
        self.f3 = nn.Conv2d(4, 6, 3, padding=1)
        self.b1 = nn.Conv2d(12, 3, 1)
        self.b3 = nn.Conv2d(12, 5, 3, padding=1)

    def forward(self, x):
        s = F.relu(self.squeeze(x))
        y = torch.cat([F.relu(self.e1(s)), F.relu(self.e3(s))], 1)
        s2 = F.relu(self.squeeze2(y))
        z = torch.cat([F.relu(self.f1(s2)), F.relu(self.f3(s2))], 1)
        t = torch.tanh(self.b3(z))
        w = torch.cat([torch.sigmoid(self.b1(z)) * 2.0, t, x, F.max_pool2d(z, 3, 1, 1)], 1)
        return w, t * 0.5


class Attention(nn.Module):
    def __init__(self, d, heads, causal=False):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class ViTBlock(nn.Module):
    def __init__(self, d=32, heads=4, patch=4, img=16):
        super().__init__()
        n = (img // patch) ** 2
        self.embed = nn.Conv2d(3, d, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.5)
        self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.5)
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, 10)

    def forward(self, img):
        x = self.embed(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return self.head(self.ln(x)[:, 0])


class GPTBlock(nn.Module):
    def __init__(self, vocab=64, d=32, heads=4, ctx=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads, causal=True)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied: one storage, two names

    def forward(self, idx):
        pos = torch.arange(idx.shape[1])
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.attn(self.ln1(x))
        x = x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return self.head(self.lnf(x))


class RNNs(nn.Module):
    """nn.LSTM and nn.GRU (single layer, batch_first) and a hand-written
    Elman cell unrolled over time."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, batch_first=True)
        self.gru = nn.GRU(8, 7, batch_first=True)
        self.wx = nn.Linear(7, 5)
        self.wh = nn.Linear(5, 5, bias=False)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        z, hg = self.gru(y)
        s = torch.zeros(x.shape[0], 5, dtype=x.dtype)
        outs = []
        for t in range(z.shape[1]):
            s = torch.tanh(self.wx(z[:, t]) + self.wh(s))
            outs.append(s)
        # PyTorch 2.11's export gives LSTM's h_n/c_n an extra leading 1
        # ([1, 1, 2, 8]; the eager kernel returns [1, 2, 8]) and its core
        # decomposition really computes that shape, so the raw states would
        # differ from eager in shape. Flattening them is exact either way.
        return torch.stack(outs, 1), h.reshape(-1, 8), c.reshape(-1, 8), hg


class StackedRNNs(nn.Module):
    """The forms pass/recurrences.c rewrites beyond RNNs: a 2-layer LSTM
    started from given states, a 2-layer bidirectional GRU (reverse layers,
    a layer reading the previous one's stacked outputs) and an LSTM of
    which only the final cell state is used (its last h is dead code)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True)
        self.gru = nn.GRU(8, 5, num_layers=2, batch_first=True, bidirectional=True)
        self.lstmc = nn.LSTM(10, 4, batch_first=True)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        z, hg = self.gru(y)
        _, (_, cc) = self.lstmc(z)
        # states flattened as in RNNs (export's extra leading 1)
        return y, h.reshape(-1, 8), c.reshape(-1, 8), z, hg.reshape(-1, 5), cc.reshape(-1, 4)


class ScratchBuffers(nn.Module):
    """Buffers written in forward before anything reads them (KernelBench L3
    33's form: the hidden state copied in from an input, then replaced by
    the new state), and one overwritten from a computed value and broadcast:
    no output depends on what a buffer held between calls, so kfuse drops
    the writes (frontend/pt2_graph.c, mutation_without_state)."""

    def __init__(self, i=6, h=5, o=4):
        super().__init__()
        self.register_buffer("hidden", torch.randn(3, h))
        self.register_buffer("center", torch.randn(h))
        self.i2h = nn.Linear(i + h, h)
        self.h2o = nn.Linear(h, o)

    def forward(self, x, h0):
        self.hidden.copy_(h0)
        combined = torch.cat((x, self.hidden), dim=1)
        self.hidden.copy_(torch.tanh(self.i2h(combined)))
        self.center.copy_(self.hidden.mean(0))
        return self.h2o(self.hidden - self.center), self.hidden


# ---------------------------------------------------------------------------
# op-coverage models


class UnaryMath(nn.Module):
    def forward(self, x, pos, unit, ge1, small):
        return (torch.abs(x), torch.neg(x), torch.exp(x), torch.exp2(x), torch.expm1(small),
                torch.log(pos), torch.log2(pos), torch.log10(pos), torch.log1p(pos),
                torch.sqrt(pos), torch.rsqrt(pos), torch.sin(x), torch.cos(x), torch.tan(small),
                torch.asin(unit), torch.acos(unit), torch.atan(x), torch.sinh(x), torch.cosh(x),
                torch.tanh(x), torch.asinh(x), torch.acosh(ge1), torch.atanh(unit), torch.erf(x),
                torch.sigmoid(x), torch.floor(x), torch.ceil(x), torch.round(x), torch.trunc(x),
                torch.frac(x), torch.sign(x), torch.reciprocal(x))


class UnaryRows(nn.Module):
    """Unary ops added as one row of ops.def (its KF_EW1 table) and nothing
    else but the device function's template line: erfc, on [-3, 3] and into
    its tail, [2, 9]."""
    def forward(self, x, tail):
        return torch.erfc(x), torch.erfc(tail)


class RepeatInterleave(nn.Module):
    """repeat_interleave with an int count, as GPT-J's and CodeGen's rotary
    embedding (dim -1) and grouped-query attention (the head dim) use it,
    over the flattened tensor, and with output_size given."""
    def forward(self, x, sin):
        rot = sin[:, :, None, :].repeat_interleave(2, 3)
        return (x.repeat_interleave(2, dim=-1), x.repeat_interleave(3, dim=1), x.repeat_interleave(2),
                torch.repeat_interleave(x, 2, dim=0, output_size=4), rot * 2.0)


class SpecialValues(nn.Module):
    """isnan / isinf / nan propagation on inputs holding nan and +-inf."""

    def forward(self, x):
        return torch.isnan(x), torch.isinf(x), torch.relu(x), x.abs(), x * 0.0, torch.clamp(x, -1.0, 1.0)


class Activations(nn.Module):
    def forward(self, x):
        return (F.relu(x), F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x), F.mish(x),
                F.hardsigmoid(x), F.hardswish(x), F.hardtanh(x, -0.5, 0.75), F.relu6(x),
                F.leaky_relu(x, 0.02), F.elu(x, 1.3), F.selu(x), F.celu(x, 0.8),
                F.softplus(x, beta=2.0, threshold=5.0), torch.clamp(x, -1.5, 2.0),
                torch.clamp(x, min=-0.25), torch.clamp(x, max=0.5))


class BinaryFloat(nn.Module):
    def forward(self, a, b, c, pos, row, col):
        return (torch.add(a, b, alpha=2.0), a + 3.5, torch.sub(a, b, alpha=0.5), 2.0 - a,
                torch.rsub(a, b, alpha=1.5), a * b, a * 1.5, a / b,
                torch.div(a, c, rounding_mode="trunc"), torch.div(a, c, rounding_mode="floor"),
                a / 4.0, torch.remainder(a, c), torch.remainder(a, 1.5), torch.fmod(a, c),
                torch.fmod(a, -1.5), torch.pow(pos, b), pos ** 2.5, a ** 2, 2.0 ** a,
                torch.atan2(a, b), torch.maximum(row, col), torch.minimum(row, col),
                row + col, row * col - a[:1, :1])


class BinaryInt(nn.Module):
    def forward(self, i, j, k, a):
        return (torch.bitwise_and(i, j), torch.bitwise_or(i, j), torch.bitwise_xor(i, j),
                torch.bitwise_not(i), i & 6, k | 3, k ^ (k + 7), ~k,
                i + j, i - 2 * j, i * 3, i // j, i % j, torch.fmod(i, j),
                torch.div(i, j, rounding_mode="trunc"), i / j,
                i + a, i * 0.5, torch.maximum(i, j), torch.pow(j.abs(), 2), k + i)


class Logical(nn.Module):
    def forward(self, a, b, m):
        return (torch.logical_and(a, b), torch.logical_or(a, m), torch.logical_xor(a, b),
                torch.logical_not(a), torch.logical_not(m), m & (a > 0), m | (b < 0),
                torch.logical_and(m, a > 0.5))


class CompareWhere(nn.Module):
    def forward(self, a, b, x):
        return (a == b, a != b, a < b, a <= b, a > b, a >= b,
                a == 0.5, a != 1.0, a < 0.0, a <= -0.5, a > 1.0, a >= 0.5,
                torch.where(a > b, a, b), torch.where(a < 0, x, 0.0), torch.where(b > 0, 1.0, x),
                x.masked_fill(a > b, -2.5), torch.eq(a.long(), b.long()))


class Casts(nn.Module):
    def forward(self, x, i):
        h = x.half()
        bf = x.to(torch.bfloat16)
        return (x.to(torch.int64), x.to(torch.float64), h, x.to(torch.bool), bf,
                h.float() * 3.0, bf.float() + 1.0, x.to(torch.int64).float(),
                i.float() / 3.0, i.to(torch.bool), i.to(torch.int32), (x > 0).to(torch.float32),
                x.to(torch.float64) * i, i.to(torch.uint8).long(), i.to(torch.int8) * 2)


class Factories(nn.Module):
    def forward(self, x):
        n = x.shape[1]
        return (x + torch.arange(n), x * torch.full((3, n), 2.5), x + torch.zeros(3, n),
                x - torch.ones(n), torch.full_like(x, -1.25) + x, torch.zeros_like(x) + 1,
                torch.ones_like(x, dtype=torch.int64) * 3, torch.scalar_tensor(2.0) * x,
                torch.arange(2, 2 + 3 * n, 3, dtype=torch.float32) * x,
                torch.arange(n, dtype=torch.int64) + torch.arange(0.5, n, 1.0).long(),
                torch.full((2, 2), 7, dtype=torch.int64), torch.ones(3, dtype=torch.bool) & (x[:, 0] > 0))


class ConstantArgs(nn.Module):
    """non-tensor arguments (a flag, a number, None), as Hugging Face
    models take use_cache=False: export specialises them into the graph
    (input_specs 'constant_input') and the module takes only x"""
    def forward(self, x, use_cache, scale, mask):
        y = x * scale if not use_cache else x
        return y + 1.0 if mask is None else y * mask


class Views(nn.Module):
    def forward(self, x, m):
        y = x * 2.0
        return (y.view(6, 20), y.reshape(2, -1), y.permute(3, 1, 0, 2), y.transpose(1, 2) + 1,
                y[:, :1].expand(2, 3, 4, 5) * x, y.unsqueeze(1), y[:, 1:2].squeeze(1),
                y[:, :, 1:4:2], y[:, ::2, ::3], y.select(2, 1), y[..., -1], y[:, -2:, 1:-1],
                torch.as_strided(x, (3, 4), (5, 2), 1), x.unfold(3, 2, 1),
                y.flatten(1, 2), y.flatten(), m.t() - 1, m.t().contiguous(), y.narrow(3, 1, 3),
                y.transpose(0, 3).reshape(5, 24), m.clone(),
                m.unsqueeze(0).expand(4, 3, 7).reshape(12, 7), x.squeeze())


class ShapeOps(nn.Module):
    def forward(self, x, y, z):
        s0, s1 = torch.split(x, 2, dim=1)
        c0, c1, c2 = torch.chunk(x, 3, dim=-1)
        w0, w1, w2 = torch.split(z, [1, 2, 3], dim=2)
        return (torch.cat([x, y], 1), torch.cat([x, x * 2, y.narrow(1, 0, 1)], -2),
                torch.cat([z, z], -1), torch.stack([x, x + 1], 1), torch.stack([c0, c1], -1),
                s0 * 2, s1, c0, c1, c2, w0, w1, w2 - 1,
                F.pad(x, (1, 2)), F.pad(x, (1, -1, 2, 0), value=0.5), F.pad(z, (0, 0, -1, 1, 2, 2), value=-3.0),
                F.pad(x, (-2, -1)))


class Indexing(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(9, 4)

    def forward(self, x, i0, i1, i2, i2d, g, tok):
        return (x[i0], x[i0, i1], x[i0, :, i2], x[:, i1], x[:, i1, i2], x[i2d], x[:, i2d],
                torch.index_select(x, 1, i1.abs()), torch.index_select(x, 2, i2),
                torch.gather(x, 2, g), torch.gather(x, 0, g[:2, :, :1] % 5),
                F.embedding(tok, self.emb.weight), self.emb(tok.t()), x[1, i1], x[i0, 2:4])


class Reductions(nn.Module):
    def forward(self, x, m):
        mx, imx = torch.max(x, 1)
        mn, imn = torch.min(x, -1, keepdim=True)
        return (x.sum(), x.sum(1), x.sum((0, 2), keepdim=True), x.mean(-1), x.mean((1, 2), keepdim=True),
                x.amax(1), x.amax((0, 2), keepdim=True), x.amin(-1), x.amin((0, 1)),
                mx, imx, mn, imn, x.max(), x.min(), x.argmax(), x.argmax(2), x.argmin(1, keepdim=True),
                x.argmin(), x.var(1), x.var((0, 2), correction=0, keepdim=True), x.std(-1),
                x.std(unbiased=False), torch.linalg.vector_norm(x, 2, dim=-1),
                torch.linalg.vector_norm(x, 1, dim=(0, 1)), torch.linalg.vector_norm(x, float("inf"), dim=1, keepdim=True),
                torch.linalg.vector_norm(x, float("-inf")), torch.linalg.vector_norm(x),
                x.cumsum(1), x.cumsum(-1), (x * 0.5).prod(2), x.prod(), m.any(), m.any(1), m.all(-1, keepdim=True),
                m.all(), x.sum(dtype=torch.float64), m.sum(1), m.long().cumsum(0))


class Scans(nn.Module):
    """KernelBench's scans (89-93) and the forms kfuse rewrites or fuses."""

    def forward(self, x, m, d, n):
        c = torch.cumsum(x.narrow(1, 0, x.size(1) - 1), 1)
        return (torch.cumsum(x, 1), torch.cumprod(x * 0.05 + 1, 1),
                torch.cumsum(x.flip(1), 1).flip(1),
                torch.cat((torch.zeros_like(x.select(1, 0).unsqueeze(1)), c), dim=1),
                torch.cumsum(x * m, 1), torch.relu(torch.cumsum(x * d, -1) / d - 0.5),
                torch.cumsum(x, 0), torch.cumprod(x.flip(0) * 0.1 + 1, 0).flip(0), n.cumprod(1), m.cumsum(0))


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm([4, 5])
        self.ln_plain = nn.LayerNorm(5, elementwise_affine=False)
        self.gn = nn.GroupNorm(3, 6)
        self.bn = nn.BatchNorm2d(6)
        self.bn_nostats = nn.BatchNorm2d(6, track_running_stats=False)
        self.bn1 = nn.BatchNorm1d(6)

    def forward(self, x, s):
        return (F.softmax(x, 1), F.softmax(x, -1), F.log_softmax(x, 2), F.log_softmax(s, 0),
                self.ln(x), self.ln_plain(x), self.gn(x), self.bn(x), self.bn_nostats(x),
                self.bn1(x[:, :, 0]), F.layer_norm(x, (5,), eps=1e-3))


class MatMuls(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 6)
        self.lin_nobias = nn.Linear(4, 3, bias=False)

    def forward(self, a, b, ba, bb, bias, v, x4):
        return (torch.mm(a, b), torch.bmm(ba, bb), torch.addmm(bias, a, b, beta=0.5, alpha=2.0),
                torch.addmm(bias, a, b), torch.matmul(v, b), torch.matmul(a, v), torch.matmul(v, v),
                torch.matmul(x4, b), torch.matmul(ba.unsqueeze(0).expand(2, 2, 3, 4), bb),
                self.lin(x4), self.lin_nobias(ba), a @ a.t(), F.linear(a, b.t()[:3], bias[:3]))


class Convs(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2)
        self.c2 = nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2))
        self.c2same = nn.Conv2d(3, 3, 3, padding="same", groups=3, bias=False)
        self.c3 = nn.Conv3d(2, 4, 3, stride=(1, 2, 2), padding=1)
        self.t1 = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.t2 = nn.ConvTranspose2d(3, 6, 3, stride=2, padding=1, output_padding=1, groups=3, dilation=2)
        self.t2b = nn.ConvTranspose2d(3, 2, (2, 3), stride=(1, 2), bias=False)
        self.t3 = nn.ConvTranspose3d(2, 3, (2, 3, 3), stride=2, padding=(0, 1, 1), output_padding=(1, 0, 1))

    def forward(self, x1, x2, x3):
        return (self.c1(x1), self.c2(x2), self.c2same(x2), self.c3(x3), self.t1(x1),
                self.t2(x2), self.t2b(x2), self.t3(x3))


class Upsample(nn.Module):
    """F.interpolate's bilinear and nearest modes, which the core IR keeps
    whole (upsample_bilinear2d.vec, upsample_nearest2d.vec: kf.upsample), by
    size and by scale factor (odd ones, downsampling too), align_corners
    both ways."""

    def forward(self, x):
        up = F.interpolate
        return (up(x, size=(9, 4), mode="bilinear", align_corners=False),
                up(x, size=(9, 13), mode="bilinear", align_corners=True),
                up(x, scale_factor=1.7, mode="bilinear", align_corners=False),
                up(x, scale_factor=(2.0, 0.6), mode="bilinear", align_corners=True),
                up(x, scale_factor=3, mode="bilinear"),
                up(x, size=(1, 1), mode="bilinear", align_corners=True),
                up(x, size=(9, 4), mode="nearest"), up(x, scale_factor=1.7, mode="nearest"),
                up(x, scale_factor=2, mode="nearest"), up(x, scale_factor=(0.6, 2.5), mode="nearest"))


class UpsampleModes(nn.Module):
    """The modes the core IR decomposes into index ops itself (bicubic,
    nearest-exact, linear, trilinear) and 1-d and 3-d nearest, as the
    default IR keeps them (kf.upsample). Bicubic by scale factor with
    align_corners is one PyTorch 2.15's core decomposition gets wrong
    (it disagrees with the eager kernel); the default IR calls the kernel."""

    def forward(self, x1, x2, x3):
        up = F.interpolate
        return (up(x2, size=(8, 11), mode="bicubic", align_corners=False),
                up(x2, scale_factor=1.7, mode="bicubic", align_corners=False),
                up(x2, scale_factor=1.7, mode="bicubic", align_corners=True),
                up(x2, size=(9, 13), mode="bicubic", align_corners=True),
                up(x2, size=(8, 11), mode="nearest-exact"), up(x2, scale_factor=1.7, mode="nearest-exact"),
                up(x1, scale_factor=1.5, mode="linear"), up(x1, size=7, mode="linear", align_corners=True),
                up(x1, size=4, mode="nearest"),
                up(x3, scale_factor=1.5, mode="trilinear"),
                up(x3, size=(3, 5, 9), mode="trilinear", align_corners=True),
                up(x3, scale_factor=2, mode="nearest"))


class SegHead(nn.Module):
    """A torchvision segmentation head's shape: features at stride 2, a
    classifier, then bilinear upsampling to the input's size
    (F.interpolate(..., mode="bilinear", align_corners=False), as
    deeplabv3, fcn and lraspp do)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.Conv2d(8, 8, 3, 2, 1), nn.ReLU())
        self.cls = nn.Conv2d(8, 5, 1)

    def forward(self, x):
        y = self.cls(self.body(x))
        return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)


class Scatters(nn.Module):
    """torch.slice_scatter (a step, an open end, an int64 source converted
    to float as copy_ converts), torch.select_scatter (a negative index,
    core IR: a where over an arange mask) and torch.roll (core IR: an
    index_select of a shifted arange; default IR: aten.roll)."""

    def forward(self, x, y, z, i):
        return (torch.slice_scatter(x, y * 2, 1, 1, 5, 2), torch.slice_scatter(x, z, 2, -3, None),
                torch.slice_scatter(x, i, 1, 0, 2), torch.select_scatter(x, z[:, :, 0], 2, -1),
                torch.roll(x, (1, -2), (1, 2)), torch.roll(x, 3), torch.roll(x, -8, 2))


class ScatterWrites(nn.Module):
    """Writes into slices of a copy, which functionalisation turns into
    slice_scatter (one index: a where over an arange mask), and swin_t's
    shifted-window mask: slices of a zero fill numbered region by region
    (torchvision's SwinTransformerBlock, attn_mask[h, w] = count)."""

    def forward(self, x, y, z):
        a = x.clone()
        a[:, 1:5:2] = y
        b = x.clone()
        b[..., 4:] = z
        c = x.clone()
        c[:, 3] = y[:, 0]
        m = x.new_zeros((6, 7))
        cnt = 0
        for h in (slice(0, -3), slice(-3, -1), slice(-1, None)):
            for w in (slice(0, -2), slice(-2, None)):
                m[h, w] = cnt
                cnt += 1
        return a, b, c, m.unsqueeze(0) + x[0, :6]


class Pools(nn.Module):
    def forward(self, x1, x2, x3):
        mp2, idx2 = F.max_pool2d(x2, 3, 2, 1, ceil_mode=True, return_indices=True)
        return (F.max_pool1d(x1, 3, 2, 1, dilation=2, ceil_mode=True), mp2, idx2,
                F.max_pool2d(x2, (2, 3), (1, 2), (1, 0), dilation=(2, 1)),
                F.max_pool3d(x3, 2, 2, 1), F.max_pool3d(x3, (3, 2, 2), 1, 0, ceil_mode=True),
                F.avg_pool1d(x1, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                F.avg_pool1d(x1, 4, 3),
                F.avg_pool2d(x2, 3, 2, 1, count_include_pad=False),
                F.avg_pool2d(x2, 3, 2, 1, ceil_mode=True, divisor_override=5),
                F.avg_pool2d(x2, (2, 4), (2, 3), (1, 2)),
                F.avg_pool3d(x3, 2, 1, 1), F.avg_pool3d(x3, 3, 2, 1, count_include_pad=False, ceil_mode=True),
                F.adaptive_avg_pool1d(x1, 5), F.adaptive_avg_pool2d(x2, (3, 5)),
                F.adaptive_avg_pool2d(x2, 1), F.adaptive_avg_pool3d(x3, (2, 3, 2)))


class Attn(nn.Module):
    def forward(self, q, k, v, kv2, vv2, bmask, fmask, qs):
        return (F.scaled_dot_product_attention(q, k, v),
                F.scaled_dot_product_attention(q, k, v, attn_mask=bmask),
                F.scaled_dot_product_attention(q, k, v, attn_mask=fmask),
                F.scaled_dot_product_attention(q, k, v, scale=0.3),
                F.scaled_dot_product_attention(qs, qs * 0.5, qs + 1.0, is_causal=True),
                F.scaled_dot_product_attention(q, kv2, vv2, enable_gqa=True),
                F.scaled_dot_product_attention(q, kv2, vv2, attn_mask=bmask, scale=0.5, enable_gqa=True))


# ---------------------------------------------------------------------------
# the fixture list: name -> (module factory, input factory, atol, rtol, note)
# Half-precision fixtures: name -> the dtype the model (weights, buffers and
# floating inputs) is converted to before it is run and exported; checked by
# check_half_tolerance instead of check_tolerance (see the docstring).
HALF = {"llama_layer_bf16": torch.bfloat16}
# unit roundoff of each half type (2^-p, p the significand's bits)
HALF_U = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}
# the bound on a half fixture's relative error norm ||eager - fp64|| / ||fp64||,
# in unit roundoffs of its type
HALF_NORM_U = 4
# their element-wise tolerance (bf16: 1 ulp at 2..4 is 1.6e-2; the eager
# bf16 layer is up to ~2 ulps from the fp64 model)
HALF_ATOL = 5e-2
HALF_RTOL = 5e-2
# Fixtures written in the core IR only: their default IR updates views in
# place (copy_ into a slice of a clone), which kfuse's frontend refuses.
CORE_ONLY = {"scatter_writes"}
# Fixtures written in the default IR only: their core IR is PyTorch's own
# decomposition into index ops (hundreds of nodes; kernels.upsample.core
# ran 250 s with them), ops other fixtures cover.
DEFAULT_ONLY = {"upsample_modes"}


def inputs_unary():
    return dict(x=nonzero((4, 6), -3, 3), pos=uni((4, 6), 0.1, 5), unit=uni((4, 6), -0.95, 0.95),
                ge1=uni((4, 6), 1.05, 4), small=nonzero((4, 6), -1.2, 1.2, 0.05))


def inputs_special():
    x = randn(3, 5)
    x[0, 1] = float("nan")
    x[1, 2] = float("inf")
    x[2, 0] = float("-inf")
    x[2, 4] = float("nan")
    return dict(x=x)


def inputs_binary_float():
    return dict(a=nonzero((4, 8), -4, 4), b=nonzero((4, 8), -2, 2, 0.25), c=nonzero((4, 8), -3, 3, 0.5),
                pos=uni((4, 8), 0.2, 3), row=randn(4, 1), col=randn(1, 8))


def inputs_binary_int():
    j = torch.randint(1, 8, (3, 5)) * (torch.randint(0, 2, (3, 5)) * 2 - 1)
    return dict(i=torch.randint(-20, 21, (3, 5)), j=j,
                k=torch.randint(-100, 100, (3, 5), dtype=torch.int32), a=randn(3, 5))


def inputs_logical():
    a = grid((3, 6), -1, 1)
    b = grid((3, 6), -1, 1)
    return dict(a=a, b=b, m=torch.rand(3, 6) > 0.5)


def inputs_compare():
    return dict(a=grid((4, 6), -1.5, 1.5), b=grid((4, 6), -1.5, 1.5), x=randn(4, 6))


def inputs_casts():
    # keep fractional parts away from integers so fp32 vs fp64 agree on truncation
    return dict(x=nonzero((4, 6), -40, 40, 0.2), i=torch.randint(-50, 120, (4, 6)))


def inputs_indexing():
    return dict(x=randn(5, 6, 7), i0=torch.tensor([0, 4, -1, 2]), i1=torch.tensor([1, 5, 3, 0]),
                i2=torch.tensor([6, 0, 2, 2]), i2d=torch.randint(0, 5, (2, 3)),
                g=torch.randint(0, 7, (5, 6, 3)), tok=torch.randint(0, 9, (3, 4)))


def inputs_reductions():
    return dict(x=randn(3, 4, 5), m=torch.rand(3, 4) > 0.3)


def inputs_scans():
    return dict(x=uni((6, 40), -1, 1), m=torch.rand(6, 40) > 0.5, d=uni((40,), 0.5, 1.5),
                n=torch.randint(-3, 4, (3, 10)))


def inputs_norms():
    return dict(x=randn(2, 6, 4, 5, scale=2.0) + 0.5, s=randn(5, 3))


def inputs_matmuls():
    return dict(a=randn(3, 4), b=randn(4, 5), ba=randn(2, 3, 4), bb=randn(2, 4, 5), bias=randn(5),
                v=randn(4), x4=randn(2, 3, 4))


def inputs_convs():
    return dict(x1=randn(2, 4, 17), x2=randn(2, 3, 9, 10), x3=randn(1, 2, 5, 6, 7))


def inputs_pools():
    return dict(x1=randn(2, 3, 16), x2=randn(2, 3, 11, 12), x3=randn(1, 2, 5, 6, 7))


def inputs_attn():
    bmask = torch.rand(6, 7) > 0.4
    bmask[:, 0] = True  # every query keeps at least one key
    return dict(q=randn(2, 4, 6, 8), k=randn(2, 4, 7, 8), v=randn(2, 4, 7, 8),
                kv2=randn(2, 2, 7, 8), vv2=randn(2, 2, 7, 8), bmask=bmask,
                fmask=randn(2, 1, 6, 7), qs=randn(1, 2, 5, 8))


FIXTURES = {
    # architecture blocks
    "mlp": (MLP, lambda: dict(x=randn(4, 16)), ATOL, RTOL, ""),
    "resnet_block": (ResNetBlock, lambda: dict(x=randn(2, 3, 16, 16)), ATOL, RTOL, ""),
    "vgg_block": (VGGBlock, lambda: dict(x=randn(2, 3, 15, 15)), ATOL, RTOL, ""),
    "tv_bottleneck": (TvBottlenecks, lambda: dict(input=randn(2, 8, 8, 8)), ATOL, RTOL, ""),
    "tv_video_block": (TvVideoBlocks, lambda: dict(input=randn(2, 4, 4, 6, 6)), ATOL, RTOL, ""),
    "swin_block": (SwinBlocks, lambda: dict(input=randn(2, 8, 8, 16)), ATOL, RTOL, ""),
    "llama_layer_bf16": (LlamaLayer, lambda: dict(input_ids=torch.randint(0, 64, (2, 8))),
                         HALF_ATOL, HALF_RTOL, "bf16 model: eager bf16 vs fp64 (HALF)"),
    "mobilenetv2_block": (InvertedResidual, lambda: dict(x=randn(2, 8, 12, 12)), ATOL, RTOL, ""),
    "efficientnet_mbconv": (MBConv, lambda: dict(x=randn(2, 8, 12, 12)), ATOL, RTOL, ""),
    "densenet_layer": (DenseLayer, lambda: dict(x=randn(2, 8, 8, 8)), ATOL, RTOL, ""),
    "fire_inception": (FireInception, lambda: dict(x=randn(2, 8, 7, 9)), ATOL, RTOL, ""),
    "vit_block": (ViTBlock, lambda: dict(img=randn(2, 3, 16, 16)), ATOL, RTOL, ""),
    "gpt_block": (GPTBlock, lambda: dict(idx=torch.randint(0, 64, (2, 8))), ATOL, RTOL, ""),
    "rnn": (RNNs, lambda: dict(x=randn(2, 5, 6)), ATOL, RTOL, ""),
    "scratch_buffers": (ScratchBuffers, lambda: dict(x=randn(3, 6), h0=randn(3, 5)), ATOL, RTOL, ""),
    "rnn_stacked": (StackedRNNs, lambda: dict(x=randn(3, 4, 6), h0=randn(2, 3, 8, scale=0.5),
                                              c0=randn(2, 3, 8, scale=0.5)), ATOL, RTOL, ""),
    # op coverage
    "unary_math": (UnaryMath, inputs_unary, ATOL, RTOL, ""),
    "unary_rows": (UnaryRows, lambda: dict(x=uni((4, 6), -3, 3), tail=uni((4, 6), 2, 9)), ATOL, RTOL, ""),
    "repeat_interleave": (RepeatInterleave, lambda: dict(x=randn(2, 4, 3, 5), sin=randn(1, 6, 4)), ATOL, RTOL, ""),
    "special_values": (SpecialValues, inputs_special, ATOL, RTOL, ""),
    "activations": (Activations, lambda: dict(x=uni((4, 8), -6, 6)), ATOL, RTOL, ""),
    "binary_float": (BinaryFloat, inputs_binary_float, ATOL, RTOL, ""),
    "binary_int": (BinaryInt, inputs_binary_int, ATOL, RTOL, ""),
    "logical": (Logical, inputs_logical, ATOL, RTOL, ""),
    "compare_where": (CompareWhere, inputs_compare, ATOL, RTOL, ""),
    "casts": (Casts, inputs_casts, ATOL, RTOL, ""),
    "factories": (Factories, lambda: dict(x=randn(3, 5)), ATOL, RTOL, ""),
    "constant_args": (ConstantArgs, lambda: dict(x=randn(3, 5), use_cache=False, scale=2.5, mask=None),
                      ATOL, RTOL, "non-tensor arguments: constants of the graph, not module inputs"),
    "views": (Views, lambda: dict(x=randn(2, 3, 4, 5), m=randn(3, 7)), ATOL, RTOL, ""),
    "shape_ops": (ShapeOps, lambda: dict(x=randn(2, 4, 6), y=randn(2, 1, 6), z=randn(3, 2, 6, 2)),
                  ATOL, RTOL, ""),
    "indexing": (Indexing, inputs_indexing, ATOL, RTOL, ""),
    "reductions": (Reductions, inputs_reductions, ATOL, RTOL, ""),
    "scans": (Scans, inputs_scans, ATOL, RTOL, ""),
    "norms": (Norms, inputs_norms, ATOL, RTOL, ""),
    "matmuls": (MatMuls, inputs_matmuls, ATOL, RTOL, ""),
    "convs": (Convs, inputs_convs, ATOL, RTOL, ""),
    "pools": (Pools, inputs_pools, ATOL, RTOL, ""),
    "upsample": (Upsample, lambda: dict(x=randn(2, 3, 5, 7)), ATOL, RTOL, ""),
    "upsample_modes": (UpsampleModes, lambda: dict(x1=randn(2, 3, 5), x2=randn(2, 3, 5, 7),
                                                   x3=randn(1, 2, 2, 3, 4)), ATOL, RTOL, "default IR only"),
    "seg_head": (SegHead, lambda: dict(x=randn(1, 3, 13, 18)), ATOL, RTOL, ""),
    "scatters": (Scatters, lambda: dict(x=randn(2, 6, 7), y=randn(2, 2, 7), z=randn(2, 6, 3),
                                        i=torch.randint(-5, 5, (2, 2, 7))), ATOL, RTOL, ""),
    "scatter_writes": (ScatterWrites, lambda: dict(x=randn(2, 6, 7), y=randn(2, 2, 7), z=randn(2, 6, 3)),
                       ATOL, RTOL, "core IR only"),
    "attention": (Attn, inputs_attn, ATOL, RTOL, ""),
}

# ---------------------------------------------------------------------------
# .kfio writer


def tensor_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.numel() == 0:
        return b""
    raw = t.reshape(-1).view(torch.uint8)
    try:
        return raw.numpy().tobytes()
    except Exception:  # numpy missing: slower but equivalent
        return bytes(raw.tolist())


_FILE_RE = re.compile(r'File "([^"]+)"')


def scrub_paths(prog):
    """Stack traces name files by absolute path. Rewrite them relative to the
    repository or to site-packages, so that committed fixtures name no
    machine's paths (and regenerating on another machine changes nothing)."""
    def rel(m):
        p = m.group(1)
        if p.startswith(REPO + os.sep):
            p = os.path.relpath(p, REPO)
        elif "site-packages" + os.sep in p:
            p = "<site-packages>/" + p.split("site-packages" + os.sep, 1)[1]
        elif os.path.isabs(p):
            p = "<python>/" + os.path.basename(p)
        return f'File "{p}"'
    for n in prog.graph.nodes:
        st = n.meta.get("stack_trace")
        if st:
            n.meta["stack_trace"] = _FILE_RE.sub(rel, st)


def write_kfio(path, model, atol, rtol, inputs, outputs):
    """inputs/outputs: lists of (name, tensor)."""
    entries = {"inputs": [], "outputs": []}
    blobs = []
    off = 0
    for key, items in (("inputs", inputs), ("outputs", outputs)):
        for name, t in items:
            if t.dtype not in DTYPE_NAMES:
                raise SystemExit(f"{path}: {key} {name}: dtype {t.dtype} has no .kfio name")
            data = tensor_bytes(t)
            entries[key].append({"name": name, "dtype": DTYPE_NAMES[t.dtype],
                                 "shape": list(t.shape), "offset": off, "nbytes": len(data)})
            blobs.append((off, data))
            off += len(data)
            off = (off + KFIO_ALIGN - 1) // KFIO_ALIGN * KFIO_ALIGN
    header = {"format": "kfio", "version": 1, "model": model, "torch_version": torch.__version__,
              "atol": atol, "rtol": rtol, "inputs": entries["inputs"], "outputs": entries["outputs"]}
    hb = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    start = (16 + len(hb) + KFIO_ALIGN - 1) // KFIO_ALIGN * KFIO_ALIGN
    with open(path, "wb") as f:
        f.write(KFIO_MAGIC)
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        f.write(b"\0" * (start - 16 - len(hb)))
        pos = 0
        for o, data in blobs:
            f.write(b"\0" * (o - pos))
            f.write(data)
            pos = o + len(data)


# ---------------------------------------------------------------------------
# export, check, record


def seed_for(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def flatten_outputs(out):
    leaves, _ = pytree.tree_flatten_with_path(out)
    res = []
    for path, v in leaves:
        if not isinstance(v, torch.Tensor):
            raise SystemExit(f"output {pytree.keystr(path)} is not a tensor")
        res.append(("out" + pytree.keystr(path) if path else "out", v))
    return res


def check_tolerance(name, got32, ref64, atol, rtol):
    """Fail unless |fp32 - fp64| stays within a quarter of the stated bound."""
    worst = 0.0
    for (oname, a), (_, b) in zip(got32, ref64):
        if a.dtype != b.dtype and not (a.is_floating_point() and b.is_floating_point()):
            raise SystemExit(f"{name}: {oname}: dtype {a.dtype} in fp32 but {b.dtype} in fp64")
        if a.shape != b.shape:
            raise SystemExit(f"{name}: {oname}: shape differs between fp32 and fp64 runs")
        if not a.is_floating_point():
            if not torch.equal(a, b):
                bad = (a != b).nonzero()[0].tolist()
                raise SystemExit(f"{name}: {oname}: integer/bool result differs between fp32 and "
                                 f"fp64 at {bad}: pick inputs away from the decision boundary")
            continue
        a64, b64 = a.double(), b.double()
        nan_a, nan_b = a64.isnan(), b64.isnan()
        if not torch.equal(nan_a, nan_b):
            raise SystemExit(f"{name}: {oname}: NaN pattern differs between fp32 and fp64")
        inf = b64.isinf()
        if not torch.equal(a64[inf], b64[inf]):
            raise SystemExit(f"{name}: {oname}: infinities differ between fp32 and fp64")
        fin = ~(nan_b | inf)
        if fin.any():
            # float16/bfloat16 results carry their own rounding: compare at
            # that precision (the interpreter rounds to the same format).
            if a.dtype in (torch.float16, torch.bfloat16):
                if not torch.equal(a.float()[fin], b.to(a.dtype).float()[fin]):
                    raise SystemExit(f"{name}: {oname}: {a.dtype} result differs between runs")
                continue
            ratio = ((a64 - b64).abs() / (atol + rtol * b64.abs()))[fin].max().item()
            worst = max(worst, ratio)
            if ratio > 0.25:
                raise SystemExit(f"{name}: {oname}: fp32 vs fp64 error is {ratio:.2f} of the "
                                 f"tolerance (atol {atol}, rtol {rtol}); need <= 0.25")
    return worst


def check_half_tolerance(name, got, ref64, wide32, atol, rtol, dtype):
    """A half-precision fixture (HALF): `got` is the eager run in that
    precision (what the .kfio records), `ref64` the same model widened to
    fp64 from its half weights, `wide32` the same widened to fp32 with its
    results rounded once to the half type. Exact agreement after rounding,
    which check_tolerance asks of a lone cast, cannot hold for a whole layer:
    PyTorch rounds every op's result to the half type, so its output carries
    the rounding of every intermediate. Required instead, per float output:
    the relative error norm ||got - ref64|| / ||ref64|| at most HALF_NORM_U
    unit roundoffs of the type; |got - ref64| within half the element-wise
    tolerance (not a quarter: a kfuse result no further from the exact one
    than eager is then within the tolerance of eager); and |wide32 - got|
    within half of it too. wide32 stands for the other end of what kfuse
    may do: kfuse computes in fp32 inside a group and rounds to the half
    type at group boundaries, the interpreter and the per-op fp64 mode
    round after every op as PyTorch does. Returns the worst of these
    element-wise ratios (the manifest's fp64 err column)."""
    bound = HALF_NORM_U * HALF_U[dtype]
    worst = 0.0
    for (oname, a), (_, b), (_, c) in zip(got, ref64, wide32):
        if a.shape != b.shape or a.shape != c.shape:
            raise SystemExit(f"{name}: {oname}: shape differs between the {dtype} and fp64 runs")
        if not a.is_floating_point():
            if not torch.equal(a, b):
                raise SystemExit(f"{name}: {oname}: integer/bool result differs between runs")
            continue
        a64, b64, c64 = a.double(), b.double(), c.to(a.dtype).double()
        if not (a64.isfinite().all() and b64.isfinite().all()):
            raise SystemExit(f"{name}: {oname}: non-finite values in a half-precision fixture")
        norm = ((a64 - b64).norm() / b64.norm().clamp_min(1e-30)).item()
        if norm > bound:
            raise SystemExit(f"{name}: {oname}: {dtype} vs fp64 relative error norm {norm:.2e} "
                             f"exceeds {HALF_NORM_U} unit roundoffs ({bound:.2e})")
        r64 = ((a64 - b64).abs() / (atol + rtol * b64.abs())).max().item()
        r32 = ((c64 - a64).abs() / (atol + rtol * a64.abs())).max().item()
        worst = max(worst, r64, r32)
        if max(r64, r32) > 0.5:
            raise SystemExit(f"{name}: {oname}: {dtype} vs fp64 error is {r64:.2f}, vs the fp32 run "
                             f"{r32:.2f} of the tolerance (atol {atol}, rtol {rtol}); need <= 0.5")
        print(f"  {name}: {oname}: {dtype} vs fp64 relative error norm {norm:.2e} "
              f"(bound {bound:.2e}); element-wise {r64:.2f} (fp64), {r32:.2f} (fp32 run)")
    return worst


def targets_in(path):
    with zipfile.ZipFile(path) as z:
        rec = [n for n in z.namelist() if n.endswith("models/model.json")]
        if not rec:
            return []
        j = json.loads(z.read(rec[0]))
    return sorted({n["target"] for n in j["graph_module"]["graph"]["nodes"]})


def make_one(name, spec, outdir):
    factory, make_inputs, atol, rtol, note = spec
    torch.manual_seed(seed_for(name))
    model = factory()
    with torch.no_grad():
        randomize_norms(model)
    model.eval()
    kw = make_inputs()
    half = HALF.get(name)
    if half is not None:  # weights, buffers and floating inputs in the half type
        model.to(half)
        kw = {k: v.to(half) if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kw.items()}
    params = list(inspect.signature(model.forward).parameters)
    if sorted(params) != sorted(kw):
        raise SystemExit(f"{name}: inputs {sorted(kw)} do not match forward{tuple(params)}")
    args = tuple(kw[p] for p in params)
    written = []
    with torch.no_grad():
        out32 = flatten_outputs(model(*args))
        # the float64 reference: the same model and inputs, widened exactly
        args64 = tuple(a.double() if torch.is_tensor(a) and a.is_floating_point() else a for a in args)
        if half is None:
            out64 = flatten_outputs(model.double()(*args64))
            model.float()
            worst = check_tolerance(name, out32, out64, atol, rtol)
        else:
            out64 = flatten_outputs(copy.deepcopy(model).double()(*args64))
            args32 = tuple(a.float() if torch.is_tensor(a) and a.is_floating_point() else a for a in args)
            wide32 = flatten_outputs(copy.deepcopy(model).float()(*args32))
            worst = check_half_tolerance(name, out32, out64, wide32, atol, rtol, half)

        try:
            ep = torch.export.export(model, args)
        except Exception as e:  # noqa: BLE001 - reported; the other models still run
            print(f"  {name}: torch.export.export failed, no fixture written: "
                  f"{type(e).__name__}: {e}")
            return None
        flavours = {}
        try:
            p = os.path.join(outdir, f"{name}.default.pt2")
            scrub_paths(ep)
            if name in CORE_ONLY:
                if os.path.exists(p):
                    os.remove(p)
            else:
                torch.export.save(ep, p)
                flavours["default"] = p
        except Exception as e:  # noqa: BLE001 - reported, the other flavour still runs
            print(f"  {name}: default IR could not be saved: {type(e).__name__}: {e}")
        try:
            p = os.path.join(outdir, f"{name}.core.pt2")
            if name in DEFAULT_ONLY:
                core = None
                if os.path.exists(p):
                    os.remove(p)
            else:
                table = torch.export.default_decompositions()
                table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
                core = ep.run_decompositions(table)
                scrub_paths(core)
                torch.export.save(core, p)
                flavours["core"] = p
        except Exception as e:  # noqa: BLE001
            core = None
            print(f"  {name}: core IR export failed: {type(e).__name__}: {e}")
        # the exported program must reproduce eager exactly
        for flav, prog in (("default", ep), ("core", core)):
            if prog is None:
                continue
            got = flatten_outputs(prog.module()(*args))
            for (oname, a), (_, b) in zip(got, out32):
                if a.shape != b.shape:  # allclose would broadcast
                    raise SystemExit(f"{name}.{flav}: exported program gives {oname} shape "
                                     f"{list(a.shape)}, eager {list(b.shape)}")
                if not torch.allclose(a.double(), b.double(), atol=atol * 0.1, rtol=rtol * 0.1,
                                      equal_nan=True):
                    raise SystemExit(f"{name}.{flav}: exported program disagrees with eager on {oname}")
    # the module's inputs: the tensors (other arguments are the graph's constants)
    tensors = [k for k in params if torch.is_tensor(kw[k])]
    kfio = os.path.join(outdir, f"{name}.kfio")
    write_kfio(kfio, name, atol, rtol, [(k, kw[k]) for k in tensors], out32)
    for flav, p in flavours.items():
        written.append((f"{name}.{flav}.pt2", os.path.getsize(p), targets_in(p)))
    written.append((f"{name}.kfio", os.path.getsize(kfio), []))
    info = dict(name=name, atol=atol, rtol=rtol, note=note, worst=worst,
                inputs=[(k, DTYPE_NAMES[kw[k].dtype], list(kw[k].shape)) for k in tensors],
                outputs=[(n, DTYPE_NAMES[t.dtype], list(t.shape)) for n, t in out32],
                files=written, ep_core=core)
    return info


def manifest_parts(infos):
    """per fixture: its table row and its section's lines (one a .pt2 with
    its targets), from make_one's records"""
    parts = {}
    for i in infos:
        ins = ", ".join(f"{n}: {d}{s}" for n, d, s in i["inputs"])
        row = (f"| {i['name']} | {ins} | {len(i['outputs'])} | {i['atol']:g} | {i['rtol']:g} | "
               f"{i['worst']:.3f} | {torch.__version__} | {i['note']} |")
        sec = []
        for fname, size, targets in i["files"]:
            if fname.endswith(".pt2"):
                short = [t.replace("torch.ops.aten.", "aten.") for t in targets]
                sec.append(f"- `{fname}` ({size // 1024} KiB): " + ", ".join(f"`{t}`" for t in short))
        parts[i["name"]] = (row, sec)
    return parts


def read_manifest(path):
    """the table rows and sections of an existing MANIFEST.md, so that a
    --only run replaces its own fixtures' entries and keeps the others (a
    manifest written before the PyTorch column gets the version its header
    names)"""
    if not os.path.exists(path):
        return {}
    lines = open(path).read().split("\n")
    version, has_col, rows, secs, cur = "?", False, {}, {}, None
    for ln in lines:
        m = re.match(r"Generated by .* with PyTorch (\S+?);", ln)
        if m:
            version = m.group(1)
        if ln.startswith("| model |"):
            has_col = "| PyTorch |" in ln
        elif ln.startswith("| ") and not ln.startswith("|---"):
            cells = ln.split(" | ")
            name = cells[0][2:]
            if not has_col:
                ln = " | ".join(cells[:-1] + [version, cells[-1]])
            rows[name] = ln
        elif ln.startswith("## "):
            cur = ln[3:]
            secs[cur] = []
        elif cur and ln.startswith("- `"):
            secs[cur].append(ln)
    return {n: (rows[n], secs.get(n, [])) for n in rows}


def write_manifest(outdir, infos, merge=False):
    path = os.path.join(outdir, "MANIFEST.md")
    parts = read_manifest(path) if merge else {}
    parts.update(manifest_parts(infos))
    order = [n for n in FIXTURES if n in parts] + [n for n in parts if n not in FIXTURES]
    lines = ["# tests/fixtures — manifest", "",
             "Generated by `scripts/make_fixtures.py` (the PyTorch that recorded each model is in",
             "its row); do not edit by hand.", "",
             "Each model has `<name>.default.pt2` (torch.export default IR), `<name>.core.pt2`",
             "(core ATen, SDPA kept whole) and `<name>.kfio` (inputs and eager fp32 outputs).",
             "Tolerance: `|interp - eager| <= atol + rtol * |eager|`; the generator checked",
             "that PyTorch's own float64 run is within a quarter of it (column *fp64 err*).",
             "Half-precision models (bf16/fp16 weights and activations; the script's HALF",
             "table) record their eager half outputs; the reference is the same model widened",
             "to fp64 from the half weights: relative error norm within 4 unit roundoffs of the",
             "type, element-wise within half the tolerance, as is the model run in fp32 (the",
             "far end of kfuse's fp32-inside-a-group arithmetic). Their tolerance is the type's",
             "(PyTorch rounds after every op, kfuse at group boundaries).", ""]
    lines.append("| model | inputs | outputs | atol | rtol | fp64 err | PyTorch | why loosened |")
    lines.append("|---|---|---|---|---|---|---|---|")
    lines += [parts[n][0] for n in order]
    lines.append("")
    for flav in ("default", "core"):
        union = set()
        for n in order:
            for ln in parts[n][1]:
                if ln.startswith(f"- `{n}.{flav}.pt2`"):
                    union.update(re.findall(r"`(aten\.[^`]+)`", ln))
        lines.append(f"All targets in the {flav} files ({len(union)}): " +
                     ", ".join(f"`{t}`" for t in sorted(union)))
        lines.append("")
    for n in order:
        lines += [f"## {n}", ""] + parts[n][1] + [""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "fixtures"))
    ap.add_argument("--only", default="")
    ap.add_argument("--no-example", action="store_true")
    a = ap.parse_args()
    if sys.byteorder != "little":
        raise SystemExit(".kfio and .pt2 data are little-endian; run this on a little-endian machine")
    torch.set_num_threads(1)  # the same reduction order on every machine
    # known, harmless noise from torch 2.11's export internals
    warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\).*")
    warnings.filterwarnings("ignore", message=r".*_flat_weights.*were assigned during export.*")
    os.makedirs(a.out, exist_ok=True)
    names = [n for n in a.only.split(",") if n] or list(FIXTURES)
    for n in names:
        if n not in FIXTURES:
            raise SystemExit(f"unknown fixture '{n}' (known: {', '.join(FIXTURES)})")
    print(f"PyTorch {torch.__version__}; writing to {a.out}")
    infos = []
    for n in names:
        info = make_one(n, FIXTURES[n], a.out)
        if info is not None:
            infos.append(info)
    write_manifest(a.out, infos, merge=bool(a.only))
    if not a.no_example and "resnet_block" in names:
        ex = os.path.join(REPO, "examples", "resnet_block.pt2")
        os.makedirs(os.path.dirname(ex), exist_ok=True)
        rb = [i for i in infos if i["name"] == "resnet_block"]
        if not rb or rb[0]["ep_core"] is None:
            raise SystemExit("resnet_block has no core IR: cannot write the example")
        torch.export.save(rb[0]["ep_core"], ex)
        print(f"example: {os.path.relpath(ex, REPO)} ({os.path.getsize(ex)} bytes)")
    total = 0
    print(f"\n{'file':34} {'bytes':>8}  targets")
    for i in infos:
        for fname, size, targets in i["files"]:
            total += size
            short = " ".join(t.replace("torch.ops.aten.", "") for t in targets)
            print(f"{fname:34} {size:8d}  {short}")
            if size >= 1 << 20:
                raise SystemExit(f"{fname} is {size} bytes: fixtures must stay well under 1 MB")
    print(f"total {total} bytes in {sum(len(i['files']) for i in infos)} files")


if __name__ == "__main__":
    main()
