/*-------------------------------------------------------------------------
 *
 * hostmem.c
 *	  Large host memory for a sort, kept mapped between sorts.
 *
 * A sort of 10M rows writes about a gigabyte of fresh memory: the tuple
 * arena, the tuple pointers, the order and the CPU engine's workspace.  Memory
 * fresh from the kernel is zeroed page by page on first touch, the largest
 * single cost of loading the tuples (bench/results/first-sort.md measures
 * it), and glibc hands blocks this large back to the kernel with munmap when
 * they are freed, so every sort would pay for it again.
 *
 * So the large blocks are mapped here, owned by a memory context (the sort's
 * context), and when that context is reset or deleted they go to a per-backend
 * cache of at most gpusort.host_cache bytes instead of back to the kernel.
 * Cached blocks are marked MADV_FREE: the kernel may still take their pages
 * when it is short of memory (the next use then faults them in again, zeroed),
 * but until then the next sort reuses them without a fault.  A request may
 * take a cached block up to twice its size, whole, so that the next sort's
 * larger request still finds it; it holds, and counts against its budget,
 * only what it asked for: the rest of the block stays MADV_FREE, as cache
 * the kernel may take (else a last batch served from the first batch's
 * blocks would count up to twice its arrays, over the sort's budget).  An array
 * that doubles as it fills grows with hostmem_grow, which moves its pages
 * rather than copying them.
 *
 * Blocks read or written at random ask for transparent huge pages
 * (HOSTMEM_HUGE): the tuple arena, which the emit phase reads in sorted
 * order, the tuple pointers, which the gather reads so, and the CPU
 * engine's workspace, over which the radix passes scatter; with 4 kB pages
 * each of those accesses misses the TLB.  Arrays written and read in order
 * (the permutation, the sorted pointers and keys, the key chunks) take
 * 4 kB pages: huge pages gain them nothing, and cost more on first touch
 * where the host does not back the guest's free huge pages.  A virtual
 * machine whose balloon reports free memory to the host (free page
 * reporting, in whole huge pages, seconds after they are freed) has the
 * host zero each huge page it takes too, several times slower than its
 * 4 kB pages, taken first from memory never reported, fault in
 * (bench/results/first-sort.md).  A session's first sort finds no cached
 * block and pays that for each huge page; the arena's blocks, most of
 * them, are faulted in ahead of their use by the pool threads while the
 * backend loads (batch_load.c).  The cache keeps the two kinds of block
 * apart, so that a warm sort's arena still has huge pages.
 *
 * The blocks are not part of the owner's memory context (which cannot hold
 * foreign blocks), so pg_backend_memory_contexts does not count them;
 * gpusort_backend_memory() reports them, and the sort's EXPLAIN figure
 * adds them (hostmem_owned), with the peak of those a sort takes only while
 * it sorts, such as the CPU engine's workspace (hostmem_peak).
 *
 * The cache holds no PostgreSQL objects, only mappings, so it needs no
 * cleanup at transaction end; error recovery reaches it through the owning
 * context's reset callback like any other memory.
 *
 * What the others call:
 *	- blocks, for a batch and the CPU and GPU engines: hostmem_alloc,
 *	  hostmem_reserve (an array's room reserved whole), hostmem_grow,
 *	  hostmem_free;
 *	- the arena's blocks faulted in ahead (batch_load.c): hostmem_fresh,
 *	  hostmem_populate;
 *	- what is held: hostmem_owned, hostmem_peak_reset and hostmem_peak (a
 *	  sort's peak, sort.c), hostmem_cached (views.c);
 *	- hostmem_assign_cache_limit, the assign hook of gpusort.host_cache,
 *	  which _PG_init hands to the settings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/mman.h>
#include <unistd.h>

#include "lib/ilist.h"
#include "utils/memutils.h"

#include "support/hostmem.h"
#include "support/settings.h"

/* huge blocks are mapped in whole huge pages, for THP to back */
#define HOSTMEM_ALIGN		HOSTMEM_HUGE_PAGE

typedef struct HostBlock
{
	dlist_node	node;
	char	   *base;
	Size		size;			/* mapped bytes, a multiple of HOSTMEM_ALIGN
								 * for huge blocks, of pages for others */
	Size		used;			/* of them, what the owner asked for */
	bool		huge;			/* asked for transparent huge pages */
	bool		fresh;			/* never used: no page faulted in yet */
	MemoryContext owner;		/* NULL while cached */
} HostBlock;

/* blocks owned by some context, and cached blocks, most recent first */
static dlist_head in_use_blocks = DLIST_STATIC_INIT(in_use_blocks);
static dlist_head cached_blocks = DLIST_STATIC_INIT(cached_blocks);
static Size cached_bytes = 0;

/*
 * bytes that in_use_blocks' owners asked for, and their most since
 * hostmem_peak_reset(): a sort's workspace lives only while it sorts, and
 * its EXPLAIN figure is the peak
 */
static Size in_use_bytes = 0;
static Size peak_in_use_bytes = 0;

static void
unmap_block(HostBlock *block)
{
	(void) munmap(block->base, block->size);
	pfree(block);
}

/* keep the cache within limit bytes: the oldest blocks go first */
static void
trim_cache(Size limit)
{
	while (cached_bytes > limit && !dlist_is_empty(&cached_blocks))
	{
		HostBlock  *oldest = dlist_tail_element(HostBlock, node, &cached_blocks);

		dlist_delete(&oldest->node);
		cached_bytes -= oldest->size;
		unmap_block(oldest);
	}
}

static void
release_block(HostBlock *block)
{
	dlist_delete(&block->node);
	block->owner = NULL;
	in_use_bytes -= block->used;
	block->used = 0;
	block->fresh = false;
#ifdef MADV_FREE
	(void) madvise(block->base, block->size, MADV_FREE);
#endif
	dlist_push_head(&cached_blocks, &block->node);
	cached_bytes += block->size;
	trim_cache((Size) gpusort_host_cache_kb * 1024);
}

/* the owning context is being reset or deleted: its blocks go to the cache */
static void
release_owner_blocks(void *arg)
{
	MemoryContext owner = (MemoryContext) arg;
	dlist_mutable_iter iter;

	dlist_foreach_modify(iter, &in_use_blocks)
	{
		HostBlock  *block = dlist_container(HostBlock, node, iter.cur);

		if (block->owner == owner)
			release_block(block);
	}
}

static bool
owner_has_blocks(MemoryContext owner)
{
	dlist_iter	iter;

	dlist_foreach(iter, &in_use_blocks)
	{
		if (dlist_container(HostBlock, node, iter.cur)->owner == owner)
			return true;
	}
	return false;
}

/*
 * the smallest cached block of the kind asked for that fits without wasting
 * more than half of it
 */
static HostBlock *
take_cached_block(Size size, bool huge)
{
	HostBlock  *best = NULL;
	dlist_iter	iter;

	dlist_foreach(iter, &cached_blocks)
	{
		HostBlock  *block = dlist_container(HostBlock, node, iter.cur);

		if (block->huge == huge &&
			block->size >= size && block->size / 2 <= size &&
			(best == NULL || block->size < best->size))
			best = block;
	}
	if (best)
	{
		dlist_delete(&best->node);
		cached_bytes -= best->size;
	}
	return best;
}

/*
 * map size bytes; for huge pages (size then a multiple of them), at a
 * huge-page boundary
 */
static HostBlock *
map_block(Size size, bool huge)
{
	Size		mapped = huge ? size + HOSTMEM_ALIGN : size;
	char	   *start;
	char	   *base;
	HostBlock  *block;

	block = MemoryContextAllocExtended(TopMemoryContext, sizeof(HostBlock),
									   MCXT_ALLOC_NO_OOM);
	if (block == NULL)
		return NULL;
	start = mmap(NULL, mapped, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (start == MAP_FAILED)
	{
		pfree(block);
		return NULL;
	}
	base = huge ? (char *) TYPEALIGN(HOSTMEM_ALIGN, start) : start;
	if (base > start)
		(void) munmap(start, base - start);
	if (base + size < start + mapped)
		(void) munmap(base + size, (start + mapped) - (base + size));
#ifdef MADV_HUGEPAGE
	if (huge)
		(void) madvise(base, size, MADV_HUGEPAGE);
#endif
	block->base = base;
	block->size = size;
	block->huge = huge;
	block->fresh = true;
	return block;
}

/*
 * size bytes, MAXALIGNed, that live until owner is reset or deleted, or until
 * hostmem_free; NULL when there is no memory to give, for the caller to fall
 * back as it would on a failed palloc.  flags: HOSTMEM_HUGE for memory read
 * or written at random.  Requests under HOSTMEM_MIN_REQUEST are simply
 * palloc'd in owner.
 */
void *
hostmem_alloc(MemoryContext owner, Size size, int flags)
{
	return hostmem_reserve(owner, size, size, flags);
}

/*
 * size bytes as hostmem_alloc gives them, at the start of a block of room
 * bytes, into which hostmem_grow grows them without moving them.  An array
 * that doubles as it fills takes at once the room that the sort expects it
 * to need: the first sort faults its pages in as the array fills, as it
 * would have, and a warm sort finds the whole block in the cache rather
 * than growing into fresh memory at each doubling.  Only what the array
 * holds counts, in hostmem_owned and the sort's budget.
 */
void *
hostmem_reserve(MemoryContext owner, Size size, Size room, int flags)
{
	HostBlock  *block;
	bool		huge;
	Size		unit;

	if (size < HOSTMEM_MIN_REQUEST)
		return MemoryContextAllocExtended(owner, Max(size, 1),
										  MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	room = Max(room, size);

	/* whole huge pages from 2 MB up where asked for, whole pages otherwise */
	huge = (flags & HOSTMEM_HUGE) != 0 && room >= HOSTMEM_ALIGN;
	unit = huge ? HOSTMEM_ALIGN : (Size) sysconf(_SC_PAGESIZE);
	size = TYPEALIGN(unit, size);
	room = TYPEALIGN(unit, room);
	block = take_cached_block(room, huge);
	if (block == NULL)
	{
		/*
		 * Unmap cached blocks that did not fit, as far as needed to keep
		 * what this backend maps beyond its sorts' needs under
		 * gpusort.host_cache.
		 */
		Size		limit = (Size) gpusort_host_cache_kb * 1024;

		trim_cache(limit > room ? limit - room : 0);
		block = map_block(room, huge);
		if (block == NULL)
			return NULL;
	}

	if (!owner_has_blocks(owner))
	{
		MemoryContextCallback *cb;

		cb = MemoryContextAllocExtended(owner, sizeof(MemoryContextCallback),
										MCXT_ALLOC_NO_OOM);
		if (cb == NULL)
		{
			dlist_push_head(&cached_blocks, &block->node);
			cached_bytes += block->size;
			return NULL;
		}
		cb->func = release_owner_blocks;
		cb->arg = owner;
		MemoryContextRegisterResetCallback(owner, cb);
	}
	block->owner = owner;
	block->used = size;
	dlist_push_head(&in_use_blocks, &block->node);
	in_use_bytes += block->used;
	peak_in_use_bytes = Max(peak_in_use_bytes, in_use_bytes);
	return block->base;
}

/* the block in use that begins at p, or NULL */
static HostBlock *
in_use_block_at(void *p)
{
	dlist_iter	iter;

	dlist_foreach(iter, &in_use_blocks)
	{
		HostBlock  *block = dlist_container(HostBlock, node, iter.cur);

		if (block->base == p)
			return block;
	}
	return NULL;
}

/*
 * Grow the block that hostmem_alloc gave for oldsize bytes at p to hold
 * newsize bytes, keeping its contents; returns where it now lies (p, or
 * elsewhere), or NULL, with the block untouched, where it cannot grow so
 * (a palloc'd request, or no mremap), for the caller to allocate anew and
 * copy.
 *
 * An array that doubles as it fills (the batch's tuple pointers) would
 * otherwise copy all it holds at each doubling, into fresh memory the
 * kernel zeroes first: about a gigabyte of each at 100M rows, in the
 * backend, while the load waits.  mremap moves the pages instead, of a
 * huge block (others are copied by the caller).  The block moves to a
 * huge-page boundary reserved beforehand, so that its huge pages stay
 * whole; the part added faults in as it is written, as any new block does.
 */
void *
hostmem_grow(void *p, Size oldsize, Size newsize)
{
#if defined(MREMAP_MAYMOVE) && defined(MREMAP_FIXED)
	HostBlock  *block;
	char	   *reserved;
	char	   *base;
	void	   *moved;

	if (oldsize < HOSTMEM_MIN_REQUEST)
		return NULL;
	block = in_use_block_at(p);
	if (block == NULL || !block->huge)
		return NULL;
	newsize = TYPEALIGN(HOSTMEM_ALIGN, newsize);
	if (newsize <= block->size)
	{
		/* the block taken from the cache had room: it is used further */
		if (newsize > block->used)
		{
			in_use_bytes += newsize - block->used;
			peak_in_use_bytes = Max(peak_in_use_bytes, in_use_bytes);
			block->used = newsize;
		}
		return p;
	}

	/* an aligned place for the grown block, which mremap then takes over */
	reserved = mmap(NULL, newsize + HOSTMEM_ALIGN, PROT_NONE,
					MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (reserved == MAP_FAILED)
		return NULL;
	base = (char *) TYPEALIGN(HOSTMEM_ALIGN, reserved);
	moved = mremap(block->base, block->size, newsize,
				   MREMAP_MAYMOVE | MREMAP_FIXED, base);
	if (base > reserved)
		(void) munmap(reserved, base - reserved);
	if (moved == MAP_FAILED)
	{
		(void) munmap(base, reserved + newsize + HOSTMEM_ALIGN - base);
		return NULL;
	}
	if (base + newsize < reserved + newsize + HOSTMEM_ALIGN)
		(void) munmap(base + newsize,
					  (reserved + newsize + HOSTMEM_ALIGN) - (base + newsize));

	in_use_bytes += newsize - block->used;
	peak_in_use_bytes = Max(peak_in_use_bytes, in_use_bytes);
	block->base = base;
	block->size = newsize;
	block->used = newsize;
	return base;
#else
	return NULL;
#endif
}

/*
 * Whether the block that hostmem_alloc gave at p was mapped for it, so that
 * none of its pages is faulted in yet (not one taken from the cache).
 */
bool
hostmem_fresh(void *p)
{
	HostBlock  *block = in_use_block_at(p);

	return block != NULL && block->fresh;
}

/*
 * Fault in len bytes at p, part of a block of hostmem_alloc, zeroed as a
 * write would, without writing: safe while the owner writes into the same
 * pages, as the pool threads do it for a block that the backend fills next.
 * Calls nothing of PostgreSQL, so that a pool thread may run it.  False
 * where the kernel cannot (MADV_POPULATE_WRITE came with Linux 5.14): the
 * pages then fault in as they are written.
 */
bool
hostmem_populate(void *p, Size len)
{
#ifdef MADV_POPULATE_WRITE
	return madvise(p, len, MADV_POPULATE_WRITE) == 0;
#else
	return false;
#endif
}

/* give back size bytes from hostmem_alloc before their owner goes */
void
hostmem_free(void *p, Size size)
{
	HostBlock  *block;

	if (size < HOSTMEM_MIN_REQUEST)
	{
		pfree(p);
		return;
	}

	block = in_use_block_at(p);
	if (block == NULL)
		elog(ERROR, "gpusort: freeing host memory that was not allocated here");
	release_block(block);
}

/* assign hook of gpusort.host_cache: a smaller cache takes effect at once */
void
hostmem_assign_cache_limit(int newval_kb, void *extra)
{
	trim_cache((Size) newval_kb * 1024);
}

/* bytes that owner's blocks hold (what it asked for); all owners' if NULL */
Size
hostmem_owned(MemoryContext owner)
{
	Size		bytes = 0;
	dlist_iter	iter;

	if (owner == NULL)
		return in_use_bytes;
	dlist_foreach(iter, &in_use_blocks)
	{
		HostBlock  *block = dlist_container(HostBlock, node, iter.cur);

		if (block->owner == owner)
			bytes += block->used;
	}
	return bytes;
}

/*
 * Start measuring the most bytes of blocks in use at once from now;
 * returns what is in use now.
 */
Size
hostmem_peak_reset(void)
{
	peak_in_use_bytes = in_use_bytes;
	return in_use_bytes;
}

/* the most bytes of blocks in use at once since hostmem_peak_reset() */
Size
hostmem_peak(void)
{
	return peak_in_use_bytes;
}

/* bytes this backend keeps mapped for its next sorts */
Size
hostmem_cached(void)
{
	return cached_bytes;
}
