"""Function-preserving widening of a trained biLM (spacy_elmo/pretrain/widen.py)."""
import pytest
import torch

from spacy_elmo.pretrain.lm import LanguageModel, model_options
from spacy_elmo.pretrain.widen import widened_state_dict, width_change

MODEL = dict(char_dim=4, filters=[[1, 4], [2, 8]], n_highway=1, activation="relu", lstm_dim=16, projection_dim=8,
             n_layers=2, use_skip_connections=True)
SOFTMAX = dict(cutoffs=[10, 30], div_value=2.0)


def _lm(model=MODEL, clip=None, **kwargs):
    options = model_options(model)
    options["lstm"].update(cell_clip=clip, proj_clip=clip)
    return LanguageModel.new(options, SOFTMAX, 60, **kwargs)


def _trained_like(impl, clip=None):
    """A source LM with every weight away from its initialisation (as after training)."""
    torch.manual_seed(0)
    lm = _lm(clip=clip, lstm_impl=impl)
    with torch.no_grad():
        for p in lm.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return lm


def _batch(U=20, B=3, T=7):
    g = torch.Generator().manual_seed(1)
    index = torch.randint(0, U, (B, T), generator=g)
    targets = torch.randint(0, 60, (B, T + 2), generator=g)
    index[0, 5:] = -1  # a shorter sentence
    targets[0, 7:] = -1
    return dict(char_ids=torch.randint(1, 261, (U + 2, 50), generator=g), index=index, targets=targets)


@pytest.mark.parametrize("impl,clip", [("fused", None), ("torch", None), ("torch", 0.5)])
@pytest.mark.parametrize("wider", [{"projection_dim": 12}, {"lstm_dim": 24}, {"projection_dim": 12, "lstm_dim": 24}])
def test_widened_model_computes_the_same_loss(impl, clip, wider):
    source = _trained_like(impl, clip)
    target = _lm({**MODEL, **wider}, clip=clip, lstm_impl=impl)
    assert width_change(source, target) == {k: [MODEL[k], v] for k, v in wider.items()}
    target.load_state_dict(widened_state_dict(source, target))
    batch = _batch()
    a, b = source(**batch), target(**batch)
    torch.testing.assert_close(b["loss"], a["loss"], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(b["fwd_nll"], a["fwd_nll"], rtol=1e-6, atol=1e-5)


def test_every_new_weight_learns():
    """Zero-initialised slices get a gradient at step 0 (no dead units)."""
    source = _trained_like("fused")
    target = _lm({**MODEL, "projection_dim": 12, "lstm_dim": 24})
    target.load_state_dict(widened_state_dict(source, target))
    target(**_batch())["loss"].backward()
    grads = dict(target.named_parameters())
    assert grads["bilm.char_cnn.projection.weight"].grad[8:].abs().sum() > 0
    for name in ("bilm.lstm.w_proj.0", "bilm.lstm.w_proj.1"):
        g = grads[name].grad  # (2, C', P')
        assert g[:, 16:].abs().sum() > 0 and g[:, :, 8:].abs().sum() > 0
    assert grads["softmax.tail.0.1.weight"].grad[:, 4:].abs().sum() > 0  # tail hidden 8 // 2 = 4 -> 6


@pytest.mark.parametrize("change,match", [({"lstm_dim": 8}, "lstm_dim 8 is smaller"),
                                          ({"n_layers": 1}, "n_layers"),
                                          ({"filters": [[1, 4], [2, 4]]}, "filters")])
def test_other_changes_are_refused(change, match):
    source, target = _lm(), _lm({**MODEL, **change})
    with pytest.raises(ValueError, match=match):
        width_change(source, target)


def test_other_clipping_is_refused():
    with pytest.raises(ValueError, match="clipping"):
        width_change(_lm(clip=3.0), _lm({**MODEL, "lstm_dim": 24}))
