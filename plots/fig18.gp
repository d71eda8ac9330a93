# fig18.gp -- Fig. 18: (a) attention kernel latency, vLLM's paged kernel vs the
# FasterTransformer-style contiguous kernel, batch 8 (circles) and 32 (triangles),
# context 64/128/256, OPT-13B heads (results/fig18a.csv); (b) vLLM's end-to-end
# normalized latency against the KV block size, ShareGPT and Alpaca (results/fig18b.csv).
# (a): source=cost_model solid (its attention terms were FIT to the paper's points: a
# calibration check), source=gpu (our kernels, when a GPU ran them) dash-dot, the
# paper's digitized points dashed.  Blue vLLM, orange FT, as the paper.
# (b): ours solid, the paper dashed; log y (the paper's is linear, 0-17.5).
# One legend for the figure, on top.  A panel whose CSV is missing is left empty.
#
#   gnuplot plots/fig18.gp                                   # -> plots/out/fig18.{png,pdf}
if (!exists("data_a"))  data_a  = 'results/fig18a.csv'
if (!exists("data"))    data    = 'results/fig18b.csv'
if (!exists("paper_a")) paper_a = 'experiments/paper/fig18a.csv'
if (!exists("paper"))   paper   = 'experiments/paper/fig18b.csv'
if (!exists("out"))     out     = 'plots/out/fig18'
KEYH = 0.16
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
lg(b) = log(b) / log(2)
exists_file(f) = int(system("test -r '" . f . "' && echo 1 || echo 0"))
has_gpu(f) = int(system("grep -q '^gpu,' '" . f . "' 2>/dev/null && echo 1 || echo 0"))
sel3(c1, v1, c2, v2, c3, v3, y) = (strcol(c1) eq v1 && strcol(c2) eq v2 && strcol(c3) eq v3) ? column(y) : NaN
KER = 'vllm ft vllm ft'
BAT = '8 8 32 32'
LAB = '"vLLM (bs 8)" "FT (bs 8)" "vLLM (bs 32)" "FT (bs 32)"'
do for [t in "png pdf"] {
    if (t eq "png") { eval png(1200, 520) } else { eval pdf(6.6, 2.8) }
    load 'plots/style.gp'
    # (a) series k = 1..4: ours 20+k, GPU 24+k, paper 28+k
    set style line 21 lc rgb C_VLLM lw 1.5 pt 7 ps 1.0*PS
    set style line 22 lc rgb C_POW2 lw 1.5 pt 7 ps 1.0*PS
    set style line 23 lc rgb C_VLLM lw 1.5 pt 9 ps 1.0*PS
    set style line 24 lc rgb C_POW2 lw 1.5 pt 9 ps 1.0*PS
    set style line 25 lc rgb C_VLLM lw 1.5 dt 4 pt 6 ps 1.0*PS
    set style line 26 lc rgb C_POW2 lw 1.5 dt 4 pt 6 ps 1.0*PS
    set style line 27 lc rgb C_VLLM lw 1.5 dt 4 pt 8 ps 1.0*PS
    set style line 28 lc rgb C_POW2 lw 1.5 dt 4 pt 8 ps 1.0*PS
    set style line 29 lc rgb C_VLLM lw 1.2 dt 2 pt 6 ps 0.9*PS
    set style line 30 lc rgb C_POW2 lw 1.2 dt 2 pt 6 ps 0.9*PS
    set style line 31 lc rgb C_VLLM lw 1.2 dt 2 pt 8 ps 0.9*PS
    set style line 32 lc rgb C_POW2 lw 1.2 dt 2 pt 8 ps 0.9*PS
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    eval QUICK_WATERMARK
    unset key
    set origin 0, 0; set size 0.5, 1 - KEYH
    set title '(a) Attention kernel latency (ours: cost model)'
    set xlabel 'Context length (tokens)'; set ylabel 'Kernel latency ({/Symbol m}s)'
    set xrange [48:272]; set xtics (64, 128, 256); set yrange [0:*]
    GPU = exists_file(data_a) && has_gpu(data_a)
    if (exists_file(data_a)) {
        plot for [k=1:4] data_a using (column('context_len')):(sel3('source', 'cost_model', 'kernel', word(KER, k), 'batch', word(BAT, k), 'latency_us')) with linespoints ls 20 + k notitle, \
             for [k=1:4] paper_a using (column('context_len')):(sel2('kernel', word(KER, k), 'batch', word(BAT, k), 'latency_us')) with linespoints ls 28 + k notitle, \
             for [k=1:4] data_a using (column('context_len')):(GPU ? sel3('source', 'gpu', 'kernel', word(KER, k), 'batch', word(BAT, k), 'latency_us') : NaN) with linespoints ls 24 + k notitle
    } else { plot NaN notitle }
    set origin 0.5, 0; set size 0.5, 1 - KEYH
    set title '(b) End-to-end latency vs block size'
    set xrange [-0.5:8.5]; set yrange [*:*]
    set xtics ('1' 0, '2' 1, '4' 2, '8' 3, '16' 4, '32' 5, '64' 6, '128' 7, '256' 8)
    set logscale y; set format y '%g'
    set xlabel 'Block size (tokens)'; set ylabel "Normalized latency (s/token)"
    if (exists_file(data)) {
        plot paper using (lg(column('block_size'))):(sel1('dataset', 'sharegpt', 'normalized_latency')) with linespoints ls 16 notitle, \
             paper using (lg(column('block_size'))):(sel1('dataset', 'alpaca', 'normalized_latency')) with linespoints ls 17 notitle, \
             data using (lg(column('block_size'))):(sel1('dataset', 'sharegpt', 'normalized_latency')) with linespoints ls 6 notitle, \
             data using (lg(column('block_size'))):(sel1('dataset', 'alpaca', 'normalized_latency')) with linespoints ls 7 notitle
    } else { set yrange [0.01:10]; set label 1 'not run yet (fig18b)' at graph 0.5, 0.5 center; plot NaN notitle; unset label 1 }
    unset logscale y
    eval KEY_STRIP
    if (GPU) {
        plot for [k=1:4] NaN with linespoints ls 20 + k title word(LAB, k), NaN with linespoints ls 6 title 'ShareGPT (b)', \
             NaN with linespoints ls 7 title 'Alpaca (b)', @PAPER_KEY, NaN with linespoints lc rgb '#606060' dt 4 pt 6 title 'our kernels on this GPU (dash-dot)'
    } else {
        plot for [k=1:4] NaN with linespoints ls 20 + k title word(LAB, k), NaN with linespoints ls 6 title 'ShareGPT (b)', \
             NaN with linespoints ls 7 title 'Alpaca (b)', @PAPER_KEY
    }
    eval KEY_RESET
    unset multiplot
}
