# ablation_weights.gp -- the quantized-weights ablation (not a paper figure; issue 35,
# RESULTS.md "Quantized weights"): offline request throughput per weight format on the
# same GPU (top row, bars) and the KV slots the freed memory buys (bottom row).
# Panels a-d = experiments/ablation_weights_*.yaml.
#
#   gnuplot plots/ablation_weights.gp                        # -> plots/out/ablation_weights.{png,pdf}
# Input: results/ablation_weights.csv (panel, system, weights, request_throughput_per_s,
# ..., kv_slots).  Run from the repository root.
if (!exists("data")) data = 'results/ablation_weights.csv'
if (!exists("out"))  out  = 'plots/out/ablation_weights'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
panels = 'a b c d'
titles = '"LLaMA-13B, A100-40GB, ShareGPT" "LLaMA-13B, A100-40GB, Alpaca" "LLaMA-7B, A10G, ShareGPT" "LLaMA-7B, A10G, Alpaca"'
systems = 'fp16 int8 fp8 int4_awq int4_gptq'
colors = '#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd'
# x position of a system: its index in `systems` (0 = none)
xpos(s) = (s eq 'fp16') ? 1 : (s eq 'int8') ? 2 : (s eq 'fp8') ? 3 : (s eq 'int4_awq') ? 4 : (s eq 'int4_gptq') ? 5 : NaN
do for [t in "png pdf"] {
    if (t eq "png") { eval png(1800, 760) } else { eval pdf(7.2, 3.0) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    set style fill solid 0.8 border -1
    set boxwidth 0.7
    set xrange [0.3:5.7]
    set xtics ('fp16' 1, 'int8' 2, 'fp8' 3, 'AWQ' 4, 'GPTQ' 5)
    do for [i=1:4] {
        p = word(panels, i)
        set origin (i - 1) / 4.0, 0.5
        set size 0.25, 0.5
        set title word(titles, i) offset 0, -0.6
        set autoscale y; set yrange [0:*]
        if (i == 1) { set ylabel "Throughput (req/s)\n1000 requests at once" } else { unset ylabel }
        unset xlabel
        unset key
        plot for [k=1:5] data using (strcol('panel') eq p && strcol('system') eq word(systems, k) ? xpos(strcol('system')) : NaN):'request_throughput_per_s' \
             with boxes lc rgb word(colors, k)
        set origin (i - 1) / 4.0, 0
        unset title
        set autoscale y; set yrange [0:*]
        if (i == 1) { set ylabel 'KV slots (tokens)' } else { unset ylabel }
        set xlabel 'Linear-layer weights'
        plot for [k=1:5] data using (strcol('panel') eq p && strcol('system') eq word(systems, k) ? xpos(strcol('system')) : NaN):'kv_slots' \
             with boxes lc rgb word(colors, k)
    }
    unset multiplot
}
