//! Page faults and process exit (mm/memory.c, mm/rmap.c): the anonymous
//! fault, the write fault on a shared file mapping (with its dirty
//! accounting and throttling), page_remove_rmap, and exit_mmap freeing an
//! mm's pages on the exiting CPU.

use crate::alloc::gfp;
use crate::cost::Ctx;
use crate::filemap::PageOp;
use crate::kernel::Kernel;
use crate::page::*;
use crate::page_alloc::AllocRes;
use crate::spec::Era;
use crate::vmstat::*;

impl Kernel {
    /// do_anonymous_page: a zeroed page, mapped, on the active anon list;
    /// a page-table page every `ptes_per_table` pages.
    pub fn do_anonymous_page(&mut self, ctx: &mut Ctx, mm_id: u32, done: u64, vpage: u64) -> Result<usize, AllocRes> {
        let node = ctx.node;
        let ptes_per_table = self.page_size / 8;
        if done.is_multiple_of(ptes_per_table) && !self.kt[ctx.pid as usize].pte_ready {
            match self.alloc_pages(ctx, gfp::GFP_KERNEL | gfp::ZERO, 0, node) {
                AllocRes::Page(p, zi) => {
                    self.mm.mark_kernel(p);
                    self.mm.pages.owner[p as usize] = mm_id;
                    self.zs_add(zi, Zs::NrPagetable, 1);
                    self.clear_page(ctx, self.mm.zones[zi].node);
                    self.kt[ctx.pid as usize].pte_ready = true;
                }
                r => return Err(r),
            }
        }
        let anon_gfp = if self.era == Era::V2618 { gfp::GFP_HIGHUSER } else { gfp::GFP_HIGHUSER_MOVABLE } | gfp::ZERO;
        match self.alloc_pages(ctx, anon_gfp, 0, node) {
            AllocRes::Page(p, zi) => {
                self.kt[ctx.pid as usize].pte_ready = false;
                let pnode = self.mm.zones[zi].node;
                self.clear_page(ctx, pnode);
                self.mm.pages.flags[p as usize] = PG_SWAPBACKED | PG_ANON | PG_MAPPED | PG_YOUNG | PG_UPTODATE;
                self.mm.pages.owner[p as usize] = mm_id;
                self.mm.pages.index[p as usize] = vpage as u32;
                if let Some(pt) = self.anon_mm.get_mut(mm_id as usize) {
                    pt[vpage as usize] = p;
                }
                self.zs_add(zi, Zs::NrAnonPages, 1);
                self.mm.zone_stat_fold(ctx, zi, crate::vmstat::StatItem::AnonPages);
                let lru = match self.k.new_anon_lru {
                    crate::spec::NewAnonLru::Active => LRU_ACTIVE_ANON,
                    crate::spec::NewAnonLru::Inactive => crate::vmstat::LRU_INACTIVE_ANON,
                };
                self.lru_cache_add(ctx, p, lru);
                Ok(zi)
            }
            r => Err(r),
        }
    }

    /// The mm_struct cache lines a page fault writes: down_read and up_read
    /// of mmap_sem (two atomic updates of its count, on the mm's first
    /// line), and the RSS counters on the next line: 2.6.18 (split page
    /// table locks) updated mm->_anon_rss atomically on every fault; from
    /// 2.6.34 (SPLIT_RSS_COUNTING) a task counts in its task_struct and
    /// adds into the mm once its count passes TASK_RSS_EVENTS_THRESH (64),
    /// every 66 faults. A process
    /// that has not faulted before gets its mm's lines homed on the node it
    /// runs on (where fork allocated its mm_struct); threads share theirs
    /// (`share_mm_lines`).
    pub fn fault_mm_lines(&mut self, ctx: &mut Ctx) {
        let pid = ctx.pid as usize;
        let base = match self.kt[pid].mm_line {
            Some(b) => b,
            None => {
                let b = self.mm.cache.add_line(ctx.node);
                self.mm.cache.add_line(ctx.node);
                self.kt[pid].mm_line = Some(b);
                b
            }
        };
        self.mm.cache.write(ctx, base); // down_read(&mm->mmap_sem)
        let rss = if self.era == Era::V2618 {
            true
        } else {
            let t = &mut self.kt[pid];
            // check_sync_rss_stat: `events++ > TASK_RSS_EVENTS_THRESH` (64),
            // so the 66th fault syncs.
            t.rss_events += 1;
            if t.rss_events >= 66 {
                t.rss_events = 0;
                true
            } else {
                false
            }
        };
        if rss {
            self.mm.cache.write(ctx, base + 1);
        }
        self.mm.cache.write(ctx, base); // up_read
    }

    /// Threads of one process: every task of `pids` uses one mm_struct,
    /// homed on `node`.
    pub fn share_mm_lines(&mut self, pids: &[u32], node: usize) {
        let b = self.mm.cache.add_line(node);
        self.mm.cache.add_line(node);
        for &p in pids {
            self.kt[p as usize].mm_line = Some(b);
        }
    }

    /// clear_page: a stream of stores at the local or the interconnect's
    /// rate; a page on another node also passes through that node's
    /// interconnect port, shared with every other CPU clearing there
    /// (cost.rs `Interconnect`).
    pub fn clear_page(&mut self, ctx: &mut Ctx, page_node: usize) {
        let kib = self.page_size / 1024;
        let local = page_node == ctx.node;
        let own = kib * if local { self.cost.clear_ns_per_kib } else { self.cost.clear_remote_ns_per_kib };
        self.mm.ic.remote_stream(ctx, page_node, self.page_size, own);
        self.mm.cache.stream(ctx.cpu, self.page_size);
    }

    /// set_page_dirty_balance's test for a write fault on page `index` of
    /// `ino`, made before the fault: it counts toward
    /// balance_dirty_pages_ratelimited if it dirties the page or the
    /// filesystem has ->page_mkwrite (ext4, xfs; 3.0's ext3 has none).
    pub fn write_fault_counts_dirtied(&self, ino: u32, index: u64) -> bool {
        self.fs.kind != crate::spec::FsKind::Ext3 || self.find_get_page(ino, index).is_none_or(|p| !self.mm.pages.test(p, PG_DIRTY))
    }

    /// A write fault on a shared writable file mapping: filemap_fault (a
    /// hole reads as a zeroed page), map it, then page_mkwrite dirties it
    /// (set_page_dirty_balance). Sleeps in balance_dirty_pages are returned.
    pub fn shared_write_fault(&mut self, ctx: &mut Ctx, ino: u32, index: u64) -> PageOp {
        let p = match self.find_get_page(ino, index) {
            // A page still being read: filemap_fault's lock_page_or_retry
            // waits for it (and a resumed fault comes back here).
            Some(p) if self.mm.pages.test(p, PG_LOCKED) => return self.wait_on_page_read(p),
            Some(p) => {
                // Cached but not mapped: filemap_fault finds it (a hit).
                if !self.mm.pages.test(p, PG_MAPPED) {
                    // An overtaken allocation's reclaim runs to its end
                    // first; no retry state stays.
                    if let Err(next) = self.finish_overtaken_alloc(ctx) {
                        return PageOp::Sleep(next);
                    }
                    self.filemap_fault_hit(ino, index);
                }
                p
            }
            None => {
                match self.filemap_fault_page(ctx, ino, index) {
                    PageOp::Done => {}
                    other => return other,
                }
                match self.find_get_page(ino, index) {
                    Some(p) => p,
                    // Reclaimed while the readahead took the rest of its
                    // window: fault again (filemap_fault's retry).
                    None => return PageOp::Sleep(crate::sched::Next::Run),
                }
            }
        };
        // page_mkwrite (block_page_mkwrite) attaches buffers, after the
        // fault found the page. Their allocation may reclaim: if it took
        // this page, fault again.
        if !self.mm.pages.test(p, PG_PRIVATE) {
            if let Err(r) = self.reserve_buffers(ctx) {
                return crate::filemap::alloc_op(r);
            }
            if self.find_get_page(ino, index) != Some(p) {
                return PageOp::Sleep(crate::sched::Next::Run);
            }
        }
        // Mapped now: the fault's reference is the mapping's.
        self.mm.pages.clear(p, PG_FAULTREF | crate::page::PG_RA_UNUSED | crate::page::PG_RA_HOLE);
        if !self.mm.pages.test(p, PG_MAPPED) {
            self.mm.pages.set(p, PG_MAPPED);
            let zi = self.mm.zone_of(p);
            self.zs_add(zi, Zs::NrFileMapped, 1);
        }
        self.mm.pages.set(p, PG_YOUNG);
        self.create_empty_buffers(ctx, p);
        let i = &mut self.fs.inodes[ino as usize];
        if i.size <= index {
            i.size = index + 1;
        }
        // set_page_dirty (2.6.39+) clears PG_reclaim: a redirtied page is no
        // longer one to reclaim as its writeback ends. write(2) dirties
        // through the buffer heads (__set_page_dirty), which does not.
        if self.era != crate::spec::Era::V2618 {
            self.mm.pages.clear(p, PG_RECLAIM);
        }
        self.set_page_dirty(ctx, p);
        if let Some(op) = self.write_wait_on_page_writeback(ctx, p) {
            return op;
        }
        PageOp::Done
    }

    /// page_remove_rmap: the page's last mapping is gone.
    pub fn page_remove_rmap(&mut self, ctx: &mut Ctx, p: u32) {
        if self.mm.pages.test_clear(p, PG_MAPPED) {
            self.mm.pages.clear(p, PG_YOUNG);
            let zi = self.mm.zone_of(p);
            if self.mm.pages.test(p, PG_FILE) {
                self.zs_add(zi, Zs::NrFileMapped, -1);
            } else if self.mm.pages.test(p, PG_ANON) {
                // try_to_unmap of an anonymous page: its pte now holds the swap slot.
                self.zs_add(zi, Zs::NrAnonPages, -1);
                if self.mm.pages.test(p, PG_SWAPCACHE) {
                    let slot = self.mm.pages.index[p as usize];
                    let mm_id = self.mm.pages.owner[p as usize] as usize;
                    let vpage = self.swap.as_ref().map_or(NIL, |s| s.vpage_of(slot));
                    if let Some(pte) = self.anon_mm.get_mut(mm_id).and_then(|pt| pt.get_mut(vpage as usize)) {
                        *pte = crate::swapfile::SWAP_PTE | slot;
                    }
                }
            }
            self.mm.sim.page_events += 1;
            let _ = ctx; // the rmap walk is part of the reclaim decision's scan_page_ns
        }
    }

    /// Tear down the one shared mapping of file `ino` (exit_mmap or munmap:
    /// zap_pte_range): every mapped page loses its mapping and stays in the
    /// page cache. A pte's dirty bit was already moved to the page when the
    /// write fault dirtied it (page_mkwrite), so nothing more is dirtied; a
    /// young pte (used since reclaim last looked) marks its page accessed.
    pub fn unmap_mapping(&mut self, ctx: &mut Ctx, ino: u32) {
        // exit_mmap and unmap_region drain this CPU's pagevecs first.
        self.lru_add_drain(ctx);
        for p in self.inode_pages(ino) {
            let young = self.mm.pages.test(p, PG_MAPPED) && self.mm.pages.test(p, PG_YOUNG);
            self.page_remove_rmap(ctx, p);
            if young {
                self.mark_page_accessed(ctx, p);
            }
        }
        self.fs.inodes[ino as usize].mapped = false;
    }

    /// exit_mmap for an anonymous mm: free up to `budget` of its pages
    /// (pfn order), from `from`; returns the next pfn, or None when done.
    pub fn exit_mmap_anon(&mut self, ctx: &mut Ctx, mm_id: u32, from: usize, budget: u64) -> Option<usize> {
        let n = self.mm.pages.len();
        let mut pfn = from;
        let mut freed = 0;
        while pfn < n && freed < budget {
            let f = self.mm.pages.flags[pfn];
            if self.mm.pages.owner[pfn] == mm_id {
                let p = pfn as u32;
                if f & PG_ANON != 0 && f & (PG_WRITEBACK | PG_LOCKED) != 0 {
                    // On its way to or from swap: zap_pte_range unmaps it; the
                    // data are dead, so it is not written again; reclaim frees
                    // it (and its orphaned slot) once the I/O is done.
                    if f & PG_MAPPED != 0 {
                        let zi = self.mm.zone_of(p);
                        self.zs_add(zi, Zs::NrAnonPages, -1);
                    }
                    self.mm.pages.clear(p, PG_MAPPED | PG_YOUNG | PG_DIRTY | PG_FAULTREF);
                } else if f & PG_ANON != 0 {
                    // (A page on its way to swap is left to reclaim, which
                    // frees it and its slot when the write completes.)
                    let zi = self.mm.zone_of(p);
                    if self.del_page_from_lru(ctx, p) {
                        if f & PG_MAPPED != 0 {
                            self.zs_add(zi, Zs::NrAnonPages, -1);
                        }
                        let vpage = if f & PG_SWAPCACHE != 0 {
                            let slot = self.mm.pages.index[pfn];
                            let v = self.swap.as_ref().map_or(NIL, |s| s.vpage_of(slot));
                            self.delete_from_swap_cache(p);
                            v
                        } else {
                            self.mm.pages.index[pfn]
                        };
                        if let Some(pte) = self.anon_mm.get_mut(mm_id as usize).and_then(|pt| pt.get_mut(vpage as usize)) {
                            *pte = NIL;
                        }
                        self.mm.census.held -= 1;
                        self.mm.pages.flags[pfn] = 0;
                        // zap_pte_range: the page's struct page (page_remove_rmap's
                        // atomic on _mapcount), a miss at the page's node's latency;
                        // release_pages then takes the zone's lru_lock (a batch per
                        // zone: a hit while the zone stays the same).
                        let pnode = self.mm.zones[zi].node;
                        ctx.sys += self.cost.line_miss_ns * self.mm.distance[ctx.node][pnode] as u64 / 10;
                        self.mm.cache.write(ctx, self.mm.zones[zi].line_base + crate::mm::ZL_LRU);
                        self.mm.free_pages(ctx, p, 0);
                        freed += 1;
                    }
                } else if f & PG_KERNEL != 0 {
                    let zi = self.mm.zone_of(p);
                    self.zs_add(zi, Zs::NrPagetable, -1);
                    self.mm.census.kernel -= 1;
                    self.mm.pages.flags[pfn] = 0;
                    self.mm.free_pages(ctx, p, 0);
                    freed += 1;
                }
            }
            pfn += 1;
        }
        if pfn >= n {
            self.free_swap_of(mm_id);
        }
        (pfn < n).then_some(pfn)
    }
}
