# v1.gp -- the paper's questions on today's vLLM (not a paper figure; RESULTS.md "The
# same ideas on today's vLLM"), six panels from the five experiments/v1_*.yaml:
#   (a) v0.1 / v0.2 / V1, OPT-13B, A100-80GB, ShareGPT: normalized latency vs rate
#   (b) the same, LLaMA-13B, H100-SXM
#   (c) block size, v0.1 and V1, OPT-13B, A100-80GB, ShareGPT 3 req/s (and V1 at 5)
#   (d) parallel sampling n = 4, v0.1 and V1, OPT-13B, A100-80GB, Alpaca
#   (e, f) V1 with and without prefix caching and with smaller token budgets,
#       LLaMA-13B, H100-SXM, chatbot: TTFT p99 and TPOT p99 vs rate
#
#   gnuplot plots/v1.gp                                      # -> plots/out/v1.{png,pdf}
# Input: results/v1.csv.  Run from the repository root.  Log y axes; a point beyond the
# top sits on the top edge.
if (!exists("data")) data = 'results/v1.csv'
if (!exists("out"))  out  = 'plots/out/v1'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
# per plotted panel: the CSV panel, x column, y column, y range, title, systems, their
# labels and line styles
PP = 'a b c d e e'
PX = 'request_rate request_rate block_size request_rate request_rate request_rate'
PY = 'normalized_latency normalized_latency normalized_latency normalized_latency ttft_p99_ms tpot_p99_ms'
YL = '"Normalized latency (s/token)" "Normalized latency (s/token)" "Normalized latency (s/token)" "Normalized latency (s/token)" "TTFT p99 (ms)" "TPOT p99 (ms)"'
XL = '"Request rate (req/s)" "Request rate (req/s)" "Block size (tokens)" "Request rate (req/s)" "Request rate (req/s)" "Request rate (req/s)"'
YBOT = '0.01 0.01 0.01 0.01 10 10'
YTOP = '10 10 10 10 1000000 1000'
TT = '"(a) OPT-13B, A100-80GB, ShareGPT" "(b) LLaMA-13B, H100, ShareGPT" "(c) block size, OPT-13B, ShareGPT" "(d) parallel n = 4, OPT-13B, Alpaca" "(e) LLaMA-13B, H100, chatbot" "(f) LLaMA-13B, H100, chatbot"'
VERS = 'vllm_v01 vllm_v02 vllm_v1'
VERL = '"vLLM v0.1" "vLLM v0.2" "vLLM V1"'
VERS_S = '5 21 22'
V1S = 'vllm_v1 vllm_v1_noapc vllm_v1_b2048 vllm_v1_b512'
V1L = '"V1 (8192, prefix cache)" "V1, no prefix cache" "V1, budget 2048" "V1, budget 512"'
V1S_S = '22 23 24 25'
KEYH = 0.08
# panel c: (system, rate) series
CS = 'vllm_v01 vllm_v1 vllm_v1'
CR = '3 3 5'
CSS = '5 22 26'
sel3(s, r, y) = (strcol('panel') eq 'c' && strcol('system') eq s && abs(column('request_rate') - r) < 1e-9) ? column(y) : NaN
selx3(s, r, x) = (strcol('panel') eq 'c' && strcol('system') eq s && abs(column('request_rate') - r) < 1e-9) ? column(x) : NaN
do for [t in "png pdf"] {
    if (t eq "png") { eval png(1800, 1000) } else { eval pdf(7.2, 4.0) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    do for [i=1:6] {
        p = word(PP, i); xc = word(PX, i); yc = word(PY, i); top = word(YTOP, i) + 0
        col = (i - 1) % 3; row = (i - 1) / 3
        set origin col / 3.0, (1 - KEYH) * (1 - row) / 2.0
        set size 1 / 3.0, (1 - KEYH) / 2.0
        set title word(TT, i) offset 0, -0.6
        set logscale y
        set yrange [word(YBOT, i) + 0 : top]
        set format y '10^{%L}'
        if (i == 3) { set logscale x 2; set xrange [*:*] } else { unset logscale x; set xrange [0:*] }
        set ylabel word(YL, i)
        set xlabel word(XL, i)
        unset key
        if (i == 3) {
            plot for [k=1:words(CS)] data using (selx3(word(CS, k), word(CR, k) + 0, xc)):(clip(sel3(word(CS, k), word(CR, k) + 0, yc), top)) with linespoints ls word(CSS, k) + 0
        } else { if (i <= 4) {
            plot for [k=1:words(VERS)] data using (selx2('panel', p, 'system', word(VERS, k), xc)):(clip(sel2('panel', p, 'system', word(VERS, k), yc), top)) with linespoints ls word(VERS_S, k) + 0
        } else {
            plot for [k=1:words(V1S)] data using (selx2('panel', p, 'system', word(V1S, k), xc)):(clip(sel2('panel', p, 'system', word(V1S, k), yc), top)) with linespoints ls word(V1S_S, k) + 0
        } }
    }
    # the legend strip on top
    set origin 0, 1 - KEYH
    set size 1, KEYH
    unset title; unset xlabel; unset ylabel; unset logscale y; unset logscale x
    set key top center horizontal samplen 2
    set border 0; unset tics; unset grid
    set xrange [0:1]; set yrange [0:1]
    plot for [k=1:words(VERS)] NaN with linespoints ls word(VERS_S, k) + 0 title word(VERL, k), \
         NaN with linespoints ls 26 title "V1 at 5 req/s (c)", \
         for [k=2:words(V1S)] NaN with linespoints ls word(V1S_S, k) + 0 title word(V1L, k)
    unset multiplot
}
