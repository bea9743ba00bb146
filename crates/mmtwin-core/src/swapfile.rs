//! Swap (mm/swapfile.c, mm/swap_state.c, mm/page_io.c, 3.0): one swap
//! area on a block device, its slot map (scan_swap_map's cursor), the swap
//! cache an anonymous page joins when reclaim picks it (add_to_swap), the
//! write reclaim's pageout issues (swap_writepage), and the slots a process
//! frees at exit.
//!
//! Not modelled yet: swap-in (do_swap_page) and swap readahead. A page
//! reclaim swapped out is not touched again by the workloads that run with
//! swap today (the memory hog touches each page once), so its slot stays
//! allocated until the process exits.

use crate::block::{Dir, Submit};
use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::page::*;
use crate::vmstat::*;

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
    /// scan_swap_map's cursor (si->cluster_next): slots are handed out in
    /// order, so pages reclaimed together are written together.
    cluster_next: u32,
    pub inuse: u32,
}

impl SwapInfo {
    pub fn new(dev: usize, first_block: u64, nslots: u32) -> SwapInfo {
        SwapInfo { dev, first_block, nslots, owner: vec![0; nslots as usize], cache: vec![NIL; nslots as usize], cluster_next: 0, inuse: 0 }
    }

    pub fn state_bytes(&self) -> u64 {
        self.nslots as u64 * 8
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
    /// False if the queue had no free request (the page stays dirty).
    pub fn swap_writepage(&mut self, ctx: &mut Ctx, p: u32) -> bool {
        let slot = self.mm.pages.index[p as usize] as u64;
        let (dev, block) = {
            let si = self.swap.as_ref().expect("a swap area");
            (si.dev, si.first_block + slot)
        };
        ctx.sys += self.cost.writepage_ns;
        if matches!(self.blk.submit(ctx.clock(), dev, Dir::Write, block, &[p], 0), Submit::Full) {
            return false;
        }
        self.mm.pages.clear(p, PG_DIRTY);
        self.set_page_writeback(p);
        self.mm.vm.inc(Ev::Pswpout);
        self.mm.vm.add(Ev::Pgpgout, self.page_size / 1024);
        true
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
