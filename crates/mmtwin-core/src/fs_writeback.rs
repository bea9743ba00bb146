//! The flusher thread (fs/fs-writeback.c, 3.0): explicit work from
//! wakeup_flusher_threads, periodic (kupdate) writeback of inodes dirtied
//! more than dirty_expire_centisecs ago, and background writeback while
//! dirty pages exceed the background threshold; writeback_single_inode in
//! chunks of MAX_WRITEBACK_PAGES with write_cache_pages building contiguous
//! bios. Also the block-device completion handler.

use crate::block::{Dir, Submit};
use crate::cost::Ctx;
use crate::fs::NO_BLOCK;
use crate::spec::FsKind;
use crate::kernel::Kernel;
use crate::page::*;
use crate::sched::{Next, Wq};
use crate::vmstat::*;

/// MAX_WRITEBACK_PAGES (3.0): pages written from one inode per pass.
pub const MAX_WRITEBACK_PAGES: u64 = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Work,
    Kupdate,
    Background,
}

impl Kernel {
    /// wakeup_flusher_threads(nr_pages): a work item for `nr_pages` (all
    /// the dirty pages when 0) on every device with dirty inodes
    /// (__bdi_start_writeback with range_cyclic = 0), and its flusher woken.
    pub fn wakeup_flusher_threads(&mut self, ctx: &mut Ctx, nr_pages: u64) {
        if self.bdi.is_empty() || !self.bdi_has_dirty_io(0) {
            return;
        }
        let (d, _) = self.global_dirty();
        let nr = if nr_pages == 0 { d.max(0) as u64 } else { nr_pages };
        let works = &mut self.bdi[0].works;
        if works.len() < crate::page_writeback::MAX_WORKS {
            works.push_back(nr);
        } else if let Some(last) = works.back_mut() {
            *last += nr;
        }
        self.sched.wake_up_all(Wq::Flusher(0), ctx.clock());
    }

    fn over_bground_thresh(&self) -> bool {
        let (bg, _) = self.global_dirty_limits();
        let (d, _) = self.global_dirty();
        d.max(0) as u64 > bg
    }

    /// queue_io: b_more_io, then the inodes of b_dirty dirtied before
    /// `older_than` (all of them when None), onto b_io.
    fn queue_io(&mut self, b: usize, older_than: Option<u64>) {
        let more: Vec<u32> = self.bdi[b].b_more_io.drain(..).collect();
        self.bdi[b].b_io.extend(more);
        while let Some(&ino) = self.bdi[b].b_dirty.front() {
            if let Some(t) = older_than {
                if self.fs.inodes[ino as usize].dirtied_when > t {
                    break;
                }
            }
            self.bdi[b].b_dirty.pop_front();
            self.bdi[b].b_io.push_back(ino);
        }
    }

    /// writeback_inodes_wb: write up to `nr` pages from the inodes of b_io,
    /// one inode after another. Used by the flusher and (3.0) by a dirtier
    /// in balance_dirty_pages. `range_cyclic`: each inode from where its
    /// writeback left off (background, kupdate, balance_dirty_pages), or
    /// its whole range (the work wakeup_flusher_threads queues). Returns
    /// (pages written, blocked on a full request queue).
    pub fn writeback_inodes_wb(&mut self, ctx: &mut Ctx, b: usize, nr: u64, older_than: Option<u64>, range_cyclic: bool) -> (u64, bool) {
        if older_than.is_none() || self.bdi[b].b_io.is_empty() {
            self.queue_io(b, older_than);
        }
        let mut written = 0;
        self.wb_inodes_cleaned = 0;
        while written < nr {
            let Some(ino) = self.bdi[b].b_io.pop_front() else { break };
            if !self.fs.inodes[ino as usize].in_use || !self.fs.inodes[ino as usize].on_dirty_list {
                continue;
            }
            let budget = nr - written;
            let (w, blocked) = self.writeback_single_inode(ctx, ino, budget, range_cyclic);
            written += w;
            let i = &self.fs.inodes[ino as usize];
            if i.nrdirty > 0 {
                if blocked {
                    self.bdi[b].b_io.push_front(ino);
                } else if w >= budget {
                    // Slice used up: requeue_io.
                    self.bdi[b].b_more_io.push_back(ino);
                } else {
                    // redirty_tail: back on b_dirty, dirtied_when kept.
                    self.bdi[b].b_dirty.push_back(ino);
                }
            } else {
                let i = &mut self.fs.inodes[ino as usize];
                i.on_dirty_list = false;
                i.dirty_lo = u64::MAX;
                self.wb_inodes_cleaned += 1;
            }
            // The writer's __iget/iput around the inode: an inode nobody
            // else holds and that is now clean joins the inode LRU.
            self.inode_maybe_unused(ino);
            if blocked {
                return (written, true);
            }
        }
        (written, false)
    }

    /// One step of the flusher (wb_do_writeback / wb_writeback): one chunk
    /// of MAX_WRITEBACK_PAGES across inodes, or a sleep.
    pub fn flusher_step(&mut self, b: usize, ctx: &mut Ctx) -> Next {
        let now = ctx.now;
        let interval = self.k.dirty_writeback_centisecs * 10_000_000;
        let expire = self.k.dirty_expire_centisecs * 10_000_000;
        let mode = if !self.bdi[b].works.is_empty() {
            Mode::Work
        } else if self.over_bground_thresh() {
            Mode::Background
        } else if now >= self.bdi[b].last_old_flush + interval {
            Mode::Kupdate
        } else {
            self.bdi[b].background = false;
            let has_dirty = !self.bdi[b].b_dirty.is_empty() || !self.bdi[b].b_io.is_empty() || !self.bdi[b].b_more_io.is_empty();
            let until = if has_dirty { Some(now + interval) } else { None };
            return Next::Sleep { until, wq: Some(Wq::Flusher(b)), io: false };
        };
        let older = if mode == Mode::Kupdate { Some(now.saturating_sub(expire)) } else { None };
        // wakeup_flusher_threads queues its work with range_cyclic = 0
        // (__bdi_start_writeback(bdi, nr_pages, false)); background and
        // kupdate writeback are range-cyclic.
        let (written, blocked) = self.writeback_inodes_wb(ctx, b, MAX_WRITEBACK_PAGES, older, mode != Mode::Work);
        if mode == Mode::Work {
            // wb_writeback: the work's nr_pages less what each chunk wrote;
            // a work is done when they are used up (every work writes at
            // least one chunk), when a chunk finds nothing to write, or
            // after a chunk short of MAX_WRITEBACK_PAGES that cleaned no
            // inode and left none with more to write (b_more_io empty).
            let short = written < MAX_WRITEBACK_PAGES && self.wb_inodes_cleaned == 0 && self.bdi[b].b_more_io.is_empty();
            let w = self.bdi[b].works.front_mut().expect("a work item");
            *w = w.saturating_sub(written);
            if *w == 0 || (written == 0 && !blocked) || (short && !blocked) {
                self.bdi[b].works.pop_front();
            }
        }
        if written == 0 && !blocked {
            // Nothing (left) to write in this mode.
            match mode {
                Mode::Kupdate => self.bdi[b].last_old_flush = now,
                Mode::Work => {}
                Mode::Background => {
                    self.bdi[b].background = false;
                    return Next::Sleep { until: Some(now + interval), wq: Some(Wq::Flusher(b)), io: false };
                }
            }
        }
        if blocked {
            return self.request_wait_sleep(ctx);
        }
        Next::Run
    }

    /// writeback_single_inode: write up to `nr` dirty pages of `ino` in
    /// index order (on ext4 more: see below). Returns (pages written,
    /// blocked on a full queue).
    pub fn writeback_single_inode(&mut self, ctx: &mut Ctx, ino: u32, nr: u64, range_cyclic: bool) -> (u64, bool) {
        let dev = self.fs.dev;
        let max_bio = self.blk.max_bio_pages(dev) as u64;
        let mut written = 0;
        let mut bio: Vec<u32> = Vec::with_capacity(max_bio as usize);
        let mut bio_block = 0u64;
        let size = self.fs.inodes[ino as usize].size;
        let mut idx = self.fs.inodes[ino as usize].dirty_lo.min(size);
        // ext4_da_writepages (3.0) raises nr_to_write, up to
        // s_max_writeback_mb_bump (128 MiB), "so we force contiguous writes
        // up to the number of dirty blocks in the inode": for range-cyclic
        // writeback to the number of dirty delayed-allocation pages in a row
        // from where the inode's writeback left off (ext4_num_dirty_pages
        // from writeback_index; here from the first page the walk would
        // write, at or after dirty_lo), so a flusher pass or a throttled
        // writer writes a whole file where xfs writes the caller's chunk;
        // for a whole-range pass (wakeup_flusher_threads' work) to eight
        // times the caller's nr_to_write, delayed or not. The caller counts
        // every page written (wbc->nr_to_write -= nr_to_writebump).
        let nr = if self.fs.kind == FsKind::Ext4 {
            let max = (128 << 20) / self.page_size;
            if range_cyclic {
                let from = self.first_writable(ino, idx, size);
                nr.max(self.ext4_num_dirty_pages(ino, from, max))
            } else {
                nr.max(nr.saturating_mul(8).min(max))
            }
        } else {
            nr
        };
        if self.fs.kind == FsKind::Ext4 && self.journal.is_some() {
            // ext4_da_writepages: a handle around block allocation and
            // submission (jbd2.rs); a locked transaction, or a bitmap,
            // group descriptor or inode table block that the committing
            // transaction is writing to the log (mballoc and the extent
            // update need write access to them), makes the caller sleep
            // instead of waiting for a request.
            let from = self.first_writable(ino, idx, size);
            let pid = ctx.pid as usize;
            if from < size && self.fs.bmap(ino, from) == crate::fs::NO_BLOCK {
                let at = self.fs.alloc_hint(ino, from);
                let ms = [
                    crate::jbd2::Meta::BlockBitmap(self.fs.bitmap_of_block(at, self.page_size)),
                    crate::jbd2::Meta::Gdt(self.fs.group_of_block(at)),
                    crate::jbd2::Meta::Itable(ino),
                ];
                if let Err(sleep) = self.journal_get_write_access(ctx, &ms) {
                    self.journal_stop(ctx, crate::jbd2::hold::WRITEBACK);
                    self.kt[pid].journal_sleep = Some(sleep);
                    return (0, true);
                }
            }
            if let Err(sleep) = self.journal_start(ctx, crate::jbd2::hold::WRITEBACK) {
                self.kt[pid].journal_sleep = Some(sleep);
                return (0, true);
            }
        }
        if !self.fs.inodes[ino as usize].itable_written {
            // The new inode's table block goes out with its first data.
            let blk = self.fs.itable_block(ino);
            if matches!(self.submit_bio(ctx, dev, Dir::Write, blk, &[NIL], 0), Submit::Full) {
                return (0, true);
            }
            self.mm.vm.add(Ev::Pgpgout, self.page_size / 1024);
            self.fs.inodes[ino as usize].itable_written = true;
        }
        let mut blocked = false;
        // Dirty pages under writeback (redirtied while in flight) are
        // passed over this time; the cursor must come back to them.
        let mut first_skipped = u64::MAX;
        // write_cache_pages counts a page against nr_to_write as it goes
        // into the bio (--wbc->nr_to_write), not when the bio is submitted.
        while idx < size && written + (bio.len() as u64) < nr && self.fs.inodes[ino as usize].nrdirty > 0 {
            if !self.radix_chunk_dirty(ino, idx) {
                // No page of this chunk carries the dirty tag: jump to the next that does.
                let next = self.next_dirty_chunk(ino, self.next_radix_chunk(idx));
                idx = next.min(size);
                continue;
            }
            let Some(p) = self.find_get_page(ino, idx) else {
                idx += 1;
                continue;
            };
            if !self.mm.pages.test(p, PG_DIRTY) {
                idx += 1;
                continue;
            }
            // A writer holding the page while it waits for the page's last
            // writeback (write_wait_on_page_writeback): write_cache_pages
            // would sleep on the page lock; it is passed over like a page
            // still in flight.
            if self.mm.pages.flags[p as usize] & (PG_WRITEBACK | PG_FAULTREF) != 0 {
                first_skipped = first_skipped.min(idx);
                idx += 1;
                continue;
            }
            let mut block = self.fs.bmap(ino, idx);
            if block == NO_BLOCK {
                // Delayed allocation: allocate the run of dirty pages without
                // blocks that starts here, as much as this pass may write
                // (mpage_da_map_blocks maps the extent write_cache_pages
                // gathered). Pages past the run are holes or not written yet:
                // a mapped writer's sparse file has an i_size far ahead of
                // its stores, and a hole given a block reads from disk.
                let mut limit = (size - idx).min(nr - written - bio.len() as u64).max(1);
                if self.fs.kind == FsKind::Ext4 {
                    // mpage_add_bh_to_extent: at most 8 MiB is mapped at a
                    // time ("don't go larger than mballoc is willing to
                    // allocate"); the loop maps the rest next.
                    limit = limit.min((8 << 20) / self.page_size).max(1);
                }
                let run = self.delayed_run(ino, idx, limit);
                block = self.fs.alloc_blocks(ino, idx, run);
                if self.fs.kind == FsKind::Ext4 {
                    self.fs.da_update_reserve_space(ino, run);
                }
                // mballoc's bitmap and group descriptor, the inode's extent.
                let g = self.fs.group_of_block(block);
                self.journal_dirty_metadata(crate::jbd2::Meta::BlockBitmap(self.fs.bitmap_of_block(block, self.page_size)));
                self.journal_dirty_metadata(crate::jbd2::Meta::Gdt(g));
                self.journal_dirty_metadata(crate::jbd2::Meta::Itable(ino));
                // data=ordered: the commit waits for this inode's data.
                self.journal_file_inode(ino);
            }
            if !bio.is_empty() && (bio_block + bio.len() as u64 != block || bio.len() as u64 >= max_bio) {
                if !self.submit_write(ctx, bio_block, &bio) {
                    // No free request: these pages stay dirty; resume at the first.
                    blocked = true;
                    break;
                }
                written += bio.len() as u64;
                bio.clear();
            }
            if bio.is_empty() {
                bio_block = block;
            }
            ctx.sys += self.cost.writepage_ns;
            bio.push(p);
            idx += 1;
        }
        if !bio.is_empty() && !blocked {
            if self.submit_write(ctx, bio_block, &bio) {
                written += bio.len() as u64;
            } else {
                blocked = true;
            }
        }
        if !blocked {
            self.journal_stop(ctx, crate::jbd2::hold::WRITEBACK);
        }
        let i = &mut self.fs.inodes[ino as usize];
        if !blocked {
            // dirty_lo stays a lower bound of the dirty indices: set_page_dirty
            // lowers it for every page dirtied behind the cursor.
            i.dirty_lo = if i.nrdirty == 0 {
                u64::MAX
            } else if idx >= size {
                first_skipped
            } else {
                idx.min(first_skipped)
            };
            if i.nrdirty > 0 && i.dirty_lo == u64::MAX {
                i.dirty_lo = 0; // cannot happen while the bound holds; never lose pages
            }
        } else {
            // Resume at the first page not submitted.
            let first = if bio.is_empty() { idx } else { self.mm.pages.index[bio[0] as usize] as u64 };
            i.dirty_lo = i.dirty_lo.min(first);
        }
        (written, blocked)
    }

    /// The first page at or after `idx` (below `size`) that writeback
    /// would write: dirty, not under writeback, not held by a writer
    /// waiting for its writeback; `size` if none.
    fn first_writable(&self, ino: u32, mut idx: u64, size: u64) -> u64 {
        while idx < size {
            if !self.radix_chunk_dirty(ino, idx) {
                idx = self.next_dirty_chunk(ino, self.next_radix_chunk(idx)).min(size);
                continue;
            }
            if self.find_get_page(ino, idx).is_some_and(|q| self.mm.pages.flags[q as usize] & (PG_DIRTY | PG_WRITEBACK | PG_FAULTREF) == PG_DIRTY) {
                return idx;
            }
            idx += 1;
        }
        size
    }

    /// ext4_num_dirty_pages (3.0): how many pages from `idx` on, at most
    /// `max`, are in a row cached, dirty, not under writeback and without
    /// a block (0 when the page at `idx` is not).
    fn ext4_num_dirty_pages(&self, ino: u32, idx: u64, max: u64) -> u64 {
        let delayed = |i: u64| {
            self.find_get_page(ino, i).is_some_and(|q| self.mm.pages.flags[q as usize] & (PG_DIRTY | PG_WRITEBACK | PG_FAULTREF) == PG_DIRTY)
                && self.fs.bmap(ino, i) == NO_BLOCK
        };
        let mut n = 0;
        while n < max && delayed(idx + n) {
            n += 1;
        }
        n
    }

    /// The delayed-allocation run at `idx`: how many pages from it, at
    /// most `limit`, are cached and dirty with no block yet (at least 1).
    fn delayed_run(&self, ino: u32, idx: u64, limit: u64) -> u64 {
        let mut n = 1;
        while n < limit {
            let delayed = self.find_get_page(ino, idx + n).is_some_and(|q| self.mm.pages.flags[q as usize] & PG_DIRTY != 0)
                && self.fs.bmap(ino, idx + n) == NO_BLOCK;
            if !delayed {
                break;
            }
            n += 1;
        }
        n
    }

    /// Submit a write bio: the pages go from dirty to writeback. False if
    /// the queue had no free request (nothing changed).
    fn submit_write(&mut self, ctx: &mut Ctx, block: u64, pfns: &[u32]) -> bool {
        if !self.submit_bio_write(ctx, block, pfns) {
            return false;
        }
        for &p in pfns {
            self.clear_page_dirty_for_io(p);
            self.set_page_writeback(p);
        }
        true
    }

    /// submit_bio(WRITE): false if the queue had no free request.
    fn submit_bio_write(&mut self, ctx: &mut Ctx, block: u64, pfns: &[u32]) -> bool {
        let dev = self.fs.dev;
        if matches!(self.submit_bio(ctx, dev, Dir::Write, block, pfns, 1), Submit::Full) {
            return false;
        }
        self.mm.vm.add(Ev::Pgpgout, pfns.len() as u64 * self.page_size / 1024);
        true
    }

    /// ->writepage for reclaim's pageout (the page's dirty bit is already
    /// cleared). xfs (xfs_vm_writepage) also writes the dirty pages that
    /// follow it in the file and on disk (xfs_cluster_write), up to the
    /// writeback_control's nr_to_write, SWAP_CLUSTER_MAX in pageout, in the
    /// same bio; ext4 writes only the page. A refused or unsubmittable
    /// page is redirtied (redirty_page_for_writepage).
    pub fn writepage_for_reclaim(&mut self, ctx: &mut Ctx, p: u32, kswapd: bool) {
        let ino = self.mm.pages.owner[p as usize];
        let idx = self.mm.pages.index[p as usize] as u64;
        if self.fs.writepage_allowed(ino, idx, kswapd) {
            let mut run = 1u64;
            if self.fs.kind == FsKind::Xfs {
                let size = self.fs.inodes[ino as usize].size;
                let max_bio = u64::from(self.blk.max_bio_pages(self.fs.dev));
                while run < 1 + crate::vmscan::SWAP_CLUSTER_MAX && run < max_bio && idx + run < size {
                    let Some(q) = self.find_get_page(ino, idx + run) else { break };
                    let f = self.mm.pages.flags[q as usize];
                    if f & PG_DIRTY == 0 || f & (PG_WRITEBACK | PG_LOCKED) != 0 {
                        break;
                    }
                    run += 1;
                }
            }
            let mut block = self.fs.bmap(ino, idx);
            if block == NO_BLOCK {
                // Delayed allocation: xfs converts the whole delayed extent
                // holding the page, the dirty pages around it without blocks.
                let delayed = |k: &Self, i: u64| {
                    k.find_get_page(ino, i).is_some_and(|q| k.mm.pages.flags[q as usize] & PG_DIRTY != 0)
                        && k.fs.bmap(ino, i) == NO_BLOCK
                };
                let (mut lo, mut hi) = (idx, idx + run);
                if self.fs.kind == FsKind::Xfs {
                    let size = self.fs.inodes[ino as usize].size;
                    while lo > 0 && delayed(self, lo - 1) {
                        lo -= 1;
                    }
                    while hi < size && delayed(self, hi) {
                        hi += 1;
                    }
                }
                block = self.fs.alloc_range(ino, idx, lo, hi);
            }
            // The cluster ends where the file's blocks stop being contiguous.
            let mut n = 1u64;
            while n < run && self.fs.bmap(ino, idx + n) == block + n {
                n += 1;
            }
            let mut pfns = Vec::with_capacity(n as usize);
            pfns.push(p);
            for k in 1..n {
                pfns.push(self.find_get_page(ino, idx + k).expect("a page of the run"));
            }
            ctx.sys += self.cost.writepage_ns * n;
            // With no free write request the bio waits for one, and this
            // reclaimer with it (submit_reclaim_write).
            let dev = self.fs.dev;
            self.submit_reclaim_write(ctx, dev, block, &pfns, 1);
            self.mm.vm.add(Ev::Pgpgout, pfns.len() as u64 * self.page_size / 1024);
            self.set_page_writeback(p);
            for &q in &pfns[1..] {
                self.clear_page_dirty_for_io(q);
                self.set_page_writeback(q);
            }
            return;
        }
        // redirty_page_for_writepage
        self.set_page_dirty_nr(p);
    }

    /// Redirty a page (redirty_page_for_writepage): no ratelimit is charged.
    fn set_page_dirty_nr(&mut self, p: u32) {
        if self.mm.pages.test(p, PG_DIRTY) {
            return;
        }
        self.mm.pages.set(p, PG_DIRTY);
        let zi = self.mm.zone_of(p);
        self.zs_add(zi, Zs::NrFileDirty, 1);
        let ino = self.mm.pages.owner[p as usize];
        let idx = self.mm.pages.index[p as usize] as u64;
        self.radix_tag_dirty(ino, idx, true);
        self.fs.da_reserve(ino, idx, true);
        let i = &mut self.fs.inodes[ino as usize];
        i.nrdirty += 1;
        i.dirty_lo = i.dirty_lo.min(idx);
        if let Some(b) = self.bdi.first_mut() {
            b.nr_dirty += 1;
        }
        self.mark_inode_dirty_pages(ino, self.now);
    }

    /// Block completions due at `now`: end writeback or finish reads, wake
    /// request waiters and, when a queue stops being congested, the
    /// congestion waiters.
    pub fn io_complete(&mut self, now: u64) {
        let mut out = std::mem::take(&mut self.completions);
        out.clear();
        self.blk.complete(now, &mut out);
        // Per device: a write and a read request freed.
        let mut woke = [[false; 2]; crate::spec::MAX_DEVICES];
        for c in &out {
            // The request list the completion freed a request of.
            woke[c.dev as usize][usize::from(!c.sync)] = true;
            let pages: Vec<u32> = self.blk.pages(c).to_vec();
            match c.dir {
                Dir::Write => {
                    if c.tag == crate::jbd2::JBD2_TAG {
                        self.journal_io_done(now, c.nr_pages as u64);
                    }
                    for p in pages {
                        if p != NIL {
                            self.end_page_writeback(p);
                        }
                    }
                }
                Dir::Read => {
                    for p in pages {
                        self.mm.pages.clear(p, PG_LOCKED);
                        self.mm.pages.set(p, PG_UPTODATE);
                        let zi = self.mm.zone_of(p);
                        if self.sched.has_waiters(Wq::Page(zi)) {
                            self.sched.wake_up_all(Wq::Page(zi), now);
                        }
                    }
                }
            }
        }
        self.completions = out;
        // __freed_request: every async request freed while its member's
        // list is below the congestion-off threshold calls
        // clear_bdi_congested, which wakes the congestion_wait sleepers,
        // whatever the other lists hold (a sync request's wakes
        // congestion_wqh[BLK_RW_SYNC], where nobody waits).
        self.blk.take_uncongested_edges();
        let uncongested = self.blk.take_async_clear();
        self.wake_request_waiters(now);
        for (dev, w) in woke.iter().enumerate() {
            if w[0] {
                self.retry_pending_reads(now, dev);
            }
        }
        if uncongested {
            self.sched.wake_up_all(Wq::Congestion(0), now);
        }
    }

    fn retry_pending_reads(&mut self, now: u64, dev: usize) {
        let pending = std::mem::take(&mut self.pending_reads);
        for (d, b, pfns, owner) in pending {
            if d != dev || matches!(self.blk.submit_read(now, d, b, &pfns, 0, owner), Submit::Full) {
                self.pending_reads.push((d, b, pfns, owner));
            }
        }
    }
}
