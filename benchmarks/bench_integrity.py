"""The integrity check on load: how long the sha256 of a model's weights takes, against a plain read.

usage: python benchmarks/bench_integrity.py [original|small] [--runs 3] [--models DIR] [--out PATH [--busy]]

The file: bench_bilm.py's seeded random-weight model of that shape (``--models``/{original,small},
default ~/.cache/elmo-anchor, written on first use; the original's weights.hdf5 is 374 MB). Times
``spacy_elmo.bilm.integrity.sha256`` (what loading runs on every file ``sha256.json`` lists:
hashlib's sha256, 4 MB reads) ``--runs`` times, then one plain read of the file in the same 4 MB
blocks; the file is read once before, so every pass reads it from the page cache. Prints one JSON
line: seconds of each sha256 run, the read's seconds, GB/s of the median sha256 run, the load average.

``--out PATH`` writes the record docs/results/speed_integrity.json (``sha256_s``, ``read_s``,
``gb_s``); with ``--busy`` it only sets ``busy_s`` (the median sha256 run) in the record already
there, measured on this CPU: run it while other jobs keep the cores busy.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import result_record  # noqa: E402

import bench_bilm  # noqa: E402

CHUNK = 1 << 22


def plain_read(path: str) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        while f.read(CHUNK):
            pass
    return time.perf_counter() - t0


def measure(path: str, runs: int) -> dict:
    """Seconds of ``runs`` sha256 passes and of one plain read of ``path`` (warmed into the page cache)."""
    from spacy_elmo.bilm.integrity import sha256

    load = round(os.getloadavg()[0], 2)
    plain_read(path)
    sha = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sha256(path)
        sha.append(round(time.perf_counter() - t0, 3))
    read = round(plain_read(path), 3)
    size = os.path.getsize(path)
    return {"bytes": size, "sha256_s": sha, "read_s": read, "gb_s": round(size / statistics.median(sha) / 1e9, 1),
            "load_average": load}


def record(result: dict, size: str, argv) -> dict:
    return {"what": f"The sha256 check of a model's files on load (spacy_elmo/bilm/integrity.py: OpenSSL's sha256 "
                    f"through hashlib), {len(result['sha256_s'])} runs, and a plain read of the same file",
            "model": result_record.random_model({size: result_record.options_shape(bench_bilm.preset(size))},
                                          file_mb=round(result["bytes"] / 1e6)),
            "machine": result_record.machine(load_average=result["load_average"]),
            "code_path": "bilm/integrity.py sha256 (hashlib, 4 MB reads)",
            "command": result_record.command("benchmarks/bench_integrity.py", argv),
            "sha256_s": result["sha256_s"], "read_s": result["read_s"], "gb_s": result["gb_s"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("size", nargs="?", default="original", choices=["original", "small"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--models", default=os.path.expanduser("~/.cache/elmo-anchor"))
    ap.add_argument("--out", help="write the record here (docs/results/speed_integrity.json)")
    ap.add_argument("--busy", action="store_true", help="only set busy_s in the record at --out")
    a = ap.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    result = measure(os.path.join(bench_bilm.model_dir(a.size, a.models), "weights.hdf5"), a.runs)
    print(json.dumps(result))
    if not a.out:
        return 0
    if not a.busy:
        result_record.write(a.out, record(result, a.size, argv))
        return 0
    with open(a.out, encoding="utf-8") as f:
        kept = json.load(f)
    mb = round(result["bytes"] / 1e6)
    if kept["machine"]["cpu"] != result_record.machine()["cpu"] or kept["model"]["file_mb"] != mb:
        raise SystemExit(f"{a.out} was measured on another CPU or file: write it here first (without --busy)")
    kept.update(busy_s=round(statistics.median(result["sha256_s"]), 2),
                busy_command=result_record.command("benchmarks/bench_integrity.py", argv),
                busy_load_average=result["load_average"])
    result_record.write(a.out, kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
