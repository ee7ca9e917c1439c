"""PyTorch models that COMET trains as a user would export them.

Each is built with torch.manual_seed(seed) (and torch's own initializers,
so the weights are the ones a user gets), takes a [batch, 1, 28, 28] input and
gives [batch, 10] logits; `gpt` takes int64 token ids [batch, seq_len] and
gives [batch * seq_len, vocab] logits (its `example_input` is what the
export traces).  comet.export turns them into ONNX with
torch.onnx.export in training mode and then into ONNX Runtime training
artifacts; docs/models.md describes them and the op types of their graphs.

This module imports torch and torchvision, which only the export environment
(.venv-export, made by scripts/setup.sh from Debian's python3-torch 1.13 and
python3-torchvision 0.14) has; comet.export imports it lazily.
"""

from __future__ import annotations

import torch
from torch import nn

def _stem_conv(conv: nn.Conv2d) -> nn.Conv2d:
    # A 1-channel copy of an RGB stem conv, initialized as torchvision
    # initializes its convs (Kaiming normal, fan_out).
    new = nn.Conv2d(1, conv.out_channels, conv.kernel_size, conv.stride,
                    conv.padding, bias=conv.bias is not None)
    nn.init.kaiming_normal_(new.weight, mode="fan_out", nonlinearity="relu")
    if new.bias is not None:
        nn.init.zeros_(new.bias)
    return new


def resnet18() -> nn.Module:
    """torchvision resnet18, stem conv 1->64 7x7 stride 2, 10 classes."""
    import torchvision

    m = torchvision.models.resnet18(weights=None, num_classes=10)
    m.conv1 = _stem_conv(m.conv1)
    assert (m.conv1.kernel_size, m.conv1.stride) == ((7, 7), (2, 2))
    return m


def mobilenet_v2() -> nn.Module:
    """torchvision mobilenet_v2, first conv 1->32, 10 classes."""
    import torchvision

    m = torchvision.models.mobilenet_v2(weights=None, num_classes=10)
    m.features[0][0] = _stem_conv(m.features[0][0])
    assert m.features[0][0].out_channels == 32
    return m


def shufflenet_v2_x0_5() -> nn.Module:
    """torchvision shufflenet_v2_x0_5, first conv 1->24, 10 classes."""
    import torchvision

    m = torchvision.models.shufflenet_v2_x0_5(weights=None, num_classes=10)
    old = m.conv1[0]
    # torchvision leaves ShuffleNetV2's convs at torch's default initializer,
    # so the 1-channel copy keeps it too (not _stem_conv's Kaiming normal).
    m.conv1[0] = nn.Conv2d(1, old.out_channels, old.kernel_size, old.stride,
                           old.padding, bias=old.bias is not None)
    assert (m.conv1[0].out_channels, m.conv1[0].stride) == (24, (2, 2))
    return m


class StochasticDepth(nn.Module):
    """torchvision's StochasticDepth in "row" mode, written so that torch's
    ONNX exporter takes it in training mode: each sample's residual branch
    is kept with probability 1 - p and scaled by 1 / (1 - p). torchvision
    draws the per-sample noise with Tensor.bernoulli_(1 - p), which torch
    1.13 cannot export ("out parameter is not supported for bernoulli");
    dropout of a [batch, 1, ..., 1] tensor of ones is the same noise, and
    exports as ConstantOfShape and Dropout (Dropout's mask is the noise)."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        ones = torch.ones([x.shape[0]] + [1] * (x.dim() - 1), dtype=x.dtype)
        return x * nn.functional.dropout(ones, self.p, training=True)


def efficientnet_b0() -> nn.Module:
    """torchvision efficientnet_b0, stem conv 1->32 3x3 stride 2, 10
    classes; each block's StochasticDepth replaced by the exportable
    StochasticDepth above with the same p."""
    import torchvision
    from torchvision.ops import StochasticDepth as TvStochasticDepth

    m = torchvision.models.efficientnet_b0(weights=None, num_classes=10)
    m.features[0][0] = _stem_conv(m.features[0][0])
    assert (m.features[0][0].out_channels, m.features[0][0].stride) == (32, (2, 2))
    for block in m.modules():
        sd = getattr(block, "stochastic_depth", None)
        if isinstance(sd, TvStochasticDepth):
            assert sd.mode == "row"
            block.stochastic_depth = StochasticDepth(sd.p)
    return m


class Transformer(nn.Module):
    """A Transformer encoder over the 28 image rows as tokens of 28 pixels:
    Linear embedding + learned position, `layers` pre-norm encoder layers
    (GELU, dropout), mean pool over the tokens, LayerNorm, Linear head."""

    def __init__(self, d_model=64, heads=4, ff=256, layers=2, dropout=0.1,
                 tokens=28, token_dim=28, classes=10):
        super().__init__()
        self.embed = nn.Linear(token_dim, d_model)
        self.pos = nn.Parameter(torch.zeros(1, tokens, d_model))
        nn.init.normal_(self.pos, std=0.02)
        # Separate layers (not nn.TransformerEncoder, which deep-copies one
        # layer), so that the two start from different weights.
        self.layers = nn.Sequential(*[
            nn.TransformerEncoderLayer(d_model, heads, ff, dropout, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(layers)])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        x = self.embed(x.squeeze(1)) + self.pos  # [B, 28, d]
        x = self.layers(x)
        return self.head(self.norm(x.mean(dim=1)))


def transformer() -> nn.Module:
    return Transformer()


class Cnn(nn.Module):
    """The tutorial CNN: (Conv 3x3 - BatchNorm - ReLU - MaxPool 2x2) twice,
    Flatten, Dropout 0.25, Linear 128, ReLU, Linear 10."""

    def __init__(self, c1=16, c2=32, hidden=128, classes=10, dropout=0.25):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, c1, 3, padding=1), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1), nn.BatchNorm2d(c2), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(dropout), nn.Linear(c2 * 7 * 7, hidden), nn.ReLU(),
            nn.Linear(hidden, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def cnn() -> nn.Module:
    return Cnn()


class ActNet(nn.Module):
    """Sigmoid, tanh and average pooling: Conv 3x3 - Sigmoid - AvgPool 2x2,
    Conv 3x3 - Tanh - AvgPool 3x3 stride 2 pad 1 (count_include_pad=False),
    Flatten, Linear 10.  torch exports the first pool (count_include_pad
    defaults to True) as a Pad before an unpadded AveragePool, the second
    as an AveragePool with pads."""

    def __init__(self, c1=8, c2=16, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, c1, 3, padding=1), nn.Sigmoid(), nn.AvgPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1), nn.Tanh(),
            nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(c2 * 7 * 7, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def actnet() -> nn.Module:
    return ActNet()


class Embedding(nn.Module):
    """A token model over the 28 image rows: each row's middle pixel,
    quantized to 16 levels, picks a learned 8-dim embedding (nn.Embedding),
    and the row itself goes through Linear 28->8. Three 8-dim features per
    row are concatenated, flattened and classified by Linear 672->10:
    GELU(embedding), GELU(Linear(row)) and GELU(embedding * gain). Small; it
    exists for the ops ORT writes for embeddings and concatenation (Gather,
    GatherGrad, ConcatTraining, SplitTraining) and for the three forms ORT
    gives an exported GELU: fused with the Linear's bias (BiasGelu), alone
    after the Gather (Gelu), and unfused after the Mul (Div, Erf, Add, Mul,
    with Erf's gradient built from Mul, Neg and Exp)."""

    def __init__(self, levels=16, dim=8, tokens=28, token_dim=28, classes=10):
        super().__init__()
        self.levels = levels
        self.embed = nn.Embedding(levels, dim)
        self.proj = nn.Linear(token_dim, dim)
        self.gain = nn.Parameter(torch.ones(dim))
        self.act = nn.GELU()
        self.head = nn.Linear(tokens * 3 * dim, classes)

    def forward(self, x):
        rows = x.squeeze(1)  # [B, 28, 28]
        ids = (rows[:, :, rows.shape[2] // 2] * (self.levels - 1)).long()  # [B, 28]
        e = self.embed(ids)
        h = torch.cat([self.act(e), self.act(self.proj(rows)), self.act(e * self.gain)], dim=2)
        return self.head(h.flatten(1))


def embedding() -> nn.Module:
    return Embedding()


class GptBlock(nn.Module):
    """A pre-norm decoder block as GPT code writes it: one Linear makes q, k
    and v (`.split(d, dim=2)`), the causal mask is a registered `tril`
    buffer applied with `masked_fill(mask == 0, -inf)`, then softmax,
    dropout, the output projection and a GELU MLP (4 x d)."""

    def __init__(self, d, heads, seq_len, dropout):
        super().__init__()
        assert d % heads == 0, (d, heads)
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(seq_len, seq_len))
                             .view(1, 1, seq_len, seq_len))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        hd = C // self.heads
        q = q.view(B, T, self.heads, hd).transpose(1, 2)
        k = k.view(B, T, self.heads, hd).transpose(1, 2)
        v = v.view(B, T, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / hd ** 0.5)
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = self.drop(torch.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.fc2(torch.nn.functional.gelu(self.fc(self.ln2(x)))))


class Gpt(nn.Module):
    """A GPT-style decoder over int64 token ids [batch, seq_len]: token and
    position nn.Embedding, `layers` GptBlocks, LayerNorm and a Linear head
    without bias. It returns the next-token logits as [batch * seq_len,
    vocab] (`logits.view(-1, vocab)`, as GPT training code does), so ONNX
    Runtime's cross-entropy takes one label per token. The defaults are
    small enough for tests; a bench size is layers=6, d_model=384,
    heads=6, seq_len=512."""

    def __init__(self, vocab=256, d_model=64, heads=4, layers=2, seq_len=32,
                 dropout=0.1):
        super().__init__()
        self.vocab, self.seq_len = vocab, seq_len
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        self.blocks = nn.Sequential(*[GptBlock(d_model, heads, seq_len, dropout)
                                      for _ in range(layers)])
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.blocks(self.tok(idx) + self.pos(pos))
        return self.head(self.ln(x)).view(-1, self.vocab)

    def example_input(self, batch: int) -> torch.Tensor:
        """What comet.export traces: a batch of token ids."""
        return torch.zeros(batch, self.seq_len, dtype=torch.long)


def gpt(**kwargs) -> nn.Module:
    return Gpt(**kwargs)


# The names comet.export.TORCH_MODELS lists (with each one's opset).
BUILDERS = {"cnn": cnn, "transformer": transformer, "resnet18": resnet18,
            "mobilenet_v2": mobilenet_v2, "shufflenet_v2_x0_5": shufflenet_v2_x0_5,
            "efficientnet_b0": efficientnet_b0, "actnet": actnet,
            "embedding": embedding, "gpt": gpt}


def build(name: str, seed: int = 0, **kwargs) -> nn.Module:
    """The model `name` with weights drawn after torch.manual_seed(seed);
    kwargs go to its constructor (e.g. gpt's layers, d_model, heads,
    seq_len)."""
    if name not in BUILDERS:
        raise ValueError(f"unknown torch model {name!r}: expected one of {sorted(BUILDERS)}")
    torch.manual_seed(seed)
    return BUILDERS[name](**kwargs)
