#!/usr/bin/env python3
"""time_cacheflow.py -- time the paper's own engine's host bookkeeping on this CPU, model stubbed.

    python3 experiments/calibrate/time_cacheflow.py ASTRA_DIR [--repeats N]

ASTRA_DIR is the `astra/` folder of the paper's artifact (github.com/sosp-ae-39/sosp-ae-astra,
the CacheFlow/vLLM engine the SOSP'23 figures ran; `git archive HEAD astra/cacheflow` of it is
enough).  Its master side -- Scheduler.step (FCFS scheduling, the block manager's
can_append / append / allocate, the per-group input dicts with block tables and token lists
rebuilt every step) and Scheduler.post_step (appending the sampled tokens, stop checks,
freeing finished groups) -- runs unchanged.  Only what needs a GPU or torch is replaced:
cacheflow.utils (torch-importing) by its two plain classes, Device and Counter; the
controller, which sends the step's inputs to the worker over Ray, by a stand-in that
pickles the inputs and the outputs both ways (what Ray's serialisation must at least do) and
returns one sampled token per running sequence.  Not timed: Ray's transport, the worker's
tensor preparation, the model, the sampler.

Prints CPU time (time.process_time: the machine may be shared) per step, as a line in the
batch size (decode steps of B sequences: step + seq * B), with and without the pickling,
and per request (admission of 256-token prompts and finishing, over a decode step's cost),
medians of --repeats runs.  Standard library only.
"""
import argparse
import enum
import os
import pickle
import statistics
import sys
import time
import types


def load(astra):
    utils = types.ModuleType("cacheflow.utils")

    class Device(enum.Enum):
        GPU = enum.auto()
        CPU = enum.auto()

    class Counter:
        def __init__(self, start=0):
            self.counter = start

        def __next__(self):
            i = self.counter
            self.counter += 1
            return i

    utils.Device, utils.Counter = Device, Counter
    sys.modules["cacheflow.utils"] = utils
    sys.path.insert(0, astra)
    from cacheflow.master.scheduler import Scheduler
    from cacheflow.sampling_params import SamplingParams
    from cacheflow.sequence import Sequence, SequenceGroup, SequenceOutputs
    return Scheduler, SamplingParams, Sequence, SequenceGroup, SequenceOutputs, Counter


class Stub:
    """The controller: the step's inputs and outputs pickled both ways, one token per sequence."""

    def __init__(self, SequenceOutputs, serialize):
        self.SO, self.serialize, self.next = SequenceOutputs, serialize, None

    def execute_stage(self, groups, blocks_to_swap_in, blocks_to_swap_out, blocks_to_copy):
        if self.serialize:
            groups, _, _, _ = pickle.loads(pickle.dumps((groups, blocks_to_swap_in, blocks_to_swap_out, blocks_to_copy)))
        out = {}
        for g in groups:
            for sid in g.input_tokens:
                out[sid] = self.SO(sid, sid, 7, {7: -0.1})
        if self.serialize:
            out = pickle.loads(pickle.dumps(out))
        self.next.post_step(out)


def run(mods, B, steps, prompt, serialize):
    """CPU seconds of: the admission step of B prompts, each decode step, the finishing step."""
    Scheduler, SamplingParams, Sequence, SequenceGroup, SequenceOutputs, Counter = mods
    ctl = Stub(SequenceOutputs, serialize)
    s = Scheduler([ctl], block_size=16, num_gpu_blocks=1 << 20, num_cpu_blocks=1024, max_num_batched_tokens=1 << 30,
                  max_num_sequences=1 << 20, collect_stats=False)
    ctl.next = s
    sp = SamplingParams(n=1, temperature=1.0, top_p=1.0, use_beam_search=False, stop_token_ids=set(),
                        max_num_steps=steps, num_logprobs=0, context_window_size=None)
    gid, sid = Counter(), Counter()
    groups = [(SequenceGroup(next(gid), [Sequence(next(sid), [3] * prompt, 16)], 0.0), sp) for _ in range(B)]
    t = []
    s.add_sequence_groups(groups)
    while s.waiting or s.running:
        t0 = time.process_time()
        s.step()
        t.append(time.process_time() - t0)
    return t[0], t[1:-1], t[-1]


def fit_line(xy):
    n = len(xy)
    mx, my = sum(x for x, _ in xy) / n, sum(y for _, y in xy) / n
    b = sum((x - mx) * (y - my) for x, y in xy) / sum((x - mx) ** 2 for x, _ in xy)
    return my - b * mx, b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("astra", help="the artifact's astra/ folder (holds cacheflow/)")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.astra, "cacheflow", "master")):
        print("SKIP: no cacheflow/master under %s" % a.astra)
        return 77
    mods = load(a.astra)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?") \
        if os.path.exists("/proc/cpuinfo") else "?"
    print("CacheFlow (paper artifact astra/) master-side host work, model stubbed; CPU: %s; Python %s"
          % (cpu, sys.version.split()[0]))
    batches, steps, prompt = (8, 16, 32, 64, 128, 256), 64, 256
    for serialize in (False, True):
        dec, adm, fin = [], [], []
        for B in batches:
            d, ad, fi = [], [], []
            for _ in range(a.repeats):
                first, mid, last = run(mods, B, steps, prompt, serialize)
                med = statistics.median(mid)
                d.append(med)
                ad.append((first - med) / B)
                fi.append((last - med) / B)
            dec.append((B, statistics.median(d)))
            adm.append(statistics.median(ad))
            fin.append(statistics.median(fi))
        a0, b1 = fit_line(dec)
        res = max(abs((a0 + b1 * B) / y - 1) for B, y in dec)
        print("%s: decode step = %.1f us + %.2f us x sequences (B = %s: %s us; max |err| of the line %.0f%%); "
              "per request: admission of a %d-token prompt %.0f us, finishing %.0f us (medians over B)"
              % ("with inputs/outputs pickled both ways" if serialize else "scheduler + post_step only",
                 a0 * 1e6, b1 * 1e6, "/".join(str(B) for B, _ in dec), "/".join("%.0f" % (y * 1e6) for _, y in dec),
                 100 * res, prompt, statistics.median(adm) * 1e6, statistics.median(fin) * 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
