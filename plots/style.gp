# style.gp -- the one look of every pagedbench figure (load it from each figN.gp).
#
# Systems keep the vLLM paper's colours and markers in every figure:
#   FasterTransformer grey dot, Orca (Max) red x, Orca (Pow2) orange triangle,
#   Orca (Oracle) green square, vLLM blue circle.
# Line style i (ours) and 10+i (the paper's digitized points: the same colour,
# dashed, hollow marker; one legend entry for all of them, PAPER_KEY) for i = 1..5 in
# that order -- the order of every legend.
# Other series (block-size datasets, swap/recompute, parallel/beam): styles 6..9;
# the scheduling study's policies: vLLM v0.1 5, v0.2 24, Sarathi 22, prefix cache 23
# (experiments/cmd_plot.c SYSTEM_STYLES); any further series (a new policy,
# `pagedbench plot`): the others of 21..28.
#
# Before loading, a script may set `out` (path without extension) and `data`.
# Terminal helpers:  call png(w,h) / pdf(w_in,h_in) via the macros below.
set datafile separator ','
set datafile missing ''
set border 3
set tics nomirror out scale 0.6
set grid ytics lc rgb '#e0e0e0' lw 0.5
set key noautotitle

if (!exists("PS")) { PS = 1.0 }

C_FT     = '#808080'
C_MAX    = '#d62728'
C_POW2   = '#ff7f0e'
C_ORACLE = '#2ca02c'
C_VLLM   = '#1f77b4'
C_PURPLE = '#9467bd'

# ours: solid lines, filled markers
set style line 1 lc rgb C_FT     lw 1.5 pt 7  ps 0.5*PS   # FasterTransformer: small dot
set style line 2 lc rgb C_MAX    lw 1.5 pt 2  ps 1.0*PS   # Orca (Max): x
set style line 3 lc rgb C_POW2   lw 1.5 pt 9  ps 1.0*PS   # Orca (Pow2): triangle
set style line 4 lc rgb C_ORACLE lw 1.5 pt 5  ps 0.9*PS   # Orca (Oracle): square
set style line 5 lc rgb C_VLLM   lw 1.5 pt 7  ps 1.0*PS   # vLLM: circle
# generic series
set style line 6 lc rgb C_VLLM   lw 1.5 pt 7  ps 1.0*PS   # ShareGPT / recompute
set style line 7 lc rgb C_POW2   lw 1.5 pt 9  ps 1.0*PS   # Alpaca
set style line 8 lc rgb C_MAX    lw 1.5 pt 5  ps 0.9*PS   # swap
set style line 9 lc rgb C_ORACLE lw 1.5 pt 13 ps 1.0*PS
# the paper's digitized points: the series' colour, dashed, hollow markers
set style line 11 lc rgb C_FT     lw 1.2 dt 2 pt 6  ps 0.6*PS
set style line 12 lc rgb C_MAX    lw 1.2 dt 2 pt 2  ps 0.9*PS
set style line 13 lc rgb C_POW2   lw 1.2 dt 2 pt 8  ps 0.9*PS
set style line 14 lc rgb C_ORACLE lw 1.2 dt 2 pt 4  ps 0.8*PS
set style line 15 lc rgb C_VLLM   lw 1.2 dt 2 pt 6  ps 0.9*PS
set style line 16 lc rgb C_VLLM   lw 1.2 dt 2 pt 6  ps 0.9*PS
set style line 17 lc rgb C_POW2   lw 1.2 dt 2 pt 8  ps 0.9*PS
set style line 18 lc rgb C_MAX    lw 1.2 dt 2 pt 4  ps 0.8*PS
set style line 19 lc rgb C_ORACLE lw 1.2 dt 2 pt 12 ps 0.9*PS

# any other series (a new policy or system, `pagedbench plot`): 21..28, distinct
# colours and markers, solid
set style line 21 lc rgb C_PURPLE  lw 1.5 pt 11 ps 1.0*PS   # diamond
set style line 22 lc rgb '#8c564b' lw 1.5 pt 13 ps 1.0*PS   # brown, pentagon
set style line 23 lc rgb '#e377c2' lw 1.5 pt 3  ps 1.0*PS   # pink, star
set style line 24 lc rgb '#17becf' lw 1.5 pt 15 ps 1.0*PS   # cyan, circle+
set style line 25 lc rgb '#bcbd22' lw 1.5 pt 1  ps 1.0*PS   # olive, +
set style line 26 lc rgb '#393b79' lw 1.5 pt 7  ps 0.8*PS   # navy, dot
set style line 27 lc rgb '#7f7f00' lw 1.5 pt 5  ps 0.8*PS   # khaki, square
set style line 28 lc rgb '#000000' lw 1.5 pt 9  ps 0.9*PS   # black, triangle

SYSTEMS = 'ft orca_max orca_pow2 orca_oracle vllm'
LABELS  = '"FasterTransformer" "Orca (Max)" "Orca (Pow2)" "Orca (Oracle)" "vLLM"'

# rows of one series (others NaN); the CSVs are sorted so each series is contiguous
# sel2(c1, v1, c2, v2, ycol): column c1 == v1 and column c2 == v2 -> column ycol
sel2(c1, v1, c2, v2, y) = (strcol(c1) eq v1 && strcol(c2) eq v2) ? column(y) : NaN
sel1(c1, v1, y) = (strcol(c1) eq v1) ? column(y) : NaN
# the x of the same rows (NaN elsewhere, so other rows do not widen the autoscale)
selx2(c1, v1, c2, v2, x) = (strcol(c1) eq v1 && strcol(c2) eq v2) ? column(x) : NaN
selx1(c1, v1, x) = (strcol(c1) eq v1) ? column(x) : NaN
max(a, b) = (a > b) ? a : b
min(a, b) = (a < b) ? a : b
# does CSV f have a column named c (an error bar: <metric>_lo, <metric>_hi)?
has_col(f, c) = int(system(sprintf("head -1 '%s' 2>/dev/null | tr ',' '\\n' | grep -cx '%s'", f, c)))
# error bars (experiments/uncertainty.h) are drawn as bands in the series' colour
BAND_FS = 'fs transparent solid 0.18 noborder'
# A value off the y range is never hidden: an arrow points to the edge at its x, with the
# value written along it (what `pagedbench plot` draws too).  above(v, top) is v where
# v > top (NaN elsewhere); for a linear axis [0:TOP] draw, per series N,
#   data using (x):(above(y, TOP) * 0 + TOP * 0.94):(0):(TOP * 0.06) with vectors head filled size screen 0.008,30 ls N notitle, \
#   data using (x):(above(y, TOP) * 0 + TOP * 0.94):(VAL(above(y, TOP))) with labels rotate by 90 right offset DX, -0.2 font OFF_FONT tc ls N notitle
# (DX: -0.6 for the first series with such values, +0.9 for each further one).
above(v, top) = (v > top) ? v : NaN
VAL(v) = sprintf('%.3g', v)
OFF_FONT = ',8'
# One legend entry for every digitized paper series (their style: dashed, hollow markers)
# and one for the markers on the edge: plot NaN with these, once per figure.
PAPER_KEY = "NaN with linespoints lc rgb '#606060' lw 1.2 dt 2 pt 6 title 'paper (dashed, hollow)'"
OFF_KEY = "NaN with vectors head filled lc rgb '#606060' title 'off the axis (its value)'"

# One legend per figure, in a strip across the top of the figure (KEYH: its share of the
# height): `eval KEY_STRIP` then `plot` NaN entries (the series in the systems' order, then
# @PAPER_KEY and, when a value is off an axis, @OFF_KEY); `eval KEY_RESET` after.
if (!exists("KEYH")) { KEYH = 0.12 }
KEY_STRIP = "set origin 0, 1 - KEYH; set size 1, KEYH; unset title; unset xlabel; unset ylabel; unset logscale; set border 0; unset tics; unset grid; set xrange [0:1]; set yrange [0:1]; set lmargin 0; set rmargin 0; set tmargin 0; set bmargin 0; set key center center horizontal Left reverse samplen 2 width 1"
KEY_RESET = "unset lmargin; unset rmargin; unset tmargin; unset bmargin; set border 3; set tics; set grid"

# Results of a --quick run say so: `eval QUICK_WATERMARK` once per output when the
# caller set quick = 1 (run_all.sh does for --quick).
if (!exists("quick")) { quick = 0 }
QUICK_WATERMARK = "if (quick) { set label 99 \"QUICK RUN (--quick)\\nshort traces, not the paper's protocol\" at screen 0.5, 0.5 center rotate by 15 font ',20' tc rgb '#a0909090' front }"

# terminals: PNG for RESULTS.md (and looking at), PDF for papers
# fonts: 13 pt PNG; 8 pt PDF, legible when a figure is set at one-column width (3.3 in)
png(w, h) = sprintf("set terminal pngcairo size %d,%d font 'DejaVu Sans,13' linewidth 1.3 enhanced; PS = 1.0", w, h)
pdf(w, h) = sprintf("set terminal pdfcairo size %gin,%gin font 'DejaVu Sans,8' linewidth 1 enhanced; PS = 0.5", w, h)
