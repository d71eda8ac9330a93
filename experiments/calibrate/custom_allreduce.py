#!/usr/bin/env python3
"""custom_allreduce.py -- the cost of vLLM's own all-reduce kernels on an H100 node, fitted
on published per-call timings (micro level: one collective, no model around it).

    python3 experiments/calibrate/custom_allreduce.py            print the fit and its residuals
    python3 experiments/calibrate/custom_allreduce.py --check    also compare with the hardware
                                                                 YAMLs (exit 1 when a committed
                                                                 value is off by more than 1%,
                                                                 or its source is not the fit's)

What it models.  vLLM's V1 engine (v0.33.0, the release `engine: v1` pins) does not reduce
tensor-parallel activations through NCCL when the GPUs share NVLink: vllm/distributed/
device_communicators/cuda_communicator.py all_reduce tries, in order, FlashInfer's one-shot
all-reduce (sizes up to FI_ALLREDUCE_FUSION_MAX_SIZE_MB on SM 9.0: 64 / 2 / 0.5 MB at TP 2
/ 4 / 8, compilation/passes/fusion/allreduce_rms_fusion.py:104-109), its custom all-reduce
(custom_all_reduce.py; below CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"]: 64 MB / 32 MB / 256 KB at
TP 2 / 4 / 8, all_reduce_utils.py), torch symmetric memory (SYMM_MEM_ALL_REDUCE_MAX_SIZES,
up to 64 MB), then NCCL.  Those thresholds were set from vLLM's own benchmark
(benchmarks/kernels/benchmark_device_communicators.py) so that each size goes to its
fastest kernel; the cost model takes one line per TP degree, time = custom_allreduce_tpN_us
+ bytes / custom_allreduce_tpN_GBps, fitted (least squares on relative error) to the
fastest measured kernel at each size:

  TP 2  vllm-project/vllm#24111 (H100, bf16 [32, 8192], "Best" of ca_1stage / ca_2stage /
        pynccl / symm_mem): 0.50 MB 7 us; flagos-ai/FlagGems-vllm#773 (8x H100 80GB HBM3, vLLM
        0.28.0's FlashInfer TRT-LLM one-shot all-reduce + RMSNorm, CUDA graph, maximum over the
        ranks): [6, 6144] bf16 6.98 us, [138, 6144] 12.98 us
  TP 4  vllm-project/vllm#24111 (H100, the same table's TP=4 "Best" column): 0.5 / 1 / 1.5 /
        2 / 3 / 4 MB: 10 / 15 / 19 / 22 / 25 / 29 us
  TP 8  vllm-project/vllm#42324 (SM 9.0, the fastest of pynccl / symm_mem_multimem /
        symm_mem_two_shot): 0.5 .. 128 MiB, 11 .. 561 us; its world size is read from the
        table's place (the last SM 9.0 block before "SM 10.0 / B200"; the PR's config table
        runs ws = 2, 4, 6, 8, and multimem, which wins there, is vLLM's pick at ws 6 and 8
        only) [inferred]; no custom all-reduce column, so its small sizes are an upper bound

All in milliseconds with three decimals in their sources (+-0.5 us).  Below the smallest
measured size (decode steps of a few sequences: 16-500 KB) the line is extrapolated: its
latency term is the fit's intercept, not a measurement.  The H200 (same NVLink 4 and
NVSwitch as the H100) takes the H100's values [assumption].  Standard library only.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HW_DIR = os.path.join(os.path.dirname(HERE), "hardware")
MB = 1 << 20

POINTS = {   # tp: [(bytes, microseconds)] -- the docstring's sources
    2: [(32 * 8192 * 2, 7.0), (6 * 6144 * 2, 6.9826), (138 * 6144 * 2, 12.9792)],
    4: [(int(0.5 * MB), 10.0), (1 * MB, 15.0), (int(1.5 * MB), 19.0), (2 * MB, 22.0), (3 * MB, 25.0),
        (4 * MB, 29.0)],
    8: [(int(0.5 * MB), 11.0), (1 * MB, 14.0), (int(1.5 * MB), 16.0), (2 * MB, 18.0), (3 * MB, 23.0),
        (4 * MB, 27.0), (8 * MB, 46.0), (16 * MB, 87.0), (32 * MB, 165.0), (int(47.84 * MB), 244.0),
        (64 * MB, 316.0), (128 * MB, 561.0)],
}
SOURCE = {
    2: "vllm-project/vllm#24111 (H100 TP=2, bf16 [32, 8192], fastest of vLLM's all-reduce kernels: 7 us) and "
       "flagos-ai/FlagGems-vllm#773 (8x H100, vLLM 0.28.0's FlashInfer one-shot all-reduce + RMSNorm in a CUDA "
       "graph: 6.98 us at 72 KB, 12.98 us at 1.7 MB)",
    4: "vllm-project/vllm#24111 (H100 TP=4, bf16 [32..256, 8192], the Best column: 10-29 us at 0.5-4 MB)",
    8: "vllm-project/vllm#42324 (SM 9.0, world size 8 by the table's place [inferred]; fastest of pynccl / "
       "symm_mem_multimem / symm_mem_two_shot: 11-561 us at 0.5-128 MiB)",
}


def fit(points):
    """(latency us, GB/s, residuals): least squares on relative error of t = a + b * bytes."""
    # minimise sum ((a + b x - y) / y)^2: the normal equations of weights 1/y^2
    sw = sum(1 / y ** 2 for _, y in points)
    sx = sum(x / y ** 2 for x, y in points)
    sxx = sum(x * x / y ** 2 for x, y in points)
    sy = sum(1 / y for _, y in points)
    sxy = sum(x / y for x, y in points)
    det = sw * sxx - sx * sx
    a, b = (sy * sxx - sx * sxy) / det, (sw * sxy - sx * sy) / det
    res = [(a + b * x) / y - 1 for x, y in points]
    return a, 1e-3 / b, res          # b us per byte -> GB/s = 1e-3 / b


def values():
    """{tp: (us, GBps, median |err|, max |err|, points)} rounded as committed."""
    out = {}
    for tp, pts in POINTS.items():
        a, gbps, res = fit(pts)
        r = sorted(abs(e) for e in res)
        out[tp] = (round(a, 2), round(gbps, 1), r[len(r) // 2], r[-1], len(pts))
    return out


def source(tp, v):
    return ("custom_allreduce.py fit, t = us + bytes / GBps, least squares on relative error over %d published "
            "per-call timings: %s; residual median |err| %.1f%%, max %.1f%% (sizes below the smallest measured one "
            "extrapolated)" % (v[4], SOURCE[tp], 100 * v[2], 100 * v[3]))


def committed(hw):
    """{key: value} of the custom_allreduce_* keys under cost_model: in experiments/hardware/<hw>.yaml."""
    with open(os.path.join(HW_DIR, hw + ".yaml")) as f:
        text = f.read()
    return {m.group(1): float(m.group(2)) for m in
            re.finditer(r"^  (custom_allreduce_tp\d_(?:us|GBps)): *([0-9.eE+-]+)", text, re.M)}


def committed_sources(hw):
    """{key: source text} of the custom_allreduce_* keys' sources in experiments/hardware/<hw>.yaml."""
    with open(os.path.join(HW_DIR, hw + ".yaml")) as f:
        text = f.read()
    return {m.group(1): m.group(2).replace('\\"', '"').replace("\\\\", "\\") for m in
            re.finditer(r'^    (custom_allreduce_tp\d_(?:us|GBps)): *"(.*)"\s*$', text, re.M)}


def main(argv):
    v = values()
    for tp in sorted(v):
        print("  custom_allreduce_tp%d_us: %g" % (tp, v[tp][0]))
        print("  custom_allreduce_tp%d_GBps: %g" % (tp, v[tp][1]))
    for tp in sorted(v):
        print("    custom_allreduce_tp%d: \"%s\"" % (tp, source(tp, v[tp])))
    if "--check" not in argv:
        return 0
    bad = 0
    for hw in ("h100-sxm", "h200"):
        c, cs = committed(hw), committed_sources(hw)
        for tp in sorted(v):
            for key, want in (("custom_allreduce_tp%d_us" % tp, v[tp][0]), ("custom_allreduce_tp%d_GBps" % tp, v[tp][1])):
                got = c.get(key)
                if got is None or abs(got - want) > 0.01 * abs(want):
                    print("custom_allreduce.py: experiments/hardware/%s.yaml %s = %s, the fit gives %g"
                          % (hw, key, got, want), file=sys.stderr)
                    bad += 1
                # the source and residual written beside it are the fit's too (h200's after a stated prefix)
                if not cs.get(key, "").endswith(source(tp, v[tp])):
                    print("custom_allreduce.py: experiments/hardware/%s.yaml sources.%s does not end in the fit's "
                          "source text" % (hw, key), file=sys.stderr)
                    bad += 1
    print("custom_allreduce.py --check: %s" % ("%d values or sources off" % bad if bad else "h100-sxm and h200 match the fit"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
