"""report.json, report.md and logs.txt of one call of dev/device/gpu_check.sh.

Reads STEPS_DIR: ``NAME.status.json`` (written by gpu_check.sh for every step: exit status,
seconds, timeout), ``NAME.json`` (a step's result, where it wrote one), ``NAME.xml`` (pytest's
JUnit report) and ``NAME.log``. A step that failed, timed out or wrote nothing is reported as
such with the end of its log; nothing here raises on a missing or broken file.
"""
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

LOG_TAIL = 40  # lines of a failed step's log in report.md
LOGS_BYTES = 1 << 20  # logs.txt keeps the last MiB of each log at most


def _load(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def junit(path: Path) -> dict:
    """{"tests", "failures", "errors", "skipped", "failed": [names + first line], "skips": [reasons]}."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    out = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    out["failed"], out["skips"] = [], sorted({(c.find("skipped").get("message") or "")
                                             for c in suite.iter("testcase") if c.find("skipped") is not None})
    for case in suite.iter("testcase"):
        for tag in ("failure", "error"):
            node = case.find(tag)
            if node is not None:
                first = (node.get("message") or "").splitlines()[:1]
                out["failed"].append(f"{case.get('name')}: {first[0] if first else tag}")
    return out


def collect(steps_dir: str) -> list:
    steps = []
    for status_path in sorted(Path(steps_dir).glob("*.status.json"), key=lambda p: p.stat().st_mtime):
        status = _load(status_path) or {"name": status_path.name.split(".")[0], "rc": None}
        name = status["name"]
        base = Path(steps_dir) / name
        status["ok"] = status.get("rc") == 0
        status["result"] = _load(base.with_suffix(".json"))
        if base.with_suffix(".xml").is_file():
            status["tests"] = junit(base.with_suffix(".xml"))
            status["ok"] = status["ok"] and not status["tests"].get("failures") and not status["tests"].get("errors")
        try:
            status["log_tail"] = base.with_suffix(".log").read_text(encoding="utf-8", errors="replace").splitlines()[
                -LOG_TAIL:]
        except OSError:
            status["log_tail"] = []
        steps.append(status)
    return steps


def _md_step(step: dict) -> list:
    lines = []
    if step.get("tests"):
        t = step["tests"]
        lines.append(f"- tests: {t.get('tests', 0)} run, {t.get('failures', 0)} failed, {t.get('errors', 0)} errors, "
                     f"{t.get('skipped', 0)} skipped")
        lines += [f"  - FAILED {f}" for f in t.get("failed", [])]
        lines += [f"  - skipped: {r}" for r in t.get("skips", [])]
    res = step.get("result")
    if isinstance(res, dict) and "models" in res:
        for m in res["models"]:
            if "error" in m:
                lines.append(f"- {m['model']}: ERROR {m['error']}")
                continue
            lines.append(f"- {m['model']} ({m['parameters']:,} parameters): CPU "
                         f"{m['cpu_tokens_per_s']:,.0f} tokens/s ({m['cpu_threads']} threads)")
            for p in ("float32", "bfloat16"):
                r = m[p]
                worst = max(x["max_abs_diff"] for x in r["parity_vs_cpu"])
                cos = min(x["min_cosine"] for x in r["parity_vs_cpu"])
                lines.append(f"  - {p} ({r['effective']}): {r['tokens_per_s']:,.0f} tokens/s at batch "
                             f"{r['batch_size']}; vs CPU max abs diff {worst:.2e}, min cosine {cos:.6f}")
    elif isinstance(res, dict) and "tokens_seen" in res:
        held = res.get("heldout") or {}
        ppl = (f"{held['perplexity']:.2f}" + (" (full held-out)" if held.get("full_heldout") else "")
               if "perplexity" in held else "not evaluated (stopped on time)")
        lines.append(f"- {res['steps']:,} steps, {res['tokens_seen']:,} tokens in {res['train_seconds']:,.0f} s: "
                     f"{res['tokens_per_second']:,.0f} tokens/s; held-out perplexity {ppl}")
        lines.append(f"- export check (BiLM vs training modules, float32): max abs diff per layer "
                     f"{res['export_check']['max_abs_diff_per_layer']}; cell_clip {res['export_check']['cell_clip']}, "
                     f"proj_clip {res['export_check']['proj_clip']}")
    if not step["ok"]:
        lines += ["", "```", *step.get("log_tail", []), "```"]
    return lines


def write_report(steps_dir: str, out_dir: str, call: str) -> dict:
    steps = collect(steps_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seconds = round(sum(s.get("seconds", 0) for s in steps), 1)
    report = {"call": call, "ok": all(s["ok"] for s in steps), "seconds": seconds,
              "steps": [{k: v for k, v in s.items() if k != "log_tail"} for s in steps]}
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    md = [f"# GPU check, call {call}: {'ok' if report['ok'] else 'FAILED steps below'} ({report['seconds']:.0f} s)", "",
          "| step | status | seconds |", "| --- | --- | --- |"]
    for s in steps:
        state = "ok" if s["ok"] else ("timed out" if s.get("timed_out") else f"FAILED (exit {s.get('rc')})")
        md.append(f"| {s['name']} | {state} | {s.get('seconds', 0):.1f} |")
    for s in steps:
        body = _md_step(s)
        if body:
            md += ["", f"## {s['name']}", "", *body]
    (out / "report.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    with open(out / "logs.txt", "w", encoding="utf-8") as f:
        for log in sorted(Path(steps_dir).glob("*.log")):
            text = log.read_text(encoding="utf-8", errors="replace")[-LOGS_BYTES:]
            f.write(f"===== {log.name}\n{text}\n")
    return report


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: report.py STEPS_DIR OUT_DIR CALL")
    r = write_report(*sys.argv[1:])
    print(f"report: call {r['call']} {'ok' if r['ok'] else 'with FAILED steps'} in {r['seconds']:.0f} s")
