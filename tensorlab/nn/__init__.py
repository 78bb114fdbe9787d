"""tensorlab.nn: modules, parameters, functional ops, initializers and gradient clipping, with
torch.nn's names and behaviour."""
from __future__ import annotations

from . import functional, init, utils
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .buffer import Buffer
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .dropout import Dropout
from .linear import Identity, Linear
from .loss import CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module
from .parameter import Parameter

__all__ = ["CrossEntropyLoss", "Dropout", "GELU", "Identity", "Linear", "LogSoftmax", "MSELoss", "Module", "NLLLoss",
           "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh", "functional", "init", "utils"]

# the layers real models are made of (normalization, embedding, recurrence, attention, more activations/losses)
from .activation_more import (ELU, Flatten, Hardtanh, LeakyReLU, LogSigmoid, Mish, ReLU6, SiLU, Softplus,  # noqa: E402
                              Softsign, Tanhshrink, Unflatten)
from .loss_more import BCELoss, BCEWithLogitsLoss, HuberLoss, KLDivLoss, L1Loss, SmoothL1Loss  # noqa: E402
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, LayerNorm, RMSNorm  # noqa: E402
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: E402
from .sparse import Embedding  # noqa: E402
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: E402
                          TransformerEncoder, TransformerEncoderLayer)

__all__ += ["BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "ELU", "Embedding", "Flatten",
            "GRU", "GRUCell", "GroupNorm", "Hardtanh", "HuberLoss", "KLDivLoss", "L1Loss", "LSTM", "LSTMCell",
            "LayerNorm", "LeakyReLU", "LogSigmoid", "Mish", "MultiheadAttention", "RMSNorm",
            "RNN", "RNNBase", "RNNCell", "RNNCellBase", "ReLU6", "SiLU", "SmoothL1Loss", "Softplus", "Softsign",
            "Tanhshrink", "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
            "TransformerEncoderLayer", "Unflatten"]
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, Fold, Unfold  # noqa: E402
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,  # noqa: E402
                      AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d)
__all__ += ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AvgPool1d",
            "AvgPool2d", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Fold", "MaxPool1d", "MaxPool2d",
            "Unfold"]
from .conv3d_layers import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, Conv3d, ConvTranspose3d,  # noqa: E402
                            CTCLoss, EmbeddingBag, FractionalMaxPool2d, FractionalMaxPool3d, MaxPool3d, MaxUnpool1d,
                            MaxUnpool2d, MaxUnpool3d)
__all__ += ["AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "CTCLoss", "Conv3d", "ConvTranspose3d",
            "EmbeddingBag", "FractionalMaxPool2d", "FractionalMaxPool3d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d",
            "MaxUnpool3d"]
from .upsampling import Upsample  # noqa: E402
__all__ += ["Upsample"]
__all__ += ["Buffer", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList"]
from . import modules  # noqa: E402,F401  (torch.nn.modules.* paths)
from . import parallel  # noqa: E402,F401  (nn.parallel.DistributedDataParallel)
from .functional_linear_ce import LinearCrossEntropyOptions  # noqa: E402,F401  (torch.nn.LinearCrossEntropyOptions)
# issue 34, family 1: the remaining activations, padding, shuffles, dropouts, distances, upsampling, losses
from .activation_layers import (CELU, GLU, PReLU, RReLU, SELU, Hardshrink, Hardsigmoid, Hardswish,  # noqa: E402
                                Softmax2d, Softmin, Softshrink, Threshold)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402
from .dropout import AlphaDropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout  # noqa: E402
from .loss_layers import (CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, LinearCrossEntropyLoss,  # noqa: E402
                          MarginRankingLoss, MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss,
                          NLLLoss2d, PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss)
from .padding import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d,  # noqa: E402
                      ConstantPad3d, ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d,
                      ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d)
from .shuffle_layers import ChannelShuffle, PixelShuffle, PixelUnshuffle  # noqa: E402
from .upsampling import UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: E402
__all__ += ["AdaptiveLogSoftmaxWithLoss", "AlphaDropout", "CELU", "ChannelShuffle", "CircularPad1d", "CircularPad2d",
            "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "CosineEmbeddingLoss",
            "CosineSimilarity", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout", "GLU",
            "GaussianNLLLoss", "Hardshrink", "Hardsigmoid", "Hardswish", "HingeEmbeddingLoss",
            "LinearCrossEntropyLoss", "MarginRankingLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
            "MultiMarginLoss", "NLLLoss2d", "PReLU", "PairwiseDistance", "PixelShuffle", "PixelUnshuffle",
            "PoissonNLLLoss", "RReLU", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
            "ReplicationPad2d", "ReplicationPad3d", "SELU", "SoftMarginLoss", "Softmax2d", "Softmin", "Softshrink",
            "Threshold", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "UpsamplingBilinear2d",
            "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]
# lazy modules, instance/local-response/sync norms, Bilinear, LPPool, Container, DataParallel (issue 34, modsB)
from .bilinear import Bilinear  # noqa: E402
from .container import Container  # noqa: E402
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: E402
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d,  # noqa: E402
                   LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
                   LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear)
from .local_response_norm import CrossMapLRN2d, LocalResponseNorm  # noqa: E402
from .lppool import LPPool1d, LPPool2d, LPPool3d  # noqa: E402
from .parallel import DataParallel  # noqa: E402
from .sync_batchnorm import SyncBatchNorm  # noqa: E402
from .uninitialized import UninitializedBuffer, UninitializedParameter  # noqa: E402
__all__ += ["Bilinear", "Container", "CrossMapLRN2d", "DataParallel", "InstanceNorm1d", "InstanceNorm2d",
            "InstanceNorm3d", "LPPool1d", "LPPool2d", "LPPool3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
            "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
            "LazyConvTranspose3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear",
            "LocalResponseNorm", "SyncBatchNorm", "UninitializedBuffer", "UninitializedParameter"]
