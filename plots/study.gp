# study.gp -- the scheduling study (not a paper figure; RESULTS.md "Scheduling study"):
# TTFT p99 (top row) and TPOT p99 (bottom row) vs request rate for vllm-v0.1, vllm-v0.2,
# sarathi and prefix-cache, on OPT-13B/A100-40GB and LLaMA-13B/H100-SXM with the chatbot
# and ShareGPT workloads (panels a-d = the four experiments/study_*.yaml).
#
#   gnuplot plots/study.gp                                   # -> plots/out/study.{png,pdf}
# Input: results/study.csv.  Run from the repository root.  Log y axes; a point whose
# p99 is beyond the top sits on the top edge.
if (!exists("data")) data = 'results/study.csv'
if (!exists("out"))  out  = 'plots/out/study'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
panels = 'a b c d'
titles = '"OPT-13B, A100-40GB, chatbot" "OPT-13B, A100-40GB, ShareGPT" "LLaMA-13B, H100, chatbot" "LLaMA-13B, H100, ShareGPT"'
SYSN = 'vllm_v01 vllm_v02 sarathi prefix_cache'
SYSL = '"vLLM v0.1" "vLLM v0.2" "Sarathi (chunked, 512)" "vLLM + prefix cache"'
SYSS = '5 21 22 23'
METRIC = 'ttft_p99_ms tpot_p99_ms'
MLAB = '"TTFT p99 (ms)" "TPOT p99 (ms)"'
MTOP = '100000 2000'
MBOT = '10 10'
KEYH = 0.08
do for [t in "png pdf"] {
    if (t eq "png") { eval png(1800, 860) } else { eval pdf(7.2, 3.6) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    do for [r=1:2] {
        m = word(METRIC, r)
        do for [i=1:4] {
            p = word(panels, i)
            set origin (i - 1) / 4.0, (1 - KEYH) * (2 - r) / 2.0
            set size 0.25, (1 - KEYH) / 2.0
            if (r == 1) { set title word(titles, i) offset 0, -0.6 } else { unset title }
            set logscale y
            set yrange [word(MBOT, r) + 0 : word(MTOP, r) + 0]
            set format y '10^{%L}'
            set autoscale x
            set xrange [0:*]
            if (i == 1) { set ylabel word(MLAB, r) } else { unset ylabel }
            if (r == 2) { set xlabel 'Request rate (req/s)' } else { unset xlabel }
            unset key
            plot for [k=1:words(SYSN)] data using (selx2('panel', p, 'system', word(SYSN, k), 'request_rate')):(clip(sel2('panel', p, 'system', word(SYSN, k), m), word(MTOP, r) + 0)) with linespoints ls word(SYSS, k) + 0
        }
    }
    # the legend strip on top
    set origin 0, 1 - KEYH
    set size 1, KEYH
    unset title; unset xlabel; unset ylabel; unset logscale y
    set key top center horizontal samplen 2
    set border 0; unset tics; unset grid
    set xrange [0:1]; set yrange [0:1]
    plot for [k=1:words(SYSN)] NaN with linespoints ls word(SYSS, k) + 0 title word(SYSL, k)
    unset multiplot
}
