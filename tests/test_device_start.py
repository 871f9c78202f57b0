"""Issue 41: CUDA starts in a thread beside the dataset's parse (:func:`fedcore.engine.device.start_device`);
on CPU nothing starts. The GPU test runs on a device through ``scripts/gpu_tests.py``."""
import pytest
import torch

from fedcore.engine.device import start_device


def test_nothing_starts_beside_the_parse_on_a_cpu():
    assert start_device(torch.device("cpu")) is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_starts_beside_the_parse_on_a_gpu():
    """The thread ends having created the context; a run's setup then finds it (and its data) ready."""
    from fedcore.engine.setup import prepare
    from fedcore.layering import build_config

    thread = start_device(torch.device("cuda"))
    thread.join()
    assert torch.cuda.is_initialized() and not thread.is_alive()
    s = prepare(build_config(None, None, ["dataset=mnist", "model=cnn_uldp", "train_size=500", "test_size=100",
                                          "num_clients=5", "rounds=1", "device=cuda"]))
    assert s.x_train.is_cuda and s.params[next(iter(s.params))].is_cuda
