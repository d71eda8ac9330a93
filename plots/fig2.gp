# fig2.gp -- Fig. 2: average share of the KV-cache space by use, per system (OPT-13B,
# ShareGPT).  Stacked bars: token states, reservation, internal fragmentation, external
# fragmentation & others.  For each system: ours (left, solid) and the paper's (right,
# faint), with the token-state share written on each bar.
#
#   gnuplot plots/fig2.gp                                    # -> plots/out/fig2.{png,pdf}
# Input: results/fig2.csv and experiments/paper/fig2.csv (system,token_states_pct,
# reservation_pct,internal_frag_pct,external_frag_pct; same system order).
if (!exists("data"))  data  = 'results/fig2.csv'
if (!exists("paper")) paper = 'experiments/paper/fig2.csv'
if (!exists("out"))   out   = 'plots/out/fig2'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
CLS = 'token_states_pct reservation_pct internal_frag_pct external_frag_pct'
CLSL = '"Token states" "Reservation" "Internal frag." "External frag. + others"'
COL = '#2ca02c #ff7f0e #d62728 #9e9e9e'
cum(k) = (k >= 1 ? column('token_states_pct') : 0) + (k >= 2 ? column('reservation_pct') : 0) + \
         (k >= 3 ? column('internal_frag_pct') : 0) + (k >= 4 ? column('external_frag_pct') : 0)
BW = 0.36
do for [t in "png pdf"] {
    if (t eq "png") { eval png(900, 520) } else { eval pdf(3.6, 2.2) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    eval QUICK_WATERMARK
    set yrange [0:100]; set ytics 20
    set xrange [-0.6:3.6]
    set ylabel 'KV cache usage (%)'
    set xtics ('Orca (Max)' 0, 'Orca (Pow2)' 1, 'Orca (Oracle)' 2, 'vLLM' 3) scale 0
    set key outside top center horizontal maxrows 1 samplen 1.5 width -1
    set style fill solid 0.85 border lc rgb '#ffffff'
    set xlabel 'each pair: ours (left), the paper (right, faint)' font ',9' tc rgb '#606060'
    B = has_col(data, 'token_states_pct_lo')   # our 80% error bar on token states (experiments/uncertainty.h)
    plot for [k=1:4] data using ($0 - BW/2 - 0.02):((cum(k) + cum(k-1)) / 2.0):($0 - BW - 0.02):($0 - 0.02):(cum(k-1)):(cum(k)) \
              with boxxyerror lc rgb word(COL, k) title word(CLSL, k), \
         for [k=1:4] paper using ($0 + BW/2 + 0.02):((cum(k) + cum(k-1)) / 2.0):($0 + 0.02):($0 + BW + 0.02):(cum(k-1)):(cum(k)) \
              with boxxyerror lc rgb word(COL, k) fs transparent solid 0.3 notitle, \
         data using ($0 - BW/2 - 0.02):(column('token_states_pct') / 2.0):(sprintf('%.1f', column('token_states_pct'))) with labels font ',9' notitle, \
         paper using ($0 + BW/2 + 0.02):(column('token_states_pct') / 2.0):(sprintf('%.1f', column('token_states_pct'))) with labels font ',9' tc rgb '#606060' notitle, \
         for [e=1:(B ? 1 : 0)] data using ($0 - BW/2 - 0.02):'token_states_pct':'token_states_pct_lo':'token_states_pct_hi' with yerrorbars lc rgb '#404040' pt 7 ps 0 lw 1 notitle
    unset xlabel
}
