# tier.gp -- the prefix cache's CPU tier (not a paper figure; RESULTS.md "The prefix
# cache's CPU tier"): TTFT p50 and p99 and the prefix-cache hit rate vs request rate for
# the prefix cache alone and with a 64 GiB CPU tier, OPT-13B/A100-40GB, chatbot
# (experiments/tier_opt13b_chatbot.yaml).  The hit rate panel also draws the tier's part
# (prefix_hit_pct_cpu, dashed).
#
#   gnuplot plots/tier.gp                                    # -> plots/out/tier.{png,pdf}
# Input: results/tier.csv.  Run from the repository root.
if (!exists("data")) data = 'results/tier.csv'
if (!exists("out"))  out  = 'plots/out/tier'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
SYSN = 'prefix_cache cpu_tier'
SYSL = '"vLLM + prefix cache" "+ CPU tier (64 GiB)"'
SYSS = '23 21'
KEYH = 0.12
do for [t in "png pdf"] {
    if (t eq "png") { eval png(1500, 520) } else { eval pdf(7.2, 2.5) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    do for [i=1:3] {
        set origin (i - 1) / 3.0, 0
        set size 1 / 3.0, 1 - KEYH
        set xrange [0:*]
        set xlabel 'Request rate (req/s)'
        unset key
        if (i == 1) {
            set title 'TTFT p50' offset 0, -0.6
            set ylabel 'ms'
            set logscale y; set format y '10^{%L}'; set yrange [10:100000]
            plot for [k=1:2] data using (selx2('panel', 'a', 'system', word(SYSN, k), 'request_rate')):(sel2('panel', 'a', 'system', word(SYSN, k), 'ttft_p50_ms')) with linespoints ls word(SYSS, k) + 0
        }
        if (i == 2) {
            set title 'TTFT p99' offset 0, -0.6
            unset ylabel
            plot for [k=1:2] data using (selx2('panel', 'a', 'system', word(SYSN, k), 'request_rate')):(sel2('panel', 'a', 'system', word(SYSN, k), 'ttft_p99_ms')) with linespoints ls word(SYSS, k) + 0
        }
        if (i == 3) {
            set title 'prefix-cache hits (dashed: from the CPU)' offset 0, -0.6
            set ylabel '% of tokens'
            unset logscale y; set format y '%g'; set yrange [0:*]
            plot for [k=1:2] data using (selx2('panel', 'a', 'system', word(SYSN, k), 'request_rate')):(sel2('panel', 'a', 'system', word(SYSN, k), 'prefix_hit_pct')) with linespoints ls word(SYSS, k) + 0, \
                 data using (selx2('panel', 'a', 'system', 'cpu_tier', 'request_rate')):(sel2('panel', 'a', 'system', 'cpu_tier', 'prefix_hit_pct_cpu')) with linespoints ls 21 dt 2
        }
    }
    set origin 0, 1 - KEYH
    set size 1, KEYH
    unset title; unset xlabel; unset ylabel; unset logscale y
    set key top center horizontal samplen 2
    set border 0; unset tics; unset grid
    set xrange [0:1]; set yrange [0:1]
    plot for [k=1:2] NaN with linespoints ls word(SYSS, k) + 0 title word(SYSL, k)
    unset multiplot
}
