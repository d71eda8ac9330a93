#!/usr/bin/env bash
# run_all.sh -- the one entry point: set up, build, test, and reproduce the paper.
#
#   ./run_all.sh fig19        reproduce Fig. 19 (build first if needed), plot it, print paper-vs-ours
#   ./run_all.sh test         build and run the whole test suite (ctest)
#   ./run_all.sh table1       print the paper's Table 1 and write out/table1.csv
#   ./run_all.sh figN         any figure (fig1 fig2 fig11 fig12 ... fig18 fig19; also fig18a fig18b
#                             fig19a fig19b).  fig18(a) is the cost model's kernel terms (a
#                             calibration check) plus our kernels measured when a GPU is present
#   ./run_all.sh tier         the prefix cache with and without a CPU tier (RESULTS.md "The
#                             prefix cache's CPU tier"; issue 36)
#   ./run_all.sh study        the scheduling study beyond the paper (vllm-v0.1, vllm-v0.2,
#                             sarathi, prefix-cache; RESULTS.md "Scheduling study")
#   ./run_all.sh v1           the paper's questions on today's vLLM (engine: v1): versions,
#                             block size, sharing, prefix caching and token budget (RESULTS.md
#                             "The same ideas on today's vLLM")
#   ./run_all.sh ablation-kv  fp16 vs fp8 KV cache x block size 8/16/32: knee and latency
#                             (OPT-13B, LLaMA-13B; ShareGPT, Alpaca; RESULTS.md "FP8 KV cache")
#   ./run_all.sh ablation-graphs  decode TPOT vs batch size, eager vs CUDA graphs
#                             (RESULTS.md "CUDA graphs")
#   ./run_all.sh ablation-weights  offline throughput and KV slots vs weight format
#                             (fp16 int8 fp8 int4-awq int4-gptq; RESULTS.md "Quantized weights")
#   ./run_all.sh launch       vLLM's launch comparison: HF Transformers (2023), TGI (2023)
#                             and vLLM, 4 panels (RESULTS.md "The launch comparison")
#   ./run_all.sh all          every table and figure into the committed reference results
#                             (results/, plots/out/), then rewrite RESULTS.md's generated tables
#   ./run_all.sh results-md   refill RESULTS.md's generated tables from results/*_report.md
#   ./run_all.sh goldens      rewrite the pinned quick figures tests/golden/*.csv (after a change of
#                             the model on purpose; tests/cli_goldens.sh compares them byte for byte)
#   ./run_all.sh gpu          the GPU half: build the CUDA code, GPU tests, kernel benchmarks,
#                             calibration sweeps, OPT-13B profile, real engine vs cost model
#                             -> results/gpu/<device>/ (without a GPU: the C references and
#                             emulator, SKIP for the rest); on a machine without a package
#                             registry it builds with the .debs of tools/gpu/fetch_debs.sh
#   ./run_all.sh serve        an OpenAI-compatible server on http://127.0.0.1:8000 over the sim
#                             (vLLM on OPT-13B / A100-40GB, experiments/fig12_opt13b_sharegpt.yaml,
#                             real time); Ctrl-C drains it and exits 0 (README "Serve and measure")
#   ./run_all.sh list         what can be run
#   ./run_all.sh clean        remove build/ and out/ (every run's outputs) and the reference run's
#                             point files; the committed results/*.csv and plots/out/*.png stay
# Outputs: a figure verb writes out/ (results) and out/plots/ (figures), folders git ignores;
#          only `all` writes the committed reference results/ and plots/out/.
# Options: --quick (short traces, fewer points: out/quick/ and out/quick/plots/, watermarked),
#          --jobs N (parallel sweep points),
#          --asan (tests: also the ASan+UBSan build), --build DIR (default build/release),
#          --cuda (compile the CUDA kernels and executor; the default only when a GPU is
#          present: nvidia-smi lists one).  A figure verb builds only the pagedbench
#          binary (and the CUDA module in a CUDA build); `test` builds everything.
#          --bundle DIR (gpu: after every step, DIR/SUMMARY.md and DIR/gpu-results.tar.gz)
# Missing Debian packages are named; run as root, they are installed with apt-get.  Without
# make, ninja builds; without pkg-config, CMake finds the libraries itself.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)

QUICK=0
JOBS=$(nproc 2>/dev/null || echo 2)
ASAN=0
CUDA=0
BUILD=${PAGEDBENCH_BUILD:-build/release}
VERBS=()
GPU_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --jobs) JOBS=$2; shift ;;
        --jobs=*) JOBS=${1#--jobs=} ;;
        --asan) ASAN=1 ;;
        --cuda) CUDA=1 ;;
        --build) BUILD=$2; shift ;;
        --bundle) GPU_ARGS+=(--bundle "$2"); shift ;;
        -h|--help) sed -n '2,/^set -euo/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "run_all.sh: unknown option $1" >&2; exit 2 ;;
        *) VERBS+=("$1") ;;
    esac
    shift
done
[ ${#VERBS[@]} -gt 0 ] || { sed -n '2,/^set -euo/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

log() { printf '==> %s\n' "$*" >&2; }

# Every verb is checked before anything is built or run.
for verb in "${VERBS[@]}"; do
    case "$verb" in
        test|table1|list|all|results-md|clean|gpu|goldens|serve) ;;
        fig1|fig2|fig11|fig12|fig13|fig14|fig15|fig16|fig17|fig18|fig18a|fig18b|fig19|fig19a|fig19b|study|tier|v1) ;;
        ablation-kv|ablation-graphs|ablation-weights|launch) ;;
        *) echo "run_all.sh: unknown verb '$verb' (try: ./run_all.sh list)" >&2; exit 2 ;;
    esac
done

# ---- dependencies -------------------------------------------------------------------
# CMake's default generator needs make; ninja does the same job where make is absent
if ! command -v make >/dev/null && command -v ninja >/dev/null && [ -z "${CMAKE_GENERATOR:-}" ]; then
    export CMAKE_GENERATOR=Ninja
fi
PB_DEPS_ROOT=""
have_dev() {   # have_dev HEADER: installed, or unpacked from .gpu/debs (tools/gpu/deps.sh)
    [ -e "/usr/include/$1" ] || { [ -n "$PB_DEPS_ROOT" ] && [ -e "$PB_DEPS_ROOT/usr/include/$1" ]; }
}
need_pkgs() {   # need_pkgs <verb>: list the Debian packages missing for this verb
    local missing=()
    command -v cmake >/dev/null || missing+=(cmake)
    command -v cc >/dev/null || command -v gcc >/dev/null || missing+=(gcc)
    command -v make >/dev/null || command -v ninja >/dev/null || missing+=(make)
    have_dev yaml.h || missing+=(libyaml-dev)
    have_dev jansson.h || missing+=(libjansson-dev)
    have_dev csv.h || missing+=(libcsv-dev)
    if [ "$1" != gpu ]; then   # the GPU run builds with -DPB_NET=OFF (no serve, no loadgen)
        have_dev microhttpd.h || missing+=(libmicrohttpd-dev)
        have_dev curl/curl.h || have_dev x86_64-linux-gnu/curl/curl.h || missing+=(libcurl4-openssl-dev)
    fi
    case "$1" in
        test) if [ "$(id -u)" = 0 ]; then   # optional: the tests that need them skip (77) without
                  command -v slurmd >/dev/null || missing+=(slurm-wlm)       # cli_slurm
                  command -v munged >/dev/null || missing+=(munge)
                  command -v parallel >/dev/null || missing+=(parallel)      # cli_parallel
                  command -v gnuplot >/dev/null || missing+=(gnuplot-nox)    # cli_plot, cli_quick_figure
                  { fc-list 2>/dev/null | grep -i dejavu >/dev/null; } || missing+=(fonts-dejavu-core)   # cli_clean_tree
                  command -v clang >/dev/null || missing+=(clang)            # cli_fuzz: libFuzzer
                  { dpkg -s libclang-rt-dev >/dev/null 2>&1; } || missing+=(libclang-rt-dev)
              fi ;;
        fig*|study|tier|v1|ablation-*|launch|all) command -v gnuplot >/dev/null || missing+=(gnuplot-nox)
                  # (no grep -q here: fc-list would die of SIGPIPE, which pipefail reports)
                  { fc-list 2>/dev/null | grep -i dejavu >/dev/null; } || missing+=(fonts-dejavu-core) ;;
    esac
    echo "${missing[@]:-}"
}

ensure_deps() {
    local missing
    missing=$(need_pkgs "$1")
    [ -n "$missing" ] || return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        log "installing missing Debian packages: $missing"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
    else
        echo "run_all.sh: missing Debian packages: $missing" >&2
        echo "            install them with: sudo apt-get install $missing" >&2
        [ "$1" = gpu ] && echo "            or, without a package registry: run tools/gpu/fetch_debs.sh where apt" \
            "works and bring .gpu/ along (tools/gpu/README.md)" >&2
        exit 1
    fi
}

# ---- build --------------------------------------------------------------------------
# CUDA is compiled when asked (--cuda) or when a GPU is present; a build directory
# configured without it is reconfigured when --cuda asks for it.
want_cuda() {
    [ "$CUDA" = 1 ] && return 0
    command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep '^GPU' >/dev/null
}

configure_build() {   # configure_build <dir> <targets ("" = all)> [cmake args...]
    local dir=$1 targets=$2; shift 2
    local cuda=OFF
    want_cuda && cuda=ON
    if [ ! -f "$dir/CMakeCache.txt" ] ||
       { [ "$CUDA" = 1 ] && ! grep -q '^PB_CUDA:BOOL=ON' "$dir/CMakeCache.txt"; }; then
        log "configuring $dir (CUDA $cuda)"
        cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DPB_CUDA=$cuda "$@" >"$ROOT/.configure.log" 2>&1 ||
            { cat "$ROOT/.configure.log" >&2; exit 1; }
        rm -f "$ROOT/.configure.log"
        if [ "$CUDA" = 1 ] && ! grep -q '^PB_HAVE_CUDA_BUILD:INTERNAL=ON' "$dir/CMakeCache.txt"; then
            log "warning: --cuda but no CUDA compiler was found (nvcc): building without CUDA"
        fi
    fi
    # the CUDA module (libpbcuda_exec.so) goes with the binary when the build has CUDA
    if [ -n "$targets" ] && grep -q '^PB_HAVE_CUDA_BUILD:INTERNAL=ON' "$dir/CMakeCache.txt"; then
        targets="$targets pbcuda_exec"
    fi
    log "building $dir${targets:+ ($targets)}"
    local t args=()
    for t in $targets; do args+=(--target "$t"); done
    cmake --build "$dir" -j "$JOBS" "${args[@]}" >&2
}

# build <verb>: the test suite needs every target; the others only the binary
build() {
    ensure_deps "${1:-build}"
    local targets=pagedbench
    [ "${1:-}" = test ] && targets=""
    configure_build "$BUILD" "$targets"
    case "$BUILD" in /*) PB="$BUILD/pagedbench" ;; *) PB="$ROOT/$BUILD/pagedbench" ;; esac
}

# ---- verbs --------------------------------------------------------------------------
run_tests() {
    build test
    log "running tests ($BUILD)"
    (cd "$BUILD" && ctest --output-on-failure --no-tests=error -j "$JOBS")
    if [ "$ASAN" = 1 ]; then
        local dir=build/asan
        if [ ! -f "$dir/CMakeCache.txt" ]; then
            cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DPB_CUDA=OFF \
                "-DCMAKE_C_FLAGS=-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1" >/dev/null
        fi
        cmake --build "$dir" -j "$JOBS" >&2
        log "running tests under ASan+UBSan ($dir)"
        (cd "$dir" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
            ctest --output-on-failure --no-tests=error -j "$JOBS" -LE 'gpu|cuda|python')
    fi
}

# Where a verb's results and plots go: out/ and out/plots/ (git ignores out/), out/quick/
# for --quick; only `all` (not quick) writes the committed reference, results/ and
# plots/out/ (set by run_all_figures).
RES=out; PLOTS=out/plots
[ "$QUICK" = 1 ] && { RES=out/quick; PLOTS=out/quick/plots; }

plot_figure() {   # plot_figure figN: render plots/<script>.gp from $RES into $PLOTS
    local fig=$1 script args
    mkdir -p "$PLOTS"
    if [ "$fig" = study ]; then   # the study: each policy's p99 against vLLM v0.1's (pagedbench plot)
        if "$PB" plot "$RES/study.csv" --y ttft_p99_ms --y tpot_p99_ms --relative-to vllm_v01 --logy \
            --title "Scheduling study: p99 latency of each policy relative to vLLM v0.1" --out "$PLOTS/study" >/dev/null; then
            log "plotted $PLOTS/study.png and .pdf"; return 0
        fi
        log "pagedbench plot failed for the study"; return 1
    fi
    case "$fig" in
        fig18|fig18a) script=fig18; args="data='$RES/fig18b.csv'; data_a='$RES/fig18a.csv'" ;;
        fig18b) script=fig18b; args="data='$RES/fig18b.csv'" ;;
        fig19|fig19a|fig19b) script=fig19; args="data='$RES/fig19b.csv'; data_a='$RES/fig19a.csv'" ;;
        *) script=$fig; args="data='$RES/$fig.csv'" ;;
    esac
    [ -f "plots/$script.gp" ] || { log "no plot script plots/$script.gp"; return 0; }
    if gnuplot -e "$args; out='$PLOTS/$script'; quick=$QUICK" "plots/$script.gp" >&2; then
        log "plotted $PLOTS/$script.png and .pdf"
    else
        log "gnuplot failed for plots/$script.gp"; return 1
    fi
}

run_figure() {   # run_figure figN: run it, print paper-vs-ours, plot it
    build fig
    local quick=()
    [ "$QUICK" = 1 ] && quick=(--quick)
    local t0=$SECONDS rc=0
    "$PB" run --figure "$1" --jobs "$JOBS" --results "$RES" "${quick[@]}" || rc=$?
    [ "$rc" = 2 ] && exit 2
    plot_figure "$1" || rc=1
    log "$1 done in $((SECONDS - t0)) s (results in $RES/, plots in $PLOTS/)"
    return "$rc"
}

# RESULTS.md: replace the text between <!-- BEGIN GENERATED figN --> and
# <!-- END GENERATED figN --> by $RES/figN_report.md (and table1 by $RES/table1.csv).
update_results_md() {
    [ -f RESULTS.md ] || { log "no RESULTS.md: generated tables left in $RES/*_report.md"; return 0; }
    local f tmp
    for f in "$RES"/*_report.md; do
        [ -f "$f" ] || continue
        local fig; fig=$(basename "$f" _report.md)
        grep -q "<!-- BEGIN GENERATED $fig -->" RESULTS.md || continue
        tmp=$(mktemp)
        local src=$f
        case "$(head -c 1 "$f")" in      # plain-text reports go in a code block
            '#'|'|'|'`') ;;
            *) src=$(mktemp); { echo '```'; cat "$f"; echo '```'; } >"$src" ;;
        esac
        awk -v fig="$fig" -v src="$src" '
            $0 == "<!-- BEGIN GENERATED " fig " -->" { print; while ((getline l < src) > 0) print l; skip = 1; next }
            $0 == "<!-- END GENERATED " fig " -->" { skip = 0 }
            !skip { print }' RESULTS.md >"$tmp" && mv "$tmp" RESULTS.md
        [ "$src" = "$f" ] || rm -f "$src"
        log "RESULTS.md: updated the $fig tables"
    done
}

run_all_figures() {
    build all
    local quick=() rc=0 t0=$SECONDS
    [ "$QUICK" = 1 ] && quick=(--quick)
    [ "$QUICK" = 1 ] || { RES=results; PLOTS=plots/out; }   # the committed reference results
    mkdir -p "$RES"
    { echo '```'; "$PB" table1 --csv "$RES/table1.csv" || rc=1; echo '```'; } >"$RES/table1_report.md" || rc=1
    cat "$RES/table1_report.md"
    "$PB" run --all --jobs "$JOBS" --results "$RES" "${quick[@]}" || rc=$?
    [ "$rc" = 2 ] && exit 2
    for f in fig1 fig2 fig11 fig12 fig13 fig14 fig15 fig16 fig17 fig18 fig19 study tier v1 \
             ablation_kv ablation_graphs ablation_weights launch; do plot_figure "$f" || rc=1; done
    # RESULTS.md's fidelity tables: the cost-model parameters with their sources, and the
    # cost model against public GPU step measurements (pagedbench validate)
    if command -v python3 >/dev/null; then
        python3 experiments/calibrate/param_table.py >"$RES/params_report.md" || rc=1
    fi
    local notes; notes=$(mktemp)
    if "$PB" validate --csv >"$RES/validate.csv" 2>"$notes"; then   # every row in validate.csv; the summary in RESULTS.md
        { echo '```'; grep -E '^(source|gpu|summary)' "$notes"; echo '```'; } >"$RES/validate_report.md"
    else rc=1; fi
    rm -f "$notes"
    [ "$QUICK" = 1 ] || update_results_md
    log "all done in $((SECONDS - t0)) s"
    return "$rc"
}

for verb in "${VERBS[@]}"; do
    case "$verb" in
        test) run_tests ;;
        table1) build table1; "$PB" table1 --csv "$RES/table1.csv" ;;
        list) build list; "$PB" list ;;
        serve) build serve; "$PB" serve experiments/fig12_opt13b_sharegpt.yaml --system vllm ;;
        fig*|study|tier|v1) run_figure "$verb" ;;
        ablation-kv|ablation-graphs|ablation-weights|launch) run_figure "${verb//-/_}" ;;
        all) run_all_figures ;;
        results-md) RES=results; update_results_md ;;
        goldens) build goldens; bash tools/goldens.sh write "$PB" ;;
        clean) rm -rf build out results/tmp results/points results/vllm ;;
        gpu) . tools/gpu/deps.sh
             pb_gpu_deps "$ROOT" || exit 1
             ensure_deps gpu
             bash tools/gpu/run_gpu.sh --jobs "$JOBS" "${GPU_ARGS[@]}" ;;
        *) echo "run_all.sh: unknown verb '$verb' (try: ./run_all.sh list)" >&2; exit 2 ;;
    esac
done
