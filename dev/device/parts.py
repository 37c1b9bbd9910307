"""A pretrained model directory as a few files of at most 16 MiB, weights in float16, and back.

    python dev/device/parts.py split MODEL_DIR OUT_DIR [--max-mib 16] [--max-files 6]
    python dev/device/parts.py join OUT_DIR/model.manifest.json DEST_DIR
    python dev/device/parts.py verify OUT_DIR/model.manifest.json MODEL_DIR WORK_DIR

``split`` reads options.json, vocab.txt, meta.json and every dataset and attribute of
weights.hdf5 and lm_head.hdf5 (no optimizer state: a model directory holds none), stores the
floating-point datasets as float16 (float32 where a value is beyond float16's range), packs it
all into one uncompressed ``.npz`` blob and cuts that into ``model.partNN`` files of at most
``--max-mib`` MiB, described by ``model.manifest.json`` (sha256 of every part and of the blob).
``join`` checks those digests, writes the directory back with the datasets in their original
dtypes and a fresh sha256.json: it loads to exactly the float16-rounded weights of the source.
Raises (exit 2) ValueError for a model needing more than ``--max-files`` files (manifest
included), a digest mismatch or a missing part.
"""
import argparse
import hashlib
import io
import json
import sys
from pathlib import Path

import h5py
import numpy

MIB = 1 << 20
HDF5 = ("weights.hdf5", "lm_head.hdf5")
PLAIN = ("options.json", "vocab.txt", "meta.json")
FLOAT16_MAX = float(numpy.finfo(numpy.float16).max)
MANIFEST = "model.manifest.json"


def _jsonable(value):
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, numpy.ndarray):
        return value.tolist()
    if isinstance(value, numpy.generic):
        return value.item()
    return value


def _read_hdf5(path: Path, arrays: dict, prefix: str) -> dict:
    """Datasets of an HDF5 file into ``arrays`` (float16 where they fit); returns
    {"datasets": {name: original dtype}, "attrs": {object name: {attr: value}}}."""
    info = {"datasets": {}, "attrs": {}}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if obj.attrs:
                info["attrs"][name] = {k: _jsonable(v) for k, v in obj.attrs.items()}
            if isinstance(obj, h5py.Dataset):
                value = obj[...]
                info["datasets"][name] = str(value.dtype)
                small = value.dtype.kind == "f" and (not value.size or numpy.abs(value).max() <= FLOAT16_MAX)
                arrays[f"{prefix}{name}"] = value.astype(numpy.float16) if small else value
        if f.attrs:
            info["attrs"]["/"] = {k: _jsonable(v) for k, v in f.attrs.items()}
        f.visititems(visit)
    return info


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def split(model_dir: str, out_dir: str, max_mib: float = 16, max_files: int = 6, name: str = "model") -> dict:
    """Write ``name.partNN`` + ``model.manifest.json`` into out_dir; returns the manifest."""
    src, out = Path(model_dir), Path(out_dir)
    arrays, manifest = {}, {"format": 1, "files": {}, "hdf5": {}}
    for fname in PLAIN:
        if (src / fname).is_file():
            arrays[f"file/{fname}"] = numpy.frombuffer((src / fname).read_bytes(), dtype=numpy.uint8)
            manifest["files"][fname] = _sha((src / fname).read_bytes())
    for fname in HDF5:
        if not (src / fname).is_file():
            raise ValueError(f"{src / fname} not found: a model directory written by pretrain has {', '.join(HDF5)}")
        manifest["hdf5"][fname] = _read_hdf5(src / fname, arrays, f"h5/{fname}/")
    buf = io.BytesIO()
    numpy.savez(buf, **arrays)
    blob = buf.getvalue()
    size = int(max_mib * MIB)
    n_parts = -(-len(blob) // size)
    if n_parts + 1 > max_files:
        raise ValueError(f"{model_dir}: {len(blob) / MIB:.1f} MiB in float16 needs {n_parts} parts of "
                         f"{max_mib:g} MiB + the manifest, more than the {max_files} files allowed")
    out.mkdir(parents=True, exist_ok=True)
    manifest.update(blob={"bytes": len(blob), "sha256": _sha(blob)}, parts=[])
    for i in range(n_parts):
        chunk = blob[i * size: (i + 1) * size]
        part = f"{name}.part{i:02d}"
        (out / part).write_bytes(chunk)
        manifest["parts"].append({"name": part, "bytes": len(chunk), "sha256": _sha(chunk)})
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def _blob(manifest_path: Path, manifest: dict) -> bytes:
    chunks = []
    for part in manifest["parts"]:
        path = manifest_path.parent / part["name"]
        if not path.is_file():
            raise ValueError(f"{path} is missing: a model split into {len(manifest['parts'])} parts needs them all")
        data = path.read_bytes()
        if _sha(data) != part["sha256"]:
            raise ValueError(f"{path}: sha256 differs from {manifest_path.name} (truncated or corrupted copy)")
        chunks.append(data)
    blob = b"".join(chunks)
    if _sha(blob) != manifest["blob"]["sha256"]:
        raise ValueError(f"{manifest_path}: the joined parts' sha256 differs from the manifest's")
    return blob


def join(manifest_path: str, dest: str) -> Path:
    """Rebuild the model directory ``dest`` from a manifest written by :func:`split`."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from spacy_elmo.bilm import integrity

    path = Path(manifest_path)
    manifest = json.loads(path.read_text(encoding="utf-8"))
    with numpy.load(io.BytesIO(_blob(path, manifest))) as data:
        arrays = {k: data[k] for k in data.files}
    out = Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    for fname in manifest["files"]:
        (out / fname).write_bytes(arrays[f"file/{fname}"].tobytes())
    for fname, info in manifest["hdf5"].items():
        with h5py.File(out / fname, "w") as f:
            for name, dtype in info["datasets"].items():
                f.create_dataset(name, data=arrays[f"h5/{fname}/{name}"].astype(dtype))
            for name, attrs in info["attrs"].items():
                target = f if name == "/" else f[name] if name in f else f.require_group(name)
                for key, value in attrs.items():
                    target.attrs[key] = value
    integrity.record(str(out), ("options.json", "weights.hdf5", "lm_head.hdf5", "vocab.txt"))
    return out


def rounded_copy(model_dir: str, dest: str) -> Path:
    """A copy of a model directory whose float datasets went through :func:`split`'s rounding
    (float16 where they fit), written with h5py directly: what :func:`join` must rebuild."""
    import shutil

    src, out = Path(model_dir), Path(dest)
    shutil.copytree(src, out)
    for fname in HDF5:
        with h5py.File(out / fname, "r+") as f:
            names = []
            f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
            for name in names:
                value = f[name][...]
                if value.dtype.kind == "f" and (not value.size or numpy.abs(value).max() <= FLOAT16_MAX):
                    f[name][...] = value.astype(numpy.float16).astype(value.dtype)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from spacy_elmo.bilm import integrity

    integrity.record(str(out), ("options.json", "weights.hdf5", "lm_head.hdf5", "vocab.txt"))
    return out


def verify(manifest_path: str, model_dir: str, work: str) -> dict:
    """Join the parts into ``work/joined`` and check that they rebuild ``model_dir`` as float16
    rounding would: the same plain files byte for byte, and the same weights bit for bit when
    both are loaded (the training LM and BiLM). Returns {"parts", "mib", "tensors"}; raises
    ValueError naming the first difference."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import torch

    from spacy_elmo.bilm import BiLM
    from spacy_elmo.pretrain.export import load_model

    joined = join(manifest_path, str(Path(work) / "joined"))
    reference = rounded_copy(model_dir, str(Path(work) / "rounded"))
    for fname in PLAIN:
        source = Path(model_dir) / fname
        if source.is_file() and (joined / fname).read_bytes() != source.read_bytes():
            raise ValueError(f"{fname} differs after the join")
    got, ref = load_model(str(joined))[0].state_dict(), load_model(str(reference))[0].state_dict()
    bilm_got = BiLM.from_files(joined / "options.json", joined / "weights.hdf5").state_dict()
    bilm_ref = BiLM.from_files(reference / "options.json", reference / "weights.hdf5").state_dict()
    for name, states in (("training LM", (got, ref)), ("BiLM", (bilm_got, bilm_ref))):
        a, b = states
        if a.keys() != b.keys():
            raise ValueError(f"{name}: other parameters after the join")
        for key in a:
            if not torch.equal(a[key], b[key]):
                raise ValueError(f"{name} {key}: not bit-identical after the join")
    manifest = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
    return {"parts": len(manifest["parts"]), "mib": round(manifest["blob"]["bytes"] / MIB, 2),
            "tensors": len(got) + len(bilm_got)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split")
    s.add_argument("model_dir")
    s.add_argument("out_dir")
    s.add_argument("--max-mib", type=float, default=16)
    s.add_argument("--max-files", type=int, default=6)
    j = sub.add_parser("join")
    j.add_argument("manifest")
    j.add_argument("dest")
    v = sub.add_parser("verify", help="join into WORK and compare with the float16-rounded MODEL_DIR")
    v.add_argument("manifest")
    v.add_argument("model_dir")
    v.add_argument("work")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "split":
            m = split(args.model_dir, args.out_dir, args.max_mib, args.max_files)
            print(f"split {args.model_dir}: {m['blob']['bytes'] / MIB:.1f} MiB in {len(m['parts'])} part(s) "
                  f"+ {MANIFEST}")
        elif args.cmd == "join":
            print(f"joined into {join(args.manifest, args.dest)}")
        else:
            r = verify(args.manifest, args.model_dir, args.work)
            print(f"joined {r['parts']} part(s), {r['mib']:.2f} MiB: {r['tensors']} tensors bit-identical to the "
                  "float16-rounded model")
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
