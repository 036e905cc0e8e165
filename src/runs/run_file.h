/*-------------------------------------------------------------------------
 *
 * run_file.h
 *	  The temporary file that a sort's runs share, and its space (run_file.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RUN_FILE_H
#define GPUSORT_RUN_FILE_H

#include "postgres.h"

#include "storage/fd.h"

/* bytes of the file, from offset: a run's, or space given back */
typedef struct RunExtent
{
	off_t		offset;
	off_t		len;
} RunExtent;

typedef struct RunFile
{
	File		file;			/* fd.c's temporary file; -1: none open */
	off_t		size;			/* its end: bytes written, reserved or taken */
	off_t		max_size;		/* the most it reached */
	RunExtent  *free;			/* space given back, by offset, none adjacent */
	int			nfree;
	int			maxfree;
	MemoryContext cxt;			/* where free lives */
} RunFile;

extern void run_file_open(RunFile *rf, MemoryContext cxt);
extern off_t run_file_take(RunFile *rf, off_t want, off_t *got);
extern off_t run_file_reserve(RunFile *rf, Size len);
extern void run_file_release(RunFile *rf, off_t offset, off_t len);
extern void run_file_write(RunFile *rf, off_t offset, const void *data, Size len);
extern void run_file_read(RunFile *rf, off_t offset, void *buf, Size len);
extern void run_file_note_read(Size len);
extern void run_file_close(RunFile *rf);

/* errors of the file, named; err is an errno or RUN_FILE_EOF */
#define RUN_FILE_EOF	(-1)
extern void run_file_write_error(RunFile *rf, int err);
extern void run_file_read_error(RunFile *rf, int err);

/* a thread's own descriptor for the file; run_file.c's head says why */
extern int	run_file_thread_fd(RunFile *rf);
extern void run_file_release_thread_fd(int fd);
extern int	run_file_pwrite(int fd, off_t offset, const char *data, Size len);
extern int	run_file_pread(int fd, off_t offset, char *buf, Size len);

#endif							/* GPUSORT_RUN_FILE_H */
