/*-------------------------------------------------------------------------
 *
 * cgroup_memory.h
 *	  The memory limit of the process's own control group (cgroup_memory.c),
 *	  which sort_memory.c takes, where it is lower, instead of the
 *	  machine's physical memory.  Plain C, free of PostgreSQL, so that
 *	  test/cgroup checks it against files of its own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_CGROUP_MEMORY_H
#define GPUSORT_CGROUP_MEMORY_H

#include <stdint.h>

#define CGROUP_PATH_LEN		1024

typedef struct CgroupMemory
{
	int			version;		/* 1 or 2; 0: no memory controller found */
	uint64_t	limit;			/* bytes; 0: no limit */
	char		file[CGROUP_PATH_LEN + 32];	/* the file that sets it (the
											 * lowest of the cgroup's and its
											 * ancestors'), or, with no
											 * limit, the cgroup's own */
} CgroupMemory;

/*
 * From /proc/self/cgroup and /proc/self/mountinfo, or files of the same
 * form (the test's); fills *out, and returns out->version.
 */
extern int	cgroup_memory_limit(const char *proc_cgroup, const char *mountinfo,
								CgroupMemory *out);

/* One limit file's value: bytes, or 0 for "max" and the like; -1 unreadable */
extern int64_t cgroup_memory_parse_limit(const char *text);

#endif							/* GPUSORT_CGROUP_MEMORY_H */
