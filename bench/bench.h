/* bench.h -- micro-benchmarks behind `pagedbench bench <name>`.
 *
 * Each prints human-readable aligned lines, or with --csv `metric,value,unit` rows
 * (medians over repetitions, warm-up excluded).  Benchmarks print figures; they never
 * fail on speed (regression checks compare against baselines elsewhere). */
#ifndef PB_BENCH_H
#define PB_BENCH_H

int pb_bench_scheduler(int argc, char **argv);   /* bench/bench_scheduler.c */
int pb_bench_sim(int argc, char **argv);         /* bench/bench_sim.c       */
int pb_bench_costmodel(int argc, char **argv);   /* bench/bench_costmodel.c */

#endif /* PB_BENCH_H */
