# ablation_kv.gp -- the KV dtype x block size ablation (not a paper figure; issue 35,
# RESULTS.md "FP8 KV cache"): vLLM with an fp16 (solid) or fp8 (dashed, hollow) KV
# cache at block sizes 8, 16 and 32.  Top row: normalized latency vs request rate
# (log scale: every point is drawn; the dotted line is the knee threshold);
# bottom row: the knee, the rate where each curve crosses 0.2 s/token (linear
# interpolation between the sweep points around it, as the figure reports read knees),
# vs block size.  Panels a-d = experiments/ablation_kv_*.yaml.
#
#   gnuplot plots/ablation_kv.gp                             # -> plots/out/ablation_kv.{png,pdf}
# Input: results/ablation_kv.csv (panel, system, kv_dtype, block_size, request_rate,
# normalized_latency, ...), rows of a series in rate order.  Run from the repository root.
if (!exists("data")) data = 'results/ablation_kv.csv'
if (!exists("out"))  out  = 'plots/out/ablation_kv'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
panels = 'a b c d'
titles = '"OPT-13B, ShareGPT" "OPT-13B, Alpaca" "LLaMA-13B, ShareGPT" "LLaMA-13B, Alpaca"'
BLOCKS = '8 16 32'
DTYPES = 'fp16 fp8'
TH = 0.2          # s/token: the knee threshold of the YAMLs
KEYH = 0.09
# the knee of series (panel p, system s): set by a stats pass over the rows
knee_of(p, s) = (K = NaN, PX = NaN, PY = NaN, 0)
scan(p, s) = (strcol('panel') eq p && strcol('system') eq s) ? \
    (X = column('request_rate'), Y = column('normalized_latency'), \
     (K != K && Y > TH) ? (K = (PY == PY) ? PX + (TH - PY) * (X - PX) / (Y - PY) : X) : 0, \
     PX = X, PY = Y, 0) : 0
do for [t in "png pdf"] {
    if (t eq "png") { eval png(1800, 860) } else { eval pdf(7.2, 3.6) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    eval QUICK_WATERMARK
    set multiplot
    do for [i=1:4] {
        p = word(panels, i)
        # knees of the six series of this panel -> $KN: block index, fp16 knee, fp8 knee
        set print $KN
        print 'block fp16 fp8'          # a header: the data is read with columnheaders
        do for [b=1:3] {
            line = sprintf('%d', b - 1)
            do for [d=1:2] {
                s = sprintf('%s_bs%s', word(DTYPES, d), word(BLOCKS, b))
                dummy = knee_of(p, s)
                stats data using (scan(p, s)) nooutput
                line = line . sprintf(' %g', K)
            }
            print line
        }
        unset print
        # top: latency vs rate
        set origin (i - 1) / 4.0, (1 - KEYH) / 2.0
        set size 0.25, (1 - KEYH) / 2.0
        set title word(titles, i) offset 0, -0.6
        set autoscale xy
        stats data using (strcol('panel') eq p ? column('request_rate') : NaN) nooutput
        set xrange [0:1.05 * STATS_max]
        set logscale y; set yrange [*:*]; set ytics autofreq
        set arrow 1 from graph 0, first TH to graph 1, first TH nohead dt 3 lc rgb '#808080'
        set xtics autofreq
        if (i == 1) { set ylabel "Normalized latency\n(s/token)" } else { unset ylabel }
        set xlabel 'Request rate (req/s)'
        unset key
        plot for [d=1:2] for [b=1:3] data using (selx2('panel', p, 'system', sprintf('%s_bs%s', word(DTYPES, d), word(BLOCKS, b)), 'request_rate')):(sel2('panel', p, 'system', sprintf('%s_bs%s', word(DTYPES, d), word(BLOCKS, b)), 'normalized_latency')) with linespoints ls (d == 1 ? 5 + b : 15 + b)
        # bottom: knee vs block size
        set origin (i - 1) / 4.0, 0
        unset title
        set xrange [-0.5:2.5]
        set xtics ('8' 0, '16' 1, '32' 2)
        unset logscale y; unset arrow 1
        set autoscale y
        set yrange [0:*]; set ytics autofreq
        if (i == 1) { set ylabel "Knee (req/s)\nat 0.2 s/token" } else { unset ylabel }
        set xlabel 'Block size (tokens)'
        set datafile separator whitespace
        plot $KN using 1:2 with linespoints ls 6, $KN using 1:3 with linespoints ls 17
        set datafile separator ','
    }
    # the legend strip on top
    set origin 0, 1 - KEYH
    set size 1, KEYH
    unset title; unset xlabel; unset ylabel
    set key top center horizontal samplen 2 maxrows 2
    set border 0; unset tics; unset grid
    set xrange [0:1]; set yrange [0:1]
    plot for [d=1:2] for [b=1:3] NaN with linespoints ls (d == 1 ? 5 + b : 15 + b) title sprintf('%s KV, block %s', word(DTYPES, d), word(BLOCKS, b)), \
         NaN with linespoints ls 6 title 'knee: fp16 KV', NaN with linespoints ls 17 title 'knee: fp8 KV'
    unset multiplot
    set border 3; set tics; set grid
}
