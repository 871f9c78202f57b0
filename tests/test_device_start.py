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


def test_a_module_imported_beside_the_work_is_there_for_its_later_import():
    """:func:`fedcore.engine.device.import_beside` (a GPU run's dp-accounting, for its PLD at the end): the
    module loads in a thread; a plain import after it finds it; a module that cannot load raises nothing there."""
    import subprocess
    import sys

    probe = ("import sys; from fedcore.engine.device import import_beside; "
             "t = import_beside('dp_accounting'); bad = import_beside('no_such_module_here'); "
             "t.join(); bad.join(); import dp_accounting; "
             "print('dp_accounting.pld.pld_pmf' in sys.modules, t.is_alive(), bad.is_alive())")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600)  # a hang only
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "False", "False"]
