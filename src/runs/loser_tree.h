/*-------------------------------------------------------------------------
 *
 * loser_tree.h
 *	  A tree of losers' first matches, which both merges build their trees
 *	  with: the merge in the backend (run_merge.c) and the final merge in
 *	  the pool threads (run_merge_window.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_LOSER_TREE_H
#define GPUSORT_LOSER_TREE_H

#include "postgres.h"

/*
 * Play the matches of a tree of losers' subtree under node, for ninputs
 * inputs (leaf ninputs + i is input i): each node of tree gets the loser
 * of its match, and the subtree's winner is returned.  wins(arg, a, b):
 * whether input a's current record goes out before input b's.  The
 * matches replayed as a winner advances are each merge's own, inline.
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

#endif							/* GPUSORT_LOSER_TREE_H */
