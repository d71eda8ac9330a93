# launch.gp -- vLLM's launch comparison (the blog post of 2023-06-20; issue 35, RESULTS.md
# "The launch comparison"): offline request throughput of HF Transformers (2023), TGI
# (2023) and vLLM, four panels (LLaMA-7B on an A10G, LLaMA-13B on an A100-40GB; one and
# three completions per request), our ratios vLLM / HF and vLLM / TGI over the bars and
# the post's ranges under each panel.  Panels a-d = experiments/launch_*.yaml.
#
#   gnuplot plots/launch.gp                                  # -> plots/out/launch.{png,pdf}
# Input: results/launch.csv (panel, system, n, request_throughput_per_s, ...).  Run
# from the repository root.
if (!exists("data")) data = 'results/launch.csv'
if (!exists("out"))  out  = 'plots/out/launch'
load 'plots/style.gp'
system("mkdir -p \"$(dirname '" . out . "')\"")
panels = 'a b c d'
titles = '"LLaMA-7B, A10G, n = 1" "LLaMA-13B, A100-40GB, n = 1" "LLaMA-7B, A10G, n = 3" "LLaMA-13B, A100-40GB, n = 3"'
post = '"post: 14-24x / 2.2-2.5x" "post: 24x / 2.5x" "post: 8.5-15x / 3.3-3.5x" "post: 8.5-15x / 3.3-3.5x"'
systems = 'hf tgi vllm'
colors = '#7f7f7f #ff7f0e #1f77b4'
xpos(s) = (s eq 'hf') ? 1 : (s eq 'tgi') ? 2 : (s eq 'vllm') ? 3 : NaN
do for [t in "png pdf"] {
    if (t eq "png") { eval png(1800, 520) } else { eval pdf(7.2, 2.2) }
    load 'plots/style.gp'
    set datafile columnheaders
    set output out . '.' . t
    set multiplot
    set style fill solid 0.8 border -1
    set boxwidth 0.7
    set xrange [0.3:3.7]
    set xtics ('HF' 1, 'TGI' 2, 'vLLM' 3)
    do for [i=1:4] {
        p = word(panels, i)
        set autoscale y
        stats data using ((strcol('panel') eq p && strcol('system') eq 'hf') ? column('request_throughput_per_s') : NaN) name 'H' nooutput
        stats data using ((strcol('panel') eq p && strcol('system') eq 'tgi') ? column('request_throughput_per_s') : NaN) name 'T' nooutput
        stats data using ((strcol('panel') eq p && strcol('system') eq 'vllm') ? column('request_throughput_per_s') : NaN) name 'V' nooutput
        set origin (i - 1) / 4.0, 0
        set size 0.25, 1
        set title sprintf("%s\nours: %.1fx / %.1fx", word(titles, i), V_max / H_max, V_max / T_max) offset 0, -0.4
        set yrange [0:V_max * 1.15]
        if (i == 1) { set ylabel "Throughput (req/s)\n1000 ShareGPT requests at once" } else { unset ylabel }
        set xlabel word(post, i)
        unset key
        plot for [k=1:3] data using (strcol('panel') eq p && strcol('system') eq word(systems, k) ? xpos(strcol('system')) : NaN):'request_throughput_per_s' \
             with boxes lc rgb word(colors, k)
    }
    unset multiplot
}
