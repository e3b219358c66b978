"""The layers of ``ferrox.nn``, one family per submodule.

There is deliberately no ``__all__``: ``from ferrox.nn.layers import *``
(what ``ferrox.nn`` does) also brings the submodules themselves, so
``nn.activations.relu`` resolves as ``mlx.nn.activations.relu`` does.
"""

from . import base
from ..module import Module
from .activations import (
    CELU, ELU, GELU, GLU, SELU, HardShrink, Hardswish, HardTanh, LeakyReLU, LogSigmoid,
    LogSoftmax, Mish, PReLU, ReLU, ReLU2, ReLU6, Sigmoid, SiLU, Softmax, Softmin, Softplus,
    Softshrink, Softsign, Step, Tanh, celu, elu, gelu, gelu_approx, gelu_fast_approx, glu,
    hard_shrink, hard_tanh, hardswish, leaky_relu, log_sigmoid, log_softmax, mish, prelu,
    relu, relu2, relu6, selu, sigmoid, silu, softmax, softmin, softplus, softshrink,
    softsign, step, tanh,
)
from .containers import Sequential
from .convolution import Conv1d, Conv2d, Conv3d
from .convolution_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .distributed import (
    AllToShardedLinear, FullyShardedModule, QuantizedAllToShardedLinear,
    QuantizedShardedToAllLinear, ShardedToAllLinear, fully_shard, shard_inplace,
    shard_linear,
)
from .dropout import Dropout, Dropout2d, Dropout3d
from .embedding import Embedding
from .linear import Bilinear, Identity, Linear
from .normalization import BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RMSNorm
from .pooling import AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d
from .positional_encoding import ALiBi, RoPE, SinusoidalPositionalEncoding
from .quantized import QQLinear, QuantizedEmbedding, QuantizedLinear, quantize
from .recurrent import GRU, LSTM, RNN
from .transformer import (
    MultiHeadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
    TransformerEncoder, TransformerEncoderLayer,
)
from .upsample import Upsample
