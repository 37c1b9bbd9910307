"""The biLM as trained: shared char CNN, forward and backward LSTM stacks, shared softmax.

Training objective (Peters et al. 2018, section 3.1): maximise
    sum_k log p(t_k | t_1..t_{k-1}) + log p(t_k | t_{k+1}..t_N)
with the token representation (char CNN) and the softmax shared by both directions and separate
LSTMs. Sentences are [<S>, t_1..t_N, </S>]: the forward LM reads <S>..t_N and predicts
t_1..</S>; the backward LM reads </S>..t_1 and predicts t_N..<S>.

Speed choice: the LSTMs are ``torch.nn.LSTM(proj_size=...)`` (fused kernel) without clipping. This
is the LSTM-with-projection of bilm-tf with ``cell_clip`` and ``proj_clip`` off, so the exported
options.json declares both as null and the inference biLM computes the same function
(see :mod:`.export`).
"""
import warnings
from typing import Dict

import torch
from torch import nn

from ..bilm.char_cnn import CharCNN

# torch warns once that LSTM(proj_size=...) does not use oneDNN; it still runs at ~130 GFLOP/s here.
warnings.filterwarnings("ignore", message="LSTM with projections is not supported with oneDNN")


class LanguageModel(nn.Module):
    def __init__(self, model_cfg: dict, softmax_cfg: dict, vocab_size: int):
        super().__init__()
        c = model_cfg
        self.n_layers = int(c["n_layers"])
        self.use_skip_connections = bool(c["use_skip_connections"])
        self.projection_dim = int(c["projection_dim"])
        self.lstm_dim = int(c["lstm_dim"])
        self.char_cnn = CharCNN(
            filters=c["filters"],
            char_dim=int(c["char_dim"]),
            n_highway=int(c["n_highway"]),
            projection_dim=self.projection_dim,
            activation=c["activation"],
        )
        P, C = self.projection_dim, self.lstm_dim
        self.forward_lstms = nn.ModuleList(
            nn.LSTM(P, C, proj_size=P, batch_first=True) for _ in range(self.n_layers)
        )
        self.backward_lstms = nn.ModuleList(
            nn.LSTM(P, C, proj_size=P, batch_first=True) for _ in range(self.n_layers)
        )
        self.dropout = nn.Dropout(float(c.get("dropout", 0.0)))
        cutoffs = [int(x) for x in softmax_cfg["cutoffs"] if int(x) < vocab_size - 1]
        self.softmax = nn.AdaptiveLogSoftmaxWithLoss(
            P, vocab_size, cutoffs=cutoffs, div_value=float(softmax_cfg["div_value"])
        )

    def options(self) -> dict:
        """options.json of the exported biLM (bilm-tf layout)."""
        cnn = self.char_cnn
        return {
            "lstm": {
                "dim": self.lstm_dim,
                "projection_dim": self.projection_dim,
                "n_layers": self.n_layers,
                "use_skip_connections": self.use_skip_connections,
                "cell_clip": None,
                "proj_clip": None,
            },
            "char_cnn": {
                "embedding": {"dim": cnn.char_embedding.embedding_dim},
                "filters": [[w, n] for w, n in cnn.filters],
                "n_highway": len(cnn.highways),
                "activation": cnn.activation,
                "n_characters": 262,
                "max_characters_per_token": 50,
            },
        }

    def _run_direction(self, lstms: nn.ModuleList, x: torch.Tensor) -> torch.Tensor:
        """x (B, T, P) left-aligned; trailing padding cannot reach earlier positions."""
        h = x
        for i, lstm in enumerate(lstms):
            out, _ = lstm(self.dropout(h))
            h = out + h if (self.use_skip_connections and i > 0) else out
        return self.dropout(h)

    def forward(
        self,
        char_ids: torch.Tensor,
        fwd_inputs: torch.Tensor,
        bwd_inputs: torch.Tensor,
        fwd_targets: torch.Tensor,
        bwd_targets: torch.Tensor,
    ) -> Dict[str, torch.Tensor]:
        """One batch.

        char_ids (U, 50) int64: the distinct types of the batch.
        fwd_inputs / bwd_inputs (B, T) int64: row indices into char_ids, -1 = padding.
        fwd_targets / bwd_targets (B, T) int64: softmax word ids, -1 = padding.
        Returns {"loss": mean NLL over both directions, "fwd_nll": sum, "bwd_nll": sum,
        "fwd_count": n, "bwd_count": n} (nats).
        """
        types = self.char_cnn(char_ids)
        types = torch.cat([types, types.new_zeros(1, types.shape[1])])
        pad = types.shape[0] - 1
        outs, targets = [], []
        for lstms, inputs, tgt in (
            (self.forward_lstms, fwd_inputs, fwd_targets),
            (self.backward_lstms, bwd_inputs, bwd_targets),
        ):
            x = types[torch.where(inputs >= 0, inputs, pad)]
            h = self._run_direction(lstms, x)
            mask = tgt >= 0
            outs.append(h[mask])
            targets.append(tgt[mask])
        n_fwd = targets[0].shape[0]
        result = self.softmax(torch.cat(outs), torch.cat(targets))
        logp = result.output
        fwd_nll = -logp[:n_fwd].sum()
        bwd_nll = -logp[n_fwd:].sum()
        return {
            "loss": result.loss,
            "fwd_nll": fwd_nll.detach(),
            "bwd_nll": bwd_nll.detach(),
            "fwd_count": n_fwd,
            "bwd_count": logp.shape[0] - n_fwd,
        }
