# fig1.gp -- Fig. 1 (right) from the cost model: memory used (top) and decode
# throughput (bottom) vs batch size, OPT-13B on an A100-40GB (results/fig1.csv,
# written by pb_fig1_write, experiments/fig_sim.h).  Ours: solid; the paper's
# digitized points (the csv's `paper` column): same colour, dashed, hollow markers.
# One legend for both panels, on top.
#
#   gnuplot plots/fig1.gp                        # -> plots/out/fig1.{png,pdf}
if (!exists("data")) data = 'results/fig1.csv'
if (!exists("out"))  out  = 'plots/out/fig1'
KEYH = 0.11
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
do for [t in "png pdf"] {
    if (t eq "png") { eval png(700, 900) } else { eval pdf(3.3, 4.3) }
    load 'plots/style.gp'
    # this figure's own series: existing systems orange, vLLM blue, throughput green
    set style line 31 lc rgb '#ff7f0e' lw 1.5 pt 7 ps 0.6*PS
    set style line 32 lc rgb '#1f77b4' lw 1.5 pt 7 ps 0.6*PS
    set style line 33 lc rgb '#2ca02c' lw 1.5 pt 7 ps 0.6*PS
    set style line 34 lc rgb '#808080' lw 1.5 pt 7 ps 0.4*PS
    set style line 41 lc rgb '#ff7f0e' lw 1.2 dt 2 pt 6 ps 0.9*PS
    set style line 42 lc rgb '#1f77b4' lw 1.2 dt 2 pt 6 ps 0.9*PS
    set style line 43 lc rgb '#2ca02c' lw 1.2 dt 2 pt 6 ps 0.9*PS
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    eval QUICK_WATERMARK
    unset key
    set xrange [0:48]
    set origin 0, (1 - KEYH) / 2; set size 1, (1 - KEYH) / 2
    set ylabel 'Memory usage (GB)'
    set yrange [20:*]
    set format x ''
    set title 'OPT-13B, A100-40GB (cost model)'
    plot data using 'batch':(sel2('panel', 'memory_gb', 'series', 'existing', 'paper')) with linespoints ls 41 notitle, \
         data using 'batch':(sel2('panel', 'memory_gb', 'series', 'vllm', 'paper')) with linespoints ls 42 notitle, \
         data using 'batch':(sel2('panel', 'memory_gb', 'series', 'existing', 'ours')) with steps ls 31 notitle, \
         data using 'batch':(sel2('panel', 'memory_gb', 'series', 'vllm', 'ours')) with lines ls 32 notitle, \
         40 with lines lc rgb '#808080' dt 3 notitle
    unset title
    set origin 0, 0; set size 1, (1 - KEYH) / 2
    set format x '%g'
    set xlabel 'Batch size (# requests)'
    set ylabel 'Throughput (token/s)'
    set yrange [0:*]
    plot data using 'batch':(sel2('panel', 'throughput_tok_s', 'series', 'vllm', 'paper')) with linespoints ls 43 notitle, \
         data using 'batch':(sel2('panel', 'throughput_tok_s', 'series', 'vllm', 'ours')) with lines ls 33 notitle, \
         data using 'batch':(sel2('panel', 'throughput_tok_s', 'series', 'ft', 'ours')) with lines ls 34 notitle
    eval KEY_STRIP
    set key vertical maxrows 3 width -2
    plot NaN with lines ls 31 title 'Existing systems (memory)', NaN with lines ls 32 title 'vLLM (memory)', \
         NaN with lines lc rgb '#808080' dt 3 title '40 GB', NaN with lines ls 33 title 'vLLM (paged kernel, Python)', \
         NaN with lines ls 34 title 'FT-style (contiguous, C++)', @PAPER_KEY
    eval KEY_RESET
    unset multiplot
}
