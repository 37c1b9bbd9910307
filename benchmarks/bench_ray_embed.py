"""Lines/s of ``embed --ray`` (spacy_elmo.scale.embed_file_ray) with 1 and 2 actors next to the
single-process ``embed`` (embed_file) on the same file, and Ray's overhead on a small file;
prints one JSON line. Needs ray[data] (pip install -e ".[scale]").

usage: python benchmarks/bench_ray_embed.py [--model NAME_OR_DIR] [--lines 1000] [--small 20]
           [--text PATH] [--group-mb 4] [--actors 1,2] [--cpus 2] [--runs 1]

Workload: the first --lines lines of --text (default ../shared/data/lm/wikinews_en.txt.gz),
split on whitespace (``--pretokenized``), ``--layers all`` float32, groups of --group-mb MB (one
shard each with Ray; the same groups serially). Timed, each --runs times (best wall time kept),
a fresh OUTPUT each time:
  serial: ``embed_file`` in this process, 1 torch thread (model load included);
  ray_N: ``embed_file_ray(..., actors=N)`` on a local cluster started once with
      ray.init(num_cpus=--cpus); includes reading and tokenizing on the driver, actor start
      (each loads the biLM), the shards and manifest.json;
  small: the same two on the first --small lines: ``overhead_s`` = ray_1 - serial there, and
      ``cluster_start_s`` = the ray.init time, paid once per run of the command.
On a machine where the actors share one core (taskset -c 1), 2 actors cannot beat 1: the
numbers then show Ray's cost, not its speed-up. Say which cores it ran on. ``--out PATH`` also
writes this script's row of docs/results/speed_pipeline.json (result_record.write_row).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_embed import SHARED, cpu_name, read_lines  # noqa: E402


def timed(fn, runs):
    """Best wall time (s) of ``runs`` calls of fn() and the last result."""
    best, out = float("inf"), None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--lines", type=int, default=1000)
    ap.add_argument("--small", type=int, default=20)
    ap.add_argument("--text", default=os.path.join(SHARED, "data", "lm", "wikinews_en.txt.gz"))
    ap.add_argument("--group-mb", type=float, default=4.0)
    ap.add_argument("--actors", default="1,2")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--out", help="also write this script's row here (docs/results/speed_pipeline.json)")
    a = ap.parse_args(argv)

    import ray
    import torch

    from spacy_elmo import DEFAULT_MODEL
    from spacy_elmo.embed import embed_file
    from spacy_elmo.scale import embed_file_ray

    torch.set_num_threads(1)
    model = a.model or DEFAULT_MODEL
    tmp = tempfile.mkdtemp(prefix="bench_ray_embed_")
    lines = read_lines(a.text, a.lines)
    big = write(os.path.join(tmp, "big.txt"), lines)
    small = write(os.path.join(tmp, "small.txt"), lines[: a.small])
    n_tokens = sum(len(line.split()) for line in lines)
    kw = dict(model=model, pretokenized=True, group_mb=a.group_mb, progress=False)

    def serial(src):
        out = os.path.join(tmp, "serial.hdf5")
        if os.path.exists(out):
            os.remove(out)
        return embed_file(src, out, **kw)

    def on_ray(src, n):
        out = os.path.join(tmp, "ray_out")
        shutil.rmtree(out, ignore_errors=True)
        return embed_file_ray(src, out, actors=n, **kw)

    serial_s, _ = timed(lambda: serial(big), a.runs)
    t = time.perf_counter()
    ray.init(num_cpus=a.cpus, include_dashboard=False, object_store_memory=200 * 2**20, log_to_driver=False)
    cluster_start = time.perf_counter() - t
    ray.data.DataContext.get_current().enable_progress_bars = False
    result = {"model": model, "lines": len(lines), "tokens": n_tokens, "group_mb": a.group_mb, "cpus": a.cpus,
              "cpu": cpu_name(), "affinity": sorted(os.sched_getaffinity(0)), "torch": torch.__version__,
              "ray": ray.__version__, "cluster_start_s": round(cluster_start, 2),
              "serial": {"wall_s": round(serial_s, 2), "lines_s": round(len(lines) / serial_s, 1)}}
    for n in (int(x) for x in a.actors.split(",")):
        wall, s = timed(lambda: on_ray(big, n), a.runs)
        result[f"ray_{n}"] = {"wall_s": round(wall, 2), "lines_s": round(len(lines) / wall, 1), "shards": s["shards"],
                              "vs_serial": round(serial_s / wall, 3)}
    small_serial, _ = timed(lambda: serial(small), a.runs)
    small_ray, _ = timed(lambda: on_ray(small, 1), a.runs)
    result["small"] = {"lines": a.small, "serial_s": round(small_serial, 2), "ray_1_s": round(small_ray, 2),
                       "overhead_s": round(small_ray - small_serial, 2)}
    ray.shutdown()
    print(json.dumps(result))
    shutil.rmtree(tmp)
    if a.out:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import result_record

        one = result.get("ray_1", {})
        row = {"what": "embed --ray against embed", "lines": len(lines), "lines_s_ray_1_actor": one.get("lines_s"),
               "lines_s_embed": result["serial"]["lines_s"], "ray_overhead_s_small_file": result["small"]["overhead_s"],
               "cluster_start_s": result["cluster_start_s"], "cpus": a.cpus, "affinity": result["affinity"]}
        result_record.write_row(a.out, "benchmarks/bench_ray_embed.py", row, result_record.model_identity(model),
                                argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
