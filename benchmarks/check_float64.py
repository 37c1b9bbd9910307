"""Why float32 outputs of the ORIGINAL-size random model differ between AllenNLP and us on long
sentences, and proof that the computation is the same: run both in float64.

usage: python benchmarks/check_float64.py {original|small|MODEL_DIR} [--sentences 32] [--venv ...]

The seeded random original-size model (std 0.05, 4096 cells) is strongly chaotic: a rounding
difference of 1e-7 at one step grows about 2x every 6 steps, so two float32 implementations that
sum in a different order (different GEMM kernels) drift apart by ~1e-2 after 75 tokens, and
AllenNLP's own float32 output is that far from its float64 output. In float64 the rounding is
1e-16 and the two implementations must agree to ~1e-9 if they compute the same function.
One subtlety: AllenNLP adds TensorFlow's forget bias 1.0 to B at load time in float32 before
``.double()``; we add it at run time, so for this check our float64 bias is set to
``float32(B + 1) - 1`` (exactly AllenNLP's value).
Prints one JSON line: max |AllenNLP64 - ours64|, max |ours32 - ours64|, max |AllenNLP32 - AllenNLP64|.
The longest --sentences sentences of the workload are run as one batch (stateless).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_bilm  # noqa: E402

ANCHOR_CODE = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
import numpy as np, torch
from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids
torch.set_num_threads(2)
mdir, sents_file, out = sys.argv[1:4]
sents = json.load(open(sents_file))
res = {}
for name, dtype in (("f32", torch.float32), ("f64", torch.float64)):
    bilm = _ElmoBiLm(mdir + "/options.json", mdir + "/weights.hdf5").eval().to(dtype)
    with torch.no_grad():
        acts = torch.stack(bilm(batch_to_ids(sents))["activations"])
    for k, s in enumerate(sents):
        res[f"{name}_{k}"] = acts[:, k, 1:len(s) + 1].double().numpy()
np.savez(out, **res)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", default="original")
    ap.add_argument("--sentences", type=int, default=32)
    ap.add_argument("--models", default=os.path.expanduser("~/.cache/elmo-anchor"))
    ap.add_argument("--venv", default=os.path.expanduser("~/.cache/elmo-anchor/venv"))
    a = ap.parse_args()

    import numpy as np
    import torch

    from spacy_elmo.bilm import BiLM

    torch.set_num_threads(2)
    mdir = bench_bilm.model_dir(a.model, a.models)
    workload = bench_bilm.read_workload(os.path.join(bench_bilm.SHARED, "data", "ud_en_ewt", "en_ewt-ud-dev.conllu"),
                                        200)
    sents = sorted(workload, key=len, reverse=True)[: a.sentences]
    tmp = tempfile.mkdtemp(prefix="elmo-f64-")
    with open(os.path.join(tmp, "sents.json"), "w") as f:
        json.dump(sents, f)
    subprocess.run([os.path.join(a.venv, "bin", "python"), "-c", ANCHOR_CODE, mdir, os.path.join(tmp, "sents.json"),
                    os.path.join(tmp, "allennlp.npz")], check=True)
    theirs = np.load(os.path.join(tmp, "allennlp.npz"))

    b32 = BiLM.from_files(os.path.join(mdir, "options.json"), os.path.join(mdir, "weights.hdf5"))
    b64 = BiLM.from_files(os.path.join(mdir, "options.json"), os.path.join(mdir, "weights.hdf5")).double()
    C = b32.lstm.dim
    with torch.no_grad():
        for layer in range(b32.num_layers):
            b64.lstm.bias[layer][:, C:2 * C] = (b32.lstm.bias[layer][:, C:2 * C] + 1.0).double() - 1.0
    ours32, ours64 = b32.embed_sentences(sents, 32), b64.embed_sentences(sents, 32)

    def worst(pairs):
        return float(max(np.abs(x.astype(np.float64) - y).max() for x, y in pairs))

    n = len(sents)
    res = dict(model=mdir, sentences=n, longest=len(sents[0]),
               allennlp64_vs_ours64=worst((theirs[f"f64_{k}"], ours64[k]) for k in range(n)),
               ours32_vs_ours64=worst((ours32[k], ours64[k]) for k in range(n)),
               allennlp32_vs_allennlp64=worst((theirs[f"f32_{k}"], theirs[f"f64_{k}"]) for k in range(n)),
               allennlp32_vs_ours32=worst((theirs[f"f32_{k}"], ours32[k]) for k in range(n)))
    print(json.dumps(res))


if __name__ == "__main__":
    main()
