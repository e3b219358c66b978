"""ferrox.nn layers against numpy references written here, on fixed
weights; a few gradients against finite differences."""

import math

import numpy as np
import pytest

import ferrox.core as fx
import ferrox.nn as nn
from ferrox.utils import tree_flatten, tree_unflatten
from conftest import assert_close


def randomize(module, rng):
    """Gives every floating parameter of ``module`` fixed random values;
    returns them as numpy arrays by dotted name."""
    flat = tree_flatten(module.parameters())
    values = {k: rng.normal(size=v.shape).astype(np.float32) for k, v in flat}
    module.update(tree_unflatten([(k, fx.array(v)) for k, v in values.items()]))
    return values


def arr(rng, *shape):
    return rng.normal(size=shape).astype(np.float32)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ---- dense ---------------------------------------------------------------------


def test_linear_and_identity(rng):
    layer = nn.Linear(4, 3)
    w = randomize(layer, rng)
    x = arr(rng, 2, 5, 4)
    assert_close(layer(fx.array(x)), x @ w["weight"].T + w["bias"], rtol=1e-5, atol=1e-5)
    assert nn.Identity(1, key=2)(fx.array(x)).shape == x.shape
    no_bias = nn.Linear(4, 3, bias=False)
    assert "bias" not in no_bias.parameters()


def test_bilinear(rng):
    layer = nn.Bilinear(3, 2, 4)
    w = randomize(layer, rng)
    x1, x2 = arr(rng, 5, 3), arr(rng, 5, 2)
    want = np.einsum("ni,oji,nj->no", x1, w["weight"], x2) + w["bias"]
    assert_close(layer(fx.array(x1), fx.array(x2)), want, rtol=1e-4, atol=1e-5)


def test_embedding_and_as_linear(rng):
    layer = nn.Embedding(6, 4)
    w = randomize(layer, rng)
    ids = np.array([[0, 5], [2, 2]])
    assert_close(layer(fx.array(ids)), w["weight"][ids])
    x = arr(rng, 3, 4)
    assert_close(layer.as_linear(fx.array(x)), x @ w["weight"].T, rtol=1e-5, atol=1e-5)


# ---- convolutions ----------------------------------------------------------------


def conv_nd_reference(x, w, stride, padding, dilation, groups):
    """Direct convolution, channels last: x (N, *S, Cin), w (Cout, *K, Cin/g)."""
    rank = x.ndim - 2
    x = np.pad(x, [(0, 0)] + [(p, p) for p in padding] + [(0, 0)])
    n, cin = x.shape[0], x.shape[-1]
    cout, kernel = w.shape[0], w.shape[1:-1]
    out_sizes = [(x.shape[1 + d] - dilation[d] * (kernel[d] - 1) - 1) // stride[d] + 1
                 for d in range(rank)]
    out = np.zeros((n, *out_sizes, cout), np.float64)
    per_in, per_out = cin // groups, cout // groups
    for pos in np.ndindex(*out_sizes):
        for k in np.ndindex(*kernel):
            src = tuple(pos[d] * stride[d] + k[d] * dilation[d] for d in range(rank))
            patch = x[(slice(None),) + src]                       # (N, Cin)
            for g in range(groups):
                xin = patch[:, g * per_in:(g + 1) * per_in]
                wk = w[(slice(g * per_out, (g + 1) * per_out),) + k]  # (per_out, per_in)
                out[(slice(None),) + pos + (slice(g * per_out, (g + 1) * per_out),)] += xin @ wk.T
    return out


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2),
                                                            (1, 2, 2, 1)])
def test_conv1d(rng, stride, padding, dilation, groups):
    layer = nn.Conv1d(4, 6, 3, stride=stride, padding=padding, dilation=dilation, groups=groups)
    w = randomize(layer, rng)
    x = arr(rng, 2, 9, 4)
    want = conv_nd_reference(x, w["weight"], [stride], [padding], [dilation], groups) + w["bias"]
    assert_close(layer(fx.array(x)), want, rtol=1e-4, atol=1e-4)


def test_conv2d_and_conv3d(rng):
    layer = nn.Conv2d(2, 4, (3, 2), stride=(2, 1), padding=(1, 0), groups=2)
    w = randomize(layer, rng)
    x = arr(rng, 1, 5, 4, 2)
    want = conv_nd_reference(x, w["weight"], (2, 1), (1, 0), (1, 1), 2) + w["bias"]
    assert_close(layer(fx.array(x)), want, rtol=1e-4, atol=1e-4)
    layer = nn.Conv3d(2, 3, 2, padding=1, bias=False)
    w = randomize(layer, rng)
    x = arr(rng, 1, 3, 2, 3, 2)
    want = conv_nd_reference(x, w["weight"], (1, 1, 1), (1, 1, 1), (1, 1, 1), 1)
    assert_close(layer(fx.array(x)), want, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="Conv2d: in_channels=3 is not divisible by groups=2"):
        nn.Conv2d(3, 4, 3, groups=2)


def conv_transpose_reference(x, w, stride, padding, output_padding):
    """Transposed convolution by scattering: every input position adds
    x * w[:, k] at position * stride + k; then padding is cut off."""
    rank = x.ndim - 2
    kernel = w.shape[1:-1]
    full = [(x.shape[1 + d] - 1) * stride[d] + kernel[d] + output_padding[d]
            for d in range(rank)]
    out = np.zeros((x.shape[0], *full, w.shape[0]), np.float64)
    for pos in np.ndindex(*x.shape[1:-1]):
        for k in np.ndindex(*kernel):
            dst = tuple(pos[d] * stride[d] + k[d] for d in range(rank))
            out[(slice(None),) + dst] += x[(slice(None),) + pos] @ w[(slice(None),) + k].T
    cut = tuple(slice(p, out.shape[1 + d] - p) for d, p in enumerate(padding))
    return out[(slice(None),) + cut]


def test_conv_transpose(rng):
    layer = nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1)
    w = randomize(layer, rng)
    x = arr(rng, 2, 4, 3)
    want = conv_transpose_reference(x, w["weight"], [2], [1], [1]) + w["bias"]
    assert_close(layer(fx.array(x)), want, rtol=1e-4, atol=1e-4)
    layer = nn.ConvTranspose2d(2, 3, (2, 3), stride=(2, 1))
    w = randomize(layer, rng)
    x = arr(rng, 1, 3, 2, 2)
    want = conv_transpose_reference(x, w["weight"], (2, 1), (0, 0), (0, 0)) + w["bias"]
    assert_close(layer(fx.array(x)), want, rtol=1e-4, atol=1e-4)
    assert "kernel_size=(2, 3)" in repr(layer)


# ---- pooling and resizing -----------------------------------------------------------


def pool_reference(x, kernel, stride, padding, reduce, pad_value):
    rank = x.ndim - 2
    x = np.pad(x, [(0, 0)] + [(p, p) for p in padding] + [(0, 0)], constant_values=pad_value)
    sizes = [(x.shape[1 + d] - kernel[d]) // stride[d] + 1 for d in range(rank)]
    out = np.zeros((x.shape[0], *sizes, x.shape[-1]), x.dtype)
    for pos in np.ndindex(*sizes):
        window = tuple(slice(pos[d] * stride[d], pos[d] * stride[d] + kernel[d])
                       for d in range(rank))
        out[(slice(None),) + pos] = reduce(x[(slice(None),) + window],
                                           axis=tuple(range(1, rank + 1)))
    return out


@pytest.mark.parametrize("name,reduce,pad", [("MaxPool", np.max, -np.inf),
                                             ("AvgPool", np.mean, 0.0)])
def test_pooling(rng, name, reduce, pad):
    x = arr(rng, 2, 7, 3)
    layer = getattr(nn, name + "1d")(3, stride=2, padding=1)
    assert_close(layer(fx.array(x)), pool_reference(x, [3], [2], [1], reduce, pad))
    x = arr(rng, 1, 5, 6, 2)
    layer = getattr(nn, name + "2d")((2, 3), stride=(1, 2))
    assert_close(layer(fx.array(x)), pool_reference(x, (2, 3), (1, 2), (0, 0), reduce, pad))
    x = arr(rng, 1, 3, 4, 3, 1)
    layer = getattr(nn, name + "3d")(2, padding=1)
    assert_close(layer(fx.array(x)), pool_reference(x, (2,) * 3, (2,) * 3, (1,) * 3, reduce, pad))
    assert repr(layer) == f"{name}3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(1, 1, 1))"
    with pytest.raises(ValueError, match=r"every stride must be at least 1, got \(0,\)"):
        getattr(nn, name + "1d")(2, stride=0)


def linear_resize_reference(x, axis, out_size, align_corners):
    n = x.shape[axis]
    i = np.arange(out_size, dtype=np.float64)
    if align_corners:
        src = i * (n - 1) / max(out_size - 1, 1)
    else:
        src = (i + 0.5) * n / out_size - 0.5
    src = np.clip(src, 0, n - 1)
    lo = np.floor(src).astype(int)
    hi = np.minimum(lo + 1, n - 1)
    frac = (src - lo).reshape([-1 if d == axis else 1 for d in range(x.ndim)])
    return np.take(x, lo, axis) * (1 - frac) + np.take(x, hi, axis) * frac


@pytest.mark.parametrize("align_corners", [False, True])
def test_upsample_linear_and_nearest(rng, align_corners):
    x = arr(rng, 1, 3, 4, 2)
    got = nn.Upsample((2, 1.5), mode="linear", align_corners=align_corners)(fx.array(x))
    want = linear_resize_reference(linear_resize_reference(x, 1, 6, align_corners), 2, 6,
                                   align_corners)
    assert_close(got, want, rtol=1e-5, atol=1e-5)
    got = nn.Upsample(2, mode="nearest")(fx.array(x))
    assert_close(got, x.repeat(2, axis=1).repeat(2, axis=2))


def test_upsample_cubic_keeps_constants_and_checks_arguments():
    ones = fx.ones((1, 4, 4, 1))
    for kwargs in ({}, {"align_corners": True}, {"antialias": True}):
        for scale in (2, 0.5):
            y = nn.Upsample(scale, mode="cubic", **kwargs)(ones)
            assert_close(y, np.ones(y.shape), atol=1e-5)
    with pytest.raises(ValueError, match="'nearest', 'linear' or 'cubic', got 'area'"):
        nn.Upsample(2, mode="area")
    with pytest.raises(ValueError, match="antialias needs align_corners=False"):
        nn.Upsample(2, mode="linear", align_corners=True, antialias=True)
    with pytest.raises(ValueError, match=r"\(2.0, 2.0\) has 2 scales for an input with 1"):
        nn.Upsample((2, 2))(fx.ones((1, 2, 1)))


# ---- normalization -----------------------------------------------------------------


def standardize(x, axes, eps=1e-5):
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


def test_layer_rms_instance_norms(rng):
    x = arr(rng, 2, 3, 5)
    ln = nn.LayerNorm(5)
    w = randomize(ln, rng)
    assert_close(ln(fx.array(x)), standardize(x, -1) * w["weight"] + w["bias"], rtol=1e-4,
                 atol=1e-5)
    rms = nn.RMSNorm(5, eps=1e-6)
    w = randomize(rms, rng)
    want = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * w["weight"]
    assert_close(rms(fx.array(x)), want, rtol=1e-4, atol=1e-5)
    inorm = nn.InstanceNorm(5, affine=True)
    w = randomize(inorm, rng)
    assert_close(inorm(fx.array(x)), standardize(x, (1,)) * w["weight"] + w["bias"],
                 rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        inorm(fx.ones((2, 5)))


@pytest.mark.parametrize("pytorch_compatible", [False, True])
def test_group_norm(rng, pytorch_compatible):
    x = arr(rng, 2, 3, 3, 6)
    gn = nn.GroupNorm(3, 6, pytorch_compatible=pytorch_compatible)
    w = randomize(gn, rng)
    if pytorch_compatible:   # channel c belongs to group c // 2
        g = standardize(x.reshape(2, 9, 3, 2), (1, 3)).reshape(x.shape)
    else:                    # channel c belongs to group c % 3
        g = standardize(x.reshape(2, 9 * 2, 3), (1,)).reshape(x.shape)
    assert_close(gn(fx.array(x)), g * w["weight"] + w["bias"], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="dims=6 is not divisible by num_groups=4"):
        nn.GroupNorm(4, 6)


def test_batch_norm_training_and_eval(rng):
    x = arr(rng, 4, 3, 2)
    bn = nn.BatchNorm(2, momentum=0.25)
    y = bn(fx.array(x))
    assert_close(y, standardize(x, (0, 1)), rtol=1e-4, atol=1e-5)
    mean = 0.25 * x.mean((0, 1))
    var = 0.75 + 0.25 * x.reshape(-1, 2).var(0, ddof=1)
    assert_close(bn.running_mean, mean, atol=1e-6)
    assert_close(bn.running_var, var, atol=1e-6)
    bn.eval()
    assert_close(bn(fx.array(x)), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="2, 3 or 4 dimensions"):
        bn(fx.ones((1, 1, 1, 1, 2)))


# ---- recurrent ---------------------------------------------------------------------


def test_rnn(rng):
    layer = nn.RNN(3, 4)
    w = randomize(layer, rng)
    x = arr(rng, 2, 5, 3)
    h = np.zeros((2, 4), np.float32)
    want = []
    for t in range(5):
        h = np.tanh(x[:, t] @ w["Wxh"].T + w["bias"] + h @ w["Whh"].T)
        want.append(h)
    assert_close(layer(fx.array(x)), np.stack(want, 1), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="nonlinearity must be callable"):
        nn.RNN(3, 4, nonlinearity="tanh")


def test_gru(rng):
    layer = nn.GRU(3, 4)
    w = randomize(layer, rng)
    x = arr(rng, 2, 4, 3)
    h = arr(rng, 2, 4)
    h0 = h.copy()
    want = []
    for t in range(4):
        gx = x[:, t] @ w["Wx"].T + w["b"]
        gh = h @ w["Wh"].T
        r = sigmoid(gx[:, :4] + gh[:, :4])
        z = sigmoid(gx[:, 4:8] + gh[:, 4:8])
        n = np.tanh(gx[:, 8:] + r * (gh[:, 8:] + w["bhn"]))
        h = (1 - z) * n + z * h
        want.append(h)
    assert_close(layer(fx.array(x), fx.array(h0)), np.stack(want, 1), rtol=1e-4, atol=1e-5)
    # No initial state means a zero one.
    assert_close(layer(fx.array(x)), layer(fx.array(x), fx.zeros((2, 4))), atol=1e-6)


def test_lstm(rng):
    layer = nn.LSTM(3, 2)
    w = randomize(layer, rng)
    x = arr(rng, 5, 3)  # unbatched
    h, c = np.zeros(2, np.float32), np.zeros(2, np.float32)
    hs, cs = [], []
    for t in range(5):
        g = x[t] @ w["Wx"].T + w["bias"] + h @ w["Wh"].T
        i, f, gg, o = sigmoid(g[0:2]), sigmoid(g[2:4]), np.tanh(g[4:6]), sigmoid(g[6:8])
        c = f * c + i * gg
        h = o * np.tanh(c)
        hs.append(h)
        cs.append(c)
    got_h, got_c = layer(fx.array(x))
    assert_close(got_h, np.stack(hs), rtol=1e-4, atol=1e-5)
    assert_close(got_c, np.stack(cs), rtol=1e-4, atol=1e-5)


# ---- attention and positions ---------------------------------------------------------


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def test_multi_head_attention_with_causal_mask(rng):
    attn = nn.MultiHeadAttention(4, 2, bias=True)
    w = randomize(attn, rng)
    q, kv = arr(rng, 1, 3, 4), arr(rng, 1, 3, 4)
    mask = nn.MultiHeadAttention.create_additive_causal_mask(3)
    proj = {k: (lambda x, k=k: x @ w[f"{k}.weight"].T + w[f"{k}.bias"])
            for k in ("query_proj", "key_proj", "value_proj", "out_proj")}

    def heads(x):
        return x.reshape(1, 3, 2, 2).transpose(0, 2, 1, 3)

    qh = heads(proj["query_proj"](q))
    kh, vh = heads(proj["key_proj"](kv)), heads(proj["value_proj"](kv))
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(2) + np.array(mask)
    out = (softmax(scores) @ vh).transpose(0, 2, 1, 3).reshape(1, 3, 4)
    got = attn(fx.array(q), fx.array(kv), fx.array(kv), mask)
    assert_close(got, proj["out_proj"](out), rtol=1e-4, atol=1e-5)
    assert np.array(mask)[0, 1] < -1e30 and np.array(mask)[1, 0] == 0
    with pytest.raises(ValueError, match="dims=6 is not divisible by num_heads=4"):
        nn.MultiHeadAttention(6, 4)


def test_transformer_shapes_and_custom_parts():
    model = nn.Transformer(dims=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=2,
                           mlp_dims=16, norm_first=False)
    assert len(model.decoder.layers) == 2
    out = model(fx.zeros((2, 4, 8)), fx.zeros((2, 3, 8)), None, None, None)
    assert out.shape == (2, 3, 8)
    custom = nn.Transformer(dims=8, num_heads=2, custom_encoder=nn.Identity())
    assert isinstance(custom.encoder, nn.Identity)


def test_rope_matches_rotation_of_halves(rng):
    x = arr(rng, 1, 3, 4)
    got = nn.RoPE(4, base=10000)(fx.array(x), offset=1)
    pos = np.arange(1, 4)[:, None]
    theta = pos * 10000.0 ** (-np.arange(2) / 2)
    cos, sin = np.cos(theta), np.sin(theta)
    a, b = x[..., :2], x[..., 2:]
    want = np.concatenate([a * cos - b * sin, a * sin + b * cos], -1)
    assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_sinusoidal_encoding_and_alibi():
    pe = nn.SinusoidalPositionalEncoding(6, min_freq=0.01, max_freq=1.0)
    pos = np.arange(4, dtype=np.float32)
    freqs = np.exp(np.linspace(0, np.log(0.01), 3))
    angles = pos[:, None] * freqs
    want = np.concatenate([np.sin(angles), np.cos(angles)], -1) * math.sqrt(2 / 6)
    assert_close(pe(fx.array(pos)), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="positive and even, got 3"):
        nn.SinusoidalPositionalEncoding(3)
    slopes = np.array(nn.ALiBi.create_alibi_slope(4, fx.float32)).reshape(-1)
    assert_close(slopes, 2.0 ** (-8 * np.arange(1, 5) / 4))
    scores = fx.zeros((1, 4, 2, 3))
    biased = np.array(nn.ALiBi()(scores))
    assert_close(biased[0, 0], -slopes[0] * np.abs(np.arange(2)[:, None] - np.arange(3)))


# ---- dropout, activations, quantized --------------------------------------------------


def test_dropout_training_and_eval():
    fx.random.seed(0)
    x = fx.ones((200, 50))
    y = np.array(nn.Dropout(0.25)(x))
    kept = y[y != 0]
    assert np.allclose(kept, 1 / 0.75)
    assert abs((y == 0).mean() - 0.25) < 0.03
    y2 = np.array(nn.Dropout2d(0.5)(fx.ones((4, 3, 3, 8))))
    per_channel = y2.reshape(4, 9, 8)
    assert (per_channel.min(1) == per_channel.max(1)).all()   # whole channels
    layer = nn.Dropout3d(0.5).eval()
    assert np.array(layer(fx.ones((1, 2, 2, 2, 2)))).min() == 1.0
    with pytest.raises(ValueError, match=r"must be in \[0, 1\), got 1"):
        nn.Dropout(1)
    with pytest.raises(ValueError, match="3 or 4 dimensions, got 2"):
        nn.Dropout2d()(fx.ones((2, 2)))


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.01 * x),
    "elu": lambda x: np.where(x > 0, x, np.exp(x) - 1),
    "silu": lambda x: x * sigmoid(x),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
    "log_sigmoid": lambda x: np.log(sigmoid(x)),
    "gelu": lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "softmax": softmax,
    "log_softmax": lambda x: np.log(softmax(x)),
    "softmin": lambda x: softmax(-x),
    "glu": lambda x: x[..., :2] * sigmoid(x[..., 2:]),
    "hard_shrink": lambda x: np.where(np.abs(x) > 0.5, x, 0),
    "softshrink": lambda x: np.where(np.abs(x) > 0.5, x - np.sign(x) * 0.5, 0),
    "celu": lambda x: np.maximum(x, 0) + np.minimum(np.exp(x) - 1, 0),
    "selu": lambda x: 1.0507 * np.where(x > 0, x, 1.67326 * (np.exp(x) - 1)),
    "step": lambda x: (x >= 0).astype(np.int32),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_functions(rng, name):
    x = arr(rng, 3, 4) * 3
    assert_close(getattr(nn, name)(fx.array(x)), ACTIVATIONS[name](x), rtol=1e-4, atol=1e-5)


def test_activation_modules_and_gelu_forms(rng):
    x = fx.array(arr(rng, 10))
    assert_close(nn.ReLU()(x), nn.relu(x))
    assert_close(nn.LeakyReLU(0.2)(x), nn.leaky_relu(x, 0.2))
    assert_close(nn.PReLU(1, 0.3)(x), nn.leaky_relu(x, 0.3))
    assert_close(nn.GELU("tanh")(x), nn.gelu_approx(x))
    assert float(np.abs(np.array(nn.GELU("fast")(x) - nn.gelu(x))).max()) < 0.03
    with pytest.raises(ValueError, match="approx must be one of"):
        nn.GELU("exact")


def test_quantized_layers_and_quantize(rng):
    linear = nn.Linear(64, 4)
    randomize(linear, rng)
    q = linear.to_quantized(group_size=32, bits=8)
    x = fx.array(arr(rng, 2, 64))
    w = fx.dequantize(q.weight, q.scales, q.biases, group_size=32, bits=8)
    assert_close(q(x), np.array(x) @ np.array(w).T + np.array(linear.bias), rtol=1e-4, atol=1e-4)
    assert_close(q(x), linear(x), atol=0.05)
    assert list(q.trainable_parameters()) == ["bias"]   # packed weights start frozen
    model = nn.Sequential(nn.Embedding(8, 64), nn.ReLU(), nn.Linear(64, 64))
    nn.quantize(model, class_predicate=lambda path, m: isinstance(m, nn.Linear))
    assert isinstance(model.layers[2], nn.QuantizedLinear)
    assert isinstance(model.layers[0], nn.Embedding)
    nn.quantize(model, bits=8)
    emb = model.layers[0]
    assert isinstance(emb, nn.QuantizedEmbedding)
    assert emb(fx.array([1, 2])).shape == (2, 64)
    with pytest.raises(ValueError, match="one of affine, mxfp4, nvfp4, mxfp8; got 'int3'"):
        nn.QuantizedLinear(64, 4, mode="int3")


# ---- gradients by finite differences -----------------------------------------------------


@pytest.mark.parametrize("make,shape", [
    (lambda: nn.Conv1d(2, 3, 3, padding=1), (1, 5, 2)),
    (lambda: nn.LayerNorm(4), (2, 4)),
    (lambda: nn.GRU(2, 3), (1, 3, 2)),
    (lambda: nn.MaxPool1d(2, stride=1), (1, 4, 2)),
])
def test_input_gradients_match_finite_differences(rng, make, shape):
    layer = make()
    randomize(layer, rng)
    x = rng.normal(size=shape)
    probe = fx.array(arr(rng, *layer(fx.array(x.astype(np.float32))).shape))

    def f(v):
        return (layer(v) * probe).sum()

    grad = np.array(fx.grad(f)(fx.array(x.astype(np.float32))), np.float64)
    eps = 1e-2
    for idx in list(np.ndindex(*shape))[:6]:
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        numeric = (f(fx.array(up.astype(np.float32))).item()
                   - f(fx.array(down.astype(np.float32))).item()) / (2 * eps)
        assert abs(numeric - grad[idx]) < 2e-2 * max(1.0, abs(numeric)), idx
