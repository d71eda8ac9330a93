# fig15.gp -- Fig. 15: memory saved by sharing KV blocks, OPT-13B on Alpaca,
# (a) parallel sampling and (b) beam search, widths 2, 4, 6.  Ours: blue bars; the
# paper's: faint bars beside them; values printed on top.
#
#   gnuplot plots/fig15.gp                                   # -> plots/out/fig15.{png,pdf}
# Input: results/fig15.csv and experiments/paper/fig15.csv (dataset,mode,width,saving_pct).
if (!exists("data"))  data  = 'results/fig15.csv'
if (!exists("paper")) paper = 'experiments/paper/fig15.csv'
if (!exists("out"))   out   = 'plots/out/fig15'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
MODES = 'parallel beam'
TT = '"(a) Parallel generation" "(b) Beam search"'
XL = '"# Output sequences" "Beam width"'
BW = 0.38
do for [t in "png pdf"] {
    if (t eq "png") { eval png(1000, 420) } else { eval pdf(4.6, 1.9) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    eval QUICK_WATERMARK
    set multiplot layout 1, 2
    B = has_col(data, 'saving_pct_lo')   # our 80% error bars (experiments/uncertainty.h)
    do for [i=1:2] {
        m = word(MODES, i)
        set title word(TT, i)
        set xlabel word(XL, i)
        set xrange [-0.6:2.6]; set yrange [0:*]; set offsets 0, 0, graph 0.2, 0
        set key top left samplen 1.5
        set xtics ('2' 0, '4' 1, '6' 2) scale 0
        if (i == 1) { set ylabel 'Memory saving (%)' } else { unset ylabel }
        set style fill solid 0.85 noborder
        set boxwidth BW
        plot data using (strcol('mode') eq m ? column('width') / 2 - 1 - BW/2 : NaN):'saving_pct' with boxes lc rgb C_VLLM title (i == 1 ? 'ours' : ''), \
             paper using (strcol('mode') eq m ? column('width') / 2 - 1 + BW/2 : NaN):'saving_pct' with boxes lc rgb C_VLLM fs transparent solid 0.3 title (i == 1 ? 'paper' : ''), \
             data using (strcol('mode') eq m ? column('width') / 2 - 1 - BW/2 : NaN):'saving_pct':(sprintf('%.1f', column('saving_pct'))) with labels offset 0, 0.6 font ',9' notitle, \
             for [e=1:(B ? 1 : 0)] data using (strcol('mode') eq m ? column('width') / 2 - 1 - BW/2 : NaN):'saving_pct':'saving_pct_lo':'saving_pct_hi' with yerrorbars lc rgb '#404040' pt 7 ps 0 lw 1 notitle, \
             paper using (strcol('mode') eq m ? column('width') / 2 - 1 + BW/2 : NaN):'saving_pct':(sprintf('%.1f', column('saving_pct'))) with labels offset 0, 0.6 font ',9' tc rgb '#808080' notitle
    }
    unset multiplot
}
