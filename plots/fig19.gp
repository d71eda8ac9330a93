# fig19.gp -- Fig. 19: (a) micro-benchmark: time to swap in, swap out (one copy per block
# per layer per K/V) and recompute the KV cache, against block size (cost model, from
# results/fig19a.csv); (b) end to end: OPT-13B on ShareGPT with preemption forced to
# recompute or to swap, against block size (results/fig19b.csv).  Ours: solid; the
# paper's digitized points: dashed, hollow markers.  One legend for both panels; (b)'s y
# axis is logarithmic (the paper's is linear, 0-2.5), so no value is off it.  A panel
# whose CSV is missing is left empty.
#
#   gnuplot plots/fig19.gp                                   # -> plots/out/fig19.{png,pdf}
if (!exists("data_a"))  data_a  = 'results/fig19a.csv'
if (!exists("data"))    data    = 'results/fig19b.csv'
if (!exists("paper_a")) paper_a = 'experiments/paper/fig19a.csv'
if (!exists("paper"))   paper   = 'experiments/paper/fig19b.csv'
if (!exists("out"))     out     = 'plots/out/fig19'
KEYH = 0.13
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
lg(b) = log(b) / log(2)
exists_file(f) = int(system("test -r '" . f . "' && echo 1 || echo 0"))
OPS = 'recompute swap_in swap_out swap_in_out'
OPL = '"Recompute" "Swap in" "Swap out" "Swap in + out (a); swap (b)"'
OPLS = '6 7 9 8'
do for [t in "png pdf"] {
    if (t eq "png") { eval png(1200, 500) } else { eval pdf(6.6, 2.7) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    eval QUICK_WATERMARK
    set xrange [-0.5:8.5]
    set xtics ('1' 0, '2' 1, '4' 2, '8' 3, '16' 4, '32' 5, '64' 6, '128' 7, '256' 8)
    set xlabel 'Block size (tokens)'
    unset key
    set origin 0, 0; set size 0.5, 1 - KEYH
    set title '(a) Microbenchmark'
    set ylabel 'Time (ms)'; set yrange [0:*]
    if (exists_file(data_a)) {
        plot for [k=1:4] paper_a using (lg(column('block_size'))):(sel1('operation', word(OPS, k), 'time_ms')) with linespoints ls 10 + word(OPLS, k) notitle, \
             for [k=1:4] data_a using (lg(column('block_size'))):(sel1('operation', word(OPS, k), 'time_ms')) with linespoints ls word(OPLS, k) + 0 notitle
    } else { plot NaN notitle }
    set origin 0.5, 0; set size 0.5, 1 - KEYH
    set title '(b) End-to-end performance'
    set ylabel "Normalized latency (s/token)"
    set logscale y; set yrange [*:*]; set format y '%g'
    if (exists_file(data)) {
        B = has_col(data, 'normalized_latency_lo')   # our 80% error band (experiments/uncertainty.h)
        plot for [m in (B ? 'recompute swap' : '')] data using (lg(column('block_size'))):(sel1('mode', m, 'normalized_latency_lo')):(sel1('mode', m, 'normalized_latency_hi')) with filledcurves ls (m eq 'recompute' ? 6 : 8) @BAND_FS notitle, \
             paper using (lg(column('block_size'))):(sel1('mode', 'recompute', 'normalized_latency')) with linespoints ls 16 notitle, \
             paper using (lg(column('block_size'))):(sel1('mode', 'swap', 'normalized_latency')) with linespoints ls 18 notitle, \
             data using (lg(column('block_size'))):(sel1('mode', 'recompute', 'normalized_latency')) with linespoints ls 6 notitle, \
             data using (lg(column('block_size'))):(sel1('mode', 'swap', 'normalized_latency')) with linespoints ls 8 notitle
    } else { plot NaN notitle }
    unset logscale y
    eval KEY_STRIP
    plot for [k=1:4] NaN with linespoints ls word(OPLS, k) + 0 title word(OPL, k), @PAPER_KEY
    eval KEY_RESET
    unset multiplot
}
