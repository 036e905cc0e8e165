/*-------------------------------------------------------------------------
 *
 * run_file.c
 *	  A sorted run's temporary file: written by the backend, or by a thread
 *	  while the backend goes on loading the next run, and read back by the
 *	  run reader (run_read.c) or the final merge's threads.
 *
 * Each run is one of PostgreSQL's own temporary files (fd.c's
 * OpenTemporaryFile, the layer under BufFile and logtape.c), so that
 * temp_tablespaces, temp_file_limit, log_temp_files and the removal of the
 * file at the end of the transaction (or when it has been read) behave
 * as they do for Sort.  A run is written once, front to back, and read
 * once, front to back, in large pieces: it needs neither BufFile's 8 kB
 * buffer nor logtape.c's recycling of blocks between tapes.
 *
 * A run written in the background (run_write.c) is written by one of the
 * sort's pool threads, which must not call into PostgreSQL.  So the backend
 * first *reserves* the run's whole extent: it writes the extent's last byte
 * through fd.c, which checks temp_file_limit and counts the bytes as
 * PostgreSQL counts a temporary file's growth, raising the error in the
 * backend.  The thread then fills the extent with pwrite() on a duplicate
 * of the file's descriptor, taken as an external descriptor of fd.c
 * (AcquireExternalFD), since fd.c may close and reopen its own descriptors
 * at any time to stay within max_files_per_process.  The duplicate is
 * closed when the write ends or, after an error, when the sort's memory
 * goes (after its threads are joined).  If the file was removed meanwhile
 * (the transaction ended), the duplicate only keeps the removed file's
 * space until it is closed.  The final merge's threads read the runs the
 * same way (run_merge_window.c), the backend counting what they read.
 * Every error of a run's file, the threads' too (which the backend raises
 * for them), names the file, as PostgreSQL's own errors of a temporary
 * file do.
 *
 * What the storage (run.c, run_write.c, run_read.c) and the final merge
 * in the pool threads (run_merge_window.c) call:
 *	- the file: run_file_create, run_file_close;
 *	- the backend's I/O: run_file_append, run_file_read;
 *	- the threads' I/O: run_file_reserve (the extent, in the backend),
 *	  run_file_thread_fd and run_file_release_thread_fd (their
 *	  descriptor), run_file_pwrite, run_file_pread, and run_file_note_read
 *	  (what they read, counted by the backend);
 *	- the errors, raised in the backend: run_file_write_error,
 *	  run_file_read_error.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "commands/tablespace.h"
#include "executor/instrument.h"
#include "utils/wait_event.h"

#include "runs/run_file.h"

/* fd.c takes an int amount before PostgreSQL 16: write and read in pieces */
#define RUN_FILE_IO_MAX		((Size) 1024 * 1024 * 1024)

/* blocks of BLCKSZ that n bytes touch, for EXPLAIN (BUFFERS)' temp counts */
static inline int64
blocks_of(off_t n)
{
	return (int64) ((n + BLCKSZ - 1) / BLCKSZ);
}

/* A new, empty run file in a temporary tablespace, as Sort's tapes are. */
void
run_file_create(RunFile *rf)
{
	PrepareTempTablespaces();
	rf->file = OpenTemporaryFile(false);
	rf->size = 0;
}

/*
 * The errors of a run's file, worded as buffile.c words a temporary file's
 * (the layer under Sort's tapes): with the file's path, so that a full
 * temporary tablespace or a file size limit is found from the message.
 * err is the errno of the failure, a thread's too (run_file_pwrite,
 * run_file_pread), or RUN_FILE_EOF where the file ended before the data.
 */
void
run_file_write_error(RunFile *rf, int err)
{
	errno = err;
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not write to file \"%s\": %m", FilePathName(rf->file))));
}

void
run_file_read_error(RunFile *rf, int err)
{
	if (err == RUN_FILE_EOF)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not read from file \"%s\": unexpected end of file",
						FilePathName(rf->file))));
	errno = err;
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not read from file \"%s\": %m", FilePathName(rf->file))));
}

/*
 * A short write goes on from where it stopped, as buffile.c's does, so that
 * the error is the one the next write meets (EFBIG past RLIMIT_FSIZE, ENOSPC
 * on a full disk); one that writes nothing without an error means the disk
 * is full.
 */
static void
write_at(RunFile *rf, off_t offset, const char *data, Size len)
{
	while (len > 0)
	{
		Size		piece = Min(len, RUN_FILE_IO_MAX);
		ssize_t		written;

		errno = 0;
		written = FileWrite(rf->file, (char *) data, piece, offset,
							WAIT_EVENT_BUFFILE_WRITE);
		if (written <= 0)
			run_file_write_error(rf, written == 0 || errno == 0 ? ENOSPC : errno);
		data += written;
		offset += written;
		len -= written;
	}
}

/* Append len bytes from the backend. */
void
run_file_append(RunFile *rf, const void *data, Size len)
{
	off_t		before = rf->size;

	write_at(rf, rf->size, data, len);
	rf->size += len;
	pgBufferUsage.temp_blks_written += blocks_of(rf->size) - blocks_of(before);
}

/*
 * Reserve the next len bytes for a thread to write, and return where they
 * start.  The extent's last byte is written now: fd.c then checks
 * temp_file_limit for the whole extent and counts it, here in the backend.
 */
off_t
run_file_reserve(RunFile *rf, Size len)
{
	off_t		start = rf->size;
	char		zero = 0;

	if (len == 0)
		return start;
	write_at(rf, start + len - 1, &zero, 1);
	rf->size += len;
	pgBufferUsage.temp_blks_written += blocks_of(rf->size) - blocks_of(start);
	return start;
}

/* Count len bytes read by a thread, for EXPLAIN (BUFFERS), in the backend. */
void
run_file_note_read(Size len)
{
	pgBufferUsage.temp_blks_read += blocks_of(len);
}

/* Read exactly len bytes at offset; the file must hold them. */
void
run_file_read(RunFile *rf, off_t offset, void *buf, Size len)
{
	char	   *p = buf;

	run_file_note_read(len);
	while (len > 0)
	{
		Size		piece = Min(len, RUN_FILE_IO_MAX);
		ssize_t		got = FileRead(rf->file, p, piece, offset,
								   WAIT_EVENT_BUFFILE_READ);

		if (got < 0)
			run_file_read_error(rf, errno);
		if (got == 0)
			run_file_read_error(rf, RUN_FILE_EOF);
		p += got;
		offset += got;
		len -= got;
	}
}

/* Close the file, which removes it (and logs it under log_temp_files). */
void
run_file_close(RunFile *rf)
{
	if (rf->file >= 0)
		FileClose(rf->file);
	rf->file = -1;
}

/*
 * A descriptor of the file for a thread's pwrite() or pread(): a
 * duplicate, counted as an external descriptor of fd.c.  -1 if the backend
 * may open no more descriptors; the caller then does the I/O itself.
 */
int
run_file_thread_fd(RunFile *rf)
{
	int			fd;

	if (!AcquireExternalFD())
		return -1;
	/* FileGetRawDesc does not reopen a file that fd.c closed: FileSize does */
	if (FileSize(rf->file) < 0)
		fd = -1;
	else
		fd = dup(FileGetRawDesc(rf->file));
	if (fd < 0)
		ReleaseExternalFD();
	return fd;
}

void
run_file_release_thread_fd(int fd)
{
	if (fd >= 0)
	{
		close(fd);
		ReleaseExternalFD();
	}
}

/*
 * Write len bytes at offset with a thread's descriptor.  Calls nothing of
 * PostgreSQL: returns 0, or the errno of the failure (ENOSPC for a short
 * write without one).
 */
int
run_file_pwrite(int fd, off_t offset, const char *data, Size len)
{
	while (len > 0)
	{
		ssize_t		written = pwrite(fd, data, Min(len, RUN_FILE_IO_MAX), offset);

		if (written < 0)
		{
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (written == 0)
			return ENOSPC;
		data += written;
		offset += written;
		len -= written;
	}
	return 0;
}

/*
 * Read exactly len bytes at offset with a thread's descriptor.  Calls
 * nothing of PostgreSQL: returns 0, or the errno of the failure
 * (RUN_FILE_EOF where the file ends first).  The backend counts the bytes
 * (run_file_note_read).
 */
int
run_file_pread(int fd, off_t offset, char *buf, Size len)
{
	while (len > 0)
	{
		ssize_t		got = pread(fd, buf, Min(len, RUN_FILE_IO_MAX), offset);

		if (got < 0)
		{
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (got == 0)
			return RUN_FILE_EOF;
		buf += got;
		offset += got;
		len -= got;
	}
	return 0;
}
