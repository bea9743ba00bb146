//! LRU insertion and movement (mm/swap.c): per-cpu pagevecs feeding the
//! zone's LRU lists (lru_cache_add_lru, __pagevec_lru_add, lru_add_drain),
//! mark_page_accessed / activate_page, rotate_reclaimable_page, and taking a
//! page off its LRU list outside reclaim (truncate, invalidate).

use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::page::*;
use crate::vmstat::*;

pub const PAGEVEC_SIZE: usize = 14;

/// Per-cpu lru_add_pvecs, one pagevec per LRU list.
pub struct Pagevecs {
    pages: Vec<[[u32; PAGEVEC_SIZE]; NR_LRU]>,
    len: Vec<[u8; NR_LRU]>,
}

impl Pagevecs {
    pub fn new(ncpus: usize) -> Pagevecs {
        Pagevecs { pages: vec![[[NIL; PAGEVEC_SIZE]; NR_LRU]; ncpus], len: vec![[0; NR_LRU]; ncpus] }
    }
    pub fn total(&self) -> u64 {
        self.len.iter().map(|l| l.iter().map(|&n| n as u64).sum::<u64>()).sum()
    }
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.pages.iter().zip(self.len.iter()).flat_map(|(pv, len)| (0..NR_LRU).flat_map(move |l| pv[l][..len[l] as usize].iter().copied()))
    }
}

impl Kernel {
    /// lru_cache_add_lru: queue a new page for `lru` on this CPU's pagevec.
    pub fn lru_cache_add(&mut self, ctx: &mut Ctx, p: u32, lru: usize) {
        let c = ctx.cpu;
        let n = self.pvec.len[c][lru] as usize;
        self.pvec.pages[c][lru][n] = p;
        self.pvec.len[c][lru] += 1;
        self.mm.pages.set(p, PG_PAGEVEC | if lru == LRU_ACTIVE_ANON || lru == LRU_ACTIVE_FILE { PG_ACTIVE } else { 0 });
        self.mm.census.pagevec += 1;
        if n + 1 == PAGEVEC_SIZE {
            self.pagevec_lru_add(ctx, c, lru);
        }
    }

    /// __pagevec_lru_add: move one pagevec onto its LRU list under each
    /// zone's lru_lock.
    fn pagevec_lru_add(&mut self, ctx: &mut Ctx, c: usize, lru: usize) {
        let n = self.pvec.len[c][lru] as usize;
        let mut locked = usize::MAX;
        for i in 0..n {
            let p = self.pvec.pages[c][lru][i];
            let zi = self.mm.zone_of(p);
            if zi != locked {
                self.mm.cache.write(ctx, self.mm.zones[zi].line_base + crate::mm::ZL_LRU);
                locked = zi;
            }
            let f = &mut self.mm.pages.flags[p as usize];
            *f = (*f & !PG_PAGEVEC) | PG_LRU;
            let file = *f & PG_SWAPBACKED == 0;
            let z = &mut self.mm.zones[zi];
            self.mm.pages.push_front(&mut z.lru[lru], p);
            z.vm_stat[lru_stat(lru) as usize] += 1;
            z.recent_scanned[file as usize] += 1;
            if lru == LRU_ACTIVE_ANON || lru == LRU_ACTIVE_FILE {
                z.recent_rotated[file as usize] += 1;
            }
            self.mm.census.pagevec -= 1;
            self.mm.census.lru += 1;
            self.mm.sim.page_events += 1;
        }
        self.pvec.len[c][lru] = 0;
    }

    /// lru_add_drain: this CPU's pagevecs onto the LRU lists.
    pub fn lru_add_drain(&mut self, ctx: &mut Ctx) {
        let c = ctx.cpu;
        for lru in 0..NR_LRU {
            if self.pvec.len[c][lru] > 0 {
                self.pagevec_lru_add(ctx, c, lru);
            }
        }
    }

    /// lru_add_drain_all: every CPU's pagevecs (schedule_on_each_cpu).
    pub fn lru_add_drain_all(&mut self, ctx: &mut Ctx) {
        for c in 0..self.pvec.len.len() {
            for lru in 0..NR_LRU {
                if self.pvec.len[c][lru] > 0 {
                    self.pagevec_lru_add(ctx, c, lru);
                }
            }
        }
    }

    /// mark_page_accessed: inactive,unreferenced -> inactive,referenced ->
    /// active (activate_page).
    pub fn mark_page_accessed(&mut self, ctx: &mut Ctx, p: u32) {
        let f = self.mm.pages.flags[p as usize];
        if f & PG_ACTIVE == 0 && f & PG_REFERENCED != 0 && f & PG_LRU != 0 && f & PG_UNEVICTABLE == 0 {
            self.activate_page(ctx, p);
            self.mm.pages.clear(p, PG_REFERENCED);
        } else if f & PG_REFERENCED == 0 {
            self.mm.pages.set(p, PG_REFERENCED);
        }
    }

    /// activate_page: an inactive page on an LRU list moves to the active list.
    fn activate_page(&mut self, ctx: &mut Ctx, p: u32) {
        let zi = self.mm.zone_of(p);
        let file = !self.mm.pages.test(p, PG_SWAPBACKED);
        let from = if file { LRU_INACTIVE_FILE } else { LRU_INACTIVE_ANON };
        self.mm.cache.write(ctx, self.mm.zones[zi].line_base + crate::mm::ZL_LRU);
        let z = &mut self.mm.zones[zi];
        self.mm.pages.unlink(&mut z.lru[from], p);
        self.mm.pages.push_front(&mut z.lru[from + 1], p);
        z.vm_stat[lru_stat(from) as usize] -= 1;
        z.vm_stat[lru_stat(from + 1) as usize] += 1;
        z.recent_rotated[file as usize] += 1;
        z.recent_scanned[file as usize] += 1;
        self.mm.pages.set(p, PG_ACTIVE);
        self.mm.vm.inc(Ev::Pgactivate);
        self.mm.sim.page_events += 1;
    }

    /// rotate_reclaimable_page: a page whose writeback ended with PG_reclaim
    /// set goes to the tail of its inactive list, to be reclaimed next.
    pub fn rotate_reclaimable_page(&mut self, p: u32) {
        let f = self.mm.pages.flags[p as usize];
        if f & (PG_LOCKED | PG_DIRTY | PG_ACTIVE | PG_UNEVICTABLE) != 0 || f & PG_LRU == 0 {
            return;
        }
        let zi = self.mm.zone_of(p);
        let lru = if f & PG_SWAPBACKED != 0 { LRU_INACTIVE_ANON } else { LRU_INACTIVE_FILE };
        let z = &mut self.mm.zones[zi];
        self.mm.pages.unlink(&mut z.lru[lru], p);
        self.mm.pages.push_back(&mut z.lru[lru], p);
        self.mm.vm.inc(Ev::Pgrotated);
        self.mm.sim.page_events += 1;
    }

    /// Take a page off its LRU list or pagevec so it can be freed outside
    /// reclaim (truncate, invalidate, exit). Returns false if it is isolated
    /// by a reclaimer (busy).
    pub fn del_page_from_lru(&mut self, ctx: &mut Ctx, p: u32) -> bool {
        let f = self.mm.pages.flags[p as usize];
        if f & PG_PAGEVEC != 0 {
            self.lru_add_drain_all(ctx);
        }
        let f = self.mm.pages.flags[p as usize];
        if f & PG_LRU == 0 {
            return false;
        }
        let zi = self.mm.zone_of(p);
        let lru = if f & PG_UNEVICTABLE != 0 {
            LRU_UNEVICTABLE
        } else {
            (if f & PG_SWAPBACKED != 0 { LRU_INACTIVE_ANON } else { LRU_INACTIVE_FILE }) + (f & PG_ACTIVE != 0) as usize
        };
        let z = &mut self.mm.zones[zi];
        self.mm.pages.unlink(&mut z.lru[lru], p);
        z.vm_stat[lru_stat(lru) as usize] -= 1;
        self.mm.pages.clear(p, PG_LRU | PG_ACTIVE);
        self.mm.census.lru -= 1;
        self.mm.census.held += 1; // held by the caller until it frees the page
        self.mm.sim.page_events += 1;
        true
    }
}
