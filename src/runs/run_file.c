/*-------------------------------------------------------------------------
 *
 * run_file.c
 *	  The temporary file that a sort's runs share, and its space: written by
 *	  the backend, or by a thread while the backend goes on loading the next
 *	  run, and read back by the run reader (run_read.c) or the final merge's
 *	  threads.
 *
 * A sort's runs lie in one of PostgreSQL's own temporary files (fd.c's
 * OpenTemporaryFile, the layer under BufFile and logtape.c), so that
 * temp_tablespaces, temp_file_limit, log_temp_files and the removal of the
 * file at the end of the transaction behave as they do for Sort, whose
 * tapes share one BufFile; a killed backend leaves one file.  A run is a
 * list of extents of the file (run.h), written front to back and read
 * front to back, in large pieces: it needs no BufFile's 8 kB buffer.  As
 * logtape.c recycles the blocks a tape has read, the space a run has been
 * read from is given back (run_file_release) and taken again by the runs
 * written next (run_file_take, run_file_reserve), first the lowest, so that
 * a merge pass writes its output where its inputs were and the file grows
 * only where no space given back is left: the sort's disk is the file's
 * end at its furthest, as Sort's is its tapes' blocks.  The space given
 * back is a list of extents by offset, adjacent ones joined, and one that
 * reaches the file's end shortens it.
 *
 * A run written in the background (run_write.c) is written by one of the
 * sort's pool threads, which must not call into PostgreSQL.  So the backend
 * first *reserves* the run's whole extent: in space given back, or at the
 * file's end, where it writes the extent's last byte through fd.c, which
 * checks temp_file_limit and counts the bytes as PostgreSQL counts a
 * temporary file's growth, raising the error in the backend.  The thread
 * then fills the extent with pwrite() on a duplicate of the file's
 * descriptor, taken as an external descriptor of fd.c (AcquireExternalFD),
 * since fd.c may close and reopen its own descriptors at any time to stay
 * within max_files_per_process.  The duplicate is closed when the write
 * ends or, after an error, when the sort's memory goes (after its threads
 * are joined).  If the file was removed meanwhile (the transaction ended),
 * the duplicate only keeps the removed file's space until it is closed.
 * The final merge's threads read the runs the same way
 * (run_merge_window.c), the backend counting what they read.  No space a
 * thread reads or writes is taken again meanwhile, so that no thread's
 * bytes are written over: a run written behind is finished before the next
 * run is begun, and the one thing written while the final merge's threads
 * read, the random-access result (run_result.c), takes only what the
 * backend gave back once they had read it to its end.
 * Every error of the file, the threads' too (which
 * the backend raises for them), names the file, as PostgreSQL's own errors
 * of a temporary file do.
 *
 * What the storage (run.c, run_write.c, run_read.c) and the final merge
 * in the pool threads (run_merge_window.c) call:
 *	- the file: run_file_open, run_file_close;
 *	- its space: run_file_take (a piece, for the backend's writes),
 *	  run_file_reserve (an extent, for a thread's), run_file_release;
 *	- the backend's I/O: run_file_write, run_file_read;
 *	- the threads' I/O: run_file_thread_fd and run_file_release_thread_fd
 *	  (their descriptor), run_file_pwrite, run_file_pread, and
 *	  run_file_note_read (what they read, counted by the backend);
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

/*
 * EXPLAIN (BUFFERS)' temp counts: the bytes read and written, in blocks of
 * BLCKSZ, as BufFile counts them, whatever the size of each read or write
 * (the bytes short of a block are carried to the next).
 */
static Size uncounted_read;
static Size uncounted_written;

static void
count_blocks(int64 *counter, Size *uncounted, Size len)
{
	*uncounted += len;
	*counter += *uncounted / BLCKSZ;
	*uncounted %= BLCKSZ;
}

/*
 * The sort's file, new and empty, in a temporary tablespace, as Sort's tapes
 * are; the list of its space given back lives in cxt.
 */
void
run_file_open(RunFile *rf, MemoryContext cxt)
{
	PrepareTempTablespaces();
	rf->file = OpenTemporaryFile(false);
	rf->size = 0;
	rf->max_size = 0;
	rf->nfree = 0;
	if (rf->free == NULL)
	{
		rf->maxfree = 16;
		rf->free = MemoryContextAlloc(cxt, sizeof(RunExtent) * rf->maxfree);
	}
	rf->cxt = cxt;
}

/* space given back smaller than this is not taken again until it grows */
#define RUN_FILE_PIECE_MIN	((off_t) BLCKSZ)

/* Take n bytes from the start of given-back extent i. */
static off_t
take_free(RunFile *rf, int i, off_t n)
{
	off_t		offset = rf->free[i].offset;

	rf->free[i].offset += n;
	rf->free[i].len -= n;
	if (rf->free[i].len == 0)
	{
		rf->nfree--;
		memmove(&rf->free[i], &rf->free[i + 1],
				sizeof(RunExtent) * (rf->nfree - i));
	}
	return offset;
}

/*
 * A piece of the file for the backend to write next, of want bytes or fewer
 * (*got): the lowest space given back, or else want bytes at the file's end,
 * which grows through fd.c as the backend writes them (run_file_write).
 * What the writer does not fill it gives back.
 */
off_t
run_file_take(RunFile *rf, off_t want, off_t *got)
{
	off_t		offset;

	for (int i = 0; i < rf->nfree; i++)
	{
		if (rf->free[i].len >= RUN_FILE_PIECE_MIN)
		{
			*got = Min(want, rf->free[i].len);
			return take_free(rf, i, *got);
		}
	}
	offset = rf->size;
	rf->size += want;
	*got = want;
	return offset;
}

/*
 * The errors of the sort's file, worded as buffile.c words a temporary file's
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

/* Write len bytes at offset, from the backend, in space taken. */
void
run_file_write(RunFile *rf, off_t offset, const void *data, Size len)
{
	if (len == 0)
		return;
	write_at(rf, offset, data, len);
	rf->max_size = Max(rf->max_size, offset + (off_t) len);
	count_blocks(&pgBufferUsage.temp_blks_written, &uncounted_written, len);
}

/*
 * Reserve len contiguous bytes for a thread to write, and return where they
 * start: in the lowest space given back that holds them, or at the file's
 * end, whose last byte is written now: fd.c then checks temp_file_limit for
 * the whole extent and counts it, here in the backend.
 */
off_t
run_file_reserve(RunFile *rf, Size len)
{
	off_t		start = rf->size;
	char		zero = 0;

	if (len == 0)
		return start;
	for (int i = 0; i < rf->nfree; i++)
	{
		if (rf->free[i].len >= (off_t) len)
			return take_free(rf, i, len);
	}
	write_at(rf, start + len - 1, &zero, 1);
	rf->size += len;
	rf->max_size = Max(rf->max_size, rf->size);
	count_blocks(&pgBufferUsage.temp_blks_written, &uncounted_written, len);
	return start;
}

/*
 * Give back len bytes at offset, which a run has been read from or a writer
 * did not fill, to be taken again.  Space that reaches the file's end
 * shortens it instead.
 */
void
run_file_release(RunFile *rf, off_t offset, off_t len)
{
	int			lo = 0,
				hi = rf->nfree;

	if (len <= 0)
		return;
	Assert(offset + len <= rf->size);
	if (offset + len == rf->size)
	{
		rf->size = offset;
		/* adjacent extents are joined: only the last may reach the end now */
		if (rf->nfree > 0 &&
			rf->free[rf->nfree - 1].offset + rf->free[rf->nfree - 1].len == rf->size)
			rf->size = rf->free[--rf->nfree].offset;
		return;
	}
	/* the first extent past offset */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (rf->free[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	Assert(lo == rf->nfree || offset + len <= rf->free[lo].offset);
	Assert(lo == 0 || rf->free[lo - 1].offset + rf->free[lo - 1].len <= offset);
	if (lo > 0 && rf->free[lo - 1].offset + rf->free[lo - 1].len == offset)
	{
		/* joins the one before, and maybe the one after too */
		rf->free[lo - 1].len += len;
		if (lo < rf->nfree && offset + len == rf->free[lo].offset)
		{
			rf->free[lo - 1].len += rf->free[lo].len;
			rf->nfree--;
			memmove(&rf->free[lo], &rf->free[lo + 1],
					sizeof(RunExtent) * (rf->nfree - lo));
		}
		return;
	}
	if (lo < rf->nfree && offset + len == rf->free[lo].offset)
	{
		rf->free[lo].offset = offset;
		rf->free[lo].len += len;
		return;
	}
	if (rf->nfree == rf->maxfree)
	{
		rf->maxfree *= 2;
		rf->free = repalloc(rf->free, sizeof(RunExtent) * rf->maxfree);
	}
	memmove(&rf->free[lo + 1], &rf->free[lo], sizeof(RunExtent) * (rf->nfree - lo));
	rf->free[lo].offset = offset;
	rf->free[lo].len = len;
	rf->nfree++;
}

/* Count len bytes read by a thread, for EXPLAIN (BUFFERS), in the backend. */
void
run_file_note_read(Size len)
{
	count_blocks(&pgBufferUsage.temp_blks_read, &uncounted_read, len);
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

/*
 * Close the file, which removes it (and logs it under log_temp_files); its
 * space goes with it.
 */
void
run_file_close(RunFile *rf)
{
	if (rf->file >= 0)
		FileClose(rf->file);
	rf->file = -1;
	rf->size = 0;
	rf->nfree = 0;
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
