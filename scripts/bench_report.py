#!/usr/bin/env python3
"""scripts/bench_report.py — the benchmark's table (bench.md), figures
(bench.json) and chart (bench.png), written by scripts/bench.py after every
workload; run alone, it merges the rows of earlier runs' bench.json into one
table (in the order given; device, versions and ceilings of the first). No
PyTorch needed; the chart needs matplotlib (skipped without it).

    python3 scripts/bench_report.py --out docs/bench b1/bench.json b2/bench.json ...
"""
import argparse
import json
import math
import os


def write_outputs(out, dev, ceil, rows, final, torch_version):
    """bench.md (table), bench.json (every figure), bench.png; rewritten after
    every workload so a cut-off run keeps what it measured"""
    def med(r, k):
        v = r.get(k)
        return v.get("median") if isinstance(v, dict) else None

    bw, rate, rate_tf32 = ceil
    tv = torch_version
    lines = [f"Device: {dev}; torch {tv}; copy bandwidth {bw / 1e12:.2f} TB/s, "
             f"fp32 GEMM {rate / 1e12:.1f} TFLOP/s, TF32 GEMM {rate_tf32 / 1e12:.1f} TFLOP/s "
             "(measured in this run; the floor counts convolutions at the TF32 rate).", "",
             "| workload | eager ms | compile ms | max-autotune ms | kfuse ms | vs eager | vs compile "
             "| vs max-autotune | floor ms | kfuse / floor |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    sp = {}  # (set, baseline) -> speedups
    for r in rows:
        e, c, ma, k = (med(r, "eager"), med(r, "compile_default"),
                       med(r, "compile_max-autotune-no-cudagraphs"), med(r, "kfuse"))
        fl = r.get("floor_ms")
        fmt = lambda v: f"{v:.3f}" if v is not None else "—"  # noqa: E731
        ratio = lambda b: f"{b / k:.2f}x" if b and k else "—"  # noqa: E731
        which = "fixtures" if r["name"].startswith("fx:") else "workloads"
        for base, v in (("eager", e), ("compile", c), ("max-autotune", ma)):
            if v and k:
                sp.setdefault((which, base), []).append(v / k)
        eff = f"{fl / k:.0%}" if fl and k else "—"
        note = "" if k else f" ({r.get('kfuse', {}).get('error', 'not run')})"
        lines.append(f"| {r['name']}{note} | {fmt(e)} | {fmt(c)} | {fmt(ma)} | {fmt(k)} | {ratio(e)} | "
                     f"{ratio(c)} | {ratio(ma)} | {fmt(fl)} | {eff} |")
    gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")  # noqa: E731
    for which in ("workloads", "fixtures"):
        parts = [f"vs {b} {gm(sp[(which, b)]):.2f}x ({len(sp[(which, b)])})"
                 for b in ("eager", "compile", "max-autotune") if (which, b) in sp]
        if parts:
            lines.append("")
            lines.append(f"Geometric mean speedup of kfuse over the {which}: " + ", ".join(parts) + ".")
    lines += ["", "| workload | eager end-to-end ms | kfuse end-to-end ms | eager peak MiB (beyond inputs "
              "and weights) | kfuse arena MiB (incl. scratch) | kfuse groups | kfuse compile s |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        mib = lambda b: f"{b / 2**20:.1f}" if isinstance(b, (int, float)) else "—"  # noqa: E731
        ms = lambda v: f"{v:.3f}" if v is not None else "—"  # noqa: E731
        cs = r.get("kfuse_compile_s")
        lines.append(f"| {r['name']} | {ms(med(r, 'eager_e2e'))} | {ms(med(r, 'kfuse_e2e'))} | "
                     f"{mib(r.get('eager_peak_bytes'))} | {mib(r.get('kfuse_arena_bytes'))} | "
                     f"{r.get('kfuse_groups', '—')} | " + (f"{cs:.2f} |" if cs is not None else "— |"))
    fused = [r for r in rows if r.get("kfuse_unfused") is not None]
    if fused:
        lines += ["", "Fused epilogues against the unfused sequence: the same module compiled with "
                  "`--no-fuse` (one group per op), timed in the same run.", "",
                  "| workload | kfuse ms (groups) | kfuse --no-fuse ms (groups) | fused speedup |",
                  "|---|---|---|---|"]
        for r in fused:
            k, u = med(r, "kfuse"), med(r, "kfuse_unfused")
            uf = r["kfuse_unfused"]
            ucell = f"{u:.3f} ({uf.get('groups', '—')})" if u else f"— ({uf.get('error', 'not run')})"
            lines.append(f"| {r['name']} | {k:.3f} ({r.get('kfuse_groups', '—')}) | {ucell} | "
                         + (f"{u / k:.3f}x |" if u and k else "— |"))
    table = "\n".join(lines)
    if final:
        print(table)
    with open(os.path.join(out, "bench.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump({"device": dev, "torch": tv, "copy_bw": bw, "gemm_rate": rate,
                   "gemm_rate_tf32": rate_tf32, "rows": rows}, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        names = [r["name"] for r in rows]
        fig, ax = plt.subplots(figsize=(max(10, len(rows) * 0.6), 4))
        keys = [("eager", "eager"), ("compile_default", "torch.compile"),
                ("compile_max-autotune-no-cudagraphs", "max-autotune"), ("kfuse", "kfuse")]
        for j, (k, label) in enumerate(keys):
            vals = [med(r, "eager") / med(r, k) if med(r, k) and med(r, "eager") else 0 for r in rows]
            ax.bar([i + 0.2 * (j - 1.5) for i in range(len(rows))], vals, width=0.2, label=label)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(names, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("speedup over eager")
        ax.set_yscale("log")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "bench.png"), dpi=120)
    except Exception as e:  # noqa: BLE001
        print(f"chart not written: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="bench.json, bench.md, bench.png go here")
    ap.add_argument("runs", nargs="+", metavar="BENCH.JSON")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows, first = [], None
    for path in args.runs:
        with open(path) as f:
            j = json.load(f)
        first = first or j
        rows += j["rows"]
    write_outputs(args.out, first["device"], (first["copy_bw"], first["gemm_rate"], first["gemm_rate_tf32"]),
                  rows, True, first["torch"])


if __name__ == "__main__":
    main()
