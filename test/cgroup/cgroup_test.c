/*-------------------------------------------------------------------------
 *
 * cgroup_test.c
 *	  Checks how src/support/cgroup_memory.c finds the memory limit of a process's
 *	  cgroup, on files of its own laid out as the kernel lays them out: a
 *	  /proc/self/cgroup, a /proc/self/mountinfo whose cgroup mounts lie in a
 *	  temporary directory, and the limit files there.
 *
 * The cases: cgroup v2 with the limit on the cgroup, on an ancestor ("max"
 * below it), or on both (the lower wins); no limit anywhere ("max"); the
 * memory controller not enabled for the cgroup itself (no memory.max there,
 * one above); a container's cgroup namespace ("0::/", the mount its root);
 * a mount whose root is a cgroup of the host (a bind mount into a pod); a
 * mount point with a space (mountinfo's octal escape); cgroup v1 beside a
 * v2 hierarchy without the controller (the "hybrid" layout), unlimited
 * (v1's largest page count) or limited; and nothing found (no mount, no
 * file).  Then the limit files' values on their own.  Last, it prints what
 * it finds for itself, the one real case, which must not fail.
 *
 * Usage: cgroup_test   (exit status 0 when every case gives what it must)
 *
 * Build: gcc -Wall -std=gnu11 -Isrc test/cgroup/cgroup_test.c
 *        src/support/cgroup_memory.c -o cgroup_test
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/cgroup_memory.h"

static char root[256];
static int	failures = 0;

static void
write_file(const char *relpath, const char *fmt,...)
{
	char		path[1024];
	char	   *slash;
	FILE	   *f;
	va_list		ap;

	snprintf(path, sizeof(path), "%s/%s", root, relpath);
	/* its directories first */
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/'))
	{
		*slash = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
		{
			perror(path);
			exit(2);
		}
		*slash = '/';
	}
	if ((f = fopen(path, "w")) == NULL)
	{
		perror(path);
		exit(2);
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

/* a fresh directory for each case */
static void
start_case(int n)
{
	snprintf(root, sizeof(root), "/tmp/gpusort-cgroup-test.%d.%d", (int) getpid(), n);
	if (mkdir(root, 0755) != 0)
	{
		perror(root);
		exit(2);
	}
}

static void
check(const char *name, int version, unsigned long long limit, const char *file)
{
	CgroupMemory cg;
	char		proc_cgroup[512];
	char		mountinfo[512];
	char		want_file[1024];

	snprintf(proc_cgroup, sizeof(proc_cgroup), "%s/proc/self/cgroup", root);
	snprintf(mountinfo, sizeof(mountinfo), "%s/proc/self/mountinfo", root);
	snprintf(want_file, sizeof(want_file), "%s%s%s", file[0] ? root : "", file[0] ? "/" : "", file);
	if (cgroup_memory_limit(proc_cgroup, mountinfo, &cg) != version || cg.version != version ||
		cg.limit != limit || strcmp(cg.file, want_file) != 0)
	{
		printf("FAIL %s: got v%d, %llu bytes, \"%s\"; want v%d, %llu bytes, \"%s\"\n",
			   name, cg.version, (unsigned long long) cg.limit, cg.file,
			   version, limit, want_file);
		failures++;
	}
	else
		printf("ok   %s\n", name);
}

static void
check_parse(const char *text, long long want)
{
	long long	got = (long long) cgroup_memory_parse_limit(text);

	if (got != want)
	{
		printf("FAIL parse \"%s\": got %lld, want %lld\n", text, got, want);
		failures++;
	}
	else
		printf("ok   parse \"%s\"\n", text);
}

/* the mountinfo line of a cgroup2 mount of the given root at the mount point */
#define V2_MOUNT(root_, at) \
	"35 24 0:30 " root_ " %s/" at " rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"

int
main(void)
{
	int			n = 0;

	/* v2: the limit on the cgroup itself */
	start_case(++n);
	write_file("proc/self/cgroup", "0::/system.slice/postgresql.service\n");
	write_file("proc/self/mountinfo",
			   "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
			   V2_MOUNT("/", "sys/fs/cgroup"), root);
	write_file("sys/fs/cgroup/system.slice/postgresql.service/memory.max", "4294967296\n");
	write_file("sys/fs/cgroup/system.slice/memory.max", "max\n");
	check("v2, the cgroup's limit", 2, 4294967296ULL,
		  "sys/fs/cgroup/system.slice/postgresql.service/memory.max");

	/* v2: "max" on the cgroup, a limit on its parent */
	write_file("sys/fs/cgroup/system.slice/postgresql.service/memory.max", "max\n");
	write_file("sys/fs/cgroup/system.slice/memory.max", "2147483648\n");
	check("v2, the parent's limit", 2, 2147483648ULL, "sys/fs/cgroup/system.slice/memory.max");

	/* v2: both, the lower wins */
	write_file("sys/fs/cgroup/system.slice/postgresql.service/memory.max", "1073741824\n");
	check("v2, the lower of two", 2, 1073741824ULL,
		  "sys/fs/cgroup/system.slice/postgresql.service/memory.max");

	/* v2: no limit anywhere: the cgroup's own file is named */
	write_file("sys/fs/cgroup/system.slice/postgresql.service/memory.max", "max\n");
	write_file("sys/fs/cgroup/system.slice/memory.max", "max\n");
	check("v2, no limit", 2, 0, "sys/fs/cgroup/system.slice/postgresql.service/memory.max");

	/* v2: the controller not enabled for the cgroup: its parent's file */
	start_case(++n);
	write_file("proc/self/cgroup", "0::/user.slice/session-1.scope\n");
	write_file("proc/self/mountinfo", V2_MOUNT("/", "sys/fs/cgroup"), root);
	write_file("sys/fs/cgroup/user.slice/session-1.scope/cgroup.procs", "1\n");
	write_file("sys/fs/cgroup/user.slice/memory.max", "8589934592\n");
	check("v2, no memory.max in the cgroup", 2, 8589934592ULL,
		  "sys/fs/cgroup/user.slice/memory.max");

	/* a container's cgroup namespace: "0::/", the mount its root */
	start_case(++n);
	write_file("proc/self/cgroup", "0::/\n");
	write_file("proc/self/mountinfo", V2_MOUNT("/", "sys/fs/cgroup"), root);
	write_file("sys/fs/cgroup/memory.max", "536870912\n");
	check("v2, cgroup namespace", 2, 536870912ULL, "sys/fs/cgroup/memory.max");

	/* a mount whose root is a cgroup of the host; nothing above it counts */
	start_case(++n);
	write_file("proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
	write_file("proc/self/mountinfo", V2_MOUNT("/kubepods/pod1", "sys/fs/cgroup"), root);
	write_file("sys/fs/cgroup/ctr/memory.max", "max\n");
	write_file("sys/fs/cgroup/memory.max", "3221225472\n");
	check("v2, mount root below the hierarchy's", 2, 3221225472ULL, "sys/fs/cgroup/memory.max");
	/* a mount root that does not hold the cgroup is no mount of it */
	write_file("proc/self/cgroup", "0::/kubepods/pod2/ctr\n");
	check("v2, mount root elsewhere", 0, 0, "");

	/* a mount point with a space in it */
	start_case(++n);
	write_file("proc/self/cgroup", "0::/a\n");
	write_file("proc/self/mountinfo", V2_MOUNT("/", "cg\\040root"), root);
	write_file("cg root/a/memory.max", "1048576\n");
	check("v2, escaped mount point", 2, 1048576ULL, "cg root/a/memory.max");

	/* v1 beside a v2 hierarchy without the memory controller (hybrid) */
	start_case(++n);
	write_file("proc/self/cgroup",
			   "9:name=systemd:/\n"
			   "4:memory:/process_api/6af6\n"
			   "3:cpu,cpuacct:/\n"
			   "0::/\n");
	write_file("proc/self/mountinfo",
			   "31 23 0:28 / %s/sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
			   "32 31 0:29 / %s/sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
			   "35 31 0:32 / %s/sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
			   "41 31 0:38 / %s/sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
			   root, root, root, root);
	write_file("sys/fs/cgroup/memory/process_api/6af6/memory.limit_in_bytes", "9223372036854771712\n");
	write_file("sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", "9223372036854771712\n");
	write_file("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
	write_file("sys/fs/cgroup/unified/memory.max", "1048576\n");
	check("v1 hybrid, unlimited", 1, 0,
		  "sys/fs/cgroup/memory/process_api/6af6/memory.limit_in_bytes");
	write_file("sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", "6442450944\n");
	check("v1 hybrid, the parent's limit", 1, 6442450944ULL,
		  "sys/fs/cgroup/memory/process_api/memory.limit_in_bytes");

	/* nothing to find */
	start_case(++n);
	write_file("proc/self/cgroup", "0::/\n");
	write_file("proc/self/mountinfo", "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n");
	check("no cgroup mount", 0, 0, "");
	start_case(++n);
	check("no /proc files", 0, 0, "");

	/* the limit files' values */
	check_parse("max\n", 0);
	check_parse("max", 0);
	check_parse("4294967296\n", 4294967296LL);
	check_parse("9223372036854771712\n", 0);
	check_parse("4611686018427387904\n", 0);
	check_parse("4611686018427387903\n", 4611686018427387903LL);
	check_parse("", -1);
	check_parse("maximum\n", -1);
	check_parse("12k\n", -1);
	check_parse("-1\n", -1);

	/* this process's own, for the record */
	{
		CgroupMemory cg;

		cgroup_memory_limit("/proc/self/cgroup", "/proc/self/mountinfo", &cg);
		printf("this process: cgroup v%d, limit %llu bytes (%s)\n", cg.version,
			   (unsigned long long) cg.limit, cg.file[0] ? cg.file : "no file");
	}

	/* leave nothing behind */
	{
		char		cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf /tmp/gpusort-cgroup-test.%d.*", (int) getpid());
		if (system(cmd) != 0)
			printf("could not remove the test's directories\n");
	}
	printf(failures ? "%d failures\n" : "all cases passed\n", failures);
	return failures ? 1 : 0;
}
