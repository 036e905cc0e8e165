/*-------------------------------------------------------------------------
 *
 * cgroup_memory.c
 *	  The memory limit of the process's own control group: cgroup v2's
 *	  memory.max, or cgroup v1's memory.limit_in_bytes, of its cgroup and of
 *	  each ancestor up to where the hierarchy is mounted, the lowest.
 *
 * A server in a container, or in a systemd unit with MemoryMax=, can use no
 * more memory than its cgroup allows, whatever the machine has: budgets
 * taken from the machine's memory alone (sort_memory.c) would have the
 * kernel's OOM killer end a backend, and the postmaster restart the whole
 * server, before a sort wrote a single run.  The process's cgroup is in
 * /proc/self/cgroup: the v1 line whose controllers include memory or, where
 * no v1 hierarchy has the memory controller, the v2 line ("0::PATH").  Its
 * directory is where that hierarchy is mounted (/proc/self/mountinfo: a
 * mount of type cgroup with the memory option, or of type cgroup2) joined
 * with the cgroup's path below the mount's root; in a container with a
 * cgroup namespace the path is "/" and the mount is the namespace's root.
 * An ancestor's limit holds for its children too, so each directory from
 * the cgroup's up to the mount counts.  "max" (v2) and v1's unlimited (the
 * largest page count, near 2^63) are no limit.
 *
 * Plain C, free of PostgreSQL: sort_memory.c calls cgroup_memory_limit
 * once per process, and test/cgroup runs it, and the parser of a limit
 * file's text (cgroup_memory_parse_limit), on files of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "support/cgroup_memory.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a limit this large (2^62 bytes) is none: v1 writes "unlimited" so */
#define NO_LIMIT_FROM	((uint64_t) 1 << 62)

int64_t
cgroup_memory_parse_limit(const char *text)
{
	char	   *end;
	unsigned long long value;

	while (*text == ' ' || *text == '\t')
		text++;
	if (strncmp(text, "max", 3) == 0 && (text[3] == '\0' || text[3] == '\n'))
		return 0;
	if (*text < '0' || *text > '9')
		return -1;
	value = strtoull(text, &end, 10);
	if (*end != '\0' && *end != '\n' && *end != ' ')
		return -1;
	if (value >= NO_LIMIT_FROM)
		return 0;
	return (int64_t) value;
}

/* Whether list, comma-separated, has the word. */
static bool
has_word(const char *list, size_t len, const char *word)
{
	size_t		wlen = strlen(word);
	const char *p = list;
	const char *end = list + len;

	while (p < end)
	{
		const char *comma = memchr(p, ',', end - p);
		size_t		n = (comma ? comma : end) - p;

		if (n == wlen && memcmp(p, word, wlen) == 0)
			return true;
		p += n + 1;
	}
	return false;
}

/* mountinfo writes space, tab, newline and backslash as \ooo: undo it */
static void
unescape(char *s)
{
	char	   *out = s;

	for (; *s; s++)
	{
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
			s[3] >= '0' && s[3] <= '7')
		{
			*out++ = (char) ((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		}
		else
			*out++ = *s;
	}
	*out = '\0';
}

/*
 * The path of the process's cgroup in the hierarchy of the given version
 * (1: the one with the memory controller), from /proc/self/cgroup.
 */
static bool
cgroup_path(const char *proc_cgroup, int version, char *path, size_t size)
{
	FILE	   *f = fopen(proc_cgroup, "r");
	char	   *line = NULL;
	size_t		cap = 0;
	bool		found = false;

	if (f == NULL)
		return false;
	while (!found && getline(&line, &cap, f) > 0)
	{
		char	   *c1 = strchr(line, ':');
		char	   *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		char	   *nl;

		if (c2 == NULL)
			continue;
		if ((nl = strchr(c2 + 1, '\n')) != NULL)
			*nl = '\0';
		if (version == 1 ? has_word(c1 + 1, c2 - c1 - 1, "memory")
			: (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1))
		{
			snprintf(path, size, "%s", c2 + 1);
			found = true;
		}
	}
	free(line);
	fclose(f);
	return found;
}

/*
 * The directory of cgroup path in the hierarchy of the given version: a
 * mount of it whose root holds the path, from /proc/self/mountinfo.
 */
static bool
cgroup_dir(const char *mountinfo, int version, const char *path,
		   char *dir, size_t size, char *mount, size_t mount_size)
{
	FILE	   *f = fopen(mountinfo, "r");
	char	   *line = NULL;
	size_t		cap = 0;
	bool		found = false;

	if (f == NULL)
		return false;
	while (!found && getline(&line, &cap, f) > 0)
	{
		char	   *field[6];
		char	   *fstype = NULL;
		char	   *super = NULL;
		char	   *save;
		char	   *tok;
		int			n = 0;
		size_t		rootlen;

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER */
		for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		{
			if (n < 6)
				field[n++] = tok;
			else if (strcmp(tok, "-") == 0)
			{
				fstype = strtok_r(NULL, " \n", &save);
				if (fstype && strtok_r(NULL, " \n", &save))
					super = strtok_r(NULL, " \n", &save);
				break;
			}
		}
		if (n < 6 || fstype == NULL)
			continue;
		if (version == 1 ? (strcmp(fstype, "cgroup") != 0 || super == NULL ||
							!has_word(super, strlen(super), "memory"))
			: strcmp(fstype, "cgroup2") != 0)
			continue;
		unescape(field[3]);
		unescape(field[4]);
		/* the mount's root must hold the cgroup: "/" holds every path */
		rootlen = strcmp(field[3], "/") == 0 ? 0 : strlen(field[3]);
		if (strncmp(path, field[3], rootlen) != 0 ||
			(path[rootlen] != '/' && path[rootlen] != '\0'))
			continue;
		snprintf(dir, size, "%s%s", field[4], path + rootlen);
		snprintf(mount, mount_size, "%s", field[4]);
		found = true;
	}
	free(line);
	fclose(f);
	return found;
}

/* A limit file's value (cgroup_memory_parse_limit), -1 where unreadable. */
static int64_t
read_limit(const char *file)
{
	FILE	   *f = fopen(file, "r");
	char		buf[64];
	int64_t		value = -1;

	if (f == NULL)
		return -1;
	if (fgets(buf, sizeof(buf), f) != NULL)
		value = cgroup_memory_parse_limit(buf);
	fclose(f);
	return value;
}

int
cgroup_memory_limit(const char *proc_cgroup, const char *mountinfo, CgroupMemory *out)
{
	const char *limit_file;
	char		path[CGROUP_PATH_LEN];
	char		dir[CGROUP_PATH_LEN];
	char		mount[CGROUP_PATH_LEN];

	memset(out, 0, sizeof(*out));
	/* the memory controller is in one hierarchy: v1's, if it has it */
	if (cgroup_path(proc_cgroup, 1, path, sizeof(path)) &&
		cgroup_dir(mountinfo, 1, path, dir, sizeof(dir), mount, sizeof(mount)))
	{
		out->version = 1;
		limit_file = "memory.limit_in_bytes";
	}
	else if (cgroup_path(proc_cgroup, 2, path, sizeof(path)) &&
			 cgroup_dir(mountinfo, 2, path, dir, sizeof(dir), mount, sizeof(mount)))
	{
		out->version = 2;
		limit_file = "memory.max";
	}
	else
		return 0;

	/* the cgroup's directory, then each parent's up to the mount */
	while (strlen(dir) > strlen(mount) && dir[strlen(dir) - 1] == '/')
		dir[strlen(dir) - 1] = '\0';
	for (;;)
	{
		char		file[sizeof(out->file)];
		int64_t		limit;
		char	   *slash;

		snprintf(file, sizeof(file), "%s/%s", dir, limit_file);
		limit = read_limit(file);
		if (limit >= 0 && out->file[0] == '\0')
			snprintf(out->file, sizeof(out->file), "%s", file);
		if (limit > 0 && (out->limit == 0 || (uint64_t) limit < out->limit))
		{
			out->limit = (uint64_t) limit;
			snprintf(out->file, sizeof(out->file), "%s", file);
		}
		if (strlen(dir) <= strlen(mount) || (slash = strrchr(dir, '/')) == NULL)
			break;
		*slash = '\0';
	}
	return out->version;
}
