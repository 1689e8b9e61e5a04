"""Small versions of the models reprokit.torch is tested on, written here from their published
architectures with torch.nn (random weights): ResNet-18, MobileNetV2, a ViT, a Transformer encoder
layer, a GPT-2 block with a causal mask, and an LSTM tagger. Each entry gives the module (in eval
mode) and an input."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
                   nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
        layers, cin = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()], 32
        for t, c, n, s in cfg:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class ViT(nn.Module):
    def __init__(self, image=32, patch=8, dim=64, depth=2, heads=4, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        n = (image // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))


class GPT2Block(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class LSTMTagger(nn.Module):
    def __init__(self, vocab=50, dim=16, hidden=32, tags=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True)
        self.tag = nn.Linear(hidden, tags)

    def forward(self, tokens):
        y, _ = self.lstm(self.embed(tokens))
        return self.tag(y).log_softmax(-1)


class NormBlock(nn.Module):
    """Group norm and instance norm (with the input's statistics, and with running statistics in
    eval), then pixel shuffle and unshuffle."""

    def __init__(self, ch=8):
        super().__init__()
        self.conv = nn.Conv2d(3, ch, 3, padding=1)
        self.gn = nn.GroupNorm(4, ch)
        self.inorm = nn.InstanceNorm2d(ch, affine=True)
        self.tracked = nn.InstanceNorm2d(ch, affine=True, track_running_stats=True)
        with torch.no_grad():
            for p in (self.gn.weight, self.gn.bias, self.inorm.weight, self.inorm.bias, self.tracked.weight, self.tracked.bias,
                      self.tracked.running_mean):
                p.uniform_(-0.5, 1.5)
            self.tracked.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        y = self.tracked(F.relu(self.inorm(F.relu(self.gn(self.conv(x))))))
        return F.pixel_unshuffle(F.pixel_shuffle(y, 2) + 1, 2)


def _seeded(make):
    torch.manual_seed(0)
    m = make().eval()
    with torch.no_grad():  # batch norm statistics that are not the identity
        for mod in m.modules():
            if isinstance(mod, (nn.BatchNorm2d, nn.BatchNorm3d)):
                mod.running_mean.uniform_(-0.1, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
    return m


class VideoNet(nn.Module):
    """A small video classifier on [batch, 3, frames, height, width]: Conv3d, BatchNorm3d, ReLU,
    MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, Linear."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 8, (3, 5, 5), (1, 2, 2), (1, 2, 2), bias=False), nn.BatchNorm3d(8), nn.ReLU(),
                                  nn.MaxPool3d(3, 2, 1), nn.Conv3d(8, 8, 3, padding=1, groups=2), nn.ReLU(), nn.AvgPool3d(2, ceil_mode=True))
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool3d(self.stem(x), 1), 1))


class DcganGenerator(nn.Module):
    """A small DCGAN generator: a [batch, 16, 1, 1] code up to a 3 x 16 x 16 image through ConvTranspose2d."""

    def __init__(self, nz=16, ngf=8):
        super().__init__()
        self.net = nn.Sequential(nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(),
                                 nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(),
                                 nn.ConvTranspose2d(ngf * 2, 3, 4, 2, 1), nn.Tanh())

    def forward(self, x):
        return self.net(x)


class SpatialTransformer(nn.Module):
    """A spatial transformer: a small localisation net predicts theta, F.affine_grid makes its grid
    and F.grid_sample warps the input (bilinear, reflection padding), then nearest with zeros."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 6))
        with torch.no_grad():  # near the identity, as a spatial transformer is initialised
            self.loc[-1].weight.mul_(0.1)
            self.loc[-1].bias.copy_(torch.tensor([1.0, 0.1, 0.05, -0.1, 0.9, 0.0]))

    def forward(self, x):
        theta = self.loc(x).view(-1, 2, 3)
        y = F.grid_sample(x, F.affine_grid(theta, list(x.shape), align_corners=False), padding_mode="reflection", align_corners=False)
        grid = F.affine_grid(theta * 1.2, [x.shape[0], 3, 5, 7], align_corners=True)
        return y.mean(dim=(2, 3)), F.grid_sample(y, grid, mode="nearest", align_corners=True)


MODELS = {
    "resnet18": lambda: (_seeded(ResNet18), (torch.randn(1, 3, 64, 64),)),
    "mobilenet_v2": lambda: (_seeded(MobileNetV2), (torch.randn(1, 3, 64, 64),)),
    "vit": lambda: (_seeded(ViT), (torch.randn(2, 3, 32, 32),)),
    "transformer_encoder_layer": lambda: (_seeded(lambda: nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)),
                                          (torch.randn(2, 10, 32),)),
    "gpt2_block": lambda: (_seeded(GPT2Block), (torch.randn(2, 12, 64),)),
    "lstm": lambda: (_seeded(LSTMTagger), (torch.randint(0, 50, (2, 7)),)),
    "video_net": lambda: (_seeded(VideoNet), (torch.randn(1, 3, 8, 16, 16),)),
    "dcgan_generator": lambda: (_seeded(DcganGenerator), (torch.randn(2, 16, 1, 1),)),
    "norm_block": lambda: (_seeded(NormBlock), (torch.randn(2, 3, 6, 6),)),
    "spatial_transformer": lambda: (_seeded(SpatialTransformer), (torch.randn(2, 3, 8, 9),)),
}
