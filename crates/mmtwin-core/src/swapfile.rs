//! Swap (mm/swapfile.c, mm/swap_state.c, mm/page_io.c, 3.0): one swap
//! area on a block device, its slot map (scan_swap_map's cursor), the swap
//! cache an anonymous page joins when reclaim picks it (add_to_swap), the
//! write reclaim's pageout issues (swap_writepage), and the slots a process
//! frees at exit.
//!
//! Swap-in (do_swap_page): a page found in the swap cache is mapped again;
//! otherwise the page and the other owned slots of its aligned cluster of
//! 8 (swapin_readahead, page_cluster 3) are read, and the task sleeps until
//! its page is uptodate. A write fault takes the page out of the swap cache
//! and frees its slot (reuse_swap_page) unless the page is still being
//! written.

use crate::alloc::gfp;
use crate::block::Submit;
use crate::cost::Ctx;
use crate::filemap::PageOp;
use crate::kernel::Kernel;
use crate::page::*;
use crate::page_alloc::AllocRes;
use crate::sched::{Next, Wq};
use crate::vmstat::*;

/// swapin_readahead reads 1 << page_cluster slots around the one faulted (3.0 default).
const PAGE_CLUSTER: u32 = 3;

/// A pte holding a swap slot instead of a pfn (pfns and slots are < 2^27).
pub const SWAP_PTE: u32 = 1 << 31;

/// A slot's owner when the process that owned it exited while its page was
/// still in flight: the slot is freed when the page leaves the swap cache.
const ORPHAN: u32 = u32::MAX;

/// One swap area (struct swap_info_struct).
pub struct SwapInfo {
    pub dev: usize,
    /// First block of the area on its device (after a filesystem sharing it).
    pub first_block: u64,
    pub nslots: u32,
    /// Per slot: 0 free, else the owning mm's id + 1, or ORPHAN.
    owner: Vec<u32>,
    /// Per slot: the page in the swap cache, or NIL.
    cache: Vec<u32>,
    /// Per slot: the owner's virtual page (the pte that holds the slot).
    vpage: Vec<u32>,
    /// scan_swap_map's cursor (si->cluster_next): slots are handed out in
    /// order, so pages reclaimed together are written together.
    cluster_next: u32,
    pub inuse: u32,
}

impl SwapInfo {
    pub fn new(dev: usize, first_block: u64, nslots: u32) -> SwapInfo {
        let n = nslots as usize;
        SwapInfo { dev, first_block, nslots, owner: vec![0; n], cache: vec![NIL; n], vpage: vec![NIL; n], cluster_next: 0, inuse: 0 }
    }

    pub fn state_bytes(&self) -> u64 {
        self.nslots as u64 * 12
    }

    /// The virtual page whose pte holds `slot`.
    pub fn vpage_of(&self, slot: u32) -> u32 {
        self.vpage[slot as usize]
    }

    /// The page in the swap cache for a slot (NIL if none), for the checks.
    pub fn cached(&self, slot: u32) -> u32 {
        self.cache[slot as usize]
    }

    /// The slot map agrees with itself: `inuse` counts the owned slots,
    /// every cached slot is owned, and an orphan slot still has its page.
    /// Returns the number of cached slots.
    pub fn check(&self) -> Result<u64, String> {
        let (mut owned, mut cached) = (0u32, 0u64);
        for s in 0..self.nslots as usize {
            if self.owner[s] != 0 {
                owned += 1;
            }
            if self.cache[s] != NIL {
                cached += 1;
                if self.owner[s] == 0 {
                    return Err(format!("swap slot {s} has a page but no owner"));
                }
            } else if self.owner[s] == ORPHAN {
                return Err(format!("orphan swap slot {s} has no page"));
            }
        }
        if owned != self.inuse {
            return Err(format!("{owned} swap slots owned, inuse says {}", self.inuse));
        }
        Ok(cached)
    }
}

impl Kernel {
    /// nr_swap_pages: free swap slots (0 without swap).
    pub fn nr_swap_pages(&self) -> i64 {
        self.swap.as_ref().map_or(0, |s| (s.nslots - s.inuse) as i64)
    }

    /// get_swap_page: the next free slot from the cursor, for `mm_id`.
    fn get_swap_page(&mut self, mm_id: u32) -> Option<u32> {
        assert!(mm_id < ORPHAN - 1, "mm id {mm_id} does not fit the slot map's owner encoding");
        let si = self.swap.as_mut()?;
        if si.inuse == si.nslots {
            return None;
        }
        let mut s = si.cluster_next;
        loop {
            if s >= si.nslots {
                s = 0;
            }
            if si.owner[s as usize] == 0 {
                si.owner[s as usize] = mm_id + 1;
                si.inuse += 1;
                si.cluster_next = s + 1;
                return Some(s);
            }
            s += 1;
        }
    }

    /// add_to_swap: give an anonymous page a slot and put it in the swap
    /// cache (NR_FILE_PAGES counts swap cache pages), dirty so that pageout
    /// writes it. False when swap is full (the page is activated).
    pub fn add_to_swap(&mut self, p: u32) -> bool {
        let mm_id = self.mm.pages.owner[p as usize];
        let Some(slot) = self.get_swap_page(mm_id) else { return false };
        let si = self.swap.as_mut().expect("a swap area");
        si.cache[slot as usize] = p;
        si.vpage[slot as usize] = self.mm.pages.index[p as usize];
        self.mm.pages.index[p as usize] = slot;
        self.mm.pages.set(p, PG_SWAPCACHE | PG_DIRTY);
        let zi = self.mm.zone_of(p);
        self.zs_add(zi, Zs::NrFilePages, 1);
        self.mm.sim.page_events += 1;
        true
    }

    /// __delete_from_swap_cache + swapcache_free: the page leaves the swap
    /// cache; its slot stays with the process (its pte holds it) unless the
    /// process is gone.
    pub fn delete_from_swap_cache(&mut self, p: u32) {
        let slot = self.mm.pages.index[p as usize];
        let si = self.swap.as_mut().expect("a swap area");
        si.cache[slot as usize] = NIL;
        if si.owner[slot as usize] == ORPHAN {
            si.owner[slot as usize] = 0;
            si.inuse -= 1;
        }
        self.mm.pages.clear(p, PG_SWAPCACHE);
        let zi = self.mm.zone_of(p);
        self.zs_add(zi, Zs::NrFilePages, -1);
    }

    /// swap_writepage: one page to its slot (reclaim clustered them by
    /// handing out slots in order; the block layer merges neighbours).
    /// The page is under writeback from here; a bio its request list
    /// refuses waits with the reclaimer (submit_reclaim_write).
    pub fn swap_writepage(&mut self, ctx: &mut Ctx, p: u32) {
        let slot = self.mm.pages.index[p as usize] as u64;
        let (dev, block) = {
            let si = self.swap.as_ref().expect("a swap area");
            (si.dev, si.first_block + slot)
        };
        ctx.sys += self.cost.writepage_ns;
        self.submit_reclaim_write(ctx, dev, block, &[p], 0);
        self.mm.pages.clear(p, PG_DIRTY);
        self.set_page_writeback(p);
        self.mm.vm.inc(Ev::Pswpout);
        self.mm.vm.add(Ev::Pgpgout, self.page_size / 1024);
    }

    /// swap_free: the last reference to a slot is gone.
    fn swap_free(&mut self, slot: u32) {
        let si = self.swap.as_mut().expect("a swap area");
        debug_assert!(si.cache[slot as usize] == NIL && si.owner[slot as usize] != 0);
        si.owner[slot as usize] = 0;
        si.inuse -= 1;
    }

    /// do_swap_page for a write fault on `vpage` of `mm_id`, whose pte holds
    /// `slot`: map the swap-cache page, or read it in and sleep until it is.
    pub fn do_swap_page(&mut self, ctx: &mut Ctx, mm_id: u32, vpage: u64, slot: u32) -> PageOp {
        let cached = self.swap.as_ref().expect("a swap area").cache[slot as usize];
        if cached == NIL {
            // swapin_readahead: the target page and the other owned slots of
            // its aligned cluster of 1 << page_cluster (3) slots that are not
            // cached, read in order in as few bios as they allow; each page
            // is locked in the swap cache until its read completes.
            let node = ctx.node;
            let p = match self.alloc_pages(ctx, gfp::GFP_HIGHUSER_MOVABLE, 0, node) {
                AllocRes::Page(p, _) => p,
                AllocRes::Sleep(n) => return PageOp::Sleep(n),
                AllocRes::Oom | AllocRes::Fail => return PageOp::Oom,
            };
            let (dev, first, start, end) = {
                let si = self.swap.as_ref().expect("a swap area");
                let start = slot & !((1 << PAGE_CLUSTER) - 1);
                (si.dev, si.first_block, start, (start + (1 << PAGE_CLUSTER)).min(si.nslots))
            };
            self.swap.as_mut().expect("a swap area").vpage[slot as usize] = vpage as u32;
            // The run of pages to read in one bio (no allocation per fault).
            let mut run = [NIL; 1 << PAGE_CLUSTER];
            let mut n = 0usize;
            let mut run_start = 0u32;
            for s in start..end {
                let q = if s == slot {
                    self.mm.pages.set(p, PG_FAULTREF);
                    p
                } else {
                    let si = self.swap.as_ref().expect("a swap area");
                    let o = si.owner[s as usize];
                    if o == 0 || o == ORPHAN || si.cache[s as usize] != NIL {
                        self.submit_swap_read(ctx, dev, first + run_start as u64, &run[..n]);
                        n = 0;
                        continue;
                    }
                    // Readahead never waits for memory: no __GFP_WAIT.
                    match self.alloc_pages(ctx, gfp::GFP_HIGHUSER_MOVABLE & !gfp::WAIT, 0, node) {
                        AllocRes::Page(q, _) => q,
                        _ => {
                            // 3.0 stops reading ahead at the first page it cannot get;
                            // the target (read last there) still is.
                            self.submit_swap_read(ctx, dev, first + run_start as u64, &run[..n]);
                            n = 0;
                            if s < slot {
                                continue;
                            }
                            break;
                        }
                    }
                };
                let owner = self.swap.as_ref().expect("a swap area").owner[s as usize] - 1;
                self.swap.as_mut().expect("a swap area").cache[s as usize] = q;
                let held = self.mm.pages.flags[q as usize] & PG_FAULTREF;
                self.mm.pages.flags[q as usize] = PG_SWAPBACKED | PG_ANON | PG_SWAPCACHE | PG_LOCKED | held;
                self.mm.pages.owner[q as usize] = owner;
                self.mm.pages.index[q as usize] = s;
                let zi = self.mm.zone_of(q);
                self.zs_add(zi, Zs::NrFilePages, 1);
                self.lru_cache_add(ctx, q, LRU_INACTIVE_ANON);
                if n == 0 {
                    run_start = s;
                }
                run[n] = q;
                n += 1;
            }
            self.submit_swap_read(ctx, dev, first + run_start as u64, &run[..n]);
            self.mm.vm.inc(Ev::Pgmajfault);
            let zi = self.mm.zone_of(p);
            return PageOp::Sleep(Next::Sleep { until: None, wq: Some(Wq::Page(zi)), io: true });
        }
        let p = cached;
        // An allocation of this fault that slept may have been overtaken by
        // another task's readahead of the slot: a reclaim it was in runs to
        // its end first, and no retry state stays.
        if let Err(next) = self.finish_overtaken_alloc(ctx) {
            return PageOp::Sleep(next);
        }
        if self.mm.pages.test(p, PG_LOCKED) {
            let zi = self.mm.zone_of(p);
            return PageOp::Sleep(Next::Sleep { until: None, wq: Some(Wq::Page(zi)), io: true });
        }
        // Map it again (page_add_anon_rmap); the fault's reference goes.
        let zi = self.mm.zone_of(p);
        self.mm.pages.clear(p, PG_FAULTREF);
        self.mm.pages.set(p, PG_MAPPED | PG_YOUNG);
        self.zs_add(zi, Zs::NrAnonPages, 1);
        if let Some(pt) = self.anon_mm.get_mut(mm_id as usize) {
            pt[vpage as usize] = p;
        }
        self.mm.sim.page_events += 1;
        // reuse_swap_page (a write fault, the only user): out of the swap
        // cache, dirty, its slot freed; not while it is being written.
        // While it is being written the page stays in the swap cache, dirty,
        // so that the new data go to the slot again.
        if !self.mm.pages.test(p, PG_WRITEBACK) {
            self.delete_from_swap_cache(p);
            self.swap_free(slot);
            self.mm.pages.index[p as usize] = vpage as u32;
        }
        self.mm.pages.set(p, PG_DIRTY);
        PageOp::Done
    }

    /// swap_readpage for a run of neighbouring slots: one bio (pswpin and
    /// pgpgin per page); a full queue keeps it for retry at the next
    /// completion.
    fn submit_swap_read(&mut self, ctx: &mut Ctx, dev: usize, block: u64, run: &[u32]) {
        if run.is_empty() {
            return;
        }
        let max = self.blk.max_bio_pages(dev) as usize;
        for (i, part) in run.chunks(max).enumerate() {
            let b = block + (i * max) as u64;
            if matches!(self.blk.submit_read(ctx.clock(), dev, b, part, 0, ctx.pid + 1), Submit::Full) {
                self.pending_reads.push((dev, b, part.to_vec(), ctx.pid + 1));
            }
        }
        self.mm.vm.add(Ev::Pswpin, run.len() as u64);
        self.mm.vm.add(Ev::Pgpgin, run.len() as u64 * self.page_size / 1024);
    }

    /// exit_mmap's part for swap: free the process's slots whose pages are
    /// gone; a slot whose page is still in the swap cache (in flight, or
    /// isolated by a reclaimer) is freed when that page leaves it.
    pub fn free_swap_of(&mut self, mm_id: u32) {
        let Some(si) = self.swap.as_mut() else { return };
        for s in 0..si.nslots as usize {
            if si.owner[s] == mm_id + 1 {
                if si.cache[s] == NIL {
                    si.owner[s] = 0;
                    si.inuse -= 1;
                } else {
                    si.owner[s] = ORPHAN;
                }
            }
        }
    }
}
