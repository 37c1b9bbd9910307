"""How far AllenNLP's stateful ELMo moves on a second call with the same batch: the record
``docs/results/allennlp_stateful.json`` that docs/allennlp.md quotes.

    python dev/allennlp_stateful.py --out docs/results/allennlp_stateful.json

AllenNLP's ``Elmo`` carries each batch row's LSTM state into its next call. For the two models
of tests/data/allennlp/ (``tf``: the bilm-tf test model of the shared ``fixtures/elmo-reference``;
``random``: random weights of other shapes, that folder's ``random/``) it takes AllenNLP 2.10.1's
own outputs stored there by ``make_reference.py`` (``{model}/stateful/{call}/rep0``: the first
two calls of its call sequence, the same four sentences, its scalar mix) and records the max abs
difference of the second call from the first, over every position (padding is zero in both), as
``allennlp``. It then runs the same calls through ``spacy_elmo.allennlp.Elmo(stateful=True)`` on
the local CPU, records that difference as ``reproduced``, and the largest difference of any of
those outputs from AllenNLP's as ``from_allennlp`` (so the record shows the reproduction is
AllenNLP's number). One torch thread. Raises SystemExit naming the file when the reference data or the shared
fixture is missing.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy
import torch

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "allennlp"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "dev"))

from shared_data import reference_dir  # noqa: E402


def model_files(model: str):
    if model == "tf":
        return reference_dir() / "options.json", reference_dir() / "lm_weights.hdf5"
    return DATA / "random" / "options.json", DATA / "random" / "weights.hdf5"


def drift(reference: dict, inputs: dict, model: str) -> dict:
    """The ``Elmo`` row of one model: AllenNLP's second-call difference, ours, and the agreement."""
    from spacy_elmo.allennlp import Elmo, batch_to_ids

    options, weights = model_files(model)
    module = Elmo(str(options), str(weights), 1, dropout=0.0, stateful=True)
    mixes = {k: torch.tensor(v) for k, v in inputs["mixes"].items() if k.startswith("scalar_mix_0.")}
    assert module.load_state_dict(mixes, strict=False).unexpected_keys == []
    sentences = inputs["sentences"]
    with torch.no_grad():
        ours = [module(batch_to_ids([sentences[r] for r in rows]))["elmo_representations"][0].numpy()
                for rows in inputs["stateful_calls"][:2]]
    theirs = [reference[f"{model}/stateful/{call}/rep0"] for call in range(2)]
    return {"allennlp": float(numpy.abs(theirs[1] - theirs[0]).max()),
            "reproduced": float(numpy.abs(ours[1] - ours[0]).max()),
            "from_allennlp": max(float(numpy.abs(a - b).max()) for a, b in zip(ours, theirs))}


def identity(model: str) -> dict:
    from spacy_elmo.bilm.integrity import sha256

    options, weights = model_files(model)
    if model == "random":
        o = json.loads(options.read_text(encoding="utf-8"))
        cnn, lstm = o["char_cnn"], o["lstm"]
        shapes = (f"{cnn['activation']} char CNN of {sum(n for _, n in cnn['filters'])} filters, "
                  f"{cnn['n_highway']} highway; LSTM {lstm['n_layers']} layers of {lstm['dim']} cells, "
                  f"projection {lstm['projection_dim']}")
        return {"name": "random weights", "shapes": shapes,
                "weights_sha256": sha256(str(weights))}
    return {"name": "bilm-tf test model (shared fixtures/elmo-reference, from AllenNLP's test fixtures)",
            "weights_sha256": sha256(str(weights))}


def record() -> dict:
    from spacy_elmo.bilm.cpu_budget import cpu_name

    for path in (DATA / "reference.npz", DATA / "inputs.json", model_files("tf")[1]):
        if not path.is_file():
            raise SystemExit(f"{path}: not found (tests/data/allennlp/ and the shared folder; "
                             "set $SPACY_ELMO_SHARED to the shared folder)")
    inputs = json.loads((DATA / "inputs.json").read_text(encoding="utf-8"))
    with numpy.load(DATA / "reference.npz") as npz:
        reference = {k: npz[k] for k in npz.files}
    torch.set_num_threads(1)
    models = ["tf", "random"]
    return {"what": "AllenNLP's stateful ELMo: max abs difference of its second call on the same batch from "
                    "its first (Elmo: 4 sentences, one scalar mix); "
                    "allennlp: its own stored outputs, reproduced: spacy_elmo.allennlp with stateful=True, "
                    "from_allennlp: the largest difference of those outputs from AllenNLP's",
            "model": [identity(m) for m in models],
            "machine": {"cpu": cpu_name(), "torch": torch.__version__, "threads": torch.get_num_threads()},
            "reference": f"AllenNLP {inputs['allennlp']} (tests/data/allennlp/, written by its make_reference.py)",
            "command": "python dev/allennlp_stateful.py --out docs/results/allennlp_stateful.json",
            "elmo": {m: drift(reference, inputs, m) for m in models}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the record here (default: print it)")
    args = ap.parse_args(argv)
    text = json.dumps(record(), indent=1) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
