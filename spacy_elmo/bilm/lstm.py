"""The biLM's two stacked LSTMs (forward LM and backward LM) with cell clipping, a projection of
the hidden state and projection clipping: bilm-tf's ``tf.nn.rnn_cell.LSTMCell(num_units=dim,
num_proj=projection_dim, cell_clip, proj_clip, forget_bias=1.0)`` (Peters et al. 2018, section 3.4;
AllenNLP's ``LstmCellWithProjection``)::

    [i, j, f, o] = [x_t, h_{t-1}] W_0 + B                   (bilm-tf gate order)
    c_t = sigmoid(f + 1.0) * c_{t-1} + sigmoid(i) * tanh(j)
    c_t = clip(c_t, -cell_clip, cell_clip)                    (when cell_clip is set and > 0)
    h_t = clip((sigmoid(o) * tanh(c_t)) W_P_0, -proj_clip, proj_clip)

Layer l > 0 reads layer l - 1's outputs; with ``use_skip_connections`` its output is
``h_t + input_t`` (residual; layer 0 never has one). The forward LM reads left to right, the
backward LM right to left within each row's true length; they share nothing.

Parameters (internal gate order i, f, o, j, so the three sigmoid gates are contiguous):
``w_input[l]`` (2, P, 4C), ``w_state[l]`` (2, P, 4C), ``bias[l]`` (2, 4C) = bilm-tf's ``B``
WITHOUT TensorFlow's run-time forget bias (1.0 is added to the f part at run time, exactly as
TF does, so that weights written back are bit-identical), ``w_proj[l]`` (2, C, P).
Direction 0 is the forward LM (bilm-tf ``RNN_0``), 1 the backward LM (``RNN_1``).

Inputs and outputs are packed time-major (see :mod:`.packing`): (2, N, P), direction first.

How a layer runs (oneDNN, ``bmm``, autograd, reduced precision): :mod:`.lstm_paths`, one class
per path, all computing this function; under autograd the training path of :mod:`.lstm_train`
(hand-written backward, C++ / compiled / eager recurrences).
"""
from typing import Callable, List, Optional, Tuple

import torch
from torch import nn

from . import int8, lstm_paths, onednn
from .packing import Packing

FORGET_BIAS = 1.0  # bilm-tf's LSTMCell(forget_bias=1.0), added at run time

State = Tuple[torch.Tensor, torch.Tensor]  # h (L, 2, B, P), c (L, 2, B, C)


def _clip(value) -> Optional[float]:
    return float(value) if value else None


class ElmoLstm(nn.Module):
    """Forward and backward multi-layer LSTMs with projection.

    dim: cells C; projection_dim: P (also the input size); n_layers: L;
    cell_clip / proj_clip: float, or None / 0 for no clipping; use_skip_connections: residual
    connections for layers l > 0.

    Plain attributes, settable after construction: ``gemm_dtype`` (the products' operand dtype
    without autograd, set by ``BiLM(precision=...)``); under autograd ``train_recurrence``
    ("eager" (default), "compiled", "native", "auto" or "autograd") and ``train_gemm_dtype``
    (torch.float32 (default) or torch.bfloat16), see :mod:`.lstm_train`.
    """

    def __init__(self, dim: int, projection_dim: int, n_layers: int, cell_clip: Optional[float] = None,
                 proj_clip: Optional[float] = None, use_skip_connections: bool = False) -> None:
        super().__init__()
        self.dim, self.projection_dim, self.n_layers = dim, projection_dim, n_layers
        self.cell_clip, self.proj_clip = _clip(cell_clip), _clip(proj_clip)
        self.use_skip_connections = bool(use_skip_connections)
        C, P = dim, projection_dim
        self.w_input = nn.ParameterList(nn.Parameter(torch.empty(2, P, 4 * C)) for _ in range(n_layers))
        self.w_state = nn.ParameterList(nn.Parameter(torch.empty(2, P, 4 * C)) for _ in range(n_layers))
        self.bias = nn.ParameterList(nn.Parameter(torch.empty(2, 4 * C)) for _ in range(n_layers))
        self.w_proj = nn.ParameterList(nn.Parameter(torch.empty(2, C, P)) for _ in range(n_layers))
        self._workspace: Optional[torch.Tensor] = None
        self._packed = onednn.PackedCache()  # per-layer weight copies, see packed_weights
        # dtype of the products' operands without autograd: float32 (exact) or, set by
        # BiLM(precision=...), bfloat16 / float16 (see lstm_paths)
        self.gemm_dtype = torch.float32
        # how it trains (under autograd, see lstm_train): the recurrence ("eager", "compiled",
        # "native", "auto" or "autograd") and the products' operand dtype (float32 or bfloat16)
        self.train_recurrence = "eager"
        self.train_gemm_dtype = torch.float32
        self.reset_parameters()

    def __getstate__(self):  # deepcopy / pickle: drop the scratch buffer and packed copies
        state = self.__dict__.copy()
        state["_workspace"], state["_packed"] = None, onednn.PackedCache()
        return state

    @classmethod
    def from_options(cls, options: dict) -> "ElmoLstm":
        o = options["lstm"]
        return cls(o["dim"], o["projection_dim"], o["n_layers"], o.get("cell_clip"), o.get("proj_clip"),
                   o.get("use_skip_connections", False))

    def reset_parameters(self, std: float = 0.05) -> None:
        """Random init: N(0, std^2) weights, zero biases (used before loading or for benchmarks)."""
        with torch.no_grad():
            for p in [*self.w_input, *self.w_state, *self.w_proj]:
                p.normal_(0.0, std)
            for b in self.bias:
                b.zero_()

    def zero_state(self, batch: int) -> State:
        p = self.w_proj[0]
        L, C, P = self.n_layers, self.dim, self.projection_dim
        return p.new_zeros(L, 2, batch, P), p.new_zeros(L, 2, batch, C)

    def gate_bias(self, layer: int) -> torch.Tensor:
        """(2, 4C): layer ``layer``'s bias with the forget bias added (gate order i, f, o, j)."""
        C = self.dim
        b = self.bias[layer]
        return torch.cat([b[:, :C], b[:, C:2 * C] + FORGET_BIAS, b[:, 2 * C:]], dim=1)

    def forward(self, inputs: torch.Tensor, packing: Packing, initial_state: Optional[State] = None,
                dropout: Optional[Callable[[torch.Tensor], torch.Tensor]] = None) -> Tuple[torch.Tensor, State]:
        """inputs (2, N, P) float32, packed per direction -> (outputs (L, 2, N, P), final state).

        initial_state / final state: (h (L, 2, B, P), c (L, 2, B, C)) in SORTED row order
        (``packing.order``); the final state of a row is its state after its last step (a row of
        length 0 keeps its initial state). The layers run on the path :func:`.lstm_paths.choose`
        picks (when anything requires grad: the training path of :mod:`.lstm_train` without an
        initial state, set by ``train_recurrence`` and ``train_gemm_dtype``, else autograd step
        by step; without autograd: oneDNN on CPU float32; ``bmm`` elsewhere;
        reduced precision with ``gemm_dtype`` bfloat16 / float16, not exact, see
        :mod:`.precision`); outputs and states are float32 on every path.

        ``dropout`` (training, e.g. an ``nn.Dropout``): applied to each layer's input before the
        layer reads it; the residual adds the input without it (bilm-tf's ``DropoutWrapper(
        input_keep_prob)``).
        """
        B = len(packing.order)
        h0, c0 = initial_state if initial_state is not None else self.zero_state(B)
        path = lstm_paths.choose(self, inputs, zero_state=initial_state is None)
        outputs, h_fin, c_fin = [], [], []
        x = inputs
        last = packing.last_rows().to(inputs.device)
        for layer in range(self.n_layers):
            x_in = x if dropout is None else dropout(x)
            out, c = path.run(self, layer, x_in, packing, h0[layer], c0[layer])
            h_fin.append(self._final_h(out, last, h0[layer]))  # the cell's state: before the residual
            if self.use_skip_connections and layer > 0:
                out = out.add_(x) if path.in_place else out + x
            c_fin.append(c)
            outputs.append(out)
            x = out
        return torch.stack(outputs), (torch.stack(h_fin), torch.stack(c_fin))

    @staticmethod
    def _final_h(out: torch.Tensor, last: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        ok = last >= 0
        if bool(ok.all()):
            return out[:, last]
        h = h0.clone()
        h[:, ok] = out[:, last[ok]]
        return h

    # -- what the paths share: a scratch buffer and cached weight copies --------------------------
    def workspace(self, n_floats: int, like: torch.Tensor) -> torch.Tensor:
        """A reused scratch buffer of at least ``n_floats`` elements of ``like``'s dtype and device."""
        ws = self._workspace
        if ws is None or ws.numel() < n_floats or ws.dtype != like.dtype or ws.device != like.device:
            with torch.inference_mode(False):  # a normal tensor: usable in and out of inference mode
                ws = torch.empty(n_floats, dtype=like.dtype, device=like.device)
            self._workspace = ws
        return ws

    def packed_weights(self, dtype: torch.dtype = torch.float32) -> List[Tuple[Tuple[torch.Tensor, ...], ...]]:
        """Per layer: ([w_input_d], [w_state_d], [w_proj_d]) reordered for oneDNN, d = 0, 1, as
        ``dtype`` (float32, or bfloat16 copies for the bfloat16 path); cached (another dtype
        replaces the cached copies)."""
        return self._packed.get(
            [*self.w_input, *self.w_state, *self.w_proj],
            lambda: [tuple([onednn.pack(w[d], dtype=dtype) for d in range(2)]
                           for w in (self.w_input[l], self.w_state[l], self.w_proj[l]))
                     for l in range(self.n_layers)],
            tag=None if dtype == torch.float32 else dtype)

    def lowp_weights(self, dtype: torch.dtype) -> List[Tuple[torch.Tensor, ...]]:
        """Per layer (w_input, w_state, w_proj), each (2, ., .), copied to ``dtype``; cached."""
        def build():
            with torch.inference_mode(False), torch.no_grad():
                return [tuple(w[l].detach().to(dtype) for w in (self.w_input, self.w_state, self.w_proj))
                        for l in range(self.n_layers)]

        return self._packed.get([*self.w_input, *self.w_state, *self.w_proj], build, tag=("copy", dtype))

    def int8_weights(self) -> List[Tuple[Tuple["int8.QWeight", ...], ...]]:
        """Per layer ([w_input_d], [w_state_d], [w_proj_d]) as per-channel int8 (:mod:`.int8`); cached."""
        return self._packed.get([*self.w_input, *self.w_state, *self.w_proj], lambda: int8.quantize_lstm(self),
                                tag="int8")
