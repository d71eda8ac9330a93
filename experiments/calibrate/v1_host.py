#!/usr/bin/env python3
"""v1_host.py -- time vLLM V1's own engine-core scheduling code on this CPU, no model.

What it measures: one engine-core step of vLLM's V1 engine without the GPU --
Scheduler.schedule() then Scheduler.update_from_output() with a ModelRunnerOutput that
samples one token per scheduled request -- for B running requests in steady decode
(prompt 256 tokens, automatic prefix caching on, chunked prefill on, 16-token blocks,
a KV pool large enough that nothing is preempted), B in 1..512.  The median step time
per B is fitted as step_s + seq_s * B (least squares on relative error); the script prints the fit and
its residuals (median and max |err| over the B's).

What it leaves out (so the fit is a lower bound of V1's host work per step): the
model runner's input preparation and sampler bookkeeping in the worker (v0.33.0's
default Model Runner V2 prepares inputs in Triton kernels on the GPU,
v1/worker/gpu/input_batch.py, so this is a few launches a step, not a loop over the
requests), the engine core's output serialization and the frontend's detokenization
(other processes, overlapped).

The sim uses the fit as PB_SIM_V1_STEP_S / PB_SIM_V1_SEQ_S (executors/executor_sim.c).
Needs vLLM (the version printed) in the Python that runs it; pip install it into a
virtual environment outside the checkout, e.g.
    python3 -m venv /tmp/v1env && /tmp/v1env/bin/pip install vllm==0.33.0
    /tmp/v1env/bin/python experiments/calibrate/v1_host.py
Timings on a shared machine are noisy: the script alternates the batch sizes over
rounds, times each step in process CPU time (time.process_time: other processes'
load does not count, their cache pressure does) and keeps each size's median.
"""
import json
import os
import statistics
import sys
import tempfile
import time

BATCHES = [1, 8, 32, 64, 128, 256, 512]
PROMPT = 256
STEPS = 30        # timed steps per (round, batch)
ROUNDS = 3


def make_scheduler(model_dir, max_num_seqs, num_blocks):
    import torch
    from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.structured_output import StructuredOutputManager

    model_config = ModelConfig(model=model_dir, dtype="float16", seed=0, skip_tokenizer_init=True)
    sched_config = SchedulerConfig(max_num_seqs=max_num_seqs, max_num_batched_tokens=8192, max_model_len=2048,
                                   is_encoder_decoder=False, enable_chunked_prefill=True)
    cache_config = CacheConfig(block_size=16, gpu_memory_utilization=0.92, enable_prefix_caching=True)
    vllm_config = VllmConfig(scheduler_config=sched_config, model_config=model_config, cache_config=cache_config,
                             device_config=DeviceConfig(device="cpu"))
    kv = KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=[],
                       kv_cache_groups=[KVCacheGroupSpec(["layer"], FullAttentionSpec(block_size=16, num_kv_heads=1,
                                                                                      head_size=1,
                                                                                      dtype=torch.float16))])
    cache_config.num_gpu_blocks = num_blocks
    return Scheduler(vllm_config=vllm_config, kv_cache_config=kv, block_size=16, log_stats=False,
                     structured_output_manager=StructuredOutputManager(vllm_config))


def make_requests(n, base):
    from vllm.sampling_params import SamplingParams
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.request import Request

    init_none_hash(sha256)
    hasher = get_request_block_hasher(16, sha256)
    sp = SamplingParams(max_tokens=1500, ignore_eos=True)
    return [Request(request_id=f"r{base + i}", prompt_token_ids=[(base + i) * 7 % 50000 + j % 3 for j in range(PROMPT)],
                    sampling_params=sp, pooling_params=None, block_hasher=hasher) for i in range(n)]


def runner_output(so):
    from vllm.v1.outputs import ModelRunnerOutput
    ids = list(so.num_scheduled_tokens.keys())
    return ModelRunnerOutput(req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)},
                             sampled_token_ids=[[11] for _ in ids])


def step(s):
    so = s.schedule()
    s.update_from_output(so, runner_output(so))
    return so


def time_batch(model_dir, b, rounds_out):
    s = make_scheduler(model_dir, max_num_seqs=max(b, 1), num_blocks=b * 200 + 64)
    for r in make_requests(b, 0):
        s.add_request(r)
    while True:   # prefills done: every request decoding
        so = step(s)
        if so.total_num_scheduled_tokens == b and not so.scheduled_new_reqs:
            break
    for _ in range(5):
        step(s)
    t = []
    for _ in range(STEPS):
        t0 = time.process_time()
        so = step(s)
        t.append(time.process_time() - t0)
        assert so.total_num_scheduled_tokens == b
    rounds_out.append(statistics.median(t))


def fit(xs, ys):
    """a + b x minimizing the squared RELATIVE errors (weights 1 / y^2): the batch sizes span
    three decades."""
    w = [1 / (y * y) for y in ys]
    sw, sx, sy = sum(w), sum(wi * x for wi, x in zip(w, xs)), sum(wi * y for wi, y in zip(w, ys))
    sxx, sxy = sum(wi * x * x for wi, x in zip(w, xs)), sum(wi * x * y for wi, x, y in zip(w, xs, ys))
    b = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    return (sy - b * sx) / sw, b


def main():
    try:
        import vllm
    except ImportError:
        print("SKIP: vLLM is not installed in this Python (see the docstring: pip install vllm==0.33.0 "
              "in a virtual environment)", file=sys.stderr)
        return 77
    cfg = {"architectures": ["OPTForCausalLM"], "model_type": "opt", "hidden_size": 5120, "num_attention_heads": 40,
           "num_hidden_layers": 40, "ffn_dim": 20480, "vocab_size": 50272, "max_position_embeddings": 2048,
           "word_embed_proj_dim": 5120, "do_layer_norm_before": True, "torch_dtype": "float16",
           "activation_function": "relu", "bos_token_id": 2, "eos_token_id": 2, "pad_token_id": 1}
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        per = {b: [] for b in BATCHES}
        for r in range(ROUNDS):
            order = BATCHES if r % 2 == 0 else BATCHES[::-1]
            for b in order:
                time_batch(d, b, per[b])
    med = {b: statistics.median(v) for b, v in per.items()}
    a, k = fit(BATCHES, [med[b] for b in BATCHES])
    errs = [abs(a + k * b - med[b]) / med[b] * 100 for b in BATCHES]
    print(f"vllm {vllm.__version__}; python {sys.version.split()[0]}; {os.cpu_count()} cpus")
    print("batch,median_step_us,fit_us,err_pct")
    for b, e in zip(BATCHES, errs):
        print(f"{b},{med[b] * 1e6:.1f},{(a + k * b) * 1e6:.1f},{e:.1f}")
    print(f"step_us={a * 1e6:.2f} seq_us={k * 1e6:.3f} residual median |err| {statistics.median(errs):.1f}% "
          f"max {max(errs):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
