//! /proc/vmstat counters under their kernel names, in each era's order.

/// Event and state counters the engine maintains. Names follow mm/vmstat.c;
/// per-zone-type counters (pgalloc_*) are summed across nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Ev {
    NumaHit,
    NumaMiss,
    NumaForeign,
    NumaInterleave,
    NumaLocal,
    NumaOther,
    PgallocDma,
    PgallocDma32,
    PgallocNormal,
    PgallocHigh,
    PgallocMovable,
    Pgfree,
    Pgactivate,
    Pgdeactivate,
    Pgfault,
    Pgmajfault,
    Pageoutrun,
    Allocstall,
    KswapdWake,
    Count,
}

pub const NR_EV: usize = Ev::Count as usize;

#[derive(Debug, Clone)]
pub struct VmStat {
    pub ev: [u64; NR_EV],
}

impl Default for VmStat {
    fn default() -> Self {
        VmStat { ev: [0; NR_EV] }
    }
}

impl VmStat {
    #[inline]
    pub fn inc(&mut self, e: Ev) {
        self.ev[e as usize] += 1;
    }
    #[inline]
    pub fn add(&mut self, e: Ev, n: u64) {
        self.ev[e as usize] += n;
    }
    #[inline]
    pub fn get(&self, e: Ev) -> u64 {
        self.ev[e as usize]
    }

    pub fn pgalloc_for_zone_type(zt: usize) -> Ev {
        match zt {
            0 => Ev::PgallocDma,
            1 => Ev::PgallocDma32,
            2 => Ev::PgallocNormal,
            3 => Ev::PgallocHigh,
            _ => Ev::PgallocMovable,
        }
    }
}

/// State gauges read at the end of a run (nr_* rows).
#[derive(Debug, Clone, Default)]
pub struct Gauges {
    pub nr_free_pages: u64,
    pub nr_anon_pages: u64,
    pub nr_page_table_pages: u64,
    pub nr_active: u64,
    pub nr_inactive: u64,
}

/// The /proc/vmstat rows of an era, in the kernel's order.
pub fn rows(era: crate::spec::Era, v: &VmStat, g: &Gauges, zone_types_present: &[bool; 5]) -> Vec<(&'static str, u64)> {
    use crate::spec::Era;
    let mut out: Vec<(&'static str, u64)> = Vec::new();
    match era {
        Era::V2618 => {
            out.push(("nr_anon_pages", g.nr_anon_pages));
            out.push(("nr_mapped", 0));
            out.push(("nr_file_pages", 0));
            out.push(("nr_slab", 0));
            out.push(("nr_page_table_pages", g.nr_page_table_pages));
            out.push(("nr_dirty", 0));
            out.push(("nr_writeback", 0));
            out.push(("nr_unstable", 0));
            out.push(("nr_bounce", 0));
        }
        _ => {
            out.push(("nr_free_pages", g.nr_free_pages));
            if era == Era::V411 {
                out.push(("nr_zone_inactive_anon", g.nr_inactive));
                out.push(("nr_zone_active_anon", g.nr_active));
            } else {
                out.push(("nr_inactive_anon", g.nr_inactive));
                out.push(("nr_active_anon", g.nr_active));
            }
            out.push(("nr_inactive_file", 0));
            out.push(("nr_active_file", 0));
            out.push(("nr_anon_pages", g.nr_anon_pages));
            out.push(("nr_mapped", 0));
            out.push(("nr_file_pages", 0));
            out.push(("nr_dirty", 0));
            out.push(("nr_writeback", 0));
            out.push(("nr_page_table_pages", g.nr_page_table_pages));
        }
    }
    out.push(("numa_hit", v.get(Ev::NumaHit)));
    out.push(("numa_miss", v.get(Ev::NumaMiss)));
    out.push(("numa_foreign", v.get(Ev::NumaForeign)));
    out.push(("numa_interleave", v.get(Ev::NumaInterleave)));
    out.push(("numa_local", v.get(Ev::NumaLocal)));
    out.push(("numa_other", v.get(Ev::NumaOther)));
    out.push(("pgpgin", 0));
    out.push(("pgpgout", 0));
    out.push(("pswpin", 0));
    out.push(("pswpout", 0));
    // pgalloc_* rows exist for the zone types the kernel was built with.
    let names = ["pgalloc_dma", "pgalloc_dma32", "pgalloc_normal", "pgalloc_high", "pgalloc_movable"];
    let evs = [Ev::PgallocDma, Ev::PgallocDma32, Ev::PgallocNormal, Ev::PgallocHigh, Ev::PgallocMovable];
    for zt in 0..5 {
        let built = match (era, zt) {
            (_, 0) | (_, 2) => true,
            (_, 1) => zone_types_present[1],
            (_, 3) => zone_types_present[3],
            (Era::V2618, 4) => false,
            (_, 4) => true,
            _ => false,
        };
        if built {
            out.push((names[zt], v.get(evs[zt])));
        }
    }
    out.push(("pgfree", v.get(Ev::Pgfree)));
    out.push(("pgactivate", v.get(Ev::Pgactivate)));
    out.push(("pgdeactivate", v.get(Ev::Pgdeactivate)));
    out.push(("pgfault", v.get(Ev::Pgfault)));
    out.push(("pgmajfault", v.get(Ev::Pgmajfault)));
    // Reclaim is not simulated yet: these rows exist and stay 0. Before 4.8
    // they are per zone type; from 4.8 per node (one row each).
    if era == Era::V411 {
        out.push(("pgsteal_kswapd", 0));
        out.push(("pgsteal_direct", 0));
        out.push(("pgscan_kswapd", 0));
        out.push(("pgscan_direct", 0));
    } else {
        let built: Vec<usize> = (0..5)
            .filter(|&zt| match zt {
                0 | 2 => true,
                1 | 3 => zone_types_present[zt],
                _ => era != Era::V2618,
            })
            .collect();
        const STEAL: [&str; 5] = ["pgsteal_dma", "pgsteal_dma32", "pgsteal_normal", "pgsteal_high", "pgsteal_movable"];
        const KSW: [&str; 5] = [
            "pgscan_kswapd_dma",
            "pgscan_kswapd_dma32",
            "pgscan_kswapd_normal",
            "pgscan_kswapd_high",
            "pgscan_kswapd_movable",
        ];
        const DIR: [&str; 5] = [
            "pgscan_direct_dma",
            "pgscan_direct_dma32",
            "pgscan_direct_normal",
            "pgscan_direct_high",
            "pgscan_direct_movable",
        ];
        for &zt in &built {
            out.push((STEAL[zt], 0));
        }
        for &zt in &built {
            out.push((KSW[zt], 0));
        }
        for &zt in &built {
            out.push((DIR[zt], 0));
        }
    }
    out.push(("slabs_scanned", 0));
    if era == Era::V2618 {
        out.push(("kswapd_steal", 0));
    }
    out.push(("pageoutrun", v.get(Ev::Pageoutrun)));
    out.push(("allocstall", v.get(Ev::Allocstall)));
    out
}
