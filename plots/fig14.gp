# fig14.gp -- Fig. 14: parallel sampling (top: n = 2, 4, 6) and beam search (bottom:
# width 2, 4, 6), OPT-13B on Alpaca; Orca (Max / Pow2 / Oracle) and vLLM (no FT, as the
# paper).  Ours: solid; the paper's digitized points: dashed, same colour, hollow markers.
#
#   gnuplot plots/fig14.gp                                   # -> plots/out/fig14.{png,pdf}
# Input: results/fig14.csv, experiments/paper/fig14.csv.  Run from the repository root.
if (!exists("data"))  data  = 'results/fig14.csv'
if (!exists("paper")) paper = 'experiments/paper/fig14.csv'
if (!exists("out"))   out   = 'plots/out/fig14'
panels = 'a b c d e f'
titles = '"(a) parallel size = 2" "(b) parallel size = 4" "(c) parallel size = 6" "(d) beam width = 2" "(e) beam width = 4" "(f) beam width = 6"'
AXMAX = '21 11 7.5 18 10 7.5'
NCOL = 3; NROW = 2; W = 1500; H = 820; WIN = 7.0; HIN = 3.9
SYS = '2 3 4 5'
load 'plots/knee_panels.gp'
