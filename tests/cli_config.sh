#!/usr/bin/env bash
# cli_config.sh -- configs that never lie: every key takes effect or is rejected with
# file:line:col and exit 2, checked before anything runs, nothing written.
#   bash tests/cli_config.sh build/cpu/pagedbench
# Each check is one kind of input: a key that is given takes effect, and an input that
# cannot run fails `run` and `run --check` alike, before any worker starts, with no
# results folder left behind.
set -u
PB=$(realpath "${1:?usage: cli_config.sh path/to/pagedbench}")
T=$(mktemp -d /tmp/pb_cli_config.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

cat >base.yaml <<'Y'
name: c13
figure: c13
model: opt-13b
hardware: a100-40gb
workload:
  dataset: alpaca
  arrivals: poisson
  rate: 2.0
  duration_s: 20
columns: [system, normalized_latency, batched_requests]
systems:
  - {name: vllm, type: vllm}
Y

# rejects NAME FILE PATTERN [run args...]: `run --check` and `run` both exit 2 with
# PATTERN on stderr, and nothing is written (no results folder)
rejects() {
    local name=$1 file=$2 pat=$3; shift 3
    local out rc good=1
    for mode in --check run; do
        rm -rf "$T/res"
        if [ $mode = --check ]; then out=$("$PB" run "$file" --check --results "$T/res/x" "$@" 2>&1); rc=$?
        else out=$("$PB" run "$file" --results "$T/res/x" "$@" 2>&1); rc=$?; fi
        if [ $rc != 2 ] || ! grep -qF -- "$pat" <<<"$out"; then
            good=0; bad "$name ($mode: rc $rc, want 2 and '$pat'; got: $(head -c 300 <<<"$out"))"
        elif [ -e "$T/res" ]; then good=0; bad "$name ($mode: wrote $T/res)"; fi
    done
    [ $good = 1 ] && ok "$name"
}
# col FILE COLUMN: the values of a CSV column, one per line
col() { awk -F, -v c="$2" 'NR==1{for(i=1;i<=NF;i++) if($i==c) k=i; next} {print $k}' "$1"; }
runs() { "$PB" run "$1" --results "$2" --quiet --no-report "${@:3}" >/dev/null 2>"$(basename "$2").err"; }

# ---- keys that take effect ----
cp base.yaml seed.yaml; echo 'sweep: [{axis: seed, set: seed, values: [0, 1, 2]}]' >>seed.yaml
if runs seed.yaml r_seed && [ "$(col r_seed/c13.csv normalized_latency | sort -u | wc -l)" = 3 ]; then
    ok "a seed sweep axis changes the trace (3 seeds, 3 results)"
else bad "seed axis: $(cat r_seed.err | tail -3) $(col r_seed/c13.csv normalized_latency 2>&1)"; fi

cp base.yaml cm.yaml; echo 'sweep: [{axis: blk, set: cost_model.attn_paged_block_ns, values: [1, 10000]}]' >>cm.yaml
if runs cm.yaml r_cm && [ "$(col r_cm/c13.csv normalized_latency | sort -u | wc -l)" = 2 ]; then
    ok "a cost_model.* sweep changes the cost model"
else bad "cost_model sweep: $(tail -3 r_cm.err)"; fi
cp base.yaml cm2.yaml; echo 'cost_model: {attn_paged_block_ns: 10000}' >>cm2.yaml
if runs cm2.yaml r_cm2 && [ "$(col r_cm2/c13.csv normalized_latency)" = "$(col r_cm/c13.csv normalized_latency | tail -1)" ] &&
   [ "$(col r_cm2/c13.csv normalized_latency)" != "$(col r_cm/c13.csv normalized_latency | head -1)" ]; then
    ok "top-level cost_model: overrides the hardware's cost model (same as the sweep's point)"
else bad "top-level cost_model: $(tail -3 r_cm2.err)"; fi
cp base.yaml cm3.yaml; echo 'cost_model: {attn_paged_block_nz: 1}' >>cm3.yaml
rejects "a misspelt cost_model key" cm3.yaml "cm3.yaml:13:14:" 

sed 's/  - {name: vllm, type: vllm}/  - {name: a, type: ft, policy: ft, max_batch: 3}\n  - {name: b, type: ft, max_batch: 3}\n  - {name: c, type: ft}/' \
    base.yaml >pol.yaml
if runs pol.yaml r_pol; then
    mapfile -t v < <(col r_pol/c13.csv batched_requests)
    if [ "${v[0]}" = "${v[1]}" ] && [ "${v[0]}" != "${v[2]}" ]; then ok "max_batch reaches the ft policy whether named by type or by policy:"
    else bad "policy: + type: ft gives ${v[*]}"; fi
else bad "policy run: $(tail -3 r_pol.err)"; fi
sed 's/  - {name: vllm, type: vllm}/  - {name: v, type: vllm, max_batch: 3}/' base.yaml >polv.yaml
rejects "an option the system's policy does not read" polv.yaml "polv.yaml:12:27: systems.0.max_batch: a vllm system with policy vllm does not read"
sed 's/  - {name: vllm, type: vllm}/  - {name: v, type: vllm, policy: priority, token_budget: 64}/' base.yaml >polother.yaml
rejects "another policy's option (declared by sarathi, given to priority)" polother.yaml "polother.yaml:12:45: systems.0.token_budget: a vllm system with policy priority does not read 'token_budget' (an option of policy sarathi)"
sed 's/  - {name: vllm, type: vllm}/  - {name: v, type: vllm, policy: sarathi, token_budget: 0}/' base.yaml >polrange.yaml
rejects "a policy's option out of its declared range, at its YAML position" polrange.yaml "polrange.yaml:12:58: systems.0.token_budget: 0 out of range [1, 16777216]"
sed 's/  - {name: vllm, type: vllm}/  - {name: v, type: vllm, policy: sarathi, step_mode: alternate}/' base.yaml >polstep.yaml
rejects "a type key the policy's fixed step never reads" polstep.yaml "polstep.yaml:12:44: systems.0.step_mode: policy sarathi has a fixed step and does not read 'step_mode'"

sed 's/  - {name: vllm, type: vllm}/  - {name: vllm, type: vllm, sharing: false}/' base.yaml >share.yaml
rejects "systems[].sharing (never read) is rejected" share.yaml "share.yaml:12:30: systems.0.sharing: unknown key"

cp base.yaml bs.yaml; echo 'sweep: [{axis: block_size, set: system.block_size, values: [16, 2.5, 1e9]}]' >>bs.yaml
rejects "sweep value 2.5 for an integer key" bs.yaml "bs.yaml:13:65: systems.0.block_size: expected an integer, got '2.5'"
rejects "sweep value 1e9 for block_size" bs.yaml "bs.yaml:13:70: systems.0.block_size:"
sed 's/  - {name: vllm, type: vllm}/  - {name: vllm, type: vllm, sweep: {request_rate: [1, xyz, 2]}}/' base.yaml >xyz.yaml
echo 'sweep: [{axis: request_rate, set: workload.rate, values: [1]}]' >>xyz.yaml
rejects "xyz in a system's sweep list" xyz.yaml "xyz.yaml:12:56: systems.0.sweep.request_rate.1: expected a number, got 'xyz'"
cp base.yaml setp.yaml; echo 'sweep: [{axis: x, set: workload.dataset, values: [1]}]' >>setp.yaml
rejects "a sweep set path that is not a numeric key" setp.yaml "setp.yaml:13:24: sweep.0.set:"

rejects "--set model.name relabels nothing" base.yaml "--set:1:1: model.name:" --set model.name=llama-13b
rejects "--set hardware.name relabels nothing" base.yaml "--set:1:1: hardware.name:" --set hardware.name=H100
out=$("$PB" run base.yaml --check --set model=llama-13b --set hardware=h100-sxm 2>&1)
if [ $? = 0 ] && grep -q "H100-SXM x1, LLaMA-13B" <<<"$out"; then ok "--set model=NAME / hardware=NAME pick spec files like the YAML"
else bad "--set model=: $out"; fi
rejects "--set model=unknown lists the specs" base.yaml "model: no spec 'opt-14b'" --set model=opt-14b

sed 's/^hardware: a100-40gb/hardware: a100-40gb\nexecutor: {type: sim, fixed_latency_s: 0.5}/' base.yaml >exsim.yaml
rejects "a real-executor key under the sim executor" exsim.yaml "exsim.yaml:5:23: executor.fixed_latency_s: only the real executors"

# ---- errors found before any worker starts ----
sed 's/  rate: 2.0/  rate: 0/' base.yaml >rate0.yaml
rejects "rate 0" rate0.yaml "rate0.yaml:8:9: workload.rate: poisson arrivals need a rate > 0"
sed 's/  duration_s: 20/  duration_s: 0/' base.yaml >dur0.yaml
rejects "duration_s 0" dur0.yaml "dur0.yaml:9:15: workload.duration_s: must be > 0"
cp base.yaml range.yaml; echo 'sweep: [{axis: request_rate, set: workload.rate, values: [1, -1]}]' >>range.yaml
rejects "an out-of-range sweep value, at its YAML position" range.yaml "range.yaml:13:62: workload.rate: -1 out of range"
sed 's/^model: opt-13b/model: opt-13b\ngpus: 3/' base.yaml >gpus3.yaml
rejects "gpus 3 does not divide the heads" gpus3.yaml "gpus3.yaml:4:7: gpus: tensor parallelism 3 does not divide OPT-13B's 40 attention heads"
sed 's/  - {name: vllm, type: vllm}/  - {name: vllm, type: vllm, kv_slots: 8}/' base.yaml >kv.yaml
rejects "kv_slots below block_size" kv.yaml "kv.yaml:12:40: systems.0: the KV space of vllm (8 token slots) holds no block of 16 tokens"
sed 's/  - {name: vllm, type: vllm}/  - {name: vllm, type: vllm, kv_slots: 2000000000, block_size: 1}/' base.yaml >kvbig.yaml
rejects "KV arrays beyond physical memory" kvbig.yaml "more than half of this machine"
cat >cpu.yaml <<'Y'
name: c13cpu
figure: c13
model: tiny-opt
hardware: a100-40gb
executor: {type: cpu, fixed_latency_s: 0.01, kv_slots: 768}
workload: {dataset: alpaca, rate: 4, num_requests: 2}
systems:
  - {name: vllm, type: vllm, block_size: 4096}
Y
rejects "block_size 4096 on the CPU model" cpu.yaml "cpu.yaml:8:42: systems.0.block_size: 4096 is larger than tiny-OPT's longest sequence"
sed 's/  dataset: alpaca/  trace: missing.csv/; /^  arrivals:/d; /^  rate:/d; /^  duration_s:/d' base.yaml >trmiss.yaml
rejects "a missing workload.trace file" trmiss.yaml "trmiss.yaml:6:10: workload.trace: missing.csv:"
printf 'input_len,output_len\n5,x\n' >ds.csv
sed 's/  dataset: alpaca/  dataset: alpaca\n  file: ds.csv/' base.yaml >ds.yaml
rejects "a malformed dataset file" ds.yaml "ds.yaml:7:9: workload.file: ds.csv:2:3: output_len: not an integer"
sed 's/  - {name: vllm, type: vllm}/  - {name: vllm, type: vllm, sim: {profile: nope.csv}}/' base.yaml >prof.yaml
rejects "a missing sim profile" prof.yaml "prof.yaml:12:45: sim.profile: nope.csv:"
sed 's|^figure: c13|figure: ../x|' base.yaml >fig.yaml
rejects "a figure name with ../" fig.yaml "fig.yaml:2:9: figure: '../x' is used in file names"
printf 'arrival_s,prompt_len,output_len\n0,10,abc\n' >badtr.csv
sed 's/  dataset: alpaca/  trace: badtr.csv/; /^  arrivals:/d; /^  rate:/d; /^  duration_s:/d' base.yaml >trbad.yaml
rejects "a malformed trace CSV" trbad.yaml "trbad.yaml:6:10: workload.trace: badtr.csv:2:"
sed 's/  rate: 2.0/  rate: 1e9/; s/  duration_s: 20/  duration_s: 1e9/' base.yaml >huge.yaml
rejects "rate x duration above the request cap" huge.yaml "huge.yaml:8:9: workload.rate: 1e+18 requests"

# ---- requests that can never run are rejected and counted, in every policy ----
printf 'arrival_s,prompt_len,output_len,n\n0,10,20,1\n0.1,10,20,300\n0.2,10,20,2\n' >n300.csv
sed '/^  arrivals:/d; /^  rate:/d; /^  duration_s:/d; s/  dataset: alpaca/  trace: n300.csv/; s/  - {name: vllm, type: vllm}/  - {name: vllm, type: vllm}\n  - {name: orca, type: orca}\n  - {name: ft, type: ft}\n  - {name: spf, type: vllm, policy: spf}/' \
    base.yaml >n300.yaml
if runs n300.yaml r_n300 --allow-rejected; then
    got=$(paste -d: <(col r_n300/c13.csv system) <(col r_n300/c13.csv n_finished) <(col r_n300/c13.csv n_rejected) | tr '\n' ' ')
    [ "$got" = "vllm:2:1 orca:2:1 ft:2:1 spf:2:1 " ] && ok "n 300 > max_num_seqs: rejected and counted, the rest finish (every policy)" ||
        bad "n 300: $got"
else bad "n 300 stalls: $(grep -i 'stall\|failed' r_n300.err | head -3)"; fi
printf 'arrival_s,prompt_len,output_len\n0,10,2147483647\n' >ovf.csv
sed 's/  dataset: alpaca/  trace: ovf.csv/; /^  arrivals:/d; /^  rate:/d; /^  duration_s:/d' base.yaml >ovf.yaml
rejects "a trace length that would overflow a sum" ovf.yaml "ovf.yaml:6:10: workload.trace: ovf.csv:2:"

# ---- names used in paths ----
sed 's|^name: c13|name: ../../../../tmp/pwned|' base.yaml >n1.yaml
rejects "experiment name with ../" n1.yaml "n1.yaml:1:7: name: '../../../../tmp/pwned' is used in file names"
sed 's|^name: c13|name: ""|' base.yaml >n2.yaml
rejects "empty experiment name" n2.yaml "n2.yaml:1:7: name: '' is used in file names"
sed 's|{name: vllm, type: vllm}|{name: a/b, type: vllm}|' base.yaml >n3.yaml
rejects "system name with /" n3.yaml "n3.yaml:12:12: systems.0.name: 'a/b' is used in file names"

# ---- --results creates its parents, only for a valid config ----
if runs base.yaml "$T/deep/er/res" && [ -s "$T/deep/er/res/c13.csv" ]; then ok "--results creates parent folders"
else bad "--results a/b/c: $(tail -3 res.err)"; fi

# ---- errors never lost: a failed write names the file and errno; stale temporaries go ----
if runs base.yaml w; then
    pt=$(ls w/points/c13/*.pt | head -1); base=${pt%.pt}
    rm -f "$pt"; mkdir "$pt" "$base.err"          # neither the point nor its .err can be written
    host=$(uname -n); host=${host%%.*}
    touch "w/points/c13/old.pt.tmp.$host.999999999.0" "w/c13.csv.tmp.$host.999999999.3" "w/points/c13/x.pt.tmp.otherhost.999999999.0" 
    "$PB" run base.yaml --results w --quiet --no-report >/dev/null 2>w.err
    grep -q "cannot write $pt: Is a directory" w.err && ok "a failed point write names the file and errno, even without its .err" ||
        bad "failed write: $(cat w.err)"
    [ ! -e "w/points/c13/old.pt.tmp.$host.999999999.0" ] && [ ! -e "w/c13.csv.tmp.$host.999999999.3" ] &&
        [ -e w/points/c13/x.pt.tmp.otherhost.999999999.0 ] &&
        ok "temporaries left by a killed run of this host are removed (another host's kept)" ||
        bad "stale temporaries: $(ls w w/points/c13)"
else bad "write-error run: $(tail -3 w.err)"; fi

mkdir -p w2/c13.csv   # the merged CSV cannot be written: say which file and why
"$PB" run base.yaml --results w2 --quiet --no-report >/dev/null 2>w2.err
grep -q "w2/c13.csv: cannot write: Is a directory" w2.err && ok "a failed results write names the file and errno" ||
    bad "results write: $(cat w2.err)"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
