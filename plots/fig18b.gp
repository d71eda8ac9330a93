# fig18b.gp -- Fig. 18(b): vLLM's end-to-end normalized latency against the KV block
# size (1 ... 256), ShareGPT and Alpaca traces at fixed rates (see the YAMLs).  Ours:
# solid; the paper's digitized points: dashed, same colour, hollow markers.  The y axis is logarithmic (the
# paper's is linear, 0-17.5) so that the 16-128 region stays readable.
#
#   gnuplot plots/fig18b.gp                                  # -> plots/out/fig18b.{png,pdf}
# Input: results/fig18b.csv and experiments/paper/fig18b.csv (dataset,block_size,
# normalized_latency).
if (!exists("data"))  data  = 'results/fig18b.csv'
if (!exists("paper")) paper = 'experiments/paper/fig18b.csv'
if (!exists("out"))   out   = 'plots/out/fig18b'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
lg(b) = log(b) / log(2)
do for [t in "png pdf"] {
    if (t eq "png") { eval png(700, 440) } else { eval pdf(3.3, 2.1) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    set xrange [-0.5:8.5]
    set xtics ('1' 0, '2' 1, '4' 2, '8' 3, '16' 4, '32' 5, '64' 6, '128' 7, '256' 8)
    set logscale y; set yrange [*:*]; set format y '%g'
    set xlabel 'Block size (tokens)'; set ylabel "Normalized latency (s/token)"
    set key top center horizontal maxrows 2 samplen 2 Left reverse
    eval QUICK_WATERMARK
    B = has_col(data, 'normalized_latency_lo')   # our 80% error band (experiments/uncertainty.h)
    plot for [d in (B ? 'sharegpt alpaca' : '')] data using (lg(column('block_size'))):(sel1('dataset', d, 'normalized_latency_lo')):(sel1('dataset', d, 'normalized_latency_hi')) with filledcurves ls (d eq 'sharegpt' ? 6 : 7) @BAND_FS notitle, \
         data using (lg(column('block_size'))):(sel1('dataset', 'sharegpt', 'normalized_latency')) with linespoints ls 6 title 'ShareGPT', \
         data using (lg(column('block_size'))):(sel1('dataset', 'alpaca', 'normalized_latency')) with linespoints ls 7 title 'Alpaca', \
         paper using (lg(column('block_size'))):(sel1('dataset', 'sharegpt', 'normalized_latency')) with linespoints ls 16 notitle, \
         paper using (lg(column('block_size'))):(sel1('dataset', 'alpaca', 'normalized_latency')) with linespoints ls 17 notitle, \
         @PAPER_KEY
}
