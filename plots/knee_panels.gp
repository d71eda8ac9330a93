# knee_panels.gp -- shared body of the latency-vs-rate figures (fig12, fig14, fig16, fig17):
# a grid of panels, ours solid (with its 80% error band, experiments/uncertainty.h, when
# the CSV has normalized_latency_lo/_hi), the paper's digitized points dashed in the same
# colour with hollow markers; one legend for the figure, a strip on top: the systems in
# their order, one "paper" entry, and one for the
# arrows that mark our values above the paper's axis (1 s/token): each such point is an
# arrow to the top edge at its rate, its value written along it.  The x axis reaches our
# last rate, so no point of ours falls off to the right.
# The caller sets:
#   data, paper, out      CSVs (panel,system,request_rate,normalized_latency,...) and output stem
#   panels, titles        panel ids (CSV `panel` values) and their titles (quoted words)
#   AXMAX                 the paper's x-axis extent per panel; a panel widens to our last rate
#   NCOL, NROW, W, H, WIN, HIN   layout; PNG pixels and PDF inches
#   SYS                   indices into style.gp's SYSTEMS to draw (e.g. '2 3 4 5')
#   YMAX (default 1)
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
if (!exists("YMAX")) { YMAX = 1.0 }
NP = words(panels)
BANDS = has_col(data, 'normalized_latency_lo') && has_col(data, 'normalized_latency_hi')
KEYH = (NP == 1) ? 0.2 : (NROW == 1) ? 0.2 : 0.1
sysname(k) = word(SYSTEMS, word(SYS, k) + 0)
ours_y(p, k) = sel2('panel', p, 'system', sysname(k), 'normalized_latency')
ours_x(p, k) = selx2('panel', p, 'system', sysname(k), 'request_rate')
# values above the axis, anywhere in the figure (for the legend's arrow entry)
set datafile columnheaders
stats data using (column('normalized_latency') > YMAX ? 1 : 0) nooutput
OFF_ANY = STATS_sum > 0
do for [t in "png pdf"] {
    if (t eq "png") { eval png(W, H) } else { eval pdf(WIN, HIN) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    eval QUICK_WATERMARK
    do for [i=1:NP] {
        p = word(panels, i)
        r = (i - 1) / NCOL; c = (i - 1) % NCOL
        set origin c * 1.0 / NCOL, (1 - KEYH) * (NROW - 1 - r) / NROW
        set size 1.0 / NCOL, (1 - KEYH) / NROW
        set title word(titles, i) offset 0, -0.6
        set autoscale xy    # stats honours the current ranges: reset them first
        stats data using (strcol('panel') eq p ? column('request_rate') : NaN) nooutput
        XR = max(word(AXMAX, i) + 0, 1.04 * STATS_max)
        # each system's arrows sit side by side: the offset (characters) of its values
        DX = ''
        n = 0
        do for [k=1:words(SYS)] {
            stats data using (strcol('panel') eq p && strcol('system') eq sysname(k) && column('normalized_latency') > YMAX ? 1 : 0) nooutput
            DX = DX . sprintf(' %g', -0.6 + 0.9 * n)
            n = n + (STATS_sum > 0)
        }
        set yrange [0:YMAX]; set ytics YMAX / 2.0
        set xrange [0:XR]
        if (c == 0) { set ylabel "Normalized latency\n(s/token)" } else { unset ylabel }
        if (r == NROW - 1) { set xlabel 'Request rate (req/s)' } else { unset xlabel }
        unset key
        plot for [k=1:(BANDS ? words(SYS) : 0)] data using (ours_x(p, k)):(min(sel2('panel', p, 'system', sysname(k), 'normalized_latency_lo'), YMAX)):(min(sel2('panel', p, 'system', sysname(k), 'normalized_latency_hi'), YMAX)) with filledcurves ls word(SYS, k) + 0 @BAND_FS notitle, \
             for [k=1:words(SYS)] paper using (selx2('panel', p, 'system', sysname(k), 'request_rate')):(sel2('panel', p, 'system', sysname(k), 'normalized_latency')) with linespoints ls 10 + word(SYS, k) notitle, \
             for [k=1:words(SYS)] data using (ours_x(p, k)):(ours_y(p, k)) with linespoints ls word(SYS, k) + 0 notitle, \
             for [k=1:words(SYS)] data using (ours_x(p, k)):(above(ours_y(p, k), YMAX) * 0 + YMAX * 0.93):(0):(YMAX * 0.07) with vectors head filled size screen 0.008,30 ls word(SYS, k) + 0 notitle, \
             for [k=1:words(SYS)] data using (ours_x(p, k)):(above(ours_y(p, k), YMAX) * 0 + YMAX * 0.93):(VAL(above(ours_y(p, k), YMAX))) with labels rotate by 90 right offset word(DX, k) + 0, -0.2 font OFF_FONT tc ls word(SYS, k) + 0 notitle
    }
    eval KEY_STRIP
    if (OFF_ANY) {
        plot for [k=1:words(SYS)] NaN with linespoints ls word(SYS, k) + 0 title word(LABELS, word(SYS, k) + 0), @PAPER_KEY, @OFF_KEY
    } else {
        plot for [k=1:words(SYS)] NaN with linespoints ls word(SYS, k) + 0 title word(LABELS, word(SYS, k) + 0), @PAPER_KEY
    }
    eval KEY_RESET
    unset multiplot
}
