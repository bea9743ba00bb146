//! /proc/vmstat: per-zone state items (zone_stat_item), event counters
//! (vm_event_item, some per zone type) and each era's rows in the kernel's
//! own order (mm/vmstat.c vmstat_text).

use crate::spec::Era;

/// Global event counters (vm_event_item without the per-zone ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Ev {
    Pgpgin,
    Pgpgout,
    Pswpin,
    Pswpout,
    Pgfree,
    Pgactivate,
    Pgdeactivate,
    Pgfault,
    Pgmajfault,
    ZoneReclaimFailed,
    Pginodesteal,
    SlabsScanned,
    KswapdSteal,
    KswapdInodesteal,
    KswapdLowWmarkHitQuickly,
    KswapdHighWmarkHitQuickly,
    KswapdSkipCongestionWait,
    Pageoutrun,
    Allocstall,
    Pgrotated,
    CompactBlocksMoved,
    CompactPagesMoved,
    CompactPagemigrateFailed,
    CompactStall,
    CompactFail,
    CompactSuccess,
    /// Not a /proc/vmstat row: times wakeup_kswapd really woke a kswapd.
    KswapdWake,
    Count,
}
pub const NR_EV: usize = Ev::Count as usize;

/// Event counters kept per zone type (TEXTS_FOR_ZONES rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Zev {
    Pgalloc,
    Pgrefill,
    PgstealKswapd,
    PgstealDirect,
    PgscanKswapd,
    PgscanDirect,
    /// 4.11's allocstall_<zone>: direct reclaim entered, by the request's
    /// highest usable zone (gfp_zone, sc->reclaim_idx). Earlier eras print
    /// the global Ev::Allocstall only.
    Allocstall,
    Count,
}
pub const NR_ZEV: usize = Zev::Count as usize;

/// Per-zone state items (enum zone_stat_item, 3.0 order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Zs {
    NrFreePages,
    NrInactiveAnon,
    NrActiveAnon,
    NrInactiveFile,
    NrActiveFile,
    NrUnevictable,
    NrMlock,
    NrAnonPages,
    NrFileMapped,
    NrFilePages,
    NrFileDirty,
    NrWriteback,
    NrSlabReclaimable,
    NrSlabUnreclaimable,
    NrPagetable,
    NrKernelStack,
    NrUnstableNfs,
    NrBounce,
    NrVmscanWrite,
    NrVmscanImmediate,
    NrWritebackTemp,
    NrIsolatedAnon,
    NrIsolatedFile,
    NrShmem,
    NrDirtied,
    NrWritten,
    NumaHit,
    NumaMiss,
    NumaForeign,
    NumaInterleave,
    NumaLocal,
    NumaOther,
    Count,
}
pub const NR_ZS: usize = Zs::Count as usize;

/// The name of each zone_stat_item (index = Zs), as 3.0's vmstat_text
/// spells it; NrVmscanImmediate under 4.11's name. /proc snapshots carry
/// every zone's counters under these names (docs/results.md).
pub const ZS_NAMES: [&str; NR_ZS] = [
    "nr_free_pages",
    "nr_inactive_anon",
    "nr_active_anon",
    "nr_inactive_file",
    "nr_active_file",
    "nr_unevictable",
    "nr_mlock",
    "nr_anon_pages",
    "nr_mapped",
    "nr_file_pages",
    "nr_dirty",
    "nr_writeback",
    "nr_slab_reclaimable",
    "nr_slab_unreclaimable",
    "nr_page_table_pages",
    "nr_kernel_stack",
    "nr_unstable",
    "nr_bounce",
    "nr_vmscan_write",
    "nr_vmscan_immediate_reclaim",
    "nr_writeback_temp",
    "nr_isolated_anon",
    "nr_isolated_file",
    "nr_shmem",
    "nr_dirtied",
    "nr_written",
    "numa_hit",
    "numa_miss",
    "numa_foreign",
    "numa_interleave",
    "numa_local",
    "numa_other",
];

/// LRU list index (enum lru_list): the Zs item of each list is NrInactiveAnon + lru.
pub const LRU_INACTIVE_ANON: usize = 0;
pub const LRU_ACTIVE_ANON: usize = 1;
pub const LRU_INACTIVE_FILE: usize = 2;
pub const LRU_ACTIVE_FILE: usize = 3;
pub const LRU_UNEVICTABLE: usize = 4;
pub const NR_LRU: usize = 5;

#[inline]
pub fn lru_stat(lru: usize) -> Zs {
    match lru {
        0 => Zs::NrInactiveAnon,
        1 => Zs::NrActiveAnon,
        2 => Zs::NrInactiveFile,
        3 => Zs::NrActiveFile,
        _ => Zs::NrUnevictable,
    }
}

#[derive(Debug, Clone)]
pub struct VmStat {
    pub ev: [u64; NR_EV],
    /// zev[item][zone type]
    pub zev: [[u64; 5]; NR_ZEV],
}

impl Default for VmStat {
    fn default() -> Self {
        VmStat { ev: [0; NR_EV], zev: [[0; 5]; NR_ZEV] }
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
    #[inline]
    pub fn zadd(&mut self, e: Zev, zt: usize, n: u64) {
        self.zev[e as usize][zt] += n;
    }
    #[inline]
    pub fn zget(&self, e: Zev, zt: usize) -> u64 {
        self.zev[e as usize][zt]
    }
    pub fn ztotal(&self, e: Zev) -> u64 {
        self.zev[e as usize].iter().sum()
    }
}

/// What /proc/vmstat reads besides the counters.
pub struct Gauges<'a> {
    /// zone_stat_item summed over every zone.
    pub zs: &'a [i64; NR_ZS],
    pub dirty_thresh: u64,
    pub bg_thresh: u64,
    /// The kernel carries seed 004's patch 7 (v2), which adds nr_vmscan_invalidate.
    pub vmscan_invalidate: bool,
}

const ZONE_SUFFIX: [&str; 5] = ["dma", "dma32", "normal", "high", "movable"];

fn zone_built(era: Era, zt: usize, present: &[bool; 5]) -> bool {
    match zt {
        0 | 2 => true,
        1 | 3 => present[zt],
        _ => era != Era::V2618,
    }
}

fn push_zones(out: &mut Vec<(String, u64)>, prefix: &str, era: Era, present: &[bool; 5], f: impl Fn(usize) -> u64) {
    for (zt, suffix) in ZONE_SUFFIX.iter().enumerate() {
        if zone_built(era, zt, present) {
            out.push((format!("{prefix}_{suffix}"), f(zt)));
        }
    }
}

/// The /proc/vmstat rows of an era, in the kernel's order.
pub fn rows(era: Era, v: &VmStat, g: &Gauges, present: &[bool; 5]) -> Vec<(String, u64)> {
    let zs = |i: Zs| g.zs[i as usize].max(0) as u64;
    let mut out: Vec<(String, u64)> = Vec::new();
    let mut p = |name: &str, val: u64| out.push((name.to_string(), val));
    match era {
        Era::V2618 => {
            // 2.6.18 vmstat_text: zoned counters, then events.
            p("nr_anon_pages", zs(Zs::NrAnonPages));
            p("nr_mapped", zs(Zs::NrFileMapped));
            p("nr_file_pages", zs(Zs::NrFilePages));
            p("nr_slab_reclaimable", zs(Zs::NrSlabReclaimable));
            p("nr_slab_unreclaimable", zs(Zs::NrSlabUnreclaimable));
            p("nr_page_table_pages", zs(Zs::NrPagetable));
            p("nr_dirty", zs(Zs::NrFileDirty));
            p("nr_writeback", zs(Zs::NrWriteback));
            p("nr_unstable", zs(Zs::NrUnstableNfs));
            p("nr_bounce", zs(Zs::NrBounce));
            p("numa_hit", zs(Zs::NumaHit));
            p("numa_miss", zs(Zs::NumaMiss));
            p("numa_foreign", zs(Zs::NumaForeign));
            p("numa_interleave", zs(Zs::NumaInterleave));
            p("numa_local", zs(Zs::NumaLocal));
            p("numa_other", zs(Zs::NumaOther));
        }
        Era::V30 | Era::V31 => {
            for (name, item) in [
                ("nr_free_pages", Zs::NrFreePages),
                ("nr_inactive_anon", Zs::NrInactiveAnon),
                ("nr_active_anon", Zs::NrActiveAnon),
                ("nr_inactive_file", Zs::NrInactiveFile),
                ("nr_active_file", Zs::NrActiveFile),
                ("nr_unevictable", Zs::NrUnevictable),
                ("nr_mlock", Zs::NrMlock),
                ("nr_anon_pages", Zs::NrAnonPages),
                ("nr_mapped", Zs::NrFileMapped),
                ("nr_file_pages", Zs::NrFilePages),
                ("nr_dirty", Zs::NrFileDirty),
                ("nr_writeback", Zs::NrWriteback),
                ("nr_slab_reclaimable", Zs::NrSlabReclaimable),
                ("nr_slab_unreclaimable", Zs::NrSlabUnreclaimable),
                ("nr_page_table_pages", Zs::NrPagetable),
                ("nr_kernel_stack", Zs::NrKernelStack),
                ("nr_unstable", Zs::NrUnstableNfs),
                ("nr_bounce", Zs::NrBounce),
                ("nr_vmscan_write", Zs::NrVmscanWrite),
                ("nr_vmscan_invalidate", Zs::NrVmscanImmediate),
                ("nr_writeback_temp", Zs::NrWritebackTemp),
                ("nr_isolated_anon", Zs::NrIsolatedAnon),
                ("nr_isolated_file", Zs::NrIsolatedFile),
                ("nr_shmem", Zs::NrShmem),
                ("nr_dirtied", Zs::NrDirtied),
                ("nr_written", Zs::NrWritten),
                ("numa_hit", Zs::NumaHit),
                ("numa_miss", Zs::NumaMiss),
                ("numa_foreign", Zs::NumaForeign),
                ("numa_interleave", Zs::NumaInterleave),
                ("numa_local", Zs::NumaLocal),
                ("numa_other", Zs::NumaOther),
            ] {
                if item == Zs::NrVmscanImmediate && !g.vmscan_invalidate {
                    continue;
                }
                p(name, zs(item));
            }
            p("nr_anon_transparent_hugepages", 0);
            p("nr_dirty_threshold", g.dirty_thresh);
            p("nr_dirty_background_threshold", g.bg_thresh);
        }
        Era::V411 => {
            for (name, item) in [
                ("nr_free_pages", Zs::NrFreePages),
                ("nr_zone_inactive_anon", Zs::NrInactiveAnon),
                ("nr_zone_active_anon", Zs::NrActiveAnon),
                ("nr_zone_inactive_file", Zs::NrInactiveFile),
                ("nr_zone_active_file", Zs::NrActiveFile),
                ("nr_zone_unevictable", Zs::NrUnevictable),
                ("nr_mlock", Zs::NrMlock),
                ("nr_slab_reclaimable", Zs::NrSlabReclaimable),
                ("nr_slab_unreclaimable", Zs::NrSlabUnreclaimable),
                ("nr_page_table_pages", Zs::NrPagetable),
                ("nr_kernel_stack", Zs::NrKernelStack),
                ("nr_bounce", Zs::NrBounce),
                ("numa_hit", Zs::NumaHit),
                ("numa_miss", Zs::NumaMiss),
                ("numa_foreign", Zs::NumaForeign),
                ("numa_interleave", Zs::NumaInterleave),
                ("numa_local", Zs::NumaLocal),
                ("numa_other", Zs::NumaOther),
                ("nr_inactive_anon", Zs::NrInactiveAnon),
                ("nr_active_anon", Zs::NrActiveAnon),
                ("nr_inactive_file", Zs::NrInactiveFile),
                ("nr_active_file", Zs::NrActiveFile),
                ("nr_unevictable", Zs::NrUnevictable),
                ("nr_isolated_anon", Zs::NrIsolatedAnon),
                ("nr_isolated_file", Zs::NrIsolatedFile),
                ("nr_anon_pages", Zs::NrAnonPages),
                ("nr_mapped", Zs::NrFileMapped),
                ("nr_file_pages", Zs::NrFilePages),
                ("nr_dirty", Zs::NrFileDirty),
                ("nr_writeback", Zs::NrWriteback),
                ("nr_writeback_temp", Zs::NrWritebackTemp),
                ("nr_shmem", Zs::NrShmem),
                ("nr_unstable", Zs::NrUnstableNfs),
                ("nr_vmscan_write", Zs::NrVmscanWrite),
                ("nr_vmscan_immediate_reclaim", Zs::NrVmscanImmediate),
                ("nr_dirtied", Zs::NrDirtied),
                ("nr_written", Zs::NrWritten),
            ] {
                p(name, zs(item));
                if name == "nr_zone_unevictable" {
                    // NR_ZONE_WRITE_PENDING: dirty, writeback and unstable pages.
                    p("nr_zone_write_pending", zs(Zs::NrFileDirty) + zs(Zs::NrWriteback) + zs(Zs::NrUnstableNfs));
                }
            }
            p("nr_dirty_threshold", g.dirty_thresh);
            p("nr_dirty_background_threshold", g.bg_thresh);
        }
    }
    p("pgpgin", v.get(Ev::Pgpgin));
    p("pgpgout", v.get(Ev::Pgpgout));
    p("pswpin", v.get(Ev::Pswpin));
    p("pswpout", v.get(Ev::Pswpout));
    push_zones(&mut out, "pgalloc", era, present, |zt| v.zget(Zev::Pgalloc, zt));
    if era == Era::V411 {
        push_zones(&mut out, "allocstall", era, present, |zt| v.zget(Zev::Allocstall, zt));
    }
    let mut p = |name: &str, val: u64| out.push((name.to_string(), val));
    p("pgfree", v.get(Ev::Pgfree));
    p("pgactivate", v.get(Ev::Pgactivate));
    p("pgdeactivate", v.get(Ev::Pgdeactivate));
    p("pgfault", v.get(Ev::Pgfault));
    p("pgmajfault", v.get(Ev::Pgmajfault));
    match era {
        Era::V411 => {
            p("pgrefill", v.ztotal(Zev::Pgrefill));
            p("pgsteal_kswapd", v.ztotal(Zev::PgstealKswapd));
            p("pgsteal_direct", v.ztotal(Zev::PgstealDirect));
            p("pgscan_kswapd", v.ztotal(Zev::PgscanKswapd));
            p("pgscan_direct", v.ztotal(Zev::PgscanDirect));
            p("zone_reclaim_failed", v.get(Ev::ZoneReclaimFailed));
            p("pginodesteal", v.get(Ev::Pginodesteal));
            p("slabs_scanned", v.get(Ev::SlabsScanned));
            p("kswapd_inodesteal", v.get(Ev::KswapdInodesteal));
            p("kswapd_low_wmark_hit_quickly", v.get(Ev::KswapdLowWmarkHitQuickly));
            p("kswapd_high_wmark_hit_quickly", v.get(Ev::KswapdHighWmarkHitQuickly));
            p("pageoutrun", v.get(Ev::Pageoutrun));
            p("pgrotated", v.get(Ev::Pgrotated));
        }
        _ => {
            push_zones(&mut out, "pgrefill", era, present, |zt| v.zget(Zev::Pgrefill, zt));
            push_zones(&mut out, "pgsteal", era, present, |zt| v.zget(Zev::PgstealKswapd, zt) + v.zget(Zev::PgstealDirect, zt));
            push_zones(&mut out, "pgscan_kswapd", era, present, |zt| v.zget(Zev::PgscanKswapd, zt));
            push_zones(&mut out, "pgscan_direct", era, present, |zt| v.zget(Zev::PgscanDirect, zt));
            let mut p = |name: &str, val: u64| out.push((name.to_string(), val));
            if era != Era::V2618 {
                p("zone_reclaim_failed", v.get(Ev::ZoneReclaimFailed));
            }
            p("pginodesteal", v.get(Ev::Pginodesteal));
            p("slabs_scanned", v.get(Ev::SlabsScanned));
            p("kswapd_steal", v.get(Ev::KswapdSteal));
            p("kswapd_inodesteal", v.get(Ev::KswapdInodesteal));
            if era != Era::V2618 {
                p("kswapd_low_wmark_hit_quickly", v.get(Ev::KswapdLowWmarkHitQuickly));
                p("kswapd_high_wmark_hit_quickly", v.get(Ev::KswapdHighWmarkHitQuickly));
                p("kswapd_skip_congestion_wait", v.get(Ev::KswapdSkipCongestionWait));
            }
            p("pageoutrun", v.get(Ev::Pageoutrun));
            p("allocstall", v.get(Ev::Allocstall));
            p("pgrotated", v.get(Ev::Pgrotated));
            if era != Era::V2618 {
                p("compact_blocks_moved", v.get(Ev::CompactBlocksMoved));
                p("compact_pages_moved", v.get(Ev::CompactPagesMoved));
                p("compact_pagemigrate_failed", v.get(Ev::CompactPagemigrateFailed));
                p("compact_stall", v.get(Ev::CompactStall));
                p("compact_fail", v.get(Ev::CompactFail));
                p("compact_success", v.get(Ev::CompactSuccess));
            }
        }
    }
    out
}

/// The groups of zoned counters whose per-cpu deltas zone_stat_fold keeps.
#[derive(Debug, Clone, Copy)]
pub enum StatItem {
    Numa = 0,
    NumaForeign = 1,
    AnonPages = 2,
}
pub const NR_STAT_ITEMS: usize = 3;

/// NR_FREE_PAGES as mm/vmstat.c kept it from 2.6.21 on: per-cpu deltas
/// (vm_stat_diff) folded into the zone's counter past stat_threshold or by
/// vmstat_update; zone_page_state reads the counter. The state lives in
/// `Zone` (free_unfolded, the thresholds, percpu_drift_mark) and
/// `Mm::free_diff`.
impl crate::mm::Mm {
    /// refresh_zone_stat_thresholds (3.x, mm/vmstat.c): each zone's
    /// per-cpu threshold, calculate_normal_threshold = 2 x fls(cpus) x
    /// (1 + fls(zone size in 128 MiB units)), at most 125, and the
    /// pressure threshold kswapd sets while awake, (low - min) / cpus, at
    /// least 1. percpu_drift_mark is set where the largest drift, cpus x
    /// threshold, exceeds low - min.
    pub(crate) fn refresh_zone_stat_thresholds(&mut self) {
        let fls = |x: u64| 64 - x.leading_zeros() as i64;
        let cpus = self.cpu_node.len() as i64;
        let page_shift = self.page_size.trailing_zeros() as u64;
        for z in self.zones.iter_mut() {
            let mem = z.present >> (27 - page_shift.min(27));
            let normal = (2 * fls(cpus as u64) * (1 + fls(mem))).min(125) as i32;
            let tolerate = z.wmark_low - z.wmark_min;
            z.normal_threshold = normal;
            z.pressure_threshold = (tolerate / cpus.max(1)).clamp(1, 125) as i32;
            z.stat_threshold = normal;
            z.percpu_drift_mark = if cpus * normal as i64 > tolerate { z.wmark_high + cpus * normal as i64 } else { 0 };
        }
    }

    /// One __inc_zone_state on `ctx.cpu` for zone `zi`: the item's delta
    /// in the CPU's vm_stat_diff grows, and once it passes stat_threshold t
    /// it is folded into the zone's vm_stat and the global vm_stat (a store
    /// to the item's line of the zone and one to the global array's line)
    /// and restarts at -t/2: a fold every 1.5t + 1 increments. Items that
    /// rise together fold together, so one delta stands for each group:
    /// NUMA_HIT/MISS with NUMA_LOCAL/OTHER on the zone allocated from,
    /// NUMA_FOREIGN on the preferred zone (both on the NUMA items' line),
    /// and NR_ANON_PAGES (on the line zone_reclaim's gate reads).
    #[inline]
    pub fn zone_stat_fold(&mut self, ctx: &mut crate::cost::Ctx, zi: usize, item: StatItem) {
        let i = (ctx.cpu * self.zones.len() + zi) * NR_STAT_ITEMS + item as usize;
        let t = self.zones[zi].stat_threshold.max(1);
        self.stat_diff[i] += 1;
        if self.stat_diff[i] > t {
            self.stat_diff[i] = -(t / 2);
            let line = match item {
                StatItem::Numa | StatItem::NumaForeign => self.zones[zi].line_base + crate::mm::ZL_NUMA,
                StatItem::AnonPages => self.stat_line(zi),
            };
            self.cache.write(ctx, line);
            self.cache.write(ctx, self.line_vm_stat);
        }
    }

    /// __mod_zone_page_state(zone, NR_FREE_PAGES, delta) on `ctx.cpu`: the
    /// delta joins the CPU's vm_stat_diff and reaches the zone's counter
    /// once the diff passes the threshold. The buddy lists (free_pages)
    /// have changed already.
    #[inline]
    pub fn mod_zone_free_state(&mut self, ctx: &mut crate::cost::Ctx, zi: usize, delta: i64) {
        if !self.vmstat_drift {
            return;
        }
        let d = &mut self.free_diff[ctx.cpu * self.zones.len() + zi];
        let x = *d as i64 + delta;
        let z = &mut self.zones[zi];
        if x > z.stat_threshold as i64 || x < -(z.stat_threshold as i64) {
            z.free_unfolded -= *d as i64;
            *d = 0;
            // zone_page_state_add: the zone's and the global vm_stat lines.
            let l = self.stat_line(zi);
            self.cache.write(ctx, l);
            self.cache.write(ctx, self.line_vm_stat);
        } else {
            z.free_unfolded += delta;
            *d = x as i32;
        }
    }

    /// refresh_cpu_vm_stats on every CPU (vmstat_update, once a second):
    /// every delta folded.
    pub fn refresh_cpu_vm_stats(&mut self) {
        self.free_diff.fill(0);
        for z in self.zones.iter_mut() {
            z.free_unfolded = 0;
        }
    }

    /// set_pgdat_percpu_threshold: the node's zones with a drift mark take
    /// the pressure threshold (kswapd awake) or the normal one (asleep).
    pub fn set_pgdat_percpu_threshold(&mut self, node: usize, pressure: bool) {
        for zi in self.nodes[node].zones.iter().flatten() {
            let z = &mut self.zones[*zi];
            if z.percpu_drift_mark != 0 {
                z.stat_threshold = if pressure { z.pressure_threshold } else { z.normal_threshold };
            }
        }
    }

    /// zone_page_state(zone, NR_FREE_PAGES): the zone's counter without
    /// the CPUs' unfolded deltas, never below 0.
    #[inline]
    pub fn zone_free_state(&self, zi: usize) -> i64 {
        let z = &self.zones[zi];
        (z.free_pages - z.free_unfolded).max(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zs_names_match_the_items_rows_prints() {
        // ZS_NAMES is positional; rows() pairs each name with its Zs item.
        // Give item i the value 1000 + i and check every zoned 3.0 row
        // found in ZS_NAMES sits at that index (a reordered enum fails).
        let mut zs = [0i64; NR_ZS];
        for (i, z) in zs.iter_mut().enumerate() {
            *z = 1000 + i as i64;
        }
        let v = VmStat::default();
        let rows = rows(Era::V30, &v, &Gauges { zs: &zs, dirty_thresh: 0, bg_thresh: 0, vmscan_invalidate: true }, &[true, true, true, false, false]);
        let mut matched = 0;
        for (name, val) in &rows {
            if let Some(i) = ZS_NAMES.iter().position(|n| n == name) {
                assert_eq!(*val, 1000 + i as u64, "{name}: ZS_NAMES[{i}] is not the item rows() prints");
                matched += 1;
            }
        }
        assert!(matched >= 25, "only {matched} zoned rows matched");
    }

    #[test]
    fn three_0_rows_sum_pgsteal_and_keep_kernel_order() {
        let mut v = VmStat::default();
        v.zadd(Zev::PgstealDirect, 2, 5);
        v.zadd(Zev::PgstealKswapd, 2, 7);
        v.add(Ev::KswapdSteal, 7);
        let zs = [0i64; NR_ZS];
        let rows = rows(Era::V30, &v, &Gauges { zs: &zs, dirty_thresh: 3, bg_thresh: 1, vmscan_invalidate: false }, &[true, true, true, false, false]);
        let get = |n: &str| rows.iter().find(|(k, _)| k == n).map(|r| r.1);
        assert_eq!(get("pgsteal_normal"), Some(12));
        assert_eq!(get("kswapd_steal"), Some(7));
        assert_eq!(get("nr_dirty_threshold"), Some(3));
        let pos = |n: &str| rows.iter().position(|(k, _)| k == n).unwrap();
        assert!(pos("nr_free_pages") < pos("numa_hit"));
        assert!(pos("pgscan_direct_normal") < pos("zone_reclaim_failed"));
        assert!(pos("pgalloc_movable") < pos("pgfree"));
        assert!(get("pgalloc_high").is_none(), "no highmem on x86-64");
    }

    #[test]
    fn four_11_counts_allocstall_per_zone_and_write_pending_as_dirty_plus_writeback() {
        let mut v = VmStat::default();
        v.zadd(Zev::Allocstall, 4, 3);
        v.add(Ev::Allocstall, 3);
        let mut zs = [0i64; NR_ZS];
        zs[Zs::NrFileDirty as usize] = 5;
        zs[Zs::NrWriteback as usize] = 2;
        let rows = rows(Era::V411, &v, &Gauges { zs: &zs, dirty_thresh: 0, bg_thresh: 0, vmscan_invalidate: false }, &[true, true, true, false, true]);
        let get = |n: &str| rows.iter().find(|(k, _)| k == n).map(|r| r.1);
        assert_eq!(get("allocstall_movable"), Some(3));
        assert_eq!(get("allocstall_normal"), Some(0));
        assert_eq!(get("allocstall"), None, "4.11 has no global allocstall row");
        assert_eq!(get("nr_zone_write_pending"), Some(7));
        let pos = |n: &str| rows.iter().position(|(k, _)| k == n).unwrap();
        assert!(pos("nr_zone_unevictable") + 1 == pos("nr_zone_write_pending"));
        assert!(pos("pgalloc_movable") + 1 == pos("allocstall_dma"));
    }
}
