# fig16.gp -- Fig. 16: shared prefix, LLaMA-13B translation, (a) 1-shot and (b) 5-shot
# prefix prompts; Orca (Oracle) and vLLM.  Ours: solid; the paper's points: dashed, same colour, hollow markers.
#
#   gnuplot plots/fig16.gp                                   # -> plots/out/fig16.{png,pdf}
# Input: results/fig16.csv, experiments/paper/fig16.csv.  Run from the repository root.
if (!exists("data"))  data  = 'results/fig16.csv'
if (!exists("paper")) paper = 'experiments/paper/fig16.csv'
if (!exists("out"))   out   = 'plots/out/fig16'
panels = 'a b'
titles = '"(a) 1-shot prefix prompt" "(b) 5-shot prefix prompt"'
AXMAX = '52 44'
NCOL = 2; NROW = 1; W = 1000; H = 420; WIN = 4.6; HIN = 2.0
SYS = '4 5'
load 'plots/knee_panels.gp'
