"""The two-convolution CNNs of KDP-FL, ULDP-FED (MNIST) and LDP-FL.

All three are :class:`~fedcore.models.convnet.ConvPoolNet` with the paper's numbers;
the first convolution takes as many channels as the dataset has.
"""
from __future__ import annotations

from torch import nn

from fedcore.models.registry import MODELS
from fedcore.models.convnet import ConvPoolNet


@MODELS.register(
    "cnn_kdp",
    summary="KDP-FL CNN: conv5x5(32)-pool-conv5x5(64)-pool-fc512-fc, 'same' padding.",
    paper="KDP-FL (seed 003)",
)
def cnn_kdp(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """KDP-FL's MNIST / Fashion-MNIST CNN (paper section 5; McMahan et al.'s FedAvg CNN).

    Two 5x5 stride-1 convolutions with 32 and 64 channels, each followed by ReLU and a
    2x2 max-pool, then fc512 - ReLU - fc(num_classes). The paper states the feature maps
    are 32x14x14 and 64x7x7 after the pools on 28x28 input, which fixes padding 2
    ("same"); on MNIST this is McMahan et al.'s 1,663,370 parameters. Accepts images of
    at least 4x4 (so also the 8x8 digits).
    """
    return ConvPoolNet("cnn_kdp", input_shape, num_classes, blocks=((32,), (64,)),
                       kernel_size=5, padding=2, hidden=(512,))


@MODELS.register(
    "cnn_uldp",
    summary="ULDP-FED MNIST CNN: conv5x5(10)-pool-conv5x5(20)-pool-fc50-fc, no padding.",
    paper="ULDP-FED (seed 004)",
)
def cnn_uldp(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """ULDP-FED's MNIST CNN (paper section 4.1): conv5x5(10) - pool2x2 - conv5x5(20) -
    pool2x2 - fc50 - fc(num_classes), ReLU after each layer but the last.

    Unpadded, as in the classic PyTorch MNIST example this matches: 21,840 parameters
    on 1x28x28. Needs images of at least 16x16, so it refuses the 8x8 digits rather
    than silently changing the architecture.
    """
    return ConvPoolNet("cnn_uldp", input_shape, num_classes, blocks=((10,), (20,)),
                       kernel_size=5, padding=0, hidden=(50,))


@MODELS.register(
    "cnn_ldpfl",
    summary="LDP-FL 'two-layer CNN' (our reading): conv5x5(16)-pool-conv5x5(32)-pool-fc.",
    paper="LDP-FL (seed 001)",
)
def cnn_ldpfl(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """LDP-FL's "two-layer CNN" for MNIST and Fashion-MNIST (paper section 5).

    The paper gives no layer sizes. Our reading: two convolution layers, conv5x5(16,
    'same') - ReLU - pool2x2 - conv5x5(32, 'same') - ReLU - pool2x2 - fc(num_classes),
    i.e. the common two-conv-layer PyTorch MNIST tutorial network (28,938 parameters on
    1x28x28). Accepts images of at least 4x4.
    """
    return ConvPoolNet("cnn_ldpfl", input_shape, num_classes, blocks=((16,), (32,)),
                       kernel_size=5, padding=2, hidden=())
