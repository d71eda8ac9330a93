# fig1.gp -- Fig. 1 (right) from the cost model: memory used (top) and decode
# throughput (bottom) vs batch size, OPT-13B on an A100-40GB (results/fig1.csv,
# written by pb_fig1_write, experiments/fig_sim.h).  Ours: solid; the paper's
# digitized points (the csv's `paper` column): same colour, dashed, hollow markers.
#
#   gnuplot plots/fig1.gp                        # -> plots/out/fig1.{png,pdf}
if (!exists("data")) data = 'results/fig1.csv'
if (!exists("out"))  out  = 'plots/out/fig1'
STYLE = 'plots/style.gp'
have_style = int(system("test -r '" . STYLE . "' && echo 1 || echo 0"))
system("mkdir -p \"$(dirname '" . out . "')\"")
# self-contained fallback (the shared style defines the same names)
sel2(c1, v1, c2, v2, y) = (strcol(c1) eq v1 && strcol(c2) eq v2) ? column(y) : NaN
png(w, h) = sprintf("set terminal pngcairo size %d,%d font 'DejaVu Sans,13' linewidth 1.3 enhanced; PS = 1.0", w, h)
pdf(w, h) = sprintf("set terminal pdfcairo size %gin,%gin font 'DejaVu Sans,8' linewidth 1 enhanced; PS = 0.5", w, h)
PS = 1.0
do for [t in "png pdf"] {
    if (t eq "png") { eval png(700, 800) } else { eval pdf(3.3, 3.8) }
    if (have_style) { load STYLE } else {
        set datafile separator ','
        set datafile missing ''
        set border 3
        set tics nomirror out scale 0.6
        set key noautotitle
    }
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
    set multiplot layout 2, 1
    set xrange [0:48]
    set key bottom right samplen 2   # the top left holds the steep orange curve
    set ylabel 'Memory usage (GB)'
    set yrange [20:42]
    set format x ''
    set title 'OPT-13B, A100-40GB (cost model)'
    plot data using 'batch':(sel2('panel', 'memory_gb', 'series', 'existing', 'paper')) with linespoints ls 41 title 'Existing systems (paper)', \
         data using 'batch':(sel2('panel', 'memory_gb', 'series', 'vllm', 'paper')) with linespoints ls 42 title 'vLLM (paper)', \
         data using 'batch':(sel2('panel', 'memory_gb', 'series', 'existing', 'ours')) with steps ls 31 title 'Existing systems', \
         data using 'batch':(sel2('panel', 'memory_gb', 'series', 'vllm', 'ours')) with lines ls 32 title 'vLLM', \
         40 with lines lc rgb '#808080' dt 3 title '40 GB'
    unset title
    set format x '%g'
    set xlabel 'Batch size (# requests)'
    set ylabel 'Throughput (token/s)'
    set yrange [0:*]
    set key bottom right
    plot data using 'batch':(sel2('panel', 'throughput_tok_s', 'series', 'vllm', 'paper')) with linespoints ls 43 title 'vLLM (paper)', \
         data using 'batch':(sel2('panel', 'throughput_tok_s', 'series', 'vllm', 'ours')) with lines ls 33 title 'vLLM (paged kernel, Python)', \
         data using 'batch':(sel2('panel', 'throughput_tok_s', 'series', 'ft', 'ours')) with lines ls 34 title 'FT-style (contiguous, C++)'
    unset multiplot
}
