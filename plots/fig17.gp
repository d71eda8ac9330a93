# fig17.gp -- Fig. 17: chatbot (OPT-13B, prompts = history cut to the last 1024 tokens);
# Orca (Max / Pow2 / Oracle) and vLLM.  Ours: solid; the paper's points: dashed, same colour, hollow markers.
#
#   gnuplot plots/fig17.gp                                   # -> plots/out/fig17.{png,pdf}
# Input: results/fig17.csv, experiments/paper/fig17.csv.  Run from the repository root.
if (!exists("data"))  data  = 'results/fig17.csv'
if (!exists("paper")) paper = 'experiments/paper/fig17.csv'
if (!exists("out"))   out   = 'plots/out/fig17'
panels = 'a'
titles = '"Chatbot, OPT-13B, 1 GPU, ShareGPT"'
AXMAX = '0.85'
NCOL = 1; NROW = 1; W = 760; H = 640; WIN = 3.6; HIN = 3.2
SYS = '2 3 4 5'
load 'plots/knee_panels.gp'
