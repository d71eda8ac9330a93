#!/usr/bin/env python3
"""model_residuals.py -- how well the committed cost model prices each profiled model.

    python3 experiments/calibrate/model_residuals.py [--profiles DIR]

calibrate.py fits one GEMM and one element-wise model per GPU on the rows of every
model in ../shared/data/gpu-profiles/vidur/compute/<gpu>/*/*/mlp.csv together.  This
prints, for each of those files alone, the residual of the COMMITTED fit (the values
in experiments/hardware/a100-80gb.yaml and h100-sxm.yaml, the YAMLs the A100 and H100
rows calibrate): median and 90th-percentile |predicted / measured - 1| over the
file's GEMM rows (QKV, out, FC1 / gate-up, FC2 / down at TP 1-8, 1-4096 tokens) and
element-wise rows (the gated models' norms, activation, rotary).  It uses calibrate.py's
own row reading and formulas (nothing is refitted), so a model spec can cite the
residual that applies to it (experiments/models/*.yaml sources.calibration; RESULTS.md
"Model specs").  Without the profiles folder it says SKIP and exits 77.  Standard
library only.
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate as cal  # noqa: E402

TARGETS = {"a100": "a100-80gb", "h100": "h100-sxm"}


def committed(hw, key):
    with open(os.path.join(cal.HW_DIR, hw + ".yaml")) as f:
        v = cal.get_value(f.read().split("\n"), "cost_model." + key)
    return float(v) if v is not None else None


def gemm_time(M, K, N, hw, base):
    """The committed GEMM model through calibrate.py's gemm_pred (either signature)."""
    eff, bw, fixed = committed(hw, "gemm_flops_efficiency"), committed(hw, "gemm_bw_efficiency"), \
        committed(hw, "gemm_fixed_us")
    if cal.gemm_pred.__code__.co_argcount == 5:    # (M, K, N, x, base), x with the per-SM stream bandwidth
        return cal.gemm_pred(M, K, N, (eff, bw, committed(hw, "gemm_sm_bw_GBps"), fixed), base)
    return cal.gemm_pred(M, K, N, eff, bw, fixed * 1e-6, base)


def one_file(path, gpu):
    """calibrate.mlp_rows on a profiles tree holding only this file (a symlink)."""
    with tempfile.TemporaryDirectory() as d:
        org, model = path.split(os.sep)[-3:-1]
        sub = os.path.join(d, "vidur", "compute", gpu, org, model)
        os.makedirs(sub)
        os.symlink(os.path.abspath(path), os.path.join(sub, "mlp.csv"))
        _, gemms, elems = cal.mlp_rows(d, gpu)
    return gemms, elems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profiles", default=os.path.join(os.path.dirname(cal.ROOT), "shared", "data", "gpu-profiles"))
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.profiles, "vidur", "compute")):
        print("SKIP: no GPU profiles at %s" % a.profiles)
        return 77
    print("gpu,hardware,model,gemm_rows,gemm_median_err_pct,gemm_p90_err_pct,elem_rows,elem_median_err_pct,"
          "elem_p90_err_pct")
    for gpu, hw in sorted(TARGETS.items()):
        base = cal.read_base(hw)
        ee, ef = committed(hw, "elementwise_bw_efficiency"), committed(hw, "elementwise_fixed_us")
        root = os.path.join(a.profiles, "vidur", "compute", gpu)
        for org in sorted(os.listdir(root)):
            for model in sorted(os.listdir(os.path.join(root, org))):
                gemms, elems = one_file(os.path.join(root, org, model, "mlp.csv"), gpu)
                g = sorted(abs(gemm_time(M, K, N, hw, base) / m - 1) for M, K, N, m, _ in gemms)
                e = sorted(abs((ef * 1e-6 + by / (base["hbm_bandwidth_GBps"] * 1e9 * ee)) / m - 1) for by, m in elems)
                pct = lambda v, q: "%.1f" % (100 * v[min(len(v) - 1, int(q * len(v)))]) if v else ""
                print("%s,%s,%s/%s,%d,%s,%s,%d,%s,%s" % (gpu, hw, org, model, len(g), pct(g, 0.5), pct(g, 0.9), len(e),
                                                         pct(e, 0.5), pct(e, 0.9)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
