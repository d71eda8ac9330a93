/* workload.h -- the `workload:` section of an experiment: which dataset, which length
 * filter, which arrival process, which decoding mode; and generating the trace.
 *
 * YAML, an example (each key's type, range, default and doc: its declaration,
 * pb_workload_schema in workload.c, printed by `pagedbench list --keys`):
 *   workload:
 *     dataset: sharegpt        # sharegpt | alpaca | translation | chatbot | azure_conv | azure_code
 *     file: auto               # exact lengths: auto = the standard file in ../shared/data when
 *                              # present; or a path (tried as given, then under ../shared/data);
 *                              # absent/missing file = the built-in distribution (dist_tables.c)
 *     input_column: input_len  # columns of `file` (the dataset's unless given)
 *     output_column: output_len
 *     filter: paper            # paper | fig11 | vllm | none (the dataset's unless given)
 *     arrivals: poisson        # poisson (10 ms quanta) | exponential | gamma | burst | replay
 *     rate: 2.0                # req/s (the runner may set it per sweep point)
 *     burstiness: 1.0          # gamma: the gaps' shape (vLLM bench serve --burstiness; arrivals.h)
 *     ramp: {shape: linear, start_rate: 1, end_rate: 8}   # instead of rate: a rate ramp
 *                              # (linear | exponential; vLLM's --ramp-up-strategy; arrivals.h)
 *     duration_s: 3600         # default 3600 (the paper's one-hour traces) unless num_requests is set
 *     num_requests: 0          # 0 = no count limit
 *     quantum_s: 0.01
 *     replay_file: auto        # replay: an Azure LLM trace CSV (TIMESTAMP column); auto = the
 *                              # dataset's own azure file, or AzureLLMInferenceTrace_conv.csv
 *     n: 1                     # parallel samples per request
 *     beam_width: 1            # beam search width (n is then set to beam_width)
 *     beam_scores: synthetic   # beam scores without a real model: synthetic | wmt14-kn3
 *     shots: 1                 # translation: 1-shot (80-token) or 5-shot (341-token) prefix
 *     prefix_len: 0            # other datasets: a synthetic shared prefix of this many tokens
 *     chat: {max_prompt: 1024, max_output: 1016, mean_turns: 3.51, new_conversation_prob: 0.1}
 *     trace: path.csv          # replay this trace file instead of generating one
 *     conversation:            # closed loop (client.h): a conversation's next turn is sent
 *       think_time_s: 5        # this long after its previous turn's answer (fixed, or the
 *       think: fixed           # mean of an exponential); history: append makes a turn's
 *       history: as_given      # prompt re-send the conversation so far (as_given: it does)
 *     max_concurrency: 0       # at most this many requests outstanding (0 = no limit)
 * conversation and max_concurrency shape the client that sends the trace, not the trace:
 * they may stand beside `trace:`.  The rows' conversation_id / turn say which turns
 * follow which (the chatbot dataset's, or a trace file's).
 *
 * Datasets:
 *   sharegpt, alpaca  lengths as in dataset.h (OPT tokens).
 *   translation       WMT14 en-de newstest2014 (a proxy for the paper's WMT16), LLaMA tokens.
 *                     Every request shares one few-shot prefix (prefix_id 0).  As the
 *                     artifact's prefix trace.py, the shared part is the prefix rounded DOWN
 *                     to the block size 16: 1-shot 80 tokens (80 raw), 5-shot 336 (341 raw);
 *                     the rest of the prompt (the few tokens of the prefix past the last
 *                     full block, the English sentence and " =>") is the request's own:
 *                     prompt_len = prefix_len + input_len_{1,5}shot_llama, output = German.
 *   chatbot           synthetic conversations from ShareGPT lengths (see below).
 *   azure_conv/_code  the Azure LLM inference trace 2023-11 (lengths; timestamps with replay).
 *
 * Chatbot (Fig. 17), as the artifact's generate_chatbot_requests and benchmark_chatbot
 * did it, with one substitution.  The artifact walked real multi-turn ShareGPT
 * conversations; we only have the lengths of FIRST turns (query, reply), so:
 *   - a conversation has T turns, T ~ 1 + Geometric with mean `mean_turns` (3.51 =
 *     330,239 turns / 94,145 conversations of ShareGPT, ShareChat paper, 2025, Table 1);
 *   - the (query, reply) lengths of every turn are drawn from the ShareGPT distribution
 *     (filter none: long pastes are cut by the truncation below);
 *   - history h starts at 0; turn t: prompt_len = min(h + query, max_prompt = 1024),
 *     output_len = min(reply, max_output = 2048 - 1024 - 8 = 1016), then
 *     h = min(h + query + reply, 2 * max_prompt) (the artifact kept the last 2048 tokens);
 *   - conversations are made until their turns total the number of arrivals (the last one
 *     is cut), shuffled, and served as benchmark_chatbot did: at each arrival, with
 *     probability new_conversation_prob (0.1), or when none is open, a random unstarted
 *     conversation starts; otherwise a random open one sends its next turn;
 *   - the KV cache is not kept between turns: each turn is an independent request whose
 *     prompt already holds the history (conversation_id / turn label it; prefix_len = h
 *     when h + query <= max_prompt, the history sent whole, else 0: trace.h's token
 *     identity then makes the turn re-send the previous turns' tokens, which a prefix
 *     cache can reuse).
 *
 * Randomness: pb_rng streams under the one seed: 1 = arrivals, 2 = lengths,
 * 3 = conversations.  Same config + seed => the same trace, byte for byte. */
#ifndef PB_WORKLOAD_H
#define PB_WORKLOAD_H

#include <stdint.h>

#include "arrivals.h"
#include "client.h"
#include "config.h"
#include "dataset.h"
#include "trace.h"

#define PB_WL_PATH 1024
#define PB_WL_DURATION_S 3600   /* trace length without num_requests: the paper's hour */
#define PB_DATASET_NAMES "sharegpt|alpaca|translation|chatbot|azure_conv|azure_code"

typedef struct {
    char dataset[32];           /* one of PB_DATASET_NAMES ("" only with trace)         */
    char file[PB_WL_PATH];      /* "" built-in, "auto", or a path                        */
    char input_column[64];      /* "" = the dataset's default column names               */
    char output_column[64];
    char filter[16];            /* "" = the dataset's default filter                     */
    pb_arrival_cfg arrivals;
    char replay_file[PB_WL_PATH]; /* "" or "auto" = the default azure file                */
    int32_t n, beam_width;
    int32_t shots;              /* translation: 1 or 5                                   */
    int32_t prefix_len;         /* synthetic shared prefix (not translation), 0 = none   */
    int32_t chat_max_prompt, chat_max_output;
    double chat_mean_turns, chat_new_prob;
    char trace[PB_WL_PATH];     /* replay this trace CSV ("" = generate)                 */
    pb_client_cfg client;       /* conversation: (closed loop), max_concurrency           */
    bool history_append;        /* conversation.history: append (pb_trace_append_history) */
    char beam_scores[16];       /* synthetic, or a table of beam_tables.h                */
} pb_workload_cfg;

extern const pb_key pb_workload_schema[];

/* Every key at its declared default (pb_workload_schema): dataset "" and rate 0, which
 * a caller must set. */
void pb_workload_defaults(pb_workload_cfg *c);

/* Parse a `workload:` map: validates it against pb_workload_schema (errors
 * "file:line:col: workload.key: message"), then the cross-key rules (dataset or trace
 * required; n and beam_width not both > 1; shots only for translation, ...).
 * `n` may be NULL (all defaults).  PB_OK or PB_ERR_INVALID. */
pb_status pb_workload_from_node(const pb_node *n, pb_workload_cfg *out, pb_cfg_err *err);

/* Generate (or, with cfg->trace, read) the trace; with conversation.history: append,
 * the later turns' prompts then re-send the conversation (pb_trace_append_history).  *out must be empty ({0}); the caller
 * frees it with pb_trace_free.  Errors: PB_ERR_INVALID (bad setting, malformed file:
 * "file:line: message"), PB_ERR_IO (unreadable file); the message is in err. */
pb_status pb_workload_generate(const pb_workload_cfg *cfg, uint64_t seed, pb_trace *out,
                               char *err, size_t errlen);

/* Read and parse every file the workload would read -- the trace, the exact-lengths
 * dataset file, the replay timestamps -- without generating anything, so a config
 * check finds a missing or malformed file before any point runs.  PB_OK, or the
 * reader's error ("file:line:col: message", or "path: reason") in err and the
 * workload key that names the file in *key ("trace", "file", "replay_file"). */
pb_status pb_workload_check_files(const pb_workload_cfg *cfg, const char **key, char *err, size_t errlen);

/* The exact-lengths file `cfg` would use (resolved path), or NULL when the built-in
 * distribution would be used.  buf receives the path. */
const char *pb_workload_resolve_file(const pb_workload_cfg *cfg, char *buf, size_t n);

/* The timestamps file arrivals: replay would read (resolved path), or NULL when the
 * arrivals are not replay or the file is not found.  buf receives the path. */
const char *pb_workload_resolve_replay_file(const pb_workload_cfg *cfg, char *buf, size_t n);

/* ../shared/data: $PAGEDBENCH_SHARED_DATA if set (it must exist), else the folder
 * beside the source tree when it exists; NULL when absent. */
const char *pb_workload_data_dir(void);

/* The shared prefix of the translation workload, in tokens, as shared in the KV cache
 * (rounded down to blocks of 16 as the artifact did): 1 -> 80, 5 -> 336.  0 otherwise. */
int32_t pb_translation_prefix_len(int32_t shots);

/* One line describing the workload, e.g. for a results sidecar. */
void pb_workload_describe(const pb_workload_cfg *c, char *buf, size_t n);

#endif /* PB_WORKLOAD_H */
