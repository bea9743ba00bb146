//! Invariants. `cheap` runs at every sample point of every run; `full`
//! walks every list and every page (tests and `--check`).

use crate::mm::{Mm, NR_MT};
use crate::page::{PG_ACTIVE, PG_BUDDY, PG_KERNEL, PG_LRU, PG_PAGEVEC, PG_PCP, PG_RESERVED};

impl Mm {
    /// O(zones + cpus): counters kept by different code paths agree.
    pub fn check_cheap(&self) -> Result<(), String> {
        let total = self.pages.len() as u64;
        if self.census.total() != total {
            return Err(format!(
                "page conservation: buddy {} + pcp {} + pagevec {} + lru {} + kernel {} + reserved {} = {} != {} pages",
                self.census.buddy,
                self.census.pcp,
                self.census.pagevec,
                self.census.lru,
                self.census.kernel,
                self.census.reserved,
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
        }
        let pcp: u64 = self.pcp.iter().map(|p| p.count as u64).sum();
        if pcp != self.census.pcp {
            return Err(format!("per-cpu counts sum {} != pcp census {}", pcp, self.census.pcp));
        }
        let pv: u64 = self.pagevec_len.iter().map(|&n| n as u64).sum();
        if pv != self.census.pagevec {
            return Err(format!("pagevec lengths sum {} != census {}", pv, self.census.pagevec));
        }
        let lru: u64 = self.zones.iter().map(|z| (z.active.len + z.inactive.len) as u64).sum();
        if lru != self.census.lru {
            return Err(format!("LRU list lengths sum {} != census {}", lru, self.census.lru));
        }
        Ok(())
    }

    /// O(pages): every list's members carry the flags of that list, list
    /// lengths match their counters, free blocks are aligned, inside their
    /// zone, and cover no page that is elsewhere.
    pub fn check_full(&self) -> Result<(), String> {
        self.check_cheap()?;
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
            for (list, want, name) in [(&z.active, PG_LRU | PG_ACTIVE, "active"), (&z.inactive, PG_LRU, "inactive")] {
                let mut len = 0u32;
                for p in self.pages.iter(list) {
                    let pu = p as usize;
                    len += 1;
                    if self.pages.flags[pu] & (PG_LRU | PG_ACTIVE) != want {
                        return Err(format!("zone {zi}: pfn {p} on the {name} list has flags {:#x}", self.pages.flags[pu]));
                    }
                    if pu < zs || pu >= ze {
                        return Err(format!("zone {zi}: pfn {p} on its {name} list belongs to another zone"));
                    }
                    mark(pu, name)?;
                }
                if len != list.len {
                    return Err(format!("zone {zi}: {name} list has {len} entries, head says {}", list.len));
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
        for (c, pv) in self.pagevecs.iter().enumerate() {
            for &p in &pv[..self.pagevec_len[c] as usize] {
                if self.pages.flags[p as usize] & PG_PAGEVEC == 0 {
                    return Err(format!("pfn {p} in cpu {c}'s pagevec lacks the pagevec flag"));
                }
                mark(p as usize, "pagevec")?;
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
        if let Some(p) = seen.iter().position(|&s| !s) {
            return Err(format!("pfn {p} is on no list and owned by nobody (flags {:#x})", self.pages.flags[p]));
        }
        Ok(())
    }
}
