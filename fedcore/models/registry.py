"""The model registry; each model module registers its factory here."""
from fedcore.registry import Registry

MODELS = Registry("model", modules={
    "fedcore.models.linear": ("logreg", "mlp"),
    "fedcore.models.cnn": ("cnn_kdp", "cnn_uldp", "cnn_ldpfl"),
    "fedcore.models.lenet": ("lenet5",),
    "fedcore.models.vgg": ("vgg_small",),
    "fedcore.models.resnet": ("resnet18",),
})
