# ablation_graphs.gp -- the CUDA-graph ablation (not a paper figure; issue 35, RESULTS.md
# "CUDA graphs"): decode TPOT vs batch size, eager (solid) vs CUDA graphs (dashed), top
# row; the ratio graphs / eager, bottom row (below 1: graphs faster; the steps between
# captured sizes pay for their padding).  Panels a-d = experiments/ablation_graphs_*.yaml.
#
#   gnuplot plots/ablation_graphs.gp                         # -> plots/out/ablation_graphs.{png,pdf}
# Input: results/ablation_graphs.csv (panel, system, batch_size, tpot_mean_ms, ...), the
# two systems' rows in the same batch-size order.  Run from the repository root.
if (!exists("data")) data = 'results/ablation_graphs.csv'
if (!exists("out"))  out  = 'plots/out/ablation_graphs'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
panels = 'a b c d'
titles = '"LLaMA-7B, A10G" "LLaMA-7B, H100" "LLaMA-13B, H100" "OPT-13B, A100-40GB"'
KEYH = 0.08
do for [t in "png pdf"] {
    if (t eq "png") { eval png(1800, 860) } else { eval pdf(7.2, 3.6) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    do for [i=1:4] {
        p = word(panels, i)
        # the eager TPOTs of this panel in batch-size order: the ratio row divides by them
        EAG = ''
        set autoscale xy    # stats honours the current ranges: reset them first
        stats data using ((strcol('panel') eq p && strcol('system') eq 'eager') ? \
            (EAG = EAG . sprintf(' %.17g', column('tpot_mean_ms')), 0) : 0) nooutput
        set logscale x 2
        set xrange [0.8:300]
        set xtics ('1' 1, '4' 4, '16' 16, '64' 64, '256' 256)
        # top: TPOT
        set origin (i - 1) / 4.0, (1 - KEYH) / 2.0
        set size 0.25, (1 - KEYH) / 2.0
        set title word(titles, i) offset 0, -0.6
        set autoscale y; set yrange [0:*]; set ytics autofreq
        if (i == 1) { set ylabel 'TPOT (ms)' } else { unset ylabel }
        unset xlabel
        unset key
        plot data using (selx2('panel', p, 'system', 'eager', 'batch_size')):(sel2('panel', p, 'system', 'eager', 'tpot_mean_ms')) with linespoints ls 6, \
             data using (selx2('panel', p, 'system', 'graphs', 'batch_size')):(sel2('panel', p, 'system', 'graphs', 'tpot_mean_ms')) with linespoints ls 17
        # bottom: graphs / eager, the k-th graphs row over the k-th eager row
        set origin (i - 1) / 4.0, 0
        unset title
        set yrange [0.95:1.01]; set ytics 0.01; set format y '%.2f'
        if (i == 1) { set ylabel "TPOT ratio\ngraphs / eager" } else { unset ylabel }
        set xlabel 'Batch size (sequences)'
        K = 0
        plot data using (selx2('panel', p, 'system', 'graphs', 'batch_size')):((strcol('panel') eq p && strcol('system') eq 'graphs') ? (K = K + 1, column('tpot_mean_ms') / word(EAG, K)) : NaN) with linespoints ls 21, \
             1 with lines lc rgb '#808080' dt 3
        set format y '%g'
        unset logscale x
    }
    set origin 0, 1 - KEYH
    set size 1, KEYH
    unset title; unset xlabel; unset ylabel
    set key top center horizontal samplen 2
    set border 0; unset tics; unset grid
    set xrange [0:1]; set yrange [0:1]
    plot NaN with linespoints ls 6 title 'eager (cuda\_graphs: false)', NaN with linespoints ls 17 title 'CUDA graphs (cuda\_graphs: true)', \
         NaN with linespoints ls 21 title 'TPOT ratio graphs / eager'
    unset multiplot
    set border 3; set tics; set grid
}
