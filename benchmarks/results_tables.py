"""Renders the tables of benchmarks/RESULTS.md that come from the result files in benchmarks/results/.

A generated table sits in RESULTS.md between `<!-- results_tables.py: NAME -->` and `<!-- end results_tables.py -->`;
everything else in RESULTS.md is written by hand. The tables and their files:

- `gpu_h200`, `gpu_h200_ratios`: `gpu_h200_2026-12-04/run{1,2}/results.json`, as written by `gpu_benchmark.py`
  (section 3: BERT-base on one H200, MFU against the bf16 matmul measured in the same run);
- `real_tasks_h200`: `real_tasks_h200_2026-12-04/score.txt`, as printed by `real_tasks.py score` (section 7:
  MiniLM fine-tuned on MRPC, SQuAD 2.0 and CoNLL-2003, ours vs transformers);
- `real_tasks_cpu`: `real_tasks_cpu_2026-12-04/length_bucketing_{none,ours,both}/score.txt` (section 7: CPU
  time per epoch on the 2-core machine, three ways of batching);
- `issue15_before_after`: `issue15_before_after_2026-12-04.log`, `training_throughput.py`'s printout of four
  alternating runs (section 1: ours / keras-hub on TF + XLA, before and after issue 15).

    python benchmarks/results_tables.py            # print every table
    python benchmarks/results_tables.py --write    # rewrite the generated tables of RESULTS.md in place
    python benchmarks/results_tables.py --check    # exit 1 where RESULTS.md differs from the result files

`tests/benchmarks/test_results_tables.py` checks that the committed RESULTS.md equals what this renders.
"""

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # the benchmark scripts import each other by name, as `flops`

from gpu_benchmark import PEAK_TFLOPS, WORKLOADS  # noqa: E402  (standard library imports only)

RESULTS_DIR = os.path.join(HERE, "results")
RESULTS_MD = os.path.join(HERE, "RESULTS.md")
BLOCK = re.compile(r"(<!-- results_tables\.py: (\w+) -->\n)(.*?)(<!-- end results_tables\.py -->)", re.S)

GPU_RUNS = "gpu_h200_2026-12-04"
# (run folder, job name in results.json, row label), in the order of the table.
GPU_ROWS = [
    ("run1", "ours-jax-pretrain128", "**ours, JAX, pretraining**"),
    ("run1", "keras-hub-jax-pretrain128", "keras-hub, JAX, MLM pretraining"),
    ("run1", "hf-torch-pretrain128", "HF torch eager, pretraining"),
    ("run1", "hf-compile-torch-pretrain128", "HF `torch.compile`, pretraining"),
    ("run1", "ours-torch-pretrain128", "ours, torch eager, pretraining"),
    ("run1", "ours-jax-pretrain512", "**ours, JAX, pretraining**"),
    ("run1", "hf-torch-pretrain512", "HF torch eager, pretraining"),
    ("run2", "keras-hub-jax-pretrain512", "keras-hub, JAX, MLM pretraining (run 2)"),
    ("run1", "ours-jax-inference128", "**ours, JAX, inference**"),
    ("run1", "keras-hub-jax-inference128", "keras-hub, JAX, inference"),
    ("run1", "hf-torch-inference128", "HF torch eager, inference"),
    ("run2", "ours-dropout0-jax-pretrain128", "ours, JAX, pretraining, no hidden dropout (run 2, A/B)"),
]
# Ratio rows: (label, ours (run, job), peers in column order: keras-hub / JAX, HF eager, HF torch.compile).
GPU_RATIO_COLUMNS = ("keras-hub / JAX", "HF torch eager", "HF `torch.compile`")
GPU_RATIOS = [
    ("ours / JAX, pretraining, seq 128", ("run1", "ours-jax-pretrain128"),
     [("run1", "keras-hub-jax-pretrain128"), ("run1", "hf-torch-pretrain128"),
      ("run1", "hf-compile-torch-pretrain128")]),
    ("ours / JAX, pretraining, seq 512", ("run1", "ours-jax-pretrain512"),
     [("run2", "keras-hub-jax-pretrain512"), ("run1", "hf-torch-pretrain512"), None]),
    ("ours / JAX, inference, seq 128", ("run1", "ours-jax-inference128"),
     [("run1", "keras-hub-jax-inference128"), ("run1", "hf-torch-inference128"), None]),
    ("ours / torch eager, pretraining, seq 128", ("run1", "ours-torch-pretrain128"),
     [None, ("run1", "hf-torch-pretrain128"), ("run1", "hf-compile-torch-pretrain128")]),
]

ISSUE15_LOG = "issue15_before_after_2026-12-04.log"
REAL_TASKS_H200 = os.path.join("real_tasks_h200_2026-12-04", "score.txt")
REAL_TASKS_CPU = os.path.join("real_tasks_cpu_2026-12-04", "length_bucketing_{mode}", "score.txt")
# Rows of the quality table: task -> [(metric label, score.txt columns)].
TASK_NAMES = {"mrpc": "MRPC", "squad": "SQuAD 2.0 (test articles)", "conll": "CoNLL-2003"}
TASK_ROWS = {
    "mrpc": [("accuracy / F1", ("accuracy", "f1"))],
    "squad": [("EM / F1", ("exact", "f1")), ("HasAns F1 / NoAns F1", ("HasAns_f1", "NoAns_f1")),
              ("HasAns F1, every question answered", ("forced_HasAns_f1",)),
              ("answered at the tuned threshold (%) / F1 at the test-best threshold", ("answered", "oracle_f1"))],
    "conll": [("entity F1 / precision / recall", ("f1", "precision", "recall"))],
}
# score.txt column names that hold a space (the header is split on whitespace, then these are joined again).
MULTIWORD_COLUMNS = ("train CPU-s", "train wall s", "peak host MiB", "peak dev MiB")


def _gpu_results(results_dir):
    """{run folder: results.json contents} of the H200 runs."""
    runs = {}
    for run in ("run1", "run2"):
        with open(os.path.join(results_dir, GPU_RUNS, run, "results.json")) as f:
            runs[run] = json.load(f)
    return runs


def gpu_h200(results_dir=RESULTS_DIR):
    """Section 3's table: one row per GPU job, MFU against the matmul rate of the job's own run."""
    runs = _gpu_results(results_dir)
    lines = ["| job | batch x seq | seq/s | ms/step | model TFLOP/s | MFU (measured matmul) | "
             f"MFU ({PEAK_TFLOPS:.0f} spec) | peak GiB |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for run, job, label in GPU_ROWS:
        result, matmul = runs[run][job], runs[run]["matmul-torch"]["tflops"]
        _, seq, _, batch = WORKLOADS[job.rsplit("-", 1)[1]]  # (flops workload, seq, masked slots, batch)
        tflops = result["model_tflops"]
        lines.append(f"| {label} | {batch} x {seq} | {result['sequences_per_second']:,.0f} | "
                     f"{1e3 * result['seconds_per_step']:.1f} | {tflops:.0f} | {100 * tflops / matmul:.1f}% | "
                     f"{100 * tflops / PEAK_TFLOPS:.1f}% | {result['peak_memory_gib']:.1f} |")
    matmuls = ", ".join(f"{runs[run]['matmul-torch']['tflops']:.0f} TFLOP/s in {run}" for run in runs)
    lines += ["", f"bf16 matmul (8192^3 in torch) measured in the same run: {matmuls}."]
    return "\n".join(lines)


def gpu_h200_ratios(results_dir=RESULTS_DIR):
    """Section 3's ratios of model FLOP/s (the per-sequence counts differ: keras-hub has no NSP head)."""
    runs = _gpu_results(results_dir)
    lines = ["| model FLOP/s ratio | vs " + " | vs ".join(GPU_RATIO_COLUMNS) + " |",
             "| --- |" + " ---: |" * len(GPU_RATIO_COLUMNS)]
    for label, (run, job), peers in GPU_RATIOS:
        ours = runs[run][job]["model_tflops"]
        cells = ["-" if peer is None else f"{ours / runs[peer[0]][peer[1]]['model_tflops']:.2f}x" for peer in peers]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_score(path):
    """A `real_tasks.py score` printout -> {task: {"info": {key: value}, "rows": {impl: {column: text}},
    "ratios": {"CPU-s": text, "wall s": text}}}, from each task's `== task:` line, header, rows and ratio lines."""
    tasks, task, columns = {}, None, None
    with open(path) as f:
        for line in f:
            if line.startswith("== "):
                name, _, rest = line[3:].rstrip("\n").partition(": ")
                info = dict(item.split(" ", 1) for item in re.split(r", |; ", rest))
                task = tasks.setdefault(name, {"info": info, "rows": {}, "ratios": {}})
            elif line.startswith("  impl "):
                columns = _header_columns(line.split()[2:])
            elif task is not None and re.match(r"  (ours|hf) ", line):
                impl, _seeds, *values = line.split()
                last = len(columns) - 1  # the device column holds a space ("jax gpu")
                task["rows"][impl] = dict(zip(columns, values[:last] + [" ".join(values[last:])]))
            elif task is not None and line.startswith("  ours/hf "):
                match = re.match(r"  ours/hf (.+) per epoch \(.*\): (\S+)", line)
                task["ratios"][match.group(1)] = match.group(2)
    return tasks


def _header_columns(words):
    """The header's words joined back into column names (`MULTIWORD_COLUMNS` hold spaces)."""
    columns, index = [], 0
    while index < len(words):
        for name in MULTIWORD_COLUMNS:
            if words[index:index + len(name.split())] == name.split():
                columns.append(name)
                index += len(name.split())
                break
        else:
            columns.append(words[index])
            index += 1
    return columns


def _signed(ours, hf):
    return f"{float(ours) - float(hf):+.2f}"


def real_tasks_h200(results_dir=RESULTS_DIR):
    """Section 7's quality table: the final-epoch metrics (mean of the seeds), ours - HF, CPU time and memory."""
    tasks = parse_score(os.path.join(results_dir, REAL_TASKS_H200))
    lines = ["| task | metric | ours | HF | ours - HF | ours/HF CPU-s per epoch (wall) | peak GPU MiB ours / HF |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for name in ("mrpc", "squad", "conll"):
        task = tasks[name]
        ours, hf = task["rows"]["ours"], task["rows"]["hf"]
        for index, (label, metrics) in enumerate(TASK_ROWS[name]):
            cells = [" / ".join(row[metric] for metric in metrics) for row in (ours, hf)]
            cells.append(" / ".join(_signed(ours[metric], hf[metric]) for metric in metrics))
            if index == 0:
                memory = " / ".join(f"{int(row['peak dev MiB']):,}" for row in (ours, hf))
                cells += [f"{task['ratios']['CPU-s']} (wall {task['ratios']['wall s']})", memory]
            else:
                cells += ["", ""]
            lines.append(f"| {TASK_NAMES[name] if index == 0 else ''} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def real_tasks_cpu(results_dir=RESULTS_DIR):
    """Section 7's CPU-time table: CPU-s of the second epoch (median of the seeds), ours / HF, per batching mode."""
    modes = {mode: parse_score(os.path.join(results_dir, REAL_TASKS_CPU.format(mode=mode)))
             for mode in ("none", "ours", "both")}
    lines = ["| task (prefix) | padded, both: ours / HF CPU-s | ours bucketed, HF padded | bucketed, both | "
             "nominal GFLOP per CPU-s, padded: ours / HF |", "| --- | ---: | ---: | ---: | ---: |"]
    for name in ("mrpc", "conll", "squad"):
        info = modes["none"][name]["info"]
        if name == "squad":
            label = f"SQuAD 2.0 ({info['train_questions']} questions = {info['train_rows']} windows"
        else:
            label = f"{'MRPC' if name == 'mrpc' else 'CoNLL-2003'} ({info['train_rows']} "
            label += "pairs" if name == "mrpc" else "windows"
        cells = []
        for mode in ("none", "ours", "both"):
            task = modes[mode][name]
            ours, hf = (task["rows"][impl]["CPU-s/epoch"] for impl in ("ours", "hf"))
            cells.append(f"{ours} / {hf} = {task['ratios']['CPU-s']}")
        rows = modes["none"][name]["rows"]
        cells.append(f"{rows['ours']['GFLOP/CPU-s']} / {rows['hf']['GFLOP/CPU-s']}")
        lines.append(f"| {label}, length {info['sequence_length']}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def issue15_before_after(results_dir=RESULTS_DIR):
    """Section 1's run 6: per run of the harness (`=== round N before|after ... load: L1 L5 L15`), the ours /
    keras-hub ratio line of each workload (`== pretraining: ...`, `== inference: ...`)."""
    lines = ["| round | tree | load at start | pretraining ours/keras-hub: median per-round ratio | per CPU-s | "
             "inference: median per-round ratio | per CPU-s |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    row, workload = None, None
    with open(os.path.join(results_dir, ISSUE15_LOG)) as f:
        for line in f:
            start = re.match(r"=== round (\d+) (before|after) \S+ load: (\S+)", line)
            if start:
                row = [start.group(1), start.group(2), f"{float(start.group(3)):.1f}"]
            elif line.startswith("== "):
                workload = line[3:].split(":")[0]
            ratio = re.search(r"median per-round ratio (\S+); per CPU-second (\S+)", line)
            if ratio and row is not None:
                bold = "**" if row[1] == "after" else ""
                row += [f"{bold}{ratio.group(1)}{bold}", ratio.group(2)]
                if workload == "inference":
                    lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


TABLES = {"issue15_before_after": issue15_before_after, "gpu_h200": gpu_h200, "gpu_h200_ratios": gpu_h200_ratios,
          "real_tasks_h200": real_tasks_h200, "real_tasks_cpu": real_tasks_cpu}


def render_results_md(text, results_dir=RESULTS_DIR):
    """`text` (RESULTS.md) with every generated table rendered again from the files in `results_dir`."""
    names = [match.group(2) for match in BLOCK.finditer(text)]
    if sorted(names) != sorted(TABLES):
        raise ValueError(f"RESULTS.md's generated blocks are {names}, expected each of {sorted(TABLES)} once")
    return BLOCK.sub(lambda match: match.group(1) + TABLES[match.group(2)](results_dir) + "\n" + match.group(4), text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="rewrite the generated tables of RESULTS.md in place")
    action.add_argument("--check", action="store_true", help="exit 1 where RESULTS.md differs from the result files")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        for name, render in TABLES.items():
            print(f"<!-- results_tables.py: {name} -->\n{render()}\n")
        return 0
    with open(RESULTS_MD) as f:
        text = f.read()
    rendered = render_results_md(text)
    if args.check:
        if rendered != text:
            print("benchmarks/RESULTS.md differs from the result files: run benchmarks/results_tables.py --write")
            return 1
        print("benchmarks/RESULTS.md: the generated tables equal the result files")
        return 0
    with open(RESULTS_MD, "w") as f:
        f.write(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
