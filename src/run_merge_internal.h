/*-------------------------------------------------------------------------
 *
 * run_merge_internal.h
 *	  What the two merges share: the merge of run_merge.c and the final
 *	  merge in the pool threads (run_merge_window.c), which it starts.
 *	  sort.c sees run_merge.h; the storage below (run.h) sees neither.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RUN_MERGE_INTERNAL_H
#define GPUSORT_RUN_MERGE_INTERNAL_H

#include "postgres.h"

#include "batch.h"
#include "run.h"

/*
 * Play the matches of a tree of losers' subtree under node, for ninputs
 * inputs (leaf ninputs + i is input i): each node of tree gets the loser
 * of its match, and the subtree's winner is returned.  wins(arg, a, b):
 * whether input a's current record goes out before input b's.  Both
 * merges build their trees with it (run_merge.c, run_merge_window.c); the
 * matches replayed as a winner advances are theirs, inline.
 */
static inline int
loser_tree_play(int ninputs, int *tree, int node,
				bool (*wins) (void *arg, int a, int b), void *arg)
{
	int			left;
	int			right;

	if (node >= ninputs)
		return node - ninputs;
	left = loser_tree_play(ninputs, tree, 2 * node, wins, arg);
	right = loser_tree_play(ninputs, tree, 2 * node + 1, wins, arg);
	if (wins(arg, left, right))
	{
		tree[node] = right;
		return left;
	}
	tree[node] = left;
	return right;
}

/* run_merge_window.c: the final merge done by the pool threads */
typedef struct WindowMerge WindowMerge;

extern WindowMerge *window_merge_start(SortRuns *runs, SortBatch *last,
									   Size merge_memory);
extern int	window_merge_threads(WindowMerge *wm);
extern MinimalTuple window_merge_next(SortRuns *runs, WindowMerge *wm);
extern void window_merge_close(WindowMerge *wm);

#endif							/* GPUSORT_RUN_MERGE_INTERNAL_H */
