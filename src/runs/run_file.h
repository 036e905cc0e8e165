/*-------------------------------------------------------------------------
 *
 * run_file.h
 *	  A sorted run's temporary file (run_file.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RUN_FILE_H
#define GPUSORT_RUN_FILE_H

#include "postgres.h"

#include "storage/fd.h"

typedef struct RunFile
{
	File		file;			/* fd.c's temporary file; -1 once closed */
	off_t		size;			/* bytes written or reserved */
} RunFile;

extern void run_file_create(RunFile *rf);
extern void run_file_append(RunFile *rf, const void *data, Size len);
extern off_t run_file_reserve(RunFile *rf, Size len);
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
