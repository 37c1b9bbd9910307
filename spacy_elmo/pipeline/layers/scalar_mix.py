"""ScalarMix: the task-specific weighting of the biLM layers.

ELMo_k = gamma * sum_{j=0..L} s_j h_{k,j},  s = softmax(w)    (Peters et al. 2018, eq. 1)

Optional layer normalisation of each layer before mixing, as AllenNLP's ``ScalarMix(
do_layer_norm=True)``: h_j -> (h_j - mean) / sqrt(var + 1e-12), the mean and variance taken over
all tokens and dimensions. AllenNLP takes them over the whole (masked) batch; here they are taken
per Doc, so a Doc's result never depends on the rest of the batch.
"""
from typing import List, Optional, Sequence

import numpy
from thinc.api import Model
from thinc.types import Floats2d, Floats3d

from ...bilm.finite import is_finite_number
from ...errors import ElmoConfigError, ElmoDataError

LN_EPS = 1e-12  # AllenNLP ScalarMix._do_layer_norm


def ScalarMix(initial_weights: Optional[Sequence[float]] = None, gamma: float = 1.0,
              trainable: bool = True, layer_norm: bool = False,
              num_layers: Optional[int] = None) -> Model[List[Floats3d], List[Floats2d]]:
    """Mix a list of per-Doc layer stacks into per-Doc vectors.

    Input: list of float32 arrays (nL, n_tokens, dim), nL = biLM num_layers + 1. Output: list of
    float32 arrays (n_tokens, dim). Parameters: ``w`` (nL,) pre-softmax weights, zeros (uniform
    s_j = 1/nL) unless ``initial_weights`` is given; ``gamma`` (1,), starts at ``gamma``.
    ``trainable=False`` keeps both fixed (as AllenNLP's ``trainable=False``). nL is taken from
    ``num_layers``, else ``len(initial_weights)``, else the first input at initialization.
    Backprop gives gradients for w, gamma and the layers. Raises ElmoConfigError (a ValueError)
    for an ``initial_weights`` or ``gamma`` that is not finite (NaN, infinite), ValueError when
    an input has a different number of layers than nL.
    """
    if not is_finite_number(gamma):
        raise ElmoConfigError(f"ScalarMix: gamma must be a finite number, got {gamma!r}", "gamma", None)
    if initial_weights is not None:
        if not all(is_finite_number(x) for x in initial_weights):
            raise ElmoConfigError(f"ScalarMix: initial_weights must be finite numbers, got {list(initial_weights)!r}",
                                  "initial_weights", None)
        initial_weights = [float(x) for x in initial_weights]
        if num_layers is not None and len(initial_weights) != num_layers:
            raise ElmoConfigError(f"ScalarMix: {len(initial_weights)} initial_weights for {num_layers} layers",
                                  "initial_weights", None)
        num_layers = len(initial_weights)
    return Model(
        "scalar_mix", forward, init=init, dims={"nL": num_layers, "nO": None}, params={"w": None, "gamma": None},
        attrs={"initial_weights": initial_weights, "initial_gamma": float(gamma), "trainable": bool(trainable),
               "layer_norm": bool(layer_norm)},
    )


def init(model: Model, X: Optional[List[Floats3d]] = None, Y=None) -> None:
    if not model.has_dim("nL") and X:
        model.set_dim("nL", int(X[0].shape[0]))
    if not model.has_dim("nO") and X:
        model.set_dim("nO", int(X[0].shape[2]))
    nL = model.get_dim("nL")
    w = model.attrs["initial_weights"]
    model.set_param("w", model.ops.asarray1f(w if w is not None else [0.0] * nL))
    model.set_param("gamma", model.ops.asarray1f([model.attrs["initial_gamma"]]))


def mix_weights(model: Model):
    """Softmax-normalised weights s (nL,) as a numpy float32 array, and gamma as a float."""
    w = numpy.asarray(model.ops.to_numpy(model.get_param("w")), dtype="float64")
    s = numpy.exp(w - w.max())
    return (s / s.sum()).astype("float32"), float(model.ops.to_numpy(model.get_param("gamma"))[0])


def _layer_norm(xp, H):
    """Per-layer normalisation over (n, dim) of H (nL, n, dim) -> (Hn, inverse std (nL, 1, 1))."""
    mean = H.mean(axis=(1, 2), keepdims=True)
    var = ((H - mean) ** 2).mean(axis=(1, 2), keepdims=True)
    inv_std = 1.0 / xp.sqrt(var + LN_EPS)
    return (H - mean) * inv_std, inv_std


def forward(model: Model, Xs: List[Floats3d], is_train: bool):
    xp = model.ops.xp
    nL = model.get_dim("nL")
    for X in Xs:
        if X.ndim != 3 or X.shape[0] != nL:
            raise ElmoDataError(f"ScalarMix expects arrays (num_layers + 1 = {nL}, n_tokens, dim), got {X.shape}")
    if not Xs:
        return [], lambda dYs: []
    w = model.get_param("w")
    gamma = model.get_param("gamma")[0]
    s = xp.exp(w - w.max())
    s /= s.sum()
    lengths = [X.shape[1] for X in Xs]
    if model.attrs["layer_norm"]:
        normed = [_layer_norm(xp, X) if X.shape[1] else (X, None) for X in Xs]
        Hs = [h for h, _ in normed]
    else:
        Hs = list(Xs)
    H = xp.concatenate(Hs, axis=1) if len(Hs) > 1 else Hs[0]  # (nL, N, dim)
    mixed = xp.tensordot(s, H, axes=1)  # (N, dim)
    Y = gamma * mixed
    splits = numpy.cumsum(lengths)[:-1].tolist()
    Ys = xp.split(Y, splits, axis=0) if splits else [Y]

    def backprop(dYs: List[Floats2d]) -> List[Floats3d]:
        dY = xp.concatenate(dYs, axis=0) if len(dYs) > 1 else dYs[0]
        if model.attrs["trainable"]:
            g = xp.tensordot(H, dY, axes=([1, 2], [0, 1]))  # (nL,) = dLoss/ds_j / gamma
            model.inc_grad("w", (gamma * s * (g - (s * g).sum())).astype(w.dtype))
            model.inc_grad("gamma", (dY * mixed).sum().reshape(1).astype(w.dtype))
        dH = (gamma * s)[:, None, None] * dY[None]  # (nL, N, dim)
        dXs = xp.split(dH, splits, axis=1) if splits else [dH]
        if model.attrs["layer_norm"]:
            out = []
            for dX, (hn, inv_std) in zip(dXs, normed):
                if inv_std is None:
                    out.append(dX)
                    continue
                mean_d = dX.mean(axis=(1, 2), keepdims=True)
                mean_dh = (dX * hn).mean(axis=(1, 2), keepdims=True)
                out.append(inv_std * (dX - mean_d - hn * mean_dh))
            dXs = out
        return dXs

    return Ys, backprop
