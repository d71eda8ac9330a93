# fig11.gp -- Fig. 11 of the vLLM paper: input and output length densities of ShareGPT
# and Alpaca (OPT tokens, input+output <= 2048), with the means in the legend.
#
#   build/pagedbench trace --fig11 results/fig11.csv
#   gnuplot plots/fig11.gp                       # -> plots/out/fig11.png and fig11.pdf
#   gnuplot -e "data='other.csv'; out='plots/out/x'" plots/fig11.gp
# Data columns: dataset,series,bin_lo,bin_hi,density,mean,source (8-token bins).
# Self-contained: does not load plots/style.gp (its colours are repeated here).
if (!exists("data")) data = "results/fig11.csv"
if (!exists("out")) out = "plots/out/fig11"
system("mkdir -p \"$(dirname '" . out . "')\"")

mean(ds, s) = real(system(sprintf("awk -F, '$1==\"%s\" && $2==\"%s\" {print $6; exit}' '%s'", ds, s, data)))
src(ds) = system(sprintf("awk -F, '$1==\"%s\" {print $7; exit}' '%s'", ds, data))
sel(ds, s, v) = (strcol(1) eq ds && strcol(2) eq s) ? v : NaN

set datafile separator ","
set border 3
set tics nomirror out scale 0.6
set style fill transparent solid 0.55 noborder
set xrange [0:2000]
set xtics 500
set xlabel "Length (tokens)"
set ylabel "Density (per token)"
set format y "%g"
set key top right samplen 1.5 spacing 1.2
set grid ytics lw 0.5 lc rgb "#dddddd"
c_in = "#1f77b4"
c_out = "#ff7f0e"

do for [t in "png pdf"] {
    if (t eq "png") { set terminal pngcairo size 1100,420 font "DejaVu Sans,13"; set output out . ".png" }
    if (t eq "pdf") { set terminal pdfcairo size 6.8in,2.6in font "DejaVu Sans,8"; set output out . ".pdf" }
    set multiplot layout 1,2
    if (exists("quick") && quick) { set label 99 "QUICK RUN (--quick)" at screen 0.5, 0.5 center rotate by 15 font ',22' tc rgb '#cccccc' back }
    set title sprintf("(a) ShareGPT (%s lengths)", src("sharegpt"))
    set yrange [0:*]
    plot data skip 1 using (sel("sharegpt", "input", ($3 + $4) / 2)):5:($4 - $3) with boxes lc rgb c_in \
             title sprintf("Input (mean: %.2f)", mean("sharegpt", "input")), \
         ""   skip 1 using (sel("sharegpt", "output", ($3 + $4) / 2)):5:($4 - $3) with boxes lc rgb c_out \
             title sprintf("Output (mean: %.2f)", mean("sharegpt", "output"))
    set title sprintf("(b) Alpaca (%s lengths)", src("alpaca"))
    set yrange [0:*]
    plot data skip 1 using (sel("alpaca", "input", ($3 + $4) / 2)):5:($4 - $3) with boxes lc rgb c_in \
             title sprintf("Input (mean: %.2f)", mean("alpaca", "input")), \
         ""   skip 1 using (sel("alpaca", "output", ($3 + $4) / 2)):5:($4 - $3) with boxes lc rgb c_out \
             title sprintf("Output (mean: %.2f)", mean("alpaca", "output"))
    unset multiplot
    set output
}
