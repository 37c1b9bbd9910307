"""ScalarMix (Peters et al. 2018, eq. 1): values, gradients, options."""
import numpy
import pytest
from thinc.api import NumpyOps

from spacy_elmo.pipeline.layers.scalar_mix import ScalarMix, mix_weights

H = numpy.array([[1.0, 0.5, 0.2, -0.4], [0.8, 1.2, -0.6, 0.5], [1.5, 2.0, -1.0, 1.2]], dtype="float32")


def _mix(initial_weights=None, **kwargs):
    model = ScalarMix(initial_weights, **kwargs)
    model.initialize()
    return model


def test_worked_example():
    """h0..h2, w = [0.2, 0.8, 1.8], gamma = 1.5 from the project seed."""
    model = _mix([0.2, 0.8, 1.8], gamma=1.5)
    s, gamma = mix_weights(model)
    (y,) = model.predict([H[:, None, :]])
    # Exact values (float64 reference, rounded to 4 decimals).
    numpy.testing.assert_allclose(s, [0.1286, 0.2344, 0.6370], atol=5e-5)
    numpy.testing.assert_allclose(y[0], [1.9075, 2.4294, -1.1279, 1.2453], atol=5e-5)
    # The seed quotes s = [0.1286, 0.2343, 0.6371] and [1.9076, 2.4296, -1.1280, 1.2455]: off by
    # rounding in the 4th decimal (softmax([0.2, 0.8, 1.8]) = [0.128615, 0.234352, 0.637034]).
    numpy.testing.assert_allclose(s, [0.1286, 0.2343, 0.6371], atol=2e-4)
    numpy.testing.assert_allclose(y[0], [1.9076, 2.4296, -1.1280, 1.2455], atol=3e-4)
    assert gamma == 1.5


def test_default_is_uniform_average():
    model = _mix(num_layers=3)
    (y,) = model.predict([H[:, None, :]])
    numpy.testing.assert_allclose(y[0], H.mean(axis=0), rtol=1e-6)
    numpy.testing.assert_allclose(mix_weights(model)[0], [1 / 3] * 3, rtol=1e-6)


def test_infers_layers_and_width_from_data():
    model = ScalarMix()
    X = [numpy.ones((4, 2, 6), dtype="float32")]
    model.initialize(X=X)
    assert model.get_dim("nL") == 4 and model.get_dim("nO") == 6


def _loss_and_grads(model, Xs, dYs):
    Ys, backprop = model.begin_update(Xs)
    loss = sum(float((y * d).sum()) for y, d in zip(Ys, dYs))
    return loss, backprop(dYs)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_gradients_match_finite_differences(layer_norm):
    rng = numpy.random.default_rng(0)
    Xs = [rng.normal(size=(3, n, 5)).astype("float64") for n in (4, 0, 2)]
    dYs = [rng.normal(size=(X.shape[1], 5)) for X in Xs]
    model = ScalarMix([0.3, -0.2, 0.5], gamma=1.3, layer_norm=layer_norm)
    model.initialize()
    model.set_param("w", model.get_param("w").astype("float64"))
    model.set_param("gamma", model.get_param("gamma").astype("float64"))
    loss, dXs = _loss_and_grads(model, Xs, dYs)
    dw, dgamma = model.get_grad("w").copy(), model.get_grad("gamma").copy()
    eps = 1e-6

    def f():
        return sum(float((y * d).sum()) for y, d in zip(model.predict(Xs), dYs))

    for name, grad in (("w", dw), ("gamma", dgamma)):
        param = model.get_param(name)
        for j in range(param.size):
            param[j] += eps
            up = f()
            param[j] -= 2 * eps
            down = f()
            param[j] += eps
            assert abs((up - down) / (2 * eps) - grad[j]) < 1e-5, (name, j)
    for X, dX in zip(Xs, dXs):
        for index in [(0, 0, 0), (1, 1, 3), (2, 0, 4)]:
            if X.shape[1] <= index[1]:
                continue
            X[index] += eps
            up = f()
            X[index] -= 2 * eps
            down = f()
            X[index] += eps
            assert abs((up - down) / (2 * eps) - dX[index]) < 1e-5
    assert dXs[1].shape == (3, 0, 5)


def test_fixed_weights_get_no_gradient():
    model = _mix([0.0, 1.0, 0.0], trainable=False)
    Ys, backprop = model.begin_update([H[:, None, :]])
    dX = backprop([numpy.ones_like(Ys[0])])
    assert not model.has_grad("w") and not model.has_grad("gamma")
    assert dX[0].shape == (3, 1, 4)


def test_layer_norm_normalises_each_layer_per_doc():
    rng = numpy.random.default_rng(1)
    X = (rng.normal(size=(1, 7, 5)) * 4 + 3).astype("float32")
    model = _mix([0.0], layer_norm=True)
    (y,) = model.predict([X])
    assert abs(float(y.mean())) < 1e-5 and abs(float(y.std()) - 1) < 1e-4
    # A Doc's result does not depend on the rest of the batch.
    (y_alone,) = model.predict([X])
    y_batch = model.predict([X * 10, X, X[:, :0]])[1]
    numpy.testing.assert_allclose(y_alone, y_batch, rtol=1e-6)


def test_errors_and_empty_inputs():
    with pytest.raises(ValueError, match="2 initial_weights for 3 layers"):
        ScalarMix([0.0, 0.0], num_layers=3)
    model = _mix(num_layers=3)
    with pytest.raises(ValueError, match="num_layers \\+ 1 = 3"):
        model.predict([numpy.zeros((2, 1, 4), dtype="float32")])
    assert model.predict([]) == []
    (y,) = model.predict([numpy.zeros((3, 0, 4), dtype="float32")])
    assert y.shape == (0, 4)


def test_runs_on_thinc_ops():
    model = ScalarMix([0.2, 0.8, 1.8], gamma=1.5)
    model.ops = NumpyOps()
    model.initialize()
    assert model.predict([H[:, None, :]])[0].dtype == numpy.float32
