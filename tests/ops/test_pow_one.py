"""x ** 1 is a new tensor, as in PyTorch: it used to return x itself, so an in-place update of the
result changed x too."""
import tinyattn as ta


def test_pow_one_does_not_alias_its_input():
    x = ta.tensor([1.0, -2.0, 3.0])
    y = x ** 1
    y += 1
    assert x.tolist() == [1.0, -2.0, 3.0]
    assert y.tolist() == [2.0, -1.0, 4.0]


def test_pow_one_gradient_is_one():
    w = ta.tensor([0.0, -2.0, 3.0], requires_grad=True)
    y = w ** 1
    assert y is not w and y.grad_fn is not None
    (y * ta.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert w.grad.tolist() == [1.0, 2.0, 3.0]
