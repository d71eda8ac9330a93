# fig12.gp -- Fig. 12: normalized latency vs request rate, basic sampling (n = 1).
# Six panels as the paper: top row ShareGPT (a) OPT-13B/1 GPU, (b) 66B/4, (c) 175B/8;
# bottom row Alpaca (d)-(f).  Ours: solid; the paper's digitized points: dashed, same colour, hollow markers.
#
#   gnuplot plots/fig12.gp                                   # -> plots/out/fig12.{png,pdf}
#   gnuplot -e "data='x.csv'; out='plots/out/x'" plots/fig12.gp
# Input: results/fig12.csv and experiments/paper/fig12.csv (panel,system,request_rate,
# normalized_latency,...; each series contiguous).  Run from the repository root.
if (!exists("data"))  data  = 'results/fig12.csv'
if (!exists("paper")) paper = 'experiments/paper/fig12.csv'
if (!exists("out"))   out   = 'plots/out/fig12'
panels = 'a b c d e f'
titles = '"(a) OPT-13B, 1 GPU, ShareGPT" "(b) OPT-66B, 4 GPUs, ShareGPT" "(c) OPT-175B, 8 GPUs, ShareGPT" "(d) OPT-13B, 1 GPU, Alpaca" "(e) OPT-66B, 4 GPUs, Alpaca" "(f) OPT-175B, 8 GPUs, Alpaca"'
AXMAX = '2.09 1.1 2.86 30.8 20.9 23.1'
NCOL = 3; NROW = 2; W = 1500; H = 820; WIN = 7.0; HIN = 3.9
SYS = '1 2 3 4 5'
load 'plots/knee_panels.gp'
