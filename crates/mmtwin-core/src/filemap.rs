//! The page cache (mm/filemap.c, mm/truncate.c): a two-level radix tree per
//! inode (chunks of 64 slots from a shared pool), add_to_page_cache_lru,
//! __remove_from_page_cache, buffered write (generic_perform_write), read
//! with readahead, truncate_inode_pages and invalidate_mapping_pages.

use crate::alloc::gfp;
use crate::block::Submit;
use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::page::*;
use crate::page_alloc::AllocRes;
use crate::sched::{Next, Wq};
use crate::spec::FsKind;
use crate::vmstat::*;

const CHUNK: usize = 64;

pub struct PageCache {
    chunks: Vec<[u32; CHUNK]>,
    used: Vec<u8>,
    /// Dirty pages per chunk: the radix tree's PAGECACHE_TAG_DIRTY, so
    /// writeback finds dirty pages without walking clean ones.
    dirty: Vec<u8>,
    free: Vec<u32>,
}

impl Default for PageCache {
    fn default() -> Self {
        Self::new()
    }
}

impl PageCache {
    pub fn new() -> PageCache {
        PageCache { chunks: Vec::new(), used: Vec::new(), dirty: Vec::new(), free: Vec::new() }
    }
    pub fn state_bytes(&self) -> u64 {
        (self.chunks.len() * (CHUNK * 4 + 2) + self.free.len() * 4) as u64
    }
}

/// Readahead window (read_ahead_kb = 128 KiB).
/// filemap_fault stops reading around a fault after this many more misses than hits.
const MMAP_LOTSAMISS: u32 = 100;

/// The outcome of a file operation on one page.
pub enum PageOp {
    Done,
    Sleep(Next),
    Oom,
}

/// What a task does when an allocation did not give it memory.
pub fn alloc_op(r: AllocRes) -> PageOp {
    match r {
        AllocRes::Sleep(n) => PageOp::Sleep(n),
        _ => PageOp::Oom,
    }
}

impl Kernel {
    pub fn find_get_page(&self, ino: u32, index: u64) -> Option<u32> {
        let i = &self.fs.inodes[ino as usize];
        let c = (index as usize) / CHUNK;
        let id = *i.radix.get(c)?;
        if id == NIL {
            return None;
        }
        let p = self.pc.chunks[id as usize][(index as usize) % CHUNK];
        (p != NIL).then_some(p)
    }

    /// Full check: every chunk's dirty tag count equals its pages' dirty flags.
    pub fn check_radix_tags(&self) -> Result<(), String> {
        for (ino, i) in self.fs.inodes.iter().enumerate() {
            for (c, &id) in i.radix.iter().enumerate() {
                if id == NIL {
                    continue;
                }
                let id = id as usize;
                let pages = self.pc.chunks[id].iter().filter(|&&p| p != NIL);
                let dirty = pages.clone().filter(|&&p| self.mm.pages.test(p, PG_DIRTY)).count();
                let used = pages.count();
                let bit = i.dirty_chunks.get(c / 64).is_some_and(|w| w & (1 << (c % 64)) != 0);
                if bit != (dirty > 0) {
                    return Err(format!("inode {ino} radix chunk {c}: {dirty} dirty pages but the chunk bit is {bit}"));
                }
                if dirty != self.pc.dirty[id] as usize || used != self.pc.used[id] as usize {
                    return Err(format!(
                        "inode {ino} radix chunk {c}: {used} pages ({dirty} dirty), the chunk counts {} ({} tagged dirty)",
                        self.pc.used[id], self.pc.dirty[id]
                    ));
                }
            }
        }
        Ok(())
    }

    /// Does the radix chunk holding `index` carry the dirty tag?
    #[inline]
    pub fn radix_chunk_dirty(&self, ino: u32, index: u64) -> bool {
        let c = (index as usize) / CHUNK;
        self.fs.inodes[ino as usize].radix.get(c).is_some_and(|&id| id != NIL && self.pc.dirty[id as usize] > 0)
    }

    /// Tag (+1) or untag (-1) one dirty page in its radix chunk.
    #[inline]
    pub fn radix_tag_dirty(&mut self, ino: u32, index: u64, up: bool) {
        let c = (index as usize) / CHUNK;
        let id = self.fs.inodes[ino as usize].radix[c] as usize;
        let bits = &mut self.fs.inodes[ino as usize].dirty_chunks;
        if up {
            self.pc.dirty[id] += 1;
            if self.pc.dirty[id] == 1 {
                if bits.len() <= c / 64 {
                    bits.resize(c / 64 + 1, 0);
                }
                bits[c / 64] |= 1 << (c % 64);
            }
        } else {
            self.pc.dirty[id] -= 1;
            if self.pc.dirty[id] == 0 {
                bits[c / 64] &= !(1 << (c % 64));
            }
        }
    }

    /// The first index of the first radix chunk at or after the one holding
    /// `index` that carries the dirty tag (u64::MAX if none).
    pub fn next_dirty_chunk(&self, ino: u32, index: u64) -> u64 {
        let bits = &self.fs.inodes[ino as usize].dirty_chunks;
        let c = (index as usize) / CHUNK;
        let mut w = c / 64;
        if w >= bits.len() {
            return u64::MAX;
        }
        let mut word = bits[w] & (u64::MAX << (c % 64));
        loop {
            if word != 0 {
                let chunk = w * 64 + word.trailing_zeros() as usize;
                return (chunk * CHUNK) as u64;
            }
            w += 1;
            if w >= bits.len() {
                return u64::MAX;
            }
            word = bits[w];
        }
    }

    /// The first index of the next radix chunk after the one holding `index`.
    #[inline]
    pub fn next_radix_chunk(&self, index: u64) -> u64 {
        (index / CHUNK as u64 + 1) * CHUNK as u64
    }

    fn radix_insert(&mut self, ino: u32, index: u64, p: u32) {
        let c = (index as usize) / CHUNK;
        let radix = &mut self.fs.inodes[ino as usize].radix;
        if radix.len() <= c {
            radix.resize(c + 1, NIL);
        }
        if radix[c] == NIL {
            let id = match self.pc.free.pop() {
                Some(id) => id,
                None => {
                    self.pc.chunks.push([NIL; CHUNK]);
                    self.pc.used.push(0);
                    self.pc.dirty.push(0);
                    (self.pc.chunks.len() - 1) as u32
                }
            };
            self.fs.inodes[ino as usize].radix[c] = id;
        }
        let id = self.fs.inodes[ino as usize].radix[c] as usize;
        self.pc.chunks[id][(index as usize) % CHUNK] = p;
        self.pc.used[id] += 1;
    }

    fn radix_delete(&mut self, ino: u32, index: u64) {
        let c = (index as usize) / CHUNK;
        let id = self.fs.inodes[ino as usize].radix[c] as usize;
        self.pc.chunks[id][(index as usize) % CHUNK] = NIL;
        self.pc.used[id] -= 1;
        if self.pc.used[id] == 0 {
            self.pc.free.push(id as u32);
            self.fs.inodes[ino as usize].radix[c] = NIL;
        }
    }

    /// add_to_page_cache_lru: a new page for (ino, index), on the inactive file list.
    pub fn add_to_page_cache_lru(&mut self, ctx: &mut Ctx, p: u32, zi: usize, ino: u32, index: u64) {
        ctx.sys += self.cost.page_cache_ns;
        self.mm.pages.flags[p as usize] = PG_FILE;
        self.mm.pages.owner[p as usize] = ino;
        self.mm.pages.index[p as usize] = index as u32;
        self.radix_insert(ino, index, p);
        self.fs.inodes[ino as usize].nrpages += 1;
        self.zs_add(zi, Zs::NrFilePages, 1);
        self.mm.census.held -= 1;
        self.lru_cache_add(ctx, p, LRU_INACTIVE_FILE);
    }

    /// __remove_from_page_cache for a page-cache page (no-op otherwise).
    pub fn delete_from_page_cache(&mut self, ctx: &mut Ctx, p: u32) {
        if !self.mm.pages.test(p, PG_FILE) {
            return;
        }
        ctx.sys += self.cost.page_cache_ns;
        self.try_to_free_buffers(ctx, p);
        let ino = self.mm.pages.owner[p as usize];
        let index = self.mm.pages.index[p as usize] as u64;
        if self.mm.pages.test(p, PG_DIRTY) {
            // cancel_dirty_page
            self.clear_page_dirty_for_io(p);
        }
        self.radix_delete(ino, index);
        let zi = self.mm.zone_of(p);
        self.zs_add(zi, Zs::NrFilePages, -1);
        if self.mm.pages.test(p, PG_MAPPED) {
            self.page_remove_rmap(ctx, p);
        }
        self.fs.inodes[ino as usize].nrpages -= 1;
        self.mm.pages.clear(p, PG_FILE);
        self.mm.pages.owner[p as usize] = NIL;
    }

    /// Allocate a page-cache page for (ino, index) on the task's node.
    /// Readers and faults use the mapping's mask (GFP_HIGHUSER_MOVABLE);
    /// writers pass it without __GFP_FS: ext4 and xfs write_begin set
    /// AOP_FLAG_NOFS, so grab_cache_page_write_begin strips it.
    pub fn page_cache_alloc(&mut self, ctx: &mut Ctx, ino: u32, index: u64, g: u32) -> Result<u32, PageOp> {
        let node = ctx.node;
        match self.alloc_pages(ctx, g, 0, node) {
            AllocRes::Page(p, zi) => {
                self.mm.census.held += 1;
                self.add_to_page_cache_lru(ctx, p, zi, ino, index);
                Ok(p)
            }
            AllocRes::Sleep(n) => Err(PageOp::Sleep(n)),
            AllocRes::Oom | AllocRes::Fail => Err(PageOp::Oom),
        }
    }

    /// The mask grab_cache_page_write_begin allocates write()'s pages with.
    /// ext4 (ext4_da_write_begin) and xfs (xfs_vm_write_begin) start their
    /// transaction first and pass AOP_FLAG_NOFS; ext3_write_begin takes the
    /// page before ext3_journal_start, with __GFP_FS, so the zone_reclaim
    /// or direct reclaim it enters may prune the dentry and inode caches.
    pub fn write_begin_gfp(&self) -> u32 {
        if self.fs.kind == FsKind::Ext3 {
            gfp::GFP_HIGHUSER_MOVABLE
        } else {
            gfp::GFP_HIGHUSER_MOVABLE & !gfp::FS
        }
    }

    /// wait_on_page_writeback where a write finds its page: 3.0 and 3.1's
    /// grab_cache_page_write_begin (write(2)) and __block_page_mkwrite (a
    /// write fault on a shared mapping, after it dirtied the page) wait,
    /// holding the page lock, until the page's writeback ends. From 3.9
    /// they wait only on devices that need stable pages
    /// (wait_for_stable_page), which no preset has; 2.6.18's runs write no
    /// files. Some(sleep) while the task must wait; None when the page is
    /// not under writeback, after letting go of the page it waited on.
    pub fn write_wait_on_page_writeback(&mut self, ctx: &Ctx, p: u32) -> Option<PageOp> {
        let pid = ctx.pid as usize;
        let waits = matches!(self.era, crate::spec::Era::V30 | crate::spec::Era::V31);
        if !waits || !self.mm.pages.test(p, PG_WRITEBACK) {
            if std::mem::take(&mut self.kt[pid].stable_wait) {
                self.mm.pages.clear(p, PG_FAULTREF);
            }
            return None;
        }
        if !self.kt[pid].stable_wait {
            self.kt[pid].stable_wait = true;
            self.mm.sim.writeback_waits += 1;
        }
        // The page lock the writer holds meanwhile: reclaim's trylock_page
        // fails on it, and the flusher comes back to it later.
        self.mm.pages.set(p, PG_FAULTREF);
        let zi = self.mm.zone_of(p);
        Some(PageOp::Sleep(Next::Sleep { until: None, wq: Some(Wq::Page(zi)), io: true }))
    }

    /// One page of generic_perform_write: find or create the page, copy
    /// `bytes` into it, dirty it, mark it accessed, and throttle. The task
    /// is inside a buffered write(): __generic_file_aio_write (ext4) and
    /// xfs_file_buffered_aio_write set current->backing_dev_info to the
    /// file's device for it, which lets reclaim in its allocations write to
    /// that device however congested (may_write_to_queue).
    pub fn write_page(&mut self, ctx: &mut Ctx, ino: u32, index: u64, bytes: u64) -> PageOp {
        let pid = ctx.pid as usize;
        let was = std::mem::replace(&mut self.kt[pid].write_bdi, true);
        let op = self.write_page_in_write(ctx, ino, index, bytes);
        self.kt[pid].write_bdi = was;
        op
    }

    fn write_page_in_write(&mut self, ctx: &mut Ctx, ino: u32, index: u64, bytes: u64) -> PageOp {
        // ext4_da_write_begin (3.0) starts its handle before it looks for
        // the page, and holds it through the page's allocation and any
        // sleep there, until ext4_da_write_end (jbd2.rs).
        if self.fs.kind == FsKind::Ext4 {
            if let Err(sleep) = self.journal_start(ctx, crate::jbd2::hold::WRITE) {
                return PageOp::Sleep(sleep);
            }
            // A write that extends the file dirties the inode
            // (ext4_da_write_end's mark_inode_dirty): write access to its
            // table block, which waits while the committing transaction
            // writes that block to the log. The kernel waits after the
            // copy, the engine before the page: the same wait, in the handle.
            if index >= self.fs.inodes[ino as usize].size {
                if let Err(sleep) = self.journal_get_write_access(ctx, &[crate::jbd2::Meta::Itable(ino)]) {
                    return PageOp::Sleep(sleep);
                }
            }
        }
        let op = self.write_page_locked(ctx, ino, index, bytes);
        if !matches!(op, PageOp::Sleep(_)) {
            self.journal_stop(ctx, crate::jbd2::hold::WRITE);
        }
        op
    }

    /// write_page's work inside the handle.
    fn write_page_locked(&mut self, ctx: &mut Ctx, ino: u32, index: u64, bytes: u64) -> PageOp {
        if self.needs_buffers(ino, index) {
            if let Err(r) = self.reserve_buffers(ctx) {
                return alloc_op(r);
            }
        }
        let p = match self.find_get_page(ino, index) {
            Some(p) => {
                if let Some(op) = self.write_wait_on_page_writeback(ctx, p) {
                    return op;
                }
                p
            }
            None => match self.page_cache_alloc(ctx, ino, index, self.write_begin_gfp()) {
                Ok(p) => {
                    self.mm.pages.set(p, PG_UPTODATE);
                    p
                }
                Err(e) => return e,
            },
        };
        if self.fs.kind == FsKind::Ext3 && self.fs.bmap(ino, index) == crate::fs::NO_BLOCK {
            // No delayed allocation: block_write_begin maps the block now
            // (ext3_get_block), next to the file's last one when it can.
            self.fs.alloc_blocks(ino, index, 1);
        }
        self.create_empty_buffers(ctx, p);
        ctx.sys += bytes * self.cost.copy_ns_per_kib / 1024;
        self.mm.cache.stream(ctx.cpu, bytes);
        let i = &mut self.fs.inodes[ino as usize];
        if i.size <= index {
            i.size = index + 1;
            // generic_write_end's mark_inode_dirty for the new i_size
            // (ext4_dirty_inode logs the inode's table block).
            self.journal_dirty_metadata(crate::jbd2::Meta::Itable(ino));
        }
        self.set_page_dirty(ctx, p);
        self.mark_page_accessed(ctx, p);
        PageOp::Done
    }

    /// One page's part of a buffered read (do_generic_file_read): `bytes`
    /// from byte `offset` of page `index`. A cache hit is copied, and marked
    /// accessed only when the read does not continue where the file's last
    /// read ended within the same page (3.0: "when a sequential read
    /// accesses a page several times, only mark it as accessed the first
    /// time"); a miss starts a readahead of the device's window (bdi
    /// ra_pages, from the missing page on; 3.0's ondemand_readahead ramps
    /// up to it, the engine starts there) and sleeps until the page is
    /// read, and the read is retried.
    pub fn read_page(&mut self, ctx: &mut Ctx, ino: u32, index: u64, offset: u64, bytes: u64) -> PageOp {
        if self.find_get_page(ino, index).is_none() {
            let ra = self.max_sane_readahead(ctx.node, self.blk.ra_pages(self.fs.dev, self.page_size));
            match self.page_cache_readahead(ctx, ino, index, index, ra) {
                // Read from a hole without I/O: copy it as a cached page.
                PageOp::Done => {}
                other => return other,
            }
        }
        // Reclaim may have taken the page while the readahead allocated the
        // rest of its window: look it up again (do_generic_file_read's
        // no_cached_page path), as a new step.
        let Some(p) = self.find_get_page(ino, index) else { return PageOp::Sleep(Next::Run) };
        if self.mm.pages.test(p, PG_LOCKED) {
            return self.wait_on_page_read(p);
        }
        self.mm.pages.clear(p, PG_FAULTREF | crate::page::PG_RA_UNUSED | crate::page::PG_RA_HOLE);
        ctx.sys += bytes * self.cost.copy_ns_per_kib / 1024;
        self.mm.cache.stream(ctx.cpu, bytes);
        let ps = self.page_size;
        let prev = self.fs.inodes[ino as usize].ra_prev_pos;
        if prev / ps != index || prev % ps != offset {
            self.mark_page_accessed(ctx, p);
        }
        // prev_index stays this page; prev_offset is where the copy
        // ended, wrapped to 0 at the page's end (as the kernel keeps it).
        self.fs.inodes[ino as usize].ra_prev_pos = index * ps + (offset + bytes) % ps;
        PageOp::Done
    }

    /// max_sane_readahead (3.0): at most half of the local node's inactive
    /// file and free pages, so a window never asks for more than memory can
    /// hold without reclaiming what it just read.
    pub fn max_sane_readahead(&self, node: usize, nr: u64) -> u64 {
        let (mut inactive, mut free) = (0i64, 0i64);
        for zi in self.mm.nodes[node].zones.iter().flatten() {
            let z = &self.mm.zones[*zi as usize];
            inactive += z.vm_stat[Zs::NrInactiveFile as usize];
            free += z.free_pages;
        }
        nr.min((inactive + free).max(0) as u64 / 2)
    }

    /// file_ra_state_init: a new open of `ino` for reading has read nothing yet.
    pub fn file_ra_state_init(&mut self, ino: u32) {
        self.fs.inodes[ino as usize].ra_prev_pos = u64::MAX;
    }

    /// filemap_fault's part for a page not in the cache (or locked): read
    /// it, with 3.0's do_sync_mmap_readahead (a hole reads as a zeroed
    /// page), and sleep until it is uptodate. A fault that finds its page
    /// counts a hit (mmap_miss goes down, do_async_mmap_readahead). A fault
    /// does not mark the page accessed: its pte's young bit does.
    pub fn filemap_fault_page(&mut self, ctx: &mut Ctx, ino: u32, index: u64) -> PageOp {
        let ps = self.page_size;
        if let Some(p) = self.find_get_page(ino, index) {
            if self.mm.pages.test(p, PG_LOCKED) {
                return self.wait_on_page_read(p);
            }
            // A window allocation of this fault that slept may have been
            // overtaken (the page came in meanwhile): a reclaim it was in
            // runs to its end first, and no retry state stays.
            if let Err(next) = self.finish_overtaken_alloc(ctx) {
                return PageOp::Sleep(next);
            }
            self.filemap_fault_hit(ino, index);
            return PageOp::Done;
        }
        let resumed = self.kt[ctx.pid as usize].in_fault;
        // do_sync_mmap_readahead reads around the fault, until misses
        // outnumber hits by MMAP_LOTSAMISS (then only the page itself,
        // page_cache_read). A fault at the page after the last one faulted,
        // just past the last window, reads ahead from here instead: the
        // engine's stand-in for 3.0's asynchronous readahead (PG_readahead
        // marks and do_async_mmap_readahead, not modelled), which keeps a
        // sequential stream of faults ahead of itself and counts as a hit.
        // A fault inside the last window found its page reclaimed before
        // use: a miss, as in the kernel.
        let ra = self.max_sane_readahead(ctx.node, self.blk.ra_pages(self.fs.dev, ps));
        let i = &mut self.fs.inodes[ino as usize];
        let sequential = i.mmap_prev != u64::MAX && index > 0 && index - 1 == i.mmap_prev;
        let wasted = i.mmap_ra.0 <= index && index < i.mmap_ra.1;
        let (start, nr) = if sequential && !wasted {
            (index, ra)
        } else {
            // No page and no readahead that would have brought it: a major
            // fault (PGMAJFAULT is counted here, not for read(), and once
            // per fault: not again when a fault that slept comes back). The
            // stand-in above is not one: in 3.0 the asynchronous readahead
            // put the page in the cache before this fault, which found it
            // (a minor fault, even while the page is still being read).
            if !resumed {
                self.mm.vm.inc(Ev::Pgmajfault);
            }
            if !resumed && i.mmap_miss < MMAP_LOTSAMISS * 10 {
                i.mmap_miss += 1;
            }
            if i.mmap_miss > MMAP_LOTSAMISS {
                (index, 1)
            } else {
                (index.saturating_sub(ra / 2), ra)
            }
        };
        self.fs.inodes[ino as usize].mmap_ra = (start, start + nr);
        let op = self.page_cache_readahead(ctx, ino, index, start, nr);
        if let PageOp::Done = op {
            self.fs.inodes[ino as usize].mmap_prev = index;
        }
        op
    }

    /// filemap_fault finding its page cached: a hit for the read-around
    /// heuristic (do_async_mmap_readahead's mmap_miss--), and the file's
    /// last position.
    pub fn filemap_fault_hit(&mut self, ino: u32, index: u64) {
        let i = &mut self.fs.inodes[ino as usize];
        i.mmap_miss = i.mmap_miss.saturating_sub(1);
        i.mmap_prev = index;
    }

    /// A read of page `index` that missed: ra_submit of the window [start,
    /// start + nr) clipped to i_size, every page allocated with
    /// page_cache_alloc_readahead's __GFP_NORETRY and cached pages skipped
    /// (each contiguous run of blocks one bio), then, if the window did not
    /// get the page asked for, page_cache_read of that page alone with the
    /// mapping's full mask (which may retry and OOM). Sleeps until the page
    /// is uptodate.
    fn page_cache_readahead(&mut self, ctx: &mut Ctx, ino: u32, index: u64, start: u64, nr: u64) -> PageOp {
        let size = self.fs.inodes[ino as usize].size;
        let end = (start + nr).min(size.max(index + 1));
        let mut bio: Vec<u32> = Vec::with_capacity((end - start) as usize);
        let mut bio_block = 0u64;
        let mut got = false;
        for idx in start..end {
            if self.find_get_page(ino, idx).is_some() {
                if !bio.is_empty() {
                    self.submit_read(ctx, bio_block, &bio);
                    bio.clear();
                }
                continue;
            }
            let block = self.fs.bmap(ino, idx);
            let p = match self.page_cache_alloc(ctx, ino, idx, gfp::GFP_HIGHUSER_MOVABLE | gfp::NORETRY) {
                Ok(p) => p,
                // Reclaim wants this task to wait before anything was
                // allocated: the read sleeps and starts over.
                Err(PageOp::Sleep(n)) if !got => return PageOp::Sleep(n),
                // It sleeps inside direct reclaim with part of the window
                // allocated: those pages are read, and the reclaim goes on
                // when the task wakes (the read starts over, skipping what
                // is cached, and its next allocation resumes the reclaim;
                // or the fault finds its page and finishes the reclaim).
                Err(PageOp::Sleep(n)) if self.in_direct_reclaim(ctx.pid) => {
                    if !bio.is_empty() {
                        self.submit_read(ctx, bio_block, &bio);
                    }
                    return PageOp::Sleep(n);
                }
                Err(_) => {
                    // The window's allocation is abandoned (__GFP_NORETRY
                    // failed, or it would sleep): forget its retry state so
                    // the task's next allocation starts afresh.
                    self.kt[ctx.pid as usize].slow = Default::default();
                    break;
                }
            };
            got = true;
            if block == crate::fs::NO_BLOCK {
                // A hole: zero-filled, no I/O.
                self.mm.pages.set(p, PG_UPTODATE | crate::page::PG_RA_HOLE);
                self.mm.sim.ra_holes += 1;
                if !bio.is_empty() {
                    self.submit_read(ctx, bio_block, &bio);
                    bio.clear();
                }
                continue;
            }
            self.mm.pages.set(p, PG_LOCKED);
            if !bio.is_empty() && bio_block + bio.len() as u64 != block {
                self.submit_read(ctx, bio_block, &bio);
                bio.clear();
            }
            if bio.is_empty() {
                bio_block = block;
            }
            bio.push(p);
        }
        if !bio.is_empty() {
            self.submit_read(ctx, bio_block, &bio);
        }
        let p = match self.find_get_page(ino, index) {
            Some(p) => p,
            None => {
                // page_cache_read: the page alone, with the full mask.
                let block = self.fs.bmap(ino, index);
                let p = match self.page_cache_alloc(ctx, ino, index, gfp::GFP_HIGHUSER_MOVABLE) {
                    Ok(p) => p,
                    Err(e) => return e,
                };
                if block == crate::fs::NO_BLOCK {
                    self.mm.pages.set(p, PG_UPTODATE);
                } else {
                    self.mm.pages.set(p, PG_LOCKED);
                    self.submit_read(ctx, block, &[p]);
                }
                p
            }
        };
        if self.mm.pages.test(p, PG_LOCKED) {
            return self.wait_on_page_read(p);
        }
        PageOp::Done
    }

    /// Sleep until a page being read is uptodate, holding a reference to it
    /// (PG_FAULTREF), as do_generic_file_read and filemap_fault keep theirs
    /// across lock_page: reclaim and invalidation leave it alone until the
    /// task has used it (read_page's copy, shared_write_fault's mapping).
    pub fn wait_on_page_read(&mut self, p: u32) -> PageOp {
        self.mm.pages.set(p, PG_FAULTREF);
        let zi = self.mm.zone_of(p);
        PageOp::Sleep(Next::Sleep { until: None, wq: Some(Wq::Page(zi)), io: true })
    }

    fn submit_read(&mut self, ctx: &mut Ctx, block: u64, pfns: &[u32]) {
        let dev = self.fs.dev;
        let max = self.blk.max_bio_pages(dev) as usize;
        for (i, part) in pfns.chunks(max).enumerate() {
            let b = block + (i * max) as u64;
            if let Submit::Full = self.blk.submit_read(ctx.clock(), dev, b, part, 0, ctx.pid + 1) {
                // The queue has no free read request: the pages stay locked
                // and the bio is resubmitted when a read request frees.
                self.pending_reads.push((dev, b, part.to_vec(), ctx.pid + 1));
            }
            self.mm.vm.add(Ev::Pgpgin, part.len() as u64 * self.page_size / 1024);
            for &q in part {
                self.mm.pages.set(q, crate::page::PG_RA_UNUSED);
            }
        }
    }

    /// The pages an inode has in the page cache, in index order.
    pub(crate) fn inode_pages(&self, ino: u32) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.fs.inodes[ino as usize].nrpages as usize);
        for &id in &self.fs.inodes[ino as usize].radix {
            if id != NIL {
                out.extend(self.pc.chunks[id as usize].iter().copied().filter(|&p| p != NIL));
            }
        }
        out
    }

    /// Take every page of an inode out of the page cache and free it
    /// (truncate_inode_pages_range, 3.0). A first pass frees every page
    /// that is neither under writeback nor locked; then the first page left
    /// is waited for, and the pass runs again. A page a reclaimer has
    /// isolated is retried a moment later.
    pub fn truncate_inode_pages(&mut self, ctx: &mut Ctx, ino: u32) -> PageOp {
        let mut wait_zone = None;
        let mut isolated = false;
        for p in self.inode_pages(ino) {
            if self.mm.pages.test(p, PG_WRITEBACK) || self.mm.pages.test(p, PG_LOCKED) {
                wait_zone.get_or_insert(self.mm.zone_of(p));
                continue;
            }
            if !self.free_file_page(ctx, p) {
                isolated = true;
            }
        }
        if let Some(zi) = wait_zone {
            return PageOp::Sleep(Next::Sleep { until: None, wq: Some(Wq::Page(zi)), io: true });
        }
        if isolated {
            return PageOp::Sleep(Next::sleep_for(ctx.clock(), 1_000_000));
        }
        PageOp::Done
    }

    /// Remove a page-cache page from its LRU list and the cache, and free
    /// it; false (nothing done) if a reclaimer has it isolated.
    fn free_file_page(&mut self, ctx: &mut Ctx, p: u32) -> bool {
        if self.mm.pages.test(p, PG_ISOLATED) || !self.del_page_from_lru(ctx, p) {
            return false;
        }
        self.delete_from_page_cache(ctx, p);
        self.mm.census.held -= 1;
        self.mm.pages.flags[p as usize] = 0;
        self.mm.free_pages(ctx, p, 0);
        true
    }

    /// invalidate_mapping_pages: free every clean, unlocked, unmapped page
    /// of an inode that is not under writeback. Returns pages freed.
    pub fn invalidate_mapping_pages(&mut self, ctx: &mut Ctx, ino: u32) -> u64 {
        let mut freed = 0;
        for p in self.inode_pages(ino) {
            let f = self.mm.pages.flags[p as usize];
            if f & (PG_DIRTY | PG_WRITEBACK | PG_LOCKED | PG_MAPPED | PG_ISOLATED | PG_PAGEVEC | PG_FAULTREF) != 0 || f & PG_LRU == 0 {
                continue;
            }
            if self.free_file_page(ctx, p) {
                freed += 1;
            }
        }
        freed
    }
}
