//! Invariants. `cheap` runs at every sample point of every run; `full`
//! walks every list and every page (tests and `--check`).

use crate::kernel::Kernel;
use crate::mm::{Mm, NR_MT};
use crate::page::*;
use crate::vmstat::*;

impl Mm {
    /// O(zones + cpus): counters kept by different code paths agree.
    pub fn check_cheap(&self) -> Result<(), String> {
        let total = self.pages.len() as u64;
        if self.census.total() != total {
            return Err(format!(
                "page conservation: {:?} sums to {} != {} pages",
                self.census,
                self.census.total(),
                total
            ));
        }
        let free: i64 = self.free_pages_total();
        if free as u64 != self.census.buddy {
            return Err(format!("zone free_pages sum {} != buddy census {}", free, self.census.buddy));
        }
        for (zi, z) in self.zones.iter().enumerate() {
            let from_orders: i64 = z.nr_free.iter().enumerate().map(|(o, &n)| (n as i64) << o).sum();
            if from_orders != z.free_pages {
                return Err(format!("zone {zi}: nr_free by order sums to {from_orders}, free_pages is {}", z.free_pages));
            }
            if z.free_pages < 0 {
                return Err(format!("zone {zi}: negative free_pages {}", z.free_pages));
            }
            // The unfolded NR_FREE_PAGES deltas are the CPUs' diffs, each
            // within its threshold (a lowered threshold leaves a larger
            // diff until that CPU's next update).
            let nz = self.zones.len();
            let diffs: i64 = (0..self.cpu_node.len()).map(|c| self.free_diff[c * nz + zi] as i64).sum();
            if diffs != z.free_unfolded {
                return Err(format!("zone {zi}: unfolded NR_FREE_PAGES {} != per-cpu diffs {}", z.free_unfolded, diffs));
            }
            if (0..self.cpu_node.len()).any(|c| self.free_diff[c * nz + zi].abs() > z.normal_threshold.max(z.pressure_threshold)) {
                return Err(format!("zone {zi}: a per-cpu NR_FREE_PAGES diff beyond the threshold"));
            }
        }
        let pcp: u64 = self.pcp.iter().map(|p| p.count as u64).sum();
        if pcp != self.census.pcp {
            return Err(format!("per-cpu counts sum {} != pcp census {}", pcp, self.census.pcp));
        }
        let lru: u64 = self.zones.iter().map(|z| z.lru.iter().map(|l| l.len as u64).sum::<u64>()).sum();
        if lru != self.census.lru {
            return Err(format!("LRU list lengths sum {} != census {}", lru, self.census.lru));
        }
        Ok(())
    }

    /// O(pages): every list's members carry the flags of that list, list
    /// lengths match their counters, free blocks are aligned, inside their
    /// zone, and cover no page that is elsewhere.
    pub fn check_full(&self) -> Result<(), String> {
        let seen = self.check_full_seen()?;
        if let Some(p) = seen.iter().position(|&s| !s) {
            return Err(format!("pfn {p} is on no list and owned by nobody (flags {:#x})", self.pages.flags[p]));
        }
        Ok(())
    }

    /// The allocator's part of the full check: buddy lists, per-cpu lists,
    /// LRU lists, kernel and reserved pages. Returns which pages were seen.
    pub fn check_full_seen(&self) -> Result<Vec<bool>, String> {
        self.check_cheap()?;
        self.cache.check()?;
        let n = self.pages.len();
        // Which pages are covered by a free block or seen on a list.
        let mut seen = vec![false; n];
        let mut mark = |p: usize, what: &str| -> Result<(), String> {
            if seen[p] {
                return Err(format!("pfn {p} is on two lists (second: {what})"));
            }
            seen[p] = true;
            Ok(())
        };
        for (zi, z) in self.zones.iter().enumerate() {
            let (zs, ze) = (z.start_pfn as usize, z.start_pfn as usize + z.present as usize);
            for o in 0..self.max_order {
                let mut count = 0u64;
                for mt in 0..NR_MT {
                    let list = &z.free_area[o][mt];
                    let mut len = 0u32;
                    for p in self.pages.iter(list) {
                        let pu = p as usize;
                        len += 1;
                        if self.pages.flags[pu] != PG_BUDDY {
                            return Err(format!("zone {zi} order {o}: pfn {p} on a free list without only PG_buddy (flags {:#x})", self.pages.flags[pu]));
                        }
                        if self.pages.order[pu] as usize != o || self.pages.mt[pu] as usize != mt {
                            return Err(format!("zone {zi}: pfn {p} on free list order {o} type {mt} records order {} type {}", self.pages.order[pu], self.pages.mt[pu]));
                        }
                        if pu & ((1 << o) - 1) != 0 || pu < zs || pu + (1 << o) > ze {
                            return Err(format!("zone {zi}: free block pfn {p} order {o} misaligned or outside the zone"));
                        }
                        mark(pu, "free list")?;
                        for t in pu + 1..pu + (1 << o) {
                            if self.pages.flags[t] != 0 {
                                return Err(format!("pfn {t} inside free block {p} (order {o}) has flags {:#x}", self.pages.flags[t]));
                            }
                            mark(t, "free block tail")?;
                        }
                    }
                    if len != list.len {
                        return Err(format!("zone {zi} order {o} type {mt}: list has {len} entries, head says {}", list.len));
                    }
                    count += len as u64;
                }
                if count != z.nr_free[o] {
                    return Err(format!("zone {zi} order {o}: {count} blocks on the lists, nr_free says {}", z.nr_free[o]));
                }
            }
            for (l, list) in z.lru.iter().enumerate() {
                let want_active = l == LRU_ACTIVE_ANON || l == LRU_ACTIVE_FILE;
                let want_file = l == LRU_INACTIVE_FILE || l == LRU_ACTIVE_FILE;
                let mut len = 0u32;
                for p in self.pages.iter(list) {
                    let pu = p as usize;
                    len += 1;
                    let f = self.pages.flags[pu];
                    if f & PG_LRU == 0 || (f & PG_ACTIVE != 0) != want_active || (l != LRU_UNEVICTABLE && (f & PG_SWAPBACKED == 0) != want_file) {
                        return Err(format!("zone {zi}: pfn {p} on LRU list {l} has flags {f:#x}"));
                    }
                    if pu < zs || pu >= ze {
                        return Err(format!("zone {zi}: pfn {p} on its LRU list {l} belongs to another zone"));
                    }
                    mark(pu, "lru")?;
                }
                if len != list.len {
                    return Err(format!("zone {zi}: LRU list {l} has {len} entries, head says {}", list.len));
                }
            }
        }
        let nz = self.zones.len();
        for (i, pcp) in self.pcp.iter().enumerate() {
            let zi = i % nz;
            let mut count = 0u32;
            for list in &pcp.lists {
                for p in self.pages.iter(list) {
                    count += 1;
                    if self.pages.flags[p as usize] != PG_PCP {
                        return Err(format!("pfn {p} on a per-cpu list has flags {:#x}", self.pages.flags[p as usize]));
                    }
                    if self.zone_of(p) != zi {
                        return Err(format!("pfn {p} on cpu {}'s list for zone {zi} belongs to zone {}", i / nz, self.zone_of(p)));
                    }
                    mark(p as usize, "per-cpu list")?;
                }
            }
            if count != pcp.count {
                return Err(format!("per-cpu list {i}: {count} pages, count says {}", pcp.count));
            }
        }
        let mut kernel = 0u64;
        let mut reserved = 0u64;
        for p in 0..n {
            let f = self.pages.flags[p];
            if f & PG_KERNEL != 0 {
                kernel += 1;
                mark(p, "kernel")?;
            }
            if f & PG_RESERVED != 0 {
                reserved += 1;
                mark(p, "reserved")?;
            }
        }
        if kernel != self.census.kernel || reserved != self.census.reserved {
            return Err(format!(
                "kernel/reserved pages by flag {kernel}/{reserved}, census says {}/{}",
                self.census.kernel, self.census.reserved
            ));
        }
        Ok(seen)
    }
}

impl Kernel {
    /// O(zones + cpus): counters kept by different code paths agree.
    pub fn check_cheap(&self) -> Result<(), String> {
        self.mm.check_cheap()?;
        let pv = self.pvec.total();
        if pv != self.mm.census.pagevec {
            return Err(format!("pagevec lengths sum {} != census {}", pv, self.mm.census.pagevec));
        }
        if self.mm.census.held != 0 || self.mm.census.isolated != 0 {
            return Err(format!("{} pages held and {} isolated between steps", self.mm.census.held, self.mm.census.isolated));
        }
        for (zi, z) in self.mm.zones.iter().enumerate() {
            for l in 0..NR_LRU {
                if z.lru[l].len as i64 != z.vm_stat[lru_stat(l) as usize] {
                    return Err(format!("zone {zi}: LRU list {l} has {} pages, vm_stat says {}", z.lru[l].len, z.vm_stat[lru_stat(l) as usize]));
                }
            }
            for item in [Zs::NrFileDirty, Zs::NrWriteback, Zs::NrFilePages, Zs::NrIsolatedFile, Zs::NrIsolatedAnon, Zs::NrFileMapped, Zs::NrSlabReclaimable] {
                if z.vm_stat[item as usize] < 0 {
                    return Err(format!("zone {zi}: {item:?} is negative ({})", z.vm_stat[item as usize]));
                }
            }
        }
        let slab: i64 = self.mm.zones.iter().map(|z| z.vm_stat[Zs::NrSlabReclaimable as usize]).sum();
        if slab as u64 != self.mm.census.slab {
            return Err(format!("NR_SLAB_RECLAIMABLE sums to {slab}, census says {}", self.mm.census.slab));
        }
        // Reclaim's bios waiting for a request: each task's count matches,
        // and every page in them is under writeback (O(waiting bios)).
        for (pid, t) in self.kt.iter().enumerate() {
            let n = self.pending_writes.iter().filter(|w| w.pid == pid as u32).count();
            if n != t.pending as usize {
                return Err(format!("task {pid}: {n} bios waiting for a request, its count says {}", t.pending));
            }
        }
        for w in &self.pending_writes {
            if let Some(&p) = w.pfns.iter().find(|&&p| p != NIL && !self.mm.pages.test(p, PG_WRITEBACK)) {
                return Err(format!("pfn {p} waits for a request without being under writeback"));
            }
        }
        Ok(())
    }

    /// O(pages): every page is in exactly one place, and the per-zone
    /// dirty, writeback, file and mapped counts agree with the page flags.
    pub fn check_full(&self) -> Result<(), String> {
        self.check_cheap()?;
        let mut seen = self.mm.check_full_seen()?;
        for p in self.pvec.iter() {
            if self.mm.pages.flags[p as usize] & PG_PAGEVEC == 0 {
                return Err(format!("pfn {p} in a pagevec lacks the pagevec flag"));
            }
            if seen[p as usize] {
                return Err(format!("pfn {p} is in a pagevec and elsewhere"));
            }
            seen[p as usize] = true;
        }
        let nz = self.mm.zones.len();
        let mut count = vec![[0i64; 5]; nz];
        let mut slab = 0u64;
        for (p, seen_p) in seen.iter_mut().enumerate() {
            let f = self.mm.pages.flags[p];
            if f & PG_SLAB != 0 {
                slab += 1;
                if *seen_p {
                    return Err(format!("slab pfn {p} is also elsewhere"));
                }
                *seen_p = true;
            }
            if f & PG_SWAPCACHE != 0 {
                // In the swap cache: NR_FILE_PAGES and NR_WRITEBACK count it,
                // NR_FILE_DIRTY does not; the cache points back at it.
                let zi = self.mm.zone_of(p as u32);
                count[zi][0] += 1;
                if f & PG_WRITEBACK != 0 {
                    count[zi][2] += 1;
                }
                let slot = self.mm.pages.index[p];
                if self.swap.as_ref().map(|s| s.cached(slot)) != Some(p as u32) {
                    return Err(format!("swap cache pfn {p} is not the page of its slot {slot}"));
                }
            }
            if f & (PG_FILE | PG_DIRTY | PG_WRITEBACK | PG_MAPPED) != 0 {
                let zi = self.mm.zone_of(p as u32);
                if f & PG_FILE != 0 {
                    count[zi][0] += 1;
                    if f & PG_DIRTY != 0 {
                        count[zi][1] += 1;
                    }
                    if f & PG_WRITEBACK != 0 {
                        count[zi][2] += 1;
                    }
                    if f & PG_MAPPED != 0 {
                        count[zi][3] += 1;
                    }
                    let ino = self.mm.pages.owner[p];
                    if self.find_get_page(ino, self.mm.pages.index[p] as u64) != Some(p as u32) {
                        return Err(format!("page-cache pfn {p} is not in its inode {ino}'s radix tree"));
                    }
                }
                if f & PG_ANON != 0 && f & PG_MAPPED != 0 {
                    count[zi][4] += 1;
                }
            }
        }
        if let Some(si) = &self.swap {
            let cached = si.check()?;
            let flagged = self.mm.pages.flags.iter().filter(|&&f| f & PG_SWAPCACHE != 0).count() as u64;
            if cached != flagged {
                return Err(format!("{cached} swap slots cache a page, {flagged} pages are flagged swapcache"));
            }
        }
        if slab != self.mm.census.slab {
            return Err(format!("{slab} pages flagged slab, census says {}", self.mm.census.slab));
        }
        // Buffer heads: one object per PG_private page, plus those tasks
        // hold for their next page; only page-cache pages have buffers.
        let mut private = 0u64;
        for (p, &f) in self.mm.pages.flags.iter().enumerate() {
            if f & PG_PRIVATE != 0 {
                if f & PG_FILE == 0 {
                    return Err(format!("pfn {p} has buffers but is not in the page cache"));
                }
                private += 1;
            }
        }
        let reserved = self.kt.iter().filter(|t| t.bh_reserve != NIL).count() as u64;
        let bh = self.slab.caches[crate::slab::BUFFER_HEAD].objects;
        if private + reserved != bh {
            return Err(format!("{private} pages with buffers and {reserved} reserved, but {bh} buffer heads allocated"));
        }
        for (zi, z) in self.mm.zones.iter().enumerate() {
            let want = [Zs::NrFilePages, Zs::NrFileDirty, Zs::NrWriteback, Zs::NrFileMapped, Zs::NrAnonPages];
            for (k, item) in want.iter().enumerate() {
                if count[zi][k] != z.vm_stat[*item as usize] {
                    return Err(format!("zone {zi}: {} pages by flag for {item:?}, vm_stat says {}", count[zi][k], z.vm_stat[*item as usize]));
                }
            }
        }
        self.check_radix_tags()?;
        let inode_dirty: u64 = self.fs.inodes.iter().map(|i| i.nrdirty).sum();
        let zone_dirty: i64 = self.mm.zones.iter().map(|z| z.vm_stat[Zs::NrFileDirty as usize]).sum();
        if inode_dirty as i64 != zone_dirty {
            return Err(format!("inodes hold {inode_dirty} dirty pages, zones count {zone_dirty}"));
        }
        if let Some(p) = seen.iter().position(|&s| !s) {
            return Err(format!("pfn {p} is on no list and owned by nobody (flags {:#x})", self.mm.pages.flags[p]));
        }
        self.check_dirty_inodes()
    }

    /// Every inode with dirty pages is where the flusher will find it: on
    /// exactly one of its bdi's b_dirty, b_io and b_more_io lists, with its
    /// writeback cursor (dirty_lo) at or before its first dirty page.
    fn check_dirty_inodes(&self) -> Result<(), String> {
        let n = self.fs.inodes.len();
        let mut listed = vec![0u32; n];
        for b in &self.bdi {
            for &ino in b.b_dirty.iter().chain(b.b_io.iter()).chain(b.b_more_io.iter()) {
                listed[ino as usize] += 1;
            }
        }
        let mut first_dirty = vec![u64::MAX; n];
        let mut delayed = vec![0u64; n];
        let ext4 = self.fs.kind == crate::spec::FsKind::Ext4;
        for p in 0..self.mm.pages.flags.len() {
            let f = self.mm.pages.flags[p];
            if f & PG_DIRTY != 0 && f & PG_FILE != 0 {
                let ino = self.mm.pages.owner[p] as usize;
                if ino < n {
                    let idx = self.mm.pages.index[p] as u64;
                    first_dirty[ino] = first_dirty[ino].min(idx);
                    if ext4 && self.fs.bmap(ino as u32, idx) == crate::fs::NO_BLOCK {
                        delayed[ino] += 1;
                    }
                }
            }
        }
        for (ino, i) in self.fs.inodes.iter().enumerate() {
            if i.reserved != delayed[ino] {
                return Err(format!("inode {ino}: {} pages reserved for delayed allocation, {} dirty pages without a block", i.reserved, delayed[ino]));
            }
            if i.nrdirty == 0 {
                continue;
            }
            if !i.on_dirty_list || listed[ino] == 0 {
                return Err(format!(
                    "inode {ino} has {} dirty pages but is on no writeback list (on_dirty_list {}, listed {} times)",
                    i.nrdirty, i.on_dirty_list, listed[ino]
                ));
            }
            if i.dirty_lo > first_dirty[ino] {
                return Err(format!("inode {ino}: writeback cursor {} is past its first dirty page {}", i.dirty_lo, first_dirty[ino]));
            }
        }
        Ok(())
    }
}
