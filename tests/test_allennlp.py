"""spacy_elmo.allennlp's Elmo and batch_to_ids against AllenNLP 2.10.1's own outputs (stored in
tests/data/allennlp/ by its make_reference.py; AllenNLP is not needed here): the bilm-tf
fixture model ("tf", from the shared folder) and a random model of other shapes ("random")."""
import ast
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from spacy_elmo.allennlp import Elmo, ElmoBiLm, ScalarMix, batch_to_ids
from spacy_elmo.bilm import BiLM, chars
from spacy_elmo.errors import ElmoConfigError, ElmoDataError, ElmoTypeError

from allennlp_reference import TOL, assert_matches, inputs, max_diff, mixes, model_files, reference

MODELS = ["tf", "random"]


@pytest.fixture(params=MODELS)
def model(request):
    if request.param == "tf":
        request.getfixturevalue("fixture_dir")  # skips without the shared folder
    return request.param


def elmo(model, n_reps=1, set_mixes=True, **kw):
    """AllenNLP's models of make_reference.py: dropout 0, its mix parameters loaded by name."""
    module = Elmo(*model_files(model), n_reps, dropout=0.0, **kw)
    if set_mixes:
        result = module.load_state_dict(mixes(n_reps), strict=False)
        assert result.unexpected_keys == []
    return module


def ids():
    return batch_to_ids(inputs()["sentences"])


CASES = {
    "two": dict(n_reps=2),
    "layer_norm": dict(do_layer_norm=True),
    "keep": dict(n_reps=2, keep_sentence_boundaries=True),
    "keep_layer_norm": dict(do_layer_norm=True, keep_sentence_boundaries=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_elmo_matches_allennlp(model, case):
    out = elmo(model, **CASES[case])(ids())
    assert_matches(out, f"{model}/{case}")
    if "keep" not in case:  # boundaries removed: padding is exactly zero
        for rep in out["elmo_representations"]:
            assert bool((rep[~out["mask"]] == 0).all())


def test_fixed_mix_matches_allennlp_and_trains_nothing(model):
    module = elmo(model, set_mixes=False, scalar_mix_parameters=inputs()["fixed_mix"])
    assert [name for name, p in module.named_parameters() if p.requires_grad] == []
    assert_matches(module(ids()), f"{model}/fixed")


def test_vocab_to_cache_and_its_fallback(model):
    module = elmo(model, vocab_to_cache=inputs()["vocab_to_cache"])
    word_ids = torch.tensor(inputs()["word_ids"])
    assert_matches(module(ids(), word_ids), f"{model}/cache")
    # the cached path never reads the char ids
    assert_matches(module(torch.zeros_like(ids()), word_ids), f"{model}/cache")
    # one id past the vocabulary: the char CNN runs on the char ids instead
    assert_matches(module(ids(), torch.tensor(inputs()["word_ids_outside"])), f"{model}/cache_fallback")
    four_d = ids().view(2, 2, *ids().shape[1:])
    assert_matches(module(four_d, word_ids.view(2, 2, -1)), f"{model}/four_d_cache")


def test_four_d_inputs(model):
    x = ids()
    out = elmo(model)(x.view(2, 2, *x.shape[1:]))
    assert out["elmo_representations"][0].shape[:3] == (2, 2, x.shape[1]) and out["mask"].shape == (2, 2, x.shape[1])
    assert_matches(out, f"{model}/four_d")


def test_four_d_inputs_keep_their_boundaries():
    """(AllenNLP cannot reshape this case back and raises.)"""
    x = ids()
    flat = elmo("random", keep_sentence_boundaries=True)(x)
    out = elmo("random", keep_sentence_boundaries=True)(x.view(2, 2, *x.shape[1:]))
    assert out["mask"].shape == (2, 2, x.shape[1] + 2)
    assert torch.equal(out["elmo_representations"][0].reshape(flat["elmo_representations"][0].shape),
                       flat["elmo_representations"][0])


def _calls():
    sentences = inputs()["sentences"]
    return [batch_to_ids([sentences[r] for r in rows]) for rows in inputs()["stateful_calls"]]


def test_stateful_reproduces_allennlps_carried_state(model):
    module = elmo(model, stateful=True)
    for call, x in enumerate(_calls()):
        assert_matches(module(x), f"{model}/stateful/{call}")
    module._elmo_lstm._elmo_lstm.reset_states()  # AllenNLP's idiom
    assert_matches(module(_calls()[0]), f"{model}/stateful/0")


def test_stateless_by_default_so_allennlps_second_call_differs(model):
    """The comparison can fail: AllenNLP's default carries the state, and its second call on the
    same batch moves far past the tolerance; ours repeats the first."""
    module = elmo(model)
    first, second = module(_calls()[0]), module(_calls()[1])
    assert_matches(first, f"{model}/stateful/0")
    assert_matches(second, f"{model}/stateful/0")
    assert max_diff(second, f"{model}/stateful/1") > 100 * TOL
    with pytest.raises(AssertionError, match="max abs diff"):
        assert_matches(second, f"{model}/stateful/1")


def test_batch_to_ids_is_allennlps():
    got = batch_to_ids(inputs()["ids_tokens"])
    assert got.dtype == torch.int64 and torch.equal(got, torch.from_numpy(reference()["ids"]))


def test_boundary_tokens_here_text_in_the_core():
    """AllenNLP (and bilm-tf) read a literal <S> / </S> as the sentence boundary; the core reads
    every token as text of the document (the spaCy component, embed, pretraining)."""
    batch = [["<S>", "</S>", "<s>"]]
    ours = batch_to_ids(batch)[0]
    assert torch.equal(ours[0], torch.from_numpy(chars.BOS_IDS))
    assert torch.equal(ours[1], torch.from_numpy(chars.EOS_IDS))
    assert torch.equal(ours[2], torch.from_numpy(chars.token_to_char_ids("<s>")))
    core = chars.batch_to_ids(batch)[0]
    assert torch.equal(core[0], torch.from_numpy(chars.token_to_char_ids("<S>")))
    assert not torch.equal(core[0], ours[0]) and torch.equal(core[2], ours[2])
    assert core[0, 1:5].tolist() == [ord(c) + 1 for c in "<S>"] + [chars.EOW_CHAR + 1]


def test_state_dict_names_and_train_mode():
    module = Elmo(*model_files("random"), 2)
    assert module.training and module._dropout.p == 0.5
    names = sorted(n for n, p in module.named_parameters() if p.requires_grad)
    assert names == sorted(inputs()["mixes"])
    assert sorted(k for k in module.state_dict() if k.startswith("scalar_mix")) == names
    assert module.get_output_dim() == 24
    x = ids()
    torch.manual_seed(0)
    train = module(x)["elmo_representations"][0]
    module.eval()
    evaluated = module(x)["elmo_representations"][0]
    assert not torch.equal(train, evaluated)
    assert torch.allclose(train[train != 0], 2 * evaluated[train != 0], atol=1e-6)  # dropout 0.5 scales by 2


def test_gradients_reach_the_mixes_and_with_requires_grad_the_bilm():
    frozen = Elmo(*model_files("random"), 1, dropout=0.0)
    frozen(ids())["elmo_representations"][0].sum().backward()
    mix = frozen.scalar_mix_0
    assert all(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in [mix.gamma, *mix.scalar_parameters])
    assert all(not p.requires_grad for p in frozen._elmo_lstm.parameters())
    tuned = Elmo(*model_files("random"), 1, dropout=0.0, requires_grad=True)
    out = tuned(ids())
    out["elmo_representations"][0].pow(2).sum().backward()
    bilm = tuned._elmo_lstm.bilm
    grads = {n: p.grad for n, p in bilm.named_parameters()}
    assert grads and all(g is not None for g in grads.values())
    assert float(bilm.char_cnn.projection.weight.grad.abs().sum()) > 0
    assert sum(float(g.abs().sum()) for n, g in grads.items() if n.startswith("lstm.")) > 0


class ToyBiLm(torch.nn.Module):
    """A user biLM: 2 layers of fixed activations with the boundaries, width 3."""

    num_layers = 2

    def get_output_dim(self):
        return 3

    def forward(self, inputs, word_inputs=None):
        B, T = inputs.shape[:2]
        base = torch.arange(B * (T + 2) * 3, dtype=torch.float32).view(B, T + 2, 3)
        mask = torch.ones(B, T + 2, dtype=torch.bool)
        return {"activations": [base, -2 * base], "mask": mask}


def test_module_is_a_user_bilm():
    module = Elmo(None, None, 1, module=ToyBiLm(), dropout=0.0, scalar_mix_parameters=[0.0, 0.0])
    x = torch.ones(2, 4, 50, dtype=torch.long)
    out = module(x)
    base = torch.arange(2 * 6 * 3, dtype=torch.float32).view(2, 6, 3)
    assert torch.equal(out["elmo_representations"][0], (0.5 * base - base)[:, 1:-1])
    assert module.get_output_dim() == 3
    with pytest.raises(ElmoConfigError, match="not both"):
        Elmo(*model_files("random"), 1, module=ToyBiLm())
    with pytest.raises(ElmoConfigError, match="stateful"):
        Elmo(None, None, 1, module=ToyBiLm(), stateful=True)


def test_bad_inputs_are_clear(caplog):
    module = elmo("random")
    with pytest.raises(ElmoTypeError, match="tensor of char ids"):
        module([["a"]])
    with pytest.raises(ElmoDataError, match=r"\(batch, timesteps, 50\)"):
        module(torch.zeros(3, 50, dtype=torch.long))
    with pytest.raises(ElmoConfigError, match="length 2, the biLM has 3 layers"):
        Elmo(*model_files("random"), 1, scalar_mix_parameters=[1.0, 2.0])
    with pytest.raises(ElmoDataError, match="padding must follow"):
        module(torch.stack([torch.zeros(50, dtype=torch.long), batch_to_ids([["a"]])[0, 0]])[None])
    with caplog.at_level(logging.WARNING, logger="spacy_elmo"):
        out = module(ids(), torch.ones(4, 7, dtype=torch.long))
    assert "does not have a cached vocab" in caplog.text
    assert torch.equal(out["elmo_representations"][0], module(ids())["elmo_representations"][0])


def test_scalar_mix_layer_norm_is_over_the_whole_masked_batch():
    """One mean and variance per layer over every unmasked element of the batch (eps 1e-13)."""
    mix = ScalarMix(2, do_layer_norm=True, initial_scalar_parameters=[0.0, -1e9], trainable=False)
    t = torch.tensor([[[1.0, 3.0], [5.0, 7.0]], [[2.0, 4.0], [100.0, 100.0]]])
    mask = torch.tensor([[True, True], [True, False]])
    kept = torch.tensor([1.0, 3.0, 5.0, 7.0, 2.0, 4.0])
    expected = (t - kept.mean()) / torch.sqrt(kept.var(unbiased=False) + 1e-13)
    assert torch.allclose(mix([t, torch.zeros_like(t)], mask), expected, atol=1e-6)
    with pytest.raises(ElmoConfigError, match="needs the mask"):
        mix([t, t])
    with pytest.raises(ElmoDataError, match="3 tensors"):
        mix([t, t, t], mask)


PACKAGE = Path(__file__).resolve().parent.parent / "spacy_elmo" / "allennlp"


def test_the_module_imports_only_bilm():
    """spacy_elmo.allennlp is pure PyTorch over spacy_elmo.bilm (and spacy_elmo.errors, and the
    package's one text reader spacy_elmo.text_files, which imports only the standard library and
    spacy_elmo.errors): no spaCy, thinc or other part of the package (model names resolve through
    bilm's resolver hook)."""
    reader = ast.parse((PACKAGE.parent / "text_files.py").read_text(encoding="utf-8"))
    assert [n.module for n in ast.walk(reader) if isinstance(n, ast.ImportFrom) and n.level] == ["errors"]
    assert not [a.name for n in ast.walk(reader) if isinstance(n, ast.Import) for a in n.names
                if a.name.split(".")[0] in ("spacy", "thinc", "spacy_elmo", "torch")]
    bad = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            inside = (not isinstance(node, ast.ImportFrom)
                      or (node.module or "").startswith(("bilm", "errors", "text_files")))
            if isinstance(node, ast.ImportFrom) and node.level == 2 and not inside:
                bad.append(f"{path.name}: ..{node.module}")
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            bad += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("spacy", "thinc", "spacy_elmo")]
    assert bad == []
    code = ("import sys, spacy_elmo.allennlp\n"
            "print(sorted({m.split('.')[0] if not m.startswith('spacy_elmo') else '.'.join(m.split('.')[:2])"
            " for m in sys.modules if m.split('.')[0] in ('spacy', 'thinc', 'spacy_elmo')}))")
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent.parent))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    loaded = ("['spacy_elmo', 'spacy_elmo._extensions_hook', 'spacy_elmo.allennlp', 'spacy_elmo.bilm', "
              "'spacy_elmo.errors', 'spacy_elmo.text_files']")
    assert proc.stdout.strip() == loaded


def test_elmo_bilm_is_allennlps_elmo_bilm_shape():
    bilm = ElmoBiLm(*model_files("random"))
    out = bilm(ids())
    assert bilm.num_layers == 3 and len(out["activations"]) == 3 and out["mask"].shape == (4, 9)
    assert out["mask"].sum(1).tolist() == [9, 5, 2, 7]
    assert isinstance(bilm.bilm, BiLM) and bilm.get_output_dim() == 24
