# knee_panels.gp -- shared body of the latency-vs-rate figures (fig12, fig14, fig16, fig17):
# a grid of panels, ours solid (with its 80% error band, experiments/uncertainty.h, when
# the CSV has normalized_latency_lo/_hi), the paper's digitized points dashed in the same colour
# with hollow markers; one shared legend strip on top with an entry for each system and
# one for its paper points (a single panel keeps its legend inside, top left).
# The caller sets:
#   data, paper, out      CSVs (panel,system,request_rate,normalized_latency,...) and output stem
#   panels, titles        panel ids (CSV `panel` values) and their titles (quoted words)
#   AXMAX                 the paper's x-axis extent per panel; a panel widens when one of
#                         our curves stays visible (<= 1 s/token) further out
#   NCOL, NROW, W, H, WIN, HIN   layout; PNG pixels and PDF inches
#   SYS                   indices into style.gp's SYSTEMS to draw (e.g. '2 3 4 5')
#   YMAX (default 1)
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
if (!exists("YMAX")) { YMAX = 1.0 }
NP = words(panels)
BANDS = has_col(data, 'normalized_latency_lo') && has_col(data, 'normalized_latency_hi')
KEYH = (NP == 1) ? 0 : (NROW == 1) ? 0.16 : 0.10
do for [t in "png pdf"] {
    if (t eq "png") { eval png(W, H) } else { eval pdf(WIN, HIN) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    do for [i=1:NP] {
        p = word(panels, i)
        r = (i - 1) / NCOL; c = (i - 1) % NCOL
        set origin c * 1.0 / NCOL, (1 - KEYH) * (NROW - 1 - r) / NROW
        set size 1.0 / NCOL, (1 - KEYH) / NROW
        set title word(titles, i) offset 0, -0.6
        set autoscale xy    # stats honours the current ranges: reset them first
        stats data using (strcol('panel') eq p && column('normalized_latency') <= YMAX ? column('request_rate') : NaN) nooutput
        set yrange [0:YMAX]; set ytics YMAX / 2.0
        set xrange [0:max(word(AXMAX, i) + 0, 1.08 * STATS_max)]
        if (c == 0) { set ylabel "Normalized latency\n(s/token)" } else { unset ylabel }
        if (r == NROW - 1) { set xlabel 'Request rate (req/s)' } else { unset xlabel }
        if (NP == 1) { set key top left Left reverse samplen 2 } else { unset key }
        plot for [k=1:(BANDS ? words(SYS) : 0)] data using (selx2('panel', p, 'system', word(SYSTEMS, word(SYS, k) + 0), 'request_rate')):(min(sel2('panel', p, 'system', word(SYSTEMS, word(SYS, k) + 0), 'normalized_latency_lo'), YMAX)):(min(sel2('panel', p, 'system', word(SYSTEMS, word(SYS, k) + 0), 'normalized_latency_hi'), YMAX)) with filledcurves ls word(SYS, k) + 0 @BAND_FS notitle, \
             for [k=1:words(SYS)] paper using (selx2('panel', p, 'system', word(SYSTEMS, word(SYS, k) + 0), 'request_rate')):(sel2('panel', p, 'system', word(SYSTEMS, word(SYS, k) + 0), 'normalized_latency')) with linespoints ls 10 + word(SYS, k) title word(LABELS, word(SYS, k) + 0) . ' (paper)', \
             for [k=1:words(SYS)] data  using (selx2('panel', p, 'system', word(SYSTEMS, word(SYS, k) + 0), 'request_rate')):(sel2('panel', p, 'system', word(SYSTEMS, word(SYS, k) + 0), 'normalized_latency')) with linespoints ls word(SYS, k) + 0 title word(LABELS, word(SYS, k) + 0)
    }
    if (NP > 1) {
        set origin 0, 1 - KEYH; set size 1, KEYH
        unset border; unset tics; unset xlabel; unset ylabel; unset title; unset grid
        set xrange [0:1]; set yrange [0:1]
        # one legend column per system: ours above its paper points (no margins, so the
        # key has the whole strip)
        set lmargin 0; set rmargin 0; set tmargin 0; set bmargin 0
        set key center center vertical maxrows 2 Left reverse samplen 2 width -2
        plot for [k=1:2*words(SYS)] NaN with linespoints ls (k % 2 ? 0 : 10) + word(SYS, (k + 1) / 2) \
             title (k % 2 ? word(LABELS, word(SYS, (k + 1) / 2) + 0) : 'paper')
    }
    unset multiplot
    unset lmargin; unset rmargin; unset tmargin; unset bmargin
    set border 3; set tics; set grid
}
