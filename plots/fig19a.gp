# fig19a.gp -- Fig. 19(a) from the cost model: time to swap in, swap out (one
# cudaMemcpyAsync per block per layer per K/V) and recompute (a prefill) the KV cache
# of 256 tokens of OPT-13B on an A100-40GB, vs block size (results/fig19a.csv, written
# by pb_fig19a_write).  Ours (solid): the cost model, whose swap latency parameters were
# fitted to the paper's points (the hardware YAML's swap calibration); the paper's points
# (`paper` column): dashed, same colour, hollow markers, each with its own legend entry.
#
#   gnuplot plots/fig19a.gp                      # -> plots/out/fig19a.{png,pdf}
if (!exists("data")) data = 'results/fig19a.csv'
if (!exists("out"))  out  = 'plots/out/fig19a'
STYLE = 'plots/style.gp'
have_style = int(system("test -r '" . STYLE . "' && echo 1 || echo 0"))
system("mkdir -p \"$(dirname '" . out . "')\"")
sel1(c1, v1, y) = (strcol(c1) eq v1) ? column(y) : NaN
png(w, h) = sprintf("set terminal pngcairo size %d,%d font 'DejaVu Sans,13' linewidth 1.3 enhanced; PS = 1.0", w, h)
pdf(w, h) = sprintf("set terminal pdfcairo size %gin,%gin font 'DejaVu Sans,8' linewidth 1 enhanced; PS = 0.5", w, h)
PS = 1.0
lg(b) = log(b) / log(2)
OPS = 'recompute swap_in swap_out swap_in_out'
OPL = '"Recompute" "Swap in" "Swap out" "Swap in + out"'
do for [t in "png pdf"] {
    if (t eq "png") { eval png(700, 520) } else { eval pdf(3.3, 2.6) }
    if (have_style) { load STYLE } else {
        set datafile separator ','
        set datafile missing ''
        set border 3
        set tics nomirror out scale 0.6
        set key noautotitle
    }
    # the paper's colours for this figure: recompute blue, in orange, out green, in+out red
    set style line 51 lc rgb '#1f77b4' lw 1.5 pt 7 ps 0.8*PS
    set style line 52 lc rgb '#ff7f0e' lw 1.5 pt 9 ps 0.8*PS
    set style line 53 lc rgb '#2ca02c' lw 1.5 pt 5 ps 0.7*PS
    set style line 54 lc rgb '#d62728' lw 1.5 pt 13 ps 0.8*PS
    set style line 61 lc rgb '#1f77b4' lw 1.2 dt 2 pt 6 ps 0.8*PS
    set style line 62 lc rgb '#ff7f0e' lw 1.2 dt 2 pt 8 ps 0.8*PS
    set style line 63 lc rgb '#2ca02c' lw 1.2 dt 2 pt 4 ps 0.7*PS
    set style line 64 lc rgb '#d62728' lw 1.2 dt 2 pt 12 ps 0.8*PS
    set datafile columnheaders
    set output out . '.' . t
    set xrange [-0.5:8.5]
    set xtics ('1' 0, '2' 1, '4' 2, '8' 3, '16' 4, '32' 5, '64' 6, '128' 7, '256' 8)
    set xlabel 'Block size (tokens)'
    set ylabel 'Time (ms)'
    set yrange [0:150]
    set key outside top center vertical maxrows 2 Left reverse samplen 1.5 width -4
    set title "Swap vs recompute, OPT-13B, A100-40GB, 256 tokens\n{/*0.8 solid: cost model (swap costs fitted to the paper's points); dashed: paper}"
    # legend: one column per operation, the cost model above the paper
    plot for [j=1:8] data using (lg(column('block_size'))):(sel1('operation', word(OPS, (j + 1) / 2), j % 2 ? 'time_ms' : 'paper')) \
             with linespoints ls (j % 2 ? 50 : 60) + (j + 1) / 2 title (j % 2 ? word(OPL, (j + 1) / 2) : 'paper')
}
