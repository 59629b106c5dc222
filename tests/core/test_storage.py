"""A tensor's data (storage.py) and the user's class (tensor.py): every tensor the ops make is a
tinyattn.Tensor although the ops only know TensorBase, and in poison mode every new output buffer
starts out as NaN (or a large integer) on either backend."""
import os
import subprocess
import sys

import pytest

import tinyattn as ta
from tinyattn import storage


def test_every_tensor_the_ops_make_is_a_tinyattn_tensor():
    x = ta.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    for t in (x, x * 2, x.T, x[0], x.sum(), ta.zeros(2), ta.rand(2), x.detach(), x.softmax(-1),
              ta.Tensor([1.0]), ta.FloatTensor(2)):
        assert type(t) is ta.Tensor
    assert isinstance(ta.nn.Parameter(ta.ones(2)), storage.TensorBase)


def test_tensors_have_no_instance_dict():
    assert not hasattr(ta.zeros(1), "__dict__")


def test_only_a_tensorbase_subclass_can_be_registered():
    with pytest.raises(TypeError):
        storage.register(object)


@pytest.mark.parametrize("kernels", ["reference", "fast"])
def test_poison_mode_fills_new_outputs_on_both_backends(kernels):
    code = ("import math, tinyattn as ta; from tinyattn import storage; "
            "t = storage._empty((3,), ta.float32); q = storage._empty((2,), ta.int64); "
            "print(all(math.isnan(v) for v in t.tolist()), q.tolist()[0] != 0, "
            "ta.zeros(2).tolist(), (ta.ones(3) * 2).tolist())")
    env = dict(os.environ, TINYATTN_POISON="1", TINYATTN_KERNELS=kernels)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split("\n")[0] == "True True [0.0, 0.0] [2.0, 2.0, 2.0]"
