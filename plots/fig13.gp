# fig13.gp -- Fig. 13: average number of batched requests, OPT-13B, (a) ShareGPT at
# 2 req/s and (b) Alpaca at 30 req/s.  Ours: solid bars in each system's colour; the
# paper's bars faint beside them; values printed on top.
#
#   gnuplot plots/fig13.gp                                   # -> plots/out/fig13.{png,pdf}
# Input: results/fig13.csv and experiments/paper/fig13.csv (dataset,system,batched_requests).
if (!exists("data"))  data  = 'results/fig13.csv'
if (!exists("paper")) paper = 'experiments/paper/fig13.csv'
if (!exists("out"))   out   = 'plots/out/fig13'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
sx(s) = (s eq 'orca_max') ? 0 : (s eq 'orca_pow2') ? 1 : (s eq 'orca_oracle') ? 2 : 3
scol(s) = (s eq 'orca_max') ? 0xd62728 : (s eq 'orca_pow2') ? 0xff7f0e : (s eq 'orca_oracle') ? 0x2ca02c : 0x1f77b4
DS = 'sharegpt alpaca'
TT = '"(a) ShareGPT, 2 req/s" "(b) Alpaca, 30 req/s"'
BW = 0.38
do for [t in "png pdf"] {
    if (t eq "png") { eval png(1100, 470) } else { eval pdf(5.0, 2.2) }
    set bmargin 4
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    eval QUICK_WATERMARK
    set multiplot layout 1, 2
    B = has_col(data, 'batched_requests_lo')   # our 80% error bars (experiments/uncertainty.h)
    do for [i=1:2] {
        d = word(DS, i)
        set title word(TT, i)
        set xrange [-0.6:3.6]; set yrange [0:*]
        set xtics ("Orca\n(Max)" 0, "Orca\n(Pow2)" 1, "Orca\n(Oracle)" 2, "vLLM" 3) scale 0
        if (i == 1) { set label 1 'solid: ours   faint: paper' at graph 0.03, graph 0.95 font ',9' tc rgb '#606060' } else { unset label 1 }
        if (i == 1) { set ylabel '# Batched requests' } else { unset ylabel }
        set style fill solid 0.85 noborder
        set boxwidth BW
        plot data using (strcol('dataset') eq d ? sx(strcol('system')) - BW/2 : NaN):'batched_requests':(scol(strcol('system'))) with boxes lc rgb variable, \
             paper using (strcol('dataset') eq d ? sx(strcol('system')) + BW/2 : NaN):'batched_requests':(scol(strcol('system'))) with boxes lc rgb variable fs transparent solid 0.3, \
             data using (strcol('dataset') eq d ? sx(strcol('system')) - BW/2 : NaN):'batched_requests':(sprintf('%.1f', column('batched_requests'))) with labels offset 0, 0.6 font ',9', \
             for [e=1:(B ? 1 : 0)] data using (strcol('dataset') eq d ? sx(strcol('system')) - BW/2 : NaN):'batched_requests':'batched_requests_lo':'batched_requests_hi' with yerrorbars lc rgb '#404040' pt 7 ps 0 lw 1 notitle, \
             paper using (strcol('dataset') eq d ? sx(strcol('system')) + BW/2 : NaN):'batched_requests':(sprintf('%.1f', column('batched_requests'))) with labels offset 0, 0.6 font ',9' tc rgb '#808080'
    }
    unset multiplot
}
