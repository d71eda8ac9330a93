# v1.gp -- the paper's questions on today's vLLM (not a paper figure; RESULTS.md "The
# same ideas on today's vLLM"), seven panels from the six experiments/v1_*.yaml:
#   (a) v0.1 / v0.2 / V1, OPT-13B, A100-80GB, ShareGPT: normalized latency vs rate
#   (b) the same, LLaMA-13B, H100-SXM
#   (c) block size, v0.1 and V1, OPT-13B, A100-80GB, ShareGPT 3 req/s (and V1 at 5)
#   (d) parallel sampling n = 4, v0.1 and V1, OPT-13B, A100-80GB, Alpaca
#   (e, f) V1 with and without prefix caching and with smaller token budgets,
#       LLaMA-13B, H100-SXM, chatbot: TTFT p99 and TPOT p99 vs rate
#   (g) tensor parallelism 8: v0.2, V1 and V1 with NCCL's all-reduce, Llama-2-70B,
#       8x H100-SXM, ShareGPT
#
#   gnuplot plots/v1.gp                                      # -> plots/out/v1.{png,pdf}
# Input: results/v1.csv.  Run from the repository root.  Log y axes; a value above an
# axis is an arrow to its top edge with the value written along it.
if (!exists("data")) data = 'results/v1.csv'
if (!exists("out"))  out  = 'plots/out/v1'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
# per plotted panel: the CSV panel, x column, y column, y range, title, systems, their
# labels and line styles
PP = 'a b c d e e g'
PX = 'request_rate request_rate block_size request_rate request_rate request_rate request_rate'
PY = 'normalized_latency normalized_latency normalized_latency normalized_latency ttft_p99_ms tpot_p99_ms normalized_latency'
YL = '"Normalized latency (s/token)" "Normalized latency (s/token)" "Normalized latency (s/token)" "Normalized latency (s/token)" "TTFT p99 (ms)" "TPOT p99 (ms)" "Normalized latency (s/token)"'
XL = '"Request rate (req/s)" "Request rate (req/s)" "Block size (tokens)" "Request rate (req/s)" "Request rate (req/s)" "Request rate (req/s)" "Request rate (req/s)"'
YBOT = '0.01 0.01 0.01 0.01 10 10 0.01'
YTOP = '100 100 100 100 10000000 1000 100'
TT = '"(a) OPT-13B, A100-80GB, ShareGPT" "(b) LLaMA-13B, H100, ShareGPT" "(c) block size, OPT-13B, ShareGPT, 3 req/s" "(d) parallel n = 4, OPT-13B, Alpaca" "(e) LLaMA-13B, H100, chatbot" "(f) LLaMA-13B, H100, chatbot" "(g) Llama-2-70B, 8x H100 (TP 8), ShareGPT"'
VERS = 'vllm_v01 vllm_v02 vllm_v1'
VERL = '"vLLM v0.1" "vLLM v0.2" "vLLM V1"'
VERS_S = '5 21 22'
V1S = 'vllm_v1 vllm_v1_noapc vllm_v1_b2048 vllm_v1_b512'
V1L = '"V1 (8192, prefix cache)" "V1, no prefix cache" "V1, budget 2048" "V1, budget 512"'
V1S_S = '22 23 24 25'
TPS = 'vllm_v02 vllm_v1 vllm_v1_nccl'
TPS_S = '21 22 27'
KEYH = 0.08
# panel c: (system, rate) series
CS = 'vllm_v01 vllm_v1 vllm_v1'
CR = '3 3 5'
CSS = '5 22 26'
sel3(s, r, y) = (strcol('panel') eq 'c' && strcol('system') eq s && abs(column('request_rate') - r) < 1e-9) ? column(y) : NaN
selx3(s, r, x) = (strcol('panel') eq 'c' && strcol('system') eq s && abs(column('request_rate') - r) < 1e-9) ? column(x) : NaN
# panel i's series k: its x, its y, its line style; NS(i) series
SYS(i, k) = (i <= 4) ? word(VERS, k) : (i == 7) ? word(TPS, k) : word(V1S, k)
NS(i) = (i == 3) ? words(CS) : (i <= 4) ? words(VERS) : (i == 7) ? words(TPS) : words(V1S)
xv(i, k) = (i == 3) ? selx3(word(CS, k), word(CR, k) + 0, word(PX, i)) : \
           selx2('panel', word(PP, i), 'system', SYS(i, k), word(PX, i))
yv(i, k) = (i == 3) ? sel3(word(CS, k), word(CR, k) + 0, word(PY, i)) : \
           sel2('panel', word(PP, i), 'system', SYS(i, k), word(PY, i))
st(i, k) = word((i == 3) ? CSS : (i <= 4) ? VERS_S : (i == 7) ? TPS_S : V1S_S, k) + 0
# a value above a panel's axis is an arrow to its top edge with the value along it
# (style.gp above/VAL); the log axes' arrows start a decade below the top
set datafile columnheaders
OFF_ANY = 0
do for [i=1:7] {
    do for [k=1:NS(i)] {
        stats data using (yv(i, k) > word(YTOP, i) + 0 ? 1 : 0) nooutput
        OFF_ANY = OFF_ANY + STATS_sum
    }
}
do for [t in "png pdf"] {
    if (t eq "png") { eval png(2300, 1000) } else { eval pdf(9.2, 4.0) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    eval QUICK_WATERMARK
    do for [i=1:7] {
        top = word(YTOP, i) + 0
        col = (i - 1) % 4; row = (i - 1) / 4
        set origin col / 4.0, (1 - KEYH) * (1 - row) / 2.0
        set size 1 / 4.0, (1 - KEYH) / 2.0
        set title word(TT, i) offset 0, -0.6
        set logscale y
        set yrange [word(YBOT, i) + 0 : top]
        set format y '10^{%L}'
        if (i == 3) { set logscale x 2; set xrange [*:*] } else { unset logscale x; set xrange [0:*] }
        set ylabel word(YL, i)
        set xlabel word(XL, i)
        unset key
        plot for [k=1:NS(i)] data using (xv(i, k)):(yv(i, k)) with linespoints ls st(i, k) notitle, \
             for [k=1:NS(i)] data using (xv(i, k)):(above(yv(i, k), top) * 0 + top / 10):(0):(top - top / 10) with vectors head filled size screen 0.008,30 ls st(i, k) notitle, \
             for [k=1:NS(i)] data using (xv(i, k)):(above(yv(i, k), top) * 0 + top / 10):(VAL(above(yv(i, k), top))) with labels rotate by 90 right offset -0.6 + 0.9 * (k - 1), -0.2 font OFF_FONT tc ls st(i, k) notitle
    }
    eval KEY_STRIP
    if (OFF_ANY > 0) {
        plot for [k=1:words(VERS)] NaN with linespoints ls word(VERS_S, k) + 0 title word(VERL, k), \
             NaN with linespoints ls 26 title "V1 at 5 req/s (c)", \
             for [k=2:words(V1S)] NaN with linespoints ls word(V1S_S, k) + 0 title word(V1L, k), \
             NaN with linespoints ls 27 title "V1, NCCL all-reduce (g)", @OFF_KEY
    } else {
        plot for [k=1:words(VERS)] NaN with linespoints ls word(VERS_S, k) + 0 title word(VERL, k), \
             NaN with linespoints ls 26 title "V1 at 5 req/s (c)", \
             for [k=2:words(V1S)] NaN with linespoints ls word(V1S_S, k) + 0 title word(V1L, k), \
             NaN with linespoints ls 27 title "V1, NCCL all-reduce (g)"
    }
    eval KEY_RESET
    unset multiplot
}
