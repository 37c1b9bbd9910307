"""What each call of dev/device/gpu_check.sh carries beside the working tree, and its size.

    python dev/device/bundle.py wheels DEST [--python-version 3.12]
    python dev/device/bundle.py corpus DEST.npz.xz --budget-mib M [--corpus-cache DIR | --lines N]
    python dev/device/bundle.py sizes [--json PATH]
    python dev/device/bundle.py image-site DEST   (the dry run's stand-in for the GPU image)

The GPU machine receives the working tree and at most 64 MiB in all per call, has no network,
and its Python has torch and numpy but no spaCy stack (image_packages.txt lists what it has).
So the calls carry, under the git-ignored ``.gpu/``:

- call 1 (``.gpu/call1``): the wheels of the biLM and the trainer (h5py, confection and their
  dependencies) and the pre-tokenised corpus (``corpus.npz.xz``, :mod:`spacy_elmo.pretrain.corpus_pack`),
  as large as the 64 MiB leave room for: the pretraining stint;
- call 2 (``.gpu/call2``): every wheel of the spaCy stack but spaCy's own (blis, thinc, ...):
  the inference measurements;
- call 3 (``.gpu/call3``): spaCy's wheel (34 MiB): installed beside call 2's packages (which stay
  on the machine while it is warm), the spaCy GPU tests.

The warm-start model is the packaged en_elmo_small, which travels in the tree. Wheels are
downloaded with ``pip download --only-binary=:all:`` for CPython on manylinux x86-64, pinned to
the versions installed here (the versions the tests pass with).
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

MIB = 1 << 20
LIMIT_MIB = 64.0  # what travels per call: the tree and the carried folders
MARGIN_MIB = 0.5  # kept free under the limit (files written between the measurement and the call)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64", "manylinux_2_5_x86_64")
LM_ROOTS = ("h5py", "confection", "platformdirs")  # what the biLM, the trainer and its CLI import beyond the image
SPACY_ROOTS = ("spacy",)
CARRIED_ANYWAY = {"h5py", "typing-extensions"}  # in the image; carried: the tested versions
CALLS = {"call1": "biLM + trainer wheels, pre-tokenised corpus: GPU biLM tests, pretraining stint",
         "call2": "spaCy's dependencies: inference speed and parity",
         "call3": "spaCy: the spaCy GPU tests (needs call 2's install, made just before)"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def image_packages() -> set:
    lines = (Path(__file__).parent / "image_packages.txt").read_text(encoding="utf-8").splitlines()
    return {canonical(x) for x in lines if x.strip() and not x.startswith("#")}


def local_pin(name: str) -> str:
    return f"{name}=={metadata.version(name)}"


def wheel_name(path: Path) -> str:
    return canonical(path.name.split("-")[0])


def requirements(wheel: Path, python_version: str) -> list:
    """Names a wheel needs on CPython ``python_version`` / Linux (its Requires-Dist, extras left out)."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode("utf-8").splitlines()
    env = {"python_version": python_version, "python_full_version": f"{python_version}.0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
           "platform_python_implementation": "CPython", "os_name": "posix", "extra": ""}
    names = []
    for line in lines:
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker is None or req.marker.evaluate(env):
                names.append(canonical(req.name))
    return names


def closure(roots, wheels: dict, python_version: str, provided: set) -> list:
    """The wheels (name -> path) that ``roots`` need, transitively, less what ``provided`` has.
    Raises ValueError naming a needed package that neither has."""
    todo, seen = [canonical(r) for r in roots], set()
    while todo:
        name = todo.pop()
        if name in seen or (name in provided and name not in CARRIED_ANYWAY):
            continue
        if name not in wheels:
            raise ValueError(f"no wheel for {name}, which the carried packages need, and the GPU image lacks it")
        seen.add(name)
        todo += requirements(wheels[name], python_version)
    return sorted(seen)


def download(dest: Path, python_version: str) -> dict:
    """pip download the roots with their dependencies for python_version (pins: this environment's
    versions, as constraints) into dest; returns {name: wheel path}."""
    dest.mkdir(parents=True, exist_ok=True)
    pins = []
    for dist in metadata.distributions():
        name, version = dist.metadata["Name"], dist.version
        if name and "+" not in version and canonical(name) not in ("torch", "spacy-elmo"):
            pins.append(f"{name}=={version}")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(sorted(set(pins))) + "\n")
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--python-version", python_version,
           "--implementation", "cp", "-d", str(dest), "-c", f.name]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    proc = subprocess.run(cmd + [local_pin(r) for r in LM_ROOTS + SPACY_ROOTS], capture_output=True, text=True)
    if proc.returncode:
        noise = "is ignored: it is neither a file nor a directory"
        raise ValueError("pip download failed: " + " ".join(x for x in proc.stderr.splitlines() if noise not in x))
    wheels = {}
    for path in sorted(dest.glob("*.whl")):
        wheels[wheel_name(path)] = path
    return wheels


def wheels_per_call(wheels: dict, python_version: str) -> dict:
    """{"call1": [names], "call2": [...], "call3": [...]}: see the module docstring."""
    provided = image_packages()
    lm = closure(LM_ROOTS, wheels, python_version, provided)
    stack = closure(SPACY_ROOTS + ("h5py",), wheels, python_version, provided)
    return {"call1": lm, "call2": [n for n in stack if n not in SPACY_ROOTS], "call3": list(SPACY_ROOTS)}


def cmd_wheels(dest: str, python_version: str, cache: str) -> dict:
    """Fill DEST/callN/wheels (replacing what was there) and return the plan."""
    import shutil

    wheels = download(Path(cache), python_version)
    plan = wheels_per_call(wheels, python_version)
    for call, names in plan.items():
        folder = Path(dest) / call / "wheels"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name in names:
            shutil.copy2(wheels[name], folder / wheels[name].name)
    return plan


# -- sizes -------------------------------------------------------------------------------------

def tree_files(repo: Path = REPO) -> list:
    """What the device tool sends of the working tree: tracked and untracked-not-ignored files."""
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         check=True, capture_output=True).stdout.decode("utf-8")
    return [repo / p for p in out.split("\0") if p and (repo / p).is_file()]


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def call_sizes(repo: Path = REPO, gpu_dir: Path = None) -> dict:
    """{"tree_mib", "calls": {call: {"carry_mib", "total_mib", "fits"}}, "largest_mib"}."""
    gpu_dir = gpu_dir or repo / ".gpu"
    tree = sum(p.stat().st_size for p in tree_files(repo))
    calls = {}
    for call in CALLS:
        carry = folder_bytes(gpu_dir / call)
        total = (tree + carry) / MIB
        calls[call] = {"carry_mib": round(carry / MIB, 2), "total_mib": round(total, 2),
                       "fits": total <= LIMIT_MIB - MARGIN_MIB, "what": CALLS[call]}
    return {"tree_mib": round(tree / MIB, 2), "limit_mib": LIMIT_MIB, "calls": calls,
            "largest_mib": max(c["total_mib"] for c in calls.values())}


def corpus_budget_mib(repo: Path = REPO) -> float:
    """MiB left for call 1's corpus: the limit less the tree, call 1's wheels and the margin."""
    sizes = call_sizes(repo)
    wheels = folder_bytes(repo / ".gpu" / "call1" / "wheels") / MIB
    return LIMIT_MIB - MARGIN_MIB - sizes["tree_mib"] - wheels


def image_site(dest: str) -> int:
    """Symbolic links, in ``dest``, to this environment's packages that the GPU image also has
    (less h5py, which may be missing there): with a ``.pth`` naming ``dest`` in a fresh venv, an environment
    like the image's (the dry run). Returns the number of packages linked."""
    out = Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    wanted, n = image_packages() - {"h5py"}, 0  # h5py: as if the image lacked it (it is carried)
    for dist in metadata.distributions():
        if canonical(dist.metadata["Name"] or "") not in wanted:
            continue
        n += 1
        tops = {Path(f).parts[0] for f in (dist.files or []) if not str(f).startswith("..")}
        for top in tops:
            target, link = Path(dist.locate_file(top)), out / top
            if target.exists() and not link.exists() and top != "__pycache__":
                link.symlink_to(target)
    return n


# -- the corpus --------------------------------------------------------------------------------

def _corpus_from_cache(cache_dir: str) -> dict:
    import numpy

    from spacy_elmo.pretrain.corpus import Split

    cache = Path(cache_dir)
    data = numpy.load(cache / "corpus.npz")
    section = json.loads((cache / "key.json").read_text())
    model_cfg = (REPO / "spacy_elmo" / "models" / "en_elmo_small" / "config.cfg").read_text(encoding="utf-8")
    found = re.search(r'^license = "(.*)"$', model_cfg, re.M)
    section["license"] = found.group(1) if found else "unknown"
    return {"types": json.loads((cache / "types.json").read_text(encoding="utf-8")),
            "train": Split(data["train_tokens"], data["train_offsets"]),
            "heldout": Split(data["heldout_tokens"], data["heldout_offsets"]),
            "files": json.loads((cache / "files.json").read_text(encoding="utf-8")), "section": section}


def _corpus_from_text(lines: int) -> dict:
    """Tokenise (spaCy) the first ``lines`` lines of each file of en_elmo_small's [corpus] (files
    named there, read from the shared data folder's ``data/lm/``: dev/shared_data.py)."""
    from spacy_elmo.pretrain.config import load_config
    from spacy_elmo.pretrain.corpus_cache import prepare_corpus

    sys.path.insert(0, str(REPO / "dev"))
    from shared_data import shared_dir

    model_cfg = REPO / "spacy_elmo" / "models" / "en_elmo_small" / "config.cfg"
    names = load_config(model_cfg)["corpus"]["paths"]  # the model's corpus files, by name
    paths = [str(shared_dir() / "data" / "lm" / Path(name).name) for name in names]
    cfg = load_config(model_cfg, {"corpus.max_lines_per_file": lines, "corpus.paths": paths})
    with tempfile.TemporaryDirectory() as tmp:
        corpus = prepare_corpus(cfg, Path(tmp), progress=False)
    corpus["section"] = dict(cfg["corpus"])
    return corpus


def cmd_corpus(dest: str, budget_mib: float, cache_dir: str = None, lines: int = 0) -> dict:
    """Write the largest slice that fits ``budget_mib``: the bytes per token are measured on a
    sample, then the slice is cut and packed, and cut smaller while it does not fit."""
    from spacy_elmo.pretrain.corpus_pack import pack

    corpus = _corpus_from_cache(cache_dir) if cache_dir else _corpus_from_text(lines)
    args = (corpus["types"], corpus["train"], corpus["heldout"], corpus["files"], corpus["section"])
    sample = pack(dest, *args, max_train_tokens=2_000_000)
    per_token = sample["bytes"] / max(1, sample["train_tokens"] + sample["heldout_tokens"])
    tokens = int(0.97 * budget_mib * MIB / per_token)
    for _ in range(4):
        result = pack(dest, *args, max_train_tokens=tokens)
        if result["bytes"] <= budget_mib * MIB:
            return dict(result, budget_mib=round(budget_mib, 2), source_train_tokens=corpus["train"].n_tokens)
        tokens = int(tokens * 0.97 * budget_mib * MIB / result["bytes"])
    raise ValueError(f"the corpus slice does not fit {budget_mib:.1f} MiB")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wheels")
    w.add_argument("dest")
    w.add_argument("--python-version", default="3.12")
    w.add_argument("--cache", default=str(REPO / ".gpu" / "wheelhouse"))
    c = sub.add_parser("corpus")
    c.add_argument("dest")
    c.add_argument("--budget-mib", type=float, default=None, help="default: what call 1 leaves")
    c.add_argument("--corpus-cache", default=None, help="a pretraining run's corpus/ folder (else tokenise)")
    c.add_argument("--lines", type=int, default=200_000, help="without --corpus-cache: lines per file to tokenise")
    s = sub.add_parser("sizes")
    s.add_argument("--json", default=None)
    i = sub.add_parser("image-site", help="(dry run) link the packages the GPU image has into DEST")
    i.add_argument("dest")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "wheels":
            plan = cmd_wheels(args.dest, args.python_version, f"{args.cache}-{args.python_version}")
            for call, names in plan.items():
                print(f"{call}: {len(names)} wheels: {', '.join(names)}")
        elif args.cmd == "corpus":
            budget = args.budget_mib if args.budget_mib is not None else corpus_budget_mib()
            r = cmd_corpus(args.dest, budget, args.corpus_cache, args.lines)
            print(f"corpus: {r['train_tokens']:,} of {r['source_train_tokens']:,} training tokens + "
                  f"{r['heldout_tokens']:,} held-out, {r['types']:,} types: {r['bytes'] / MIB:.2f} MiB "
                  f"(budget {r['budget_mib']:.2f} MiB)")
        elif args.cmd == "image-site":
            print(f"linked {image_site(args.dest)} packages the GPU image has into {args.dest}")
        else:
            sizes = call_sizes()
            for call, c in sizes["calls"].items():
                print(f"{call}: tree {sizes['tree_mib']:.2f} MiB + carry {c['carry_mib']:.2f} MiB = "
                      f"{c['total_mib']:.2f} MiB {'ok' if c['fits'] else 'OVER'} (limit {LIMIT_MIB:g}): {c['what']}")
            if args.json:
                Path(args.json).write_text(json.dumps(sizes, indent=1), encoding="utf-8")
            if not all(c["fits"] for c in sizes["calls"].values()):
                return 2
    except (ValueError, OSError, subprocess.CalledProcessError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
