/* waitq.h -- ENGINE-INTERNAL: the waiting queue, a priority queue of groups on
 * (wait_key, arrival_s, id), smallest first.
 *
 * Groups that come in order (arrivals at the back, FCFS recompute preemptions at the
 * front) go to a sorted ring buffer (the deque), the others to a binary heap; the head
 * is the smaller of the deque's front and the heap's top.  Push, peek: O(1) for
 * in-order groups, O(log n) for the others; remove any waiting group: O(1) from the
 * deque, O(log n) from the heap.  g->heap_idx locates g's entry (i >= 0: heap slot i;
 * -2 - i: ring slot i; -1: not waiting).  Entries hold copies of the three keys, so no
 * comparison reads a group.  A zeroed pb_waitq is an empty queue; n == 0 means empty
 * whatever the other fields hold (the next push resets them). */
#ifndef PB_WAITQ_H
#define PB_WAITQ_H

#include <stdint.h>

#include "pb.h"
#include "sequence.h"

typedef struct {   /* a waiting group and copies of its keys */
    double key, arrival_s;   /* g->wait_key, g->arrival_s */
    int32_t id;
    pb_group *g;             /* NULL: a tombstone inside the deque */
} pb_wait_entry;

typedef struct {
    int32_t n;                    /* waiting groups: heap + live deque entries            */
    pb_wait_entry *heap;          /* [cap_heap], n_heap used                             */
    int32_t n_heap, cap_heap;
    pb_wait_entry *dq;            /* ring [cap_dq] (a power of two), sorted: slots
                                     dq_head.. (mod cap_dq), dq_len of them, dq_live not
                                     tombstones, both ends live                          */
    int32_t dq_head, dq_len, dq_live, cap_dq;
} pb_waitq;

void pb_waitq_free(pb_waitq *q);
/* Push g (wait_key, arrival_s and id set; not waiting). */
void pb_waitq_push(pb_waitq *q, pb_group *g);
/* Remove waiting g, wherever it is. */
void pb_waitq_remove(pb_waitq *q, pb_group *g);
/* The head (smallest), or NULL when empty. */
pb_group *pb_waitq_peek(const pb_waitq *q);
/* Invariants: counts, heap order, deque order with tombstones inside only and fewer
   than live entries, every entry's keys those of its group, which is WAITING and
   located by heap_idx.  PB_OK or PB_ERR_INVALID (logged). */
pb_status pb_waitq_check(const pb_waitq *q);

#endif /* PB_WAITQ_H */
