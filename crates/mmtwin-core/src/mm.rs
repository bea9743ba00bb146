//! The memory manager's state: nodes, zones, watermarks, buddy free lists,
//! per-cpu page lists, LRU lists, zonelists and the zonelist cache.
//!
//! Boot-time setup follows the kernel: build_zonelists (find_next_best_node),
//! build_zonelist_cache, setup_per_zone_pages_min / setup_per_zone_wmarks,
//! setup_per_zone_lowmem_reserve, zone_batchsize, free_all_bootmem.

use crate::cost::{CacheModel, Ctx, Interconnect};
use crate::page::{ListHead, Pages, NIL, PG_BUDDY, PG_KERNEL, PG_PCP, PG_RESERVED};
use crate::spec::{Era, Spec, Zlc, ZONE_NAMES};
use crate::vmstat::{Ev, VmStat, NR_LRU, NR_ZS};

pub const NR_ZONE_TYPES: usize = 5;
pub const ZONE_DMA: usize = 0;
pub const ZONE_NORMAL: usize = 2;
pub const ZONE_HIGHMEM: usize = 3;
pub const ZONE_MOVABLE: usize = 4;

/// Migrate types (2.6.24+ numbering of 3.x; 2.6.18 uses only index 0).
pub const MIGRATE_UNMOVABLE: usize = 0;
pub const MIGRATE_RECLAIMABLE: usize = 1;
pub const MIGRATE_MOVABLE: usize = 2;
pub const NR_MT: usize = 3;
/// 3.x fallback order (MIGRATE_RESERVE is not modelled).
const FALLBACKS: [[usize; 2]; NR_MT] = [
    [MIGRATE_RECLAIMABLE, MIGRATE_MOVABLE],
    [MIGRATE_UNMOVABLE, MIGRATE_MOVABLE],
    [MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE],
];

pub const PAGEVEC_SIZE: usize = 14;

// Cache lines of a zone, by purpose (Mm::stat_line says which holds what
// zone_reclaim's gate and, in 3.x, zone_watermark_ok read).
pub const ZL_WMARK: usize = 0; // free_pages (2.6.18), the watermarks, lowmem_reserve
pub const ZL_STAT: usize = 1; // 3.x: the first vm_stat items (NR_FREE_PAGES, the LRU and page-cache counts)
pub const ZL_LOCK: usize = 2; // zone->lock and free_area heads
pub const ZL_LRU: usize = 3; // lru_lock, LRU heads, pages_scanned; 2.6.18: also vm_stat[0..4]
pub const ZL_NUMA: usize = 4; // the NUMA_* vm_stat items (no walker reads them)
pub const LINES_PER_ZONE: usize = 5;

/// How many pending holds of a lock are remembered.
pub const LOCK_HOLDS: usize = 8;

/// A spinlock's pending holds, as intervals of simulated time. Tasks run in
/// steps processed in order of their start, and a step's critical sections
/// happen at its own clock: a CPU whose step began earlier may take the lock
/// at a later simulated time than a CPU processed after it. So a request
/// waits only for holds that cover the moment it asks (and those that follow
/// them without a gap), not for a hold that begins after it: the lock is
/// free then. A hold granted in such a gap may overlap a later hold already
/// recorded by up to its own length; that error is bounded by one critical
/// section, where waiting for the latest hold would have made an early
/// asker spin through whatever another CPU did later in its step.
///
/// A hold that ended by the time the current step began can never be met
/// again (steps start in time order) and is forgotten. Of the rest, when
/// more than LOCK_HOLDS are pending, the one that starts last is dropped:
/// the holds nearest the present are the ones the next steps meet (steps
/// are at most about STEP_QUANTUM_NS long, so few holds lie far ahead).
#[derive(Debug, Clone, Copy, Default)]
pub struct LockHolds {
    start: [u64; LOCK_HOLDS],
    end: [u64; LOCK_HOLDS],
    /// At least every slot's end (the latest end ever recorded): a moment
    /// at or after it is covered by no hold.
    max_end: u64,
}

impl LockHolds {
    /// Whether a hold ends after `t` (a step asking at `t` or later may
    /// still meet one).
    pub fn busy_after(&self, t: u64) -> bool {
        self.max_end > t
    }

    /// The time a CPU whose step began at `now` and asks at `t` gets the
    /// lock it then holds for `hold` ns.
    #[inline]
    pub fn acquire(&mut self, now: u64, t: u64, hold: u64) -> u64 {
        let mut s = t;
        // Wait out every hold that covers the moment, and the ones that
        // cover its end, and so on (nothing to wait for past max_end).
        if s < self.max_end {
            loop {
                let mut moved = false;
                for i in 0..LOCK_HOLDS {
                    if self.start[i] <= s && s < self.end[i] {
                        s = self.end[i];
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
            }
        }
        if hold == 0 {
            return s;
        }
        let end = s + hold;
        if self.max_end <= now && self.max_end < s {
            // Every hold ended by `now`, none at `s` (which it would
            // extend): the first slot is free.
            self.start[0] = s;
            self.end[0] = end;
            self.max_end = end;
            return s;
        }
        // A hold that follows another without a gap extends it (a queue of
        // waiters is one busy interval): only a hold ending at `s` can.
        if s <= self.max_end {
            for i in 0..LOCK_HOLDS {
                if self.end[i] == s && self.start[i] < s {
                    self.end[i] = end;
                    self.max_end = self.max_end.max(end);
                    return s;
                }
            }
        }
        // A slot that is free or ended before `now`; else the hold that
        // starts last (the later slot of equals), if it starts after this one.
        let mut victim = None;
        let mut last = 0;
        for i in 0..LOCK_HOLDS {
            if self.end[i] <= now {
                victim = Some(i);
                break;
            }
            if self.start[i] >= self.start[last] {
                last = i;
            }
        }
        if victim.is_none() && self.start[last] > s {
            victim = Some(last);
        }
        if let Some(v) = victim {
            self.start[v] = s;
            self.end[v] = end;
            self.max_end = self.max_end.max(end);
        }
        s
    }
}

pub struct Zone {
    pub node: usize,
    /// Zone type: 0 DMA, 1 DMA32, 2 NORMAL, 3 HIGHMEM, 4 MOVABLE.
    pub zt: usize,
    pub start_pfn: u32,
    pub present: u64,
    /// Pages reserved at boot in this zone (present less managed, 4.11's managed_pages).
    pub reserved: u64,
    /// Pages in the buddy free lists (zone->free_pages / NR_FREE_PAGES).
    pub free_pages: i64,
    pub free_area: Vec<[ListHead; NR_MT]>,
    pub nr_free: Vec<u64>,
    /// The watermarks every check reads: min_wmark_pages() and the rest,
    /// i.e. wmark_base plus watermark_boost.
    pub wmark_min: i64,
    pub wmark_low: i64,
    pub wmark_high: i64,
    /// zone->_watermark[WMARK_MIN, LOW, HIGH], as setup_per_zone_wmarks set them.
    pub wmark_base: [i64; 3],
    /// zone->watermark_boost (5.0 on): pages added to every watermark after
    /// fragmenting fallbacks, until kswapd's balance_pgdat takes them off.
    pub watermark_boost: i64,
    /// ZONE_BOOSTED_WATERMARK: a boost was added; the zone's next
    /// allocation wakes kswapd (rmqueue).
    pub boosted_wmark: bool,
    pub lowmem_reserve: [i64; NR_ZONE_TYPES],
    pub min_unmapped_pages: u64,
    /// zone->lock: its most recent holds, as simulated-time intervals.
    pub lock: LockHolds,
    /// zone->lru[]: inactive/active anon, inactive/active file, unevictable.
    pub lru: [ListHead; NR_LRU],
    /// zone->vm_stat (zone_stat_item); NR_FREE_PAGES mirrors free_pages.
    pub vm_stat: [i64; NR_ZS],
    /// reclaim_stat: recent_rotated[anon, file], recent_scanned[anon, file].
    pub recent_rotated: [u64; 2],
    pub recent_scanned: [u64; 2],
    /// zone->pages_scanned since pages were last freed to this zone.
    pub pages_scanned: u64,
    /// zone->inactive_ratio (anon), from the zone's size at boot.
    pub inactive_ratio: u64,
    pub min_slab_pages: u64,
    /// ZONE_RECLAIM_LOCKED and ZONE_CONGESTED.
    /// ZONE_RECLAIM_LOCKED: held until this simulated time by a zone_reclaim in progress.
    pub reclaim_locked_until: u64,
    pub congested: bool,
    pub pcp_batch: u32,
    pub pcp_high: u32,
    pub all_unreclaimable: bool,
    pub pgalloc: u64,
    pub line_base: usize,
    /// Per-zone NUMA counters (numa_hit, numa_miss, numa_foreign, local, other).
    pub numa: [u64; 5],
    /// NR_FREE_PAGES deltas the CPUs hold in their vm_stat_diff and have
    /// not folded into the zone's counter yet, summed (3.x): the counter
    /// zone_page_state reads is free_pages - free_unfolded.
    pub free_unfolded: i64,
    /// The per-cpu stat_threshold in force: calculate_normal_threshold, or
    /// calculate_pressure_threshold while the node's kswapd is awake.
    pub stat_threshold: i32,
    pub normal_threshold: i32,
    pub pressure_threshold: i32,
    /// percpu_drift_mark: below it zone_watermark_ok_safe reads the exact
    /// count (zone_page_state_snapshot); 0 when the drift cannot matter.
    pub percpu_drift_mark: i64,
}

impl Zone {
    /// The watermarks the checks read: _watermark[] + watermark_boost.
    pub fn apply_boost(&mut self) {
        self.wmark_min = self.wmark_base[0] + self.watermark_boost;
        self.wmark_low = self.wmark_base[1] + self.watermark_boost;
        self.wmark_high = self.wmark_base[2] + self.watermark_boost;
    }
}

/// Per-cpu pageset of one (cpu, zone).
#[derive(Clone, Copy, Default)]
pub struct Pcp {
    pub lists: [ListHead; NR_MT],
    pub count: u32,
}

/// The zonelist cache of one zonelist (struct zonelist_cache).
pub struct ZlcState {
    /// fullzones bitmap, one bit per zonelist position.
    pub fullzones: Vec<u64>,
    /// z_to_n[]: node of each position.
    pub z_to_n: Vec<u16>,
    /// last_full_zap, in jiffies.
    pub last_full_zap: u64,
    pub line_bitmap: usize,
    pub line_z_to_n: usize,
    pub line_zap: usize,
    pub entries_per_line: usize,
}

/// One zonelist: the zones a request may use, in fallback order.
pub struct Zonelist {
    pub zones: Vec<u16>,
    /// Position of each zone in its zonelist cache (index into fullzones).
    pub zlc_pos: Vec<u16>,
    pub zlc: Option<usize>,
    /// First cache line of the zones[] array and pointers per line.
    pub line_zones: usize,
    pub ptrs_per_line: usize,
}

pub struct Node {
    pub zones: [Option<usize>; NR_ZONE_TYPES],
    pub cpus: Vec<usize>,
    pub line_pgdat: usize,
}

/// Page counts by where a page is; their sum is the machine's total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Census {
    pub buddy: u64,
    pub pcp: u64,
    pub pagevec: u64,
    pub lru: u64,
    /// Taken off the LRU by a reclaimer, on its private list.
    pub isolated: u64,
    pub slab: u64,
    pub kernel: u64,
    pub reserved: u64,
    /// Held by a task between two states within one step (0 between steps).
    pub held: u64,
}

impl Census {
    pub fn total(&self) -> u64 {
        self.buddy + self.pcp + self.pagevec + self.lru + self.isolated + self.slab + self.kernel + self.reserved + self.held
    }
}

pub struct Mm {
    pub era: Era,
    pub zlc_mode: Zlc,
    pub zlc_reconsider: bool,
    pub page_size: u64,
    pub max_order: usize,
    pub pageblock_order: usize,
    pub hz: u64,
    /// Where jiffies stood when the simulation began, in ns past a jiffies
    /// second (the workload sets it; 0 = the run starts on a second boundary).
    pub jiffies_phase_ns: u64,
    pub nodes: Vec<Node>,
    pub cpu_node: Vec<usize>,
    pub distance: Vec<Vec<u32>>,
    pub zones: Vec<Zone>,
    pub pages: Pages,
    /// Migrate type of each pageblock (eras with migrate types).
    pub pageblock_mt: Vec<u8>,
    pub pcp: Vec<Pcp>,
    pub percpu_pagelists: bool,
    /// zonelists[node * NR_ZONE_TYPES + high_zoneidx].
    pub zonelists: std::rc::Rc<Vec<Zonelist>>,
    pub zlcs: Vec<ZlcState>,
    pub zone_reclaim_mode: u32,
    pub min_free_kbytes: u64,
    /// vm.watermark_boost_factor (0: no watermark boost).
    pub watermark_boost_factor: u64,
    pub cache: CacheModel,
    /// The nodes' interconnect ports.
    pub ic: Interconnect,
    pub pcp_line_base: usize,
    /// The global vm_stat[] array's line (kernel data, on node 0).
    pub line_vm_stat: usize,
    /// vm_stat_diff of each (cpu, zone, StatItem), cpu-major (zone_stat_fold).
    pub stat_diff: Vec<i32>,
    pub census: Census,
    pub vm: VmStat,
    pub cost: crate::spec::CostSpec,
    /// Counters of the simulator's own (not /proc/vmstat).
    pub sim: SimCounters,
    /// Whether NR_FREE_PAGES drifts (3.x: a zone_stat_item kept with
    /// per-cpu deltas; 2.6.18's zone->free_pages was exact, and 4.11's
    /// drift is not modelled yet).
    pub vmstat_drift: bool,
    /// vm_stat_diff[NR_FREE_PAGES] of each (cpu, zone), cpu-major.
    pub free_diff: Vec<i32>,
    /// When refresh_cpu_vm_stats next folds every CPU's deltas (ns).
    pub next_vmstat_refresh: u64,
}

#[derive(Debug, Clone, Default)]
pub struct SimCounters {
    pub zone_checks: u64,
    pub zlc_skips: u64,
    pub zlc_zaps: u64,
    pub zlc_marked_full: u64,
    /// zlc_clear_zones_full calls (zlcreconsider, after direct reclaim).
    pub zlc_clears: u64,
    pub zlc_setups: u64,
    pub second_passes: u64,
    /// Page-cache pages reclaim freed that were read from disk and never
    /// used (PG_RA_UNUSED): readahead thrashing.
    pub ra_unused_reclaimed: u64,
    /// Zero-filled pages readahead windows allocated for holes, and those
    /// reclaim freed before anybody used them (PG_RA_HOLE).
    pub ra_holes: u64,
    pub ra_holes_reclaimed: u64,
    /// Writes (write(2) or a write fault) that found their page under
    /// writeback and waited for it to end (Kernel::wait_for_stable_page).
    pub writeback_waits: u64,
    /// shrink_page_list's outcome for each page it examined, by reclaimer
    /// (direct, which includes zone_reclaim, or kswapd) and list (file or
    /// anon): see `vmscan::SPL_OUTCOMES`.
    pub spl: [[u64; crate::vmscan::SPL_OUTCOMES.len()]; 4],
    pub zone_reclaim_calls: u64,
    /// zone_reclaim's answers: [FULL at the min_unmapped/min_slab gate,
    /// FULL for all_unreclaimable, NOSCAN, SOME (scanned, short), SUCCESS].
    pub zone_reclaim_ret: [u64; 5],
    pub rmqueue_bulk: u64,
    /// Sleeps in get_request_wait: [reclaimers with writes waiting, others
    /// (the flusher, dirtiers in balance_dirty_pages)].
    pub request_waits: [u64; 2],
    pub lock_spin_ns: u64,
    pub page_events: u64,
}

pub fn isqrt(x: u64) -> u64 {
    if x == 0 {
        return 0;
    }
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

impl Mm {
    pub fn boot(spec: &Spec) -> Mm {
        let m = &spec.machine;
        let k = &spec.kernel;
        let era = k.era;
        let nnodes = m.nodes.len();
        let max_order = m.max_order as usize;

        // Nodes, CPUs, zones laid out consecutively in pfn space.
        let mut nodes: Vec<Node> = Vec::with_capacity(nnodes);
        let mut cpu_node = Vec::new();
        let mut zones: Vec<Zone> = Vec::new();
        let mut pfn: u64 = 0;
        let mut line = 0usize;
        for (ni, ns) in m.nodes.iter().enumerate() {
            let mut nz = [None; NR_ZONE_TYPES];
            let cpus: Vec<usize> = (0..ns.cpus as usize).map(|c| cpu_node.len() + c).collect();
            for _ in 0..ns.cpus {
                cpu_node.push(ni);
            }
            for zs in &ns.zones {
                let zt = ZONE_NAMES.iter().position(|&s| s == zs.name).unwrap_or(ZONE_NORMAL);
                if zs.present_pages == 0 {
                    continue;
                }
                nz[zt] = Some(zones.len());
                zones.push(Zone {
                    node: ni,
                    zt,
                    start_pfn: pfn as u32,
                    present: zs.present_pages,
                    reserved: 0,
                    free_pages: 0,
                    free_area: vec![[ListHead::default(); NR_MT]; max_order],
                    nr_free: vec![0; max_order],
                    wmark_min: 0,
                    wmark_low: 0,
                    wmark_high: 0,
                    wmark_base: [0; 3],
                    watermark_boost: 0,
                    boosted_wmark: false,
                    lowmem_reserve: [0; NR_ZONE_TYPES],
                    min_unmapped_pages: 0,
                    lock: LockHolds::default(),
                    lru: [ListHead::default(); NR_LRU],
                    vm_stat: [0; NR_ZS],
                    recent_rotated: [0; 2],
                    recent_scanned: [0; 2],
                    pages_scanned: 0,
                    inactive_ratio: 1,
                    min_slab_pages: 0,
                    reclaim_locked_until: 0,
                    congested: false,
                    pcp_batch: 1,
                    pcp_high: 6,
                    all_unreclaimable: false,
                    pgalloc: 0,
                    line_base: line,
                    numa: [0; 5],
                    free_unfolded: 0,
                    stat_threshold: 0,
                    normal_threshold: 0,
                    pressure_threshold: 0,
                    percpu_drift_mark: 0,
                });
                line += LINES_PER_ZONE;
                pfn += zs.present_pages;
            }
            nodes.push(Node { zones: nz, cpus, line_pgdat: 0 });
        }
        let total_pages = pfn as usize;
        let mut line_home: Vec<u16> = Vec::new();
        for z in &zones {
            for _ in 0..LINES_PER_ZONE {
                line_home.push(z.node as u16);
            }
        }
        for (ni, n) in nodes.iter_mut().enumerate() {
            n.line_pgdat = line_home.len();
            line_home.push(ni as u16);
        }
        let ncpus = cpu_node.len();
        let nzones = zones.len();
        // Per-cpu pagesets are allocated on the CPU's node (process_zones).
        let pcp_line_base = line_home.len();
        for &node in &cpu_node {
            for _ in 0..nzones {
                line_home.push(node as u16);
            }
        }

        let mut mm_zonelists = Vec::new();
        let mut zlcs = Vec::new();
        let auto_zone_reclaim = build_zonelists(
            era,
            m.arch,
            &nodes,
            &zones,
            &m.distance,
            k.zlc != Zlc::None,
            m.cache_line as usize,
            &mut mm_zonelists,
            &mut zlcs,
            &mut line_home,
        );

        let line_vm_stat = line_home.len();
        line_home.push(0);
        // Two more lines per process that faults (its mm_struct, memory.rs).
        let more = 2 * spec.workload.faulting_processes() as usize;
        let cache = CacheModel::new(line_home, &cpu_node, &m.distance, &m.cost, m.cache_kib, more);
        let nblocks = (total_pages >> m.pageblock_order) + 1;
        let mut mm = Mm {
            era,
            zlc_mode: k.zlc,
            zlc_reconsider: k.zlc_reconsider,
            page_size: m.page_size,
            max_order,
            pageblock_order: m.pageblock_order as usize,
            hz: m.hz,
            jiffies_phase_ns: 0,
            nodes,
            cpu_node,
            distance: m.distance.clone(),
            zones,
            pages: Pages::new(total_pages),
            pageblock_mt: vec![MIGRATE_MOVABLE as u8; nblocks],
            pcp: vec![Pcp::default(); ncpus * nzones],
            percpu_pagelists: k.percpu_pagelists,
            zonelists: std::rc::Rc::new(mm_zonelists),
            zlcs,
            zone_reclaim_mode: k.zone_reclaim_mode.unwrap_or(if auto_zone_reclaim { 1 } else { 0 }),
            min_free_kbytes: 0,
            watermark_boost_factor: k.watermark_boost_factor,
            cache,
            ic: Interconnect::new(m.distance.len(), m.link_mb_s),
            pcp_line_base,
            line_vm_stat,
            stat_diff: vec![0; ncpus * nzones * crate::vmstat::NR_STAT_ITEMS],
            census: Census::default(),
            vm: VmStat::default(),
            cost: m.cost,
            sim: SimCounters::default(),
            vmstat_drift: matches!(era, Era::V30 | Era::V31),
            free_diff: vec![0; ncpus * nzones],
            next_vmstat_refresh: 1_000_000_000,
        };
        mm.setup_watermarks(k.min_free_kbytes, k.min_free_kbytes_max, k.lowmem_reserve_ratio.as_deref(), k.pcp_sizing);
        mm.refresh_zone_stat_thresholds();
        mm.free_all_bootmem(spec);
        mm
    }

    #[inline]
    pub fn nr_mt(&self) -> usize {
        if self.era.has_migratetypes() {
            NR_MT
        } else {
            1
        }
    }

    /// setup_per_zone_pages_min (2.6.18) / setup_per_zone_wmarks (3.x, 4.x),
    /// setup_per_zone_lowmem_reserve and zone_batchsize.
    fn setup_watermarks(&mut self, min_free_kbytes: Option<u64>, mfk_max: u64, ratio: Option<&[u64]>, pcp: crate::spec::PcpSizing) {
        let kib_per_page = self.page_size / 1024;
        let lowmem: u64 = self.zones.iter().filter(|z| z.zt < ZONE_HIGHMEM).map(|z| z.present).sum();
        // init_per_zone_pages_min: nr_free_buffer_pages() at boot, when every
        // zone's high watermark is still 0, is the lowmem total.
        let mfk = min_free_kbytes.unwrap_or_else(|| {
            let lowmem_kbytes = lowmem * kib_per_page;
            isqrt(lowmem_kbytes * 16).clamp(128, mfk_max)
        });
        self.min_free_kbytes = mfk;
        let pages_min = mfk / kib_per_page;
        for z in self.zones.iter_mut() {
            let tmp = if lowmem == 0 { 0 } else { (pages_min as u128 * z.present as u128 / lowmem as u128) as i64 };
            let min = if z.zt == ZONE_HIGHMEM {
                ((z.present / 1024) as i64).clamp(32, 128)
            } else {
                tmp
            };
            z.wmark_min = min;
            if self.era == Era::V411 {
                // watermark_scale_factor = 10 (units of 1/10000).
                let gap = std::cmp::max(tmp / 4, (z.present as i64) * 10 / 10000);
                z.wmark_low = min + gap;
                z.wmark_high = min + 2 * gap;
            } else {
                z.wmark_low = min + tmp / 4;
                z.wmark_high = min + tmp / 2;
            }
            z.wmark_base = [z.wmark_min, z.wmark_low, z.wmark_high];
            // calculate_zone_inactive_ratio (anon): isqrt(10 * GB), at least 1.
            let gb = (z.present * self.page_size) >> 30;
            z.inactive_ratio = if gb > 0 { isqrt(10 * gb).max(1) } else { 1 };
            // zone_batchsize: about 0.1% of the zone, capped (512 KiB, or
            // 1 MiB from 5.14), a quarter of it, then 2^n - 1.
            let cap_kib = if pcp == crate::spec::PcpSizing::ZoneLow { 1024 } else { 512 };
            let mut batch = (z.present / 1024).min(cap_kib * 1024 / self.page_size);
            batch /= 4;
            if batch < 1 {
                batch = 1;
            }
            let b = batch + batch / 2;
            let pow = 1u64 << (63 - b.leading_zeros());
            let batch = (pow - 1).max(1);
            z.pcp_batch = batch as u32;
            z.pcp_high = 6 * batch as u32;
        }
        if pcp == crate::spec::PcpSizing::ZoneLow {
            // zone_highsize (5.14+, after boot): the low watermark split over
            // the node's CPUs (every CPU for a node without any), at least
            // 4 x batch, so full per-cpu lists do not wake kswapd early.
            let all_cpus = self.cpu_node.len() as i64;
            for z in self.zones.iter_mut() {
                let node_cpus = self.nodes[z.node].cpus.len() as i64;
                let split = if node_cpus > 0 { node_cpus } else { all_cpus.max(1) };
                let high = (z.wmark_low.max(0) / split).max(4 * z.pcp_batch as i64);
                z.pcp_high = high as u32;
            }
        }
        // setup_per_zone_lowmem_reserve.
        let default_ratio: [u64; 4] = [256, 256, 32, 32];
        let ratio: Vec<u64> = ratio.map(|r| r.to_vec()).unwrap_or_else(|| default_ratio.to_vec());
        for n in &self.nodes {
            let present = |zt: usize| n.zones[zt].map(|zi| self.zones[zi].present).unwrap_or(0);
            let mut reserves: Vec<(usize, usize, i64)> = Vec::new();
            for j in 0..NR_ZONE_TYPES {
                let mut pages = present(j);
                for idx in (0..j).rev() {
                    if let Some(zi) = n.zones[idx] {
                        reserves.push((zi, j, (pages / ratio[idx]) as i64));
                    }
                    pages += present(idx);
                }
            }
            for (zi, j, r) in reserves {
                self.zones[zi].lowmem_reserve[j] = r;
            }
        }
    }

    /// sysctl_min_unmapped_ratio and sysctl_min_slab_ratio, percent of each zone.
    pub fn setup_min_ratios(&mut self, unmapped_ratio: u64, slab_ratio: u64) {
        for z in self.zones.iter_mut() {
            z.min_unmapped_pages = z.present * unmapped_ratio / 100;
            z.min_slab_pages = z.present * slab_ratio / 100;
        }
    }

    /// Boot: reserved pages stay with the kernel, the rest is freed to the
    /// buddy allocator in the largest aligned blocks (what free_all_bootmem
    /// plus merging produces). Boot-time allocations (mem_map, hash tables)
    /// come from the top of each node's memory, so the reservation is taken
    /// from the highest zone down, leaving the DMA zones to the allocator.
    fn free_all_bootmem(&mut self, spec: &Spec) {
        for (ni, ns) in spec.machine.nodes.iter().enumerate() {
            let mut reserved_left = ns.reserved_pages;
            let zone_ids: Vec<usize> = self.nodes[ni].zones.iter().flatten().copied().rev().collect();
            for zi in zone_ids {
                let start = self.zones[zi].start_pfn as u64;
                let end = start + self.zones[zi].present;
                let res = reserved_left.min(self.zones[zi].present);
                reserved_left -= res;
                self.zones[zi].reserved = res;
                for p in end - res..end {
                    self.pages.flags[p as usize] = PG_RESERVED;
                }
                self.census.reserved += res;
                let end = end - res;
                let mut p = start;
                while p < end {
                    let mut o = self.max_order - 1;
                    while o > 0 && (p & ((1 << o) - 1) != 0 || p + (1 << o) > end) {
                        o -= 1;
                    }
                    let mt = if self.era.has_migratetypes() { MIGRATE_MOVABLE } else { 0 };
                    self.add_free_block(zi, p as u32, o, mt, false);
                    p += 1 << o;
                }
            }
        }
    }

    #[inline]
    fn add_free_block(&mut self, zi: usize, pfn: u32, order: usize, mt: usize, tail: bool) {
        let p = pfn as usize;
        self.pages.flags[p] = PG_BUDDY;
        self.pages.order[p] = order as u8;
        self.pages.mt[p] = mt as u8;
        let z = &mut self.zones[zi];
        let list = &mut z.free_area[order][mt];
        if tail {
            self.pages.push_back(list, pfn);
        } else {
            self.pages.push_front(list, pfn);
        }
        z.nr_free[order] += 1;
        z.free_pages += 1 << order;
        self.census.buddy += 1 << order;
    }

    #[inline]
    fn del_free_block(&mut self, zi: usize, pfn: u32) -> usize {
        let p = pfn as usize;
        let order = self.pages.order[p] as usize;
        let mt = self.pages.mt[p] as usize;
        let z = &mut self.zones[zi];
        self.pages.unlink(&mut z.free_area[order][mt], pfn);
        z.nr_free[order] -= 1;
        z.free_pages -= 1 << order;
        self.census.buddy -= 1 << order;
        self.pages.flags[p] = 0;
        order
    }

    #[inline]
    fn pageblock_of(&self, pfn: u32) -> usize {
        (pfn as usize) >> self.pageblock_order
    }

    /// expand(): split a block of `high` down to `low`, returning the halves.
    fn expand(&mut self, zi: usize, pfn: u32, low: usize, mut high: usize, mt: usize) {
        while high > low {
            high -= 1;
            let buddy = pfn + (1u32 << high);
            self.add_free_block(zi, buddy, high, mt, false);
        }
    }

    /// __rmqueue_smallest.
    fn rmqueue_smallest(&mut self, zi: usize, order: usize, mt: usize) -> Option<u32> {
        for o in order..self.max_order {
            let head = self.zones[zi].free_area[o][mt].head;
            if head != NIL {
                self.del_free_block(zi, head);
                self.expand(zi, head, order, o, mt);
                return Some(head);
            }
        }
        None
    }

    /// __rmqueue_fallback (3.x): take the largest block of another type,
    /// stealing its pageblock when the block is large or the request is
    /// reclaimable.
    fn rmqueue_fallback(&mut self, zi: usize, order: usize, mt: usize) -> Option<u32> {
        for cur in (order..self.max_order).rev() {
            for &ft in &FALLBACKS[mt] {
                let head = self.zones[zi].free_area[cur][ft].head;
                if head == NIL {
                    continue;
                }
                let mut list_type = ft;
                if cur >= self.pageblock_order / 2 || mt == MIGRATE_RECLAIMABLE {
                    let moved = self.move_freepages_block(zi, head, mt);
                    if moved >= (1 << (self.pageblock_order - 1)) {
                        let b = self.pageblock_of(head);
                        self.pageblock_mt[b] = mt as u8;
                    }
                    list_type = mt;
                }
                let head_now = head; // move_freepages_block may have moved it to mt's list
                self.del_free_block(zi, head_now);
                if cur >= self.pageblock_order {
                    let first = self.pageblock_of(head_now);
                    let n = 1usize << (cur - self.pageblock_order);
                    for b in first..first + n {
                        self.pageblock_mt[b] = mt as u8;
                    }
                }
                // steal_suitable_fallback (5.0 on): a fallback below a
                // whole pageblock boosts the zone's watermarks.
                if cur < self.pageblock_order && self.boost_watermark(zi) {
                    self.zones[zi].boosted_wmark = true;
                }
                self.expand(zi, head_now, order, cur, list_type);
                return Some(head_now);
            }
        }
        None
    }

    /// boost_watermark (5.0 on): raise the zone's watermarks by a pageblock,
    /// up to watermark_boost_factor / 10000 of its high watermark (at least
    /// a pageblock); not in a zone of fewer than four pageblocks. Returns
    /// whether it boosted.
    pub fn boost_watermark(&mut self, zi: usize) -> bool {
        let factor = self.watermark_boost_factor;
        if factor == 0 {
            return false;
        }
        let pb = 1i64 << self.pageblock_order;
        let z = &mut self.zones[zi];
        let managed = z.present.saturating_sub(z.reserved) as i64;
        if pb * 4 > managed {
            return false;
        }
        // mult_frac(high, factor, 10000)
        let max_boost = (z.wmark_base[2].max(0) as u128 * factor as u128 / 10000) as i64;
        if max_boost == 0 {
            return false;
        }
        z.watermark_boost = (z.watermark_boost + pb).min(max_boost.max(pb));
        z.apply_boost();
        true
    }

    /// move_freepages_block: move every free block of the pageblock that
    /// holds `pfn` to `mt`'s lists; returns pages moved.
    fn move_freepages_block(&mut self, zi: usize, pfn: u32, mt: usize) -> u64 {
        let bsize = 1u32 << self.pageblock_order;
        let zstart = self.zones[zi].start_pfn;
        let zend = zstart + self.zones[zi].present as u32;
        let start = (pfn & !(bsize - 1)).max(zstart);
        let end = ((pfn & !(bsize - 1)) + bsize).min(zend);
        let mut moved = 0u64;
        let mut p = start;
        while p < end {
            if self.pages.flags[p as usize] & PG_BUDDY != 0 {
                let order = self.pages.order[p as usize] as usize;
                let old = self.pages.mt[p as usize] as usize;
                if old != mt {
                    let z = &mut self.zones[zi];
                    self.pages.unlink(&mut z.free_area[order][old], p);
                    self.pages.push_front(&mut z.free_area[order][mt], p);
                    self.pages.mt[p as usize] = mt as u8;
                }
                moved += 1 << order;
                p += 1 << order;
            } else {
                p += 1;
            }
        }
        moved
    }

    /// __rmqueue.
    pub fn rmqueue(&mut self, zi: usize, order: usize, mt: usize) -> Option<u32> {
        if let Some(p) = self.rmqueue_smallest(zi, order, mt) {
            return Some(p);
        }
        if self.era.has_migratetypes() {
            return self.rmqueue_fallback(zi, order, mt);
        }
        None
    }

    /// __free_one_page: merge with free buddies and put the block on its list.
    pub fn free_one_page(&mut self, zi: usize, pfn: u32, order: usize, mt: usize) {
        let zstart = self.zones[zi].start_pfn as u64;
        let zend = zstart + self.zones[zi].present;
        let mut pfn = pfn as u64;
        let mut order = order;
        while order < self.max_order - 1 {
            let buddy = pfn ^ (1 << order);
            if buddy < zstart || buddy + (1 << order) > zend {
                break;
            }
            let b = buddy as usize;
            if self.pages.flags[b] & PG_BUDDY == 0 || self.pages.order[b] as usize != order {
                break;
            }
            self.del_free_block(zi, buddy as u32);
            pfn &= buddy;
            order += 1;
        }
        // 3.x: a block that is likely to merge soon goes to the tail.
        let mut tail = false;
        if self.era.has_migratetypes() && order < self.max_order - 2 {
            let combined = pfn & !((1u64 << (order + 1)) - 1);
            let higher_buddy = combined ^ (1 << (order + 1));
            if higher_buddy >= zstart && higher_buddy + (1 << (order + 1)) <= zend {
                let hb = higher_buddy as usize;
                tail = self.pages.flags[hb] & PG_BUDDY != 0 && self.pages.order[hb] as usize == order + 1;
            }
        }
        self.add_free_block(zi, pfn as u32, order, mt, tail);
    }

    /// Account a critical section under zone->lock. The work already
    /// charged since `ctx.sys` was `started` is the hold time; the task
    /// first spins while another CPU holds the lock at the time it asks
    /// for it, then holds it for that long.
    #[inline]
    pub fn zone_locked(&mut self, ctx: &mut Ctx, zi: usize, started: u64) {
        let hold = ctx.sys - started;
        ctx.sys = started;
        let t = ctx.clock();
        let got = self.zones[zi].lock.acquire(ctx.now, t, hold);
        let wait = got - t;
        ctx.spin += wait;
        self.sim.lock_spin_ns += wait;
        ctx.sys += wait + hold;
    }

    /// The line of a zone's vm_stat items that zone_reclaim's gate reads
    /// (NR_FILE_PAGES, NR_FILE_MAPPED; in 3.x also NR_FREE_PAGES, which
    /// zone_watermark_ok reads): 2.6.18's struct zone has vm_stat[0..4]
    /// on the line of lru_lock, the LRU heads and pages_scanned.
    #[inline]
    pub fn stat_line(&self, zi: usize) -> usize {
        self.zones[zi].line_base + if self.era == Era::V2618 { ZL_LRU } else { ZL_STAT }
    }

    /// A change of the zone's free count under zone->lock. 2.6.18 kept it
    /// in `zone->free_pages`, on the line of the watermarks that every
    /// zonelist walk reads: each change writes that line. 3.x keeps
    /// NR_FREE_PAGES in vm_stat through per-cpu deltas, whose folds write
    /// the vm_stat line (vmstat.rs `mod_zone_free_state`); where the engine
    /// does not model those deltas (4.11, 6.1) each change writes it. The
    /// free paths also clear pages_scanned and all_unreclaimable, on the
    /// LRU line (`cleared`).
    #[inline]
    pub fn free_pages_line(&mut self, ctx: &mut Ctx, zi: usize, cleared: bool) {
        if self.era == Era::V2618 {
            self.cache.write(ctx, self.zones[zi].line_base + ZL_WMARK);
        } else if !self.vmstat_drift {
            let l = self.stat_line(zi);
            self.cache.write(ctx, l);
        }
        if cleared {
            self.cache.write(ctx, self.zones[zi].line_base + ZL_LRU);
        }
    }

    #[inline]
    pub fn struct_page_ns(&self, ctx: &Ctx, zi: usize) -> u64 {
        self.cost.buddy_page_ns * self.distance[ctx.node][self.zones[zi].node] as u64 / 10
    }

    /// rmqueue_bulk: refill a per-cpu list with `batch` pages under zone->lock.
    fn rmqueue_bulk(&mut self, ctx: &mut Ctx, zi: usize, mt: usize) -> u32 {
        let batch = self.zones[zi].pcp_batch;
        let lock_line = self.zones[zi].line_base + ZL_LOCK;
        let pcp_idx = ctx.cpu * self.zones.len() + zi;
        let before = ctx.sys;
        self.cache.write(ctx, lock_line);
        self.free_pages_line(ctx, zi, false);
        let per_page = self.struct_page_ns(ctx, zi);
        let mut got = 0;
        for _ in 0..batch {
            match self.rmqueue(zi, 0, mt) {
                Some(p) => {
                    // Every page goes on the list of the type asked for,
                    // whatever pageblock it came from (set_page_private).
                    self.pages.flags[p as usize] = PG_PCP;
                    self.pages.mt[p as usize] = mt as u8;
                    let pcp = &mut self.pcp[pcp_idx];
                    self.pages.push_back(&mut pcp.lists[mt], p);
                    pcp.count += 1;
                    self.census.pcp += 1;
                    self.sim.page_events += 1;
                    got += 1;
                }
                None => break,
            }
        }
        ctx.sys += per_page * got as u64;
        self.zone_locked(ctx, zi, before);
        self.mod_zone_free_state(ctx, zi, -(got as i64));
        self.sim.rmqueue_bulk += 1;
        got
    }

    /// buffered_rmqueue: order-0 pages come from the per-cpu list, larger
    /// orders straight from the buddy lists under zone->lock.
    pub fn buffered_rmqueue(&mut self, ctx: &mut Ctx, zi: usize, order: usize, mt: usize) -> Option<u32> {
        let mt = if self.era.has_migratetypes() { mt } else { 0 };
        if order == 0 && self.percpu_pagelists {
            let pcp_idx = ctx.cpu * self.zones.len() + zi;
            self.cache.write(ctx, self.pcp_line_base + pcp_idx);
            if self.pcp[pcp_idx].lists[mt].is_empty() {
                self.rmqueue_bulk(ctx, zi, mt);
            }
            let pcp = &mut self.pcp[pcp_idx];
            let p = self.pages.pop_front(&mut pcp.lists[mt])?;
            pcp.count -= 1;
            self.census.pcp -= 1;
            self.pages.flags[p as usize] = 0;
            self.sim.page_events += 1;
            Some(p)
        } else {
            let lock_line = self.zones[zi].line_base + ZL_LOCK;
            let before = ctx.sys;
            self.cache.write(ctx, lock_line);
            self.free_pages_line(ctx, zi, false);
            let r = self.rmqueue(zi, order, mt);
            if r.is_some() {
                ctx.sys += self.struct_page_ns(ctx, zi);
                self.sim.page_events += 1;
            }
            self.zone_locked(ctx, zi, before);
            if let Some(p) = r {
                self.pages.flags[p as usize] = 0;
                self.mod_zone_free_state(ctx, zi, -(1i64 << order));
            }
            r
        }
    }

    /// Free a page the caller owns (its flags cleared by the caller's list
    /// removal): order 0 to the per-cpu list, larger orders to the buddy.
    pub fn free_pages(&mut self, ctx: &mut Ctx, pfn: u32, order: usize) {
        let zi = self.zone_of(pfn);
        let mt = if self.era.has_migratetypes() {
            (self.pageblock_mt[self.pageblock_of(pfn)] as usize).min(NR_MT - 1)
        } else {
            0
        };
        self.vm.add(Ev::Pgfree, 1 << order);
        self.sim.page_events += 1;
        self.pages.owner[pfn as usize] = NIL;
        if order == 0 && self.percpu_pagelists {
            let pcp_idx = ctx.cpu * self.zones.len() + zi;
            self.cache.write(ctx, self.pcp_line_base + pcp_idx);
            self.pages.flags[pfn as usize] = PG_PCP;
            self.pages.mt[pfn as usize] = mt as u8;
            let pcp = &mut self.pcp[pcp_idx];
            self.pages.push_front(&mut pcp.lists[mt], pfn);
            pcp.count += 1;
            self.census.pcp += 1;
            if pcp.count >= self.zones[zi].pcp_high {
                self.free_pcppages_bulk(ctx, zi, self.zones[zi].pcp_batch);
            }
        } else {
            let before = ctx.sys;
            self.cache.write(ctx, self.zones[zi].line_base + ZL_LOCK);
            self.free_pages_line(ctx, zi, true);
            ctx.sys += self.struct_page_ns(ctx, zi);
            self.free_one_page(zi, pfn, order, mt);
            self.zone_locked(ctx, zi, before);
            self.mod_zone_free_state(ctx, zi, 1i64 << order);
            self.zones[zi].all_unreclaimable = false;
            self.zones[zi].pages_scanned = 0;
        }
    }

    /// free_pcppages_bulk: return `count` pages from the tails of this CPU's
    /// lists of zone `zi` to the buddy allocator.
    pub fn free_pcppages_bulk(&mut self, ctx: &mut Ctx, zi: usize, count: u32) {
        let pcp_idx = ctx.cpu * self.zones.len() + zi;
        let before = ctx.sys;
        self.cache.write(ctx, self.zones[zi].line_base + ZL_LOCK);
        self.free_pages_line(ctx, zi, true);
        let per_page = self.struct_page_ns(ctx, zi);
        let mut freed = 0;
        let mut mt = 0;
        let nmt = self.nr_mt();
        while freed < count && self.pcp[pcp_idx].count > 0 {
            let list = &mut self.pcp[pcp_idx].lists[mt];
            if list.tail == NIL {
                mt = (mt + 1) % nmt;
                continue;
            }
            let p = list.tail;
            self.pages.unlink(&mut self.pcp[pcp_idx].lists[mt], p);
            self.pcp[pcp_idx].count -= 1;
            self.census.pcp -= 1;
            self.pages.flags[p as usize] = 0;
            self.free_one_page(zi, p, 0, mt);
            freed += 1;
            self.sim.page_events += 1;
        }
        ctx.sys += per_page * freed as u64;
        self.zone_locked(ctx, zi, before);
        self.mod_zone_free_state(ctx, zi, freed as i64);
        self.zones[zi].all_unreclaimable = false;
        self.zones[zi].pages_scanned = 0;
    }

    /// Zone index holding `pfn` (zones are contiguous and sorted by pfn).
    #[inline]
    pub fn zone_of(&self, pfn: u32) -> usize {
        // partition_point over start_pfn: few zones, binary search is cheap.
        let i = self.zones.partition_point(|z| z.start_pfn <= pfn);
        i - 1
    }

    /// Mark a page as the kernel's own (page tables).
    pub fn mark_kernel(&mut self, pfn: u32) {
        self.pages.flags[pfn as usize] = PG_KERNEL;
        self.census.kernel += 1;
    }

    /// Bytes of simulator state: page arrays, pageblock types, per-cpu
    /// lists and vm_stat deltas, zonelists, the cache model, the ports.
    pub fn state_bytes(&self) -> u64 {
        let pages = (self.pages.len() * Pages::BYTES_PER_PAGE) as u64;
        let blocks = self.pageblock_mt.len() as u64;
        let pcp = (self.pcp.len() * std::mem::size_of::<Pcp>() + self.free_diff.len() * 4 + self.stat_diff.len() * 4) as u64;
        let zl: u64 = self.zonelists.iter().map(|z| (z.zones.len() * 4) as u64 + 64).sum();
        let zlc: u64 = self.zlcs.iter().map(|z| (z.fullzones.len() * 8 + z.z_to_n.len() * 2) as u64 + 64).sum();
        let zones = (self.zones.len() * (std::mem::size_of::<Zone>() + self.max_order * (std::mem::size_of::<[ListHead; NR_MT]>() + 8))) as u64;
        pages + blocks + pcp + zl + zlc + zones + self.cache.state_bytes() + self.ic.state_bytes()
    }

    pub fn free_pages_total(&self) -> i64 {
        self.zones.iter().map(|z| z.free_pages).sum()
    }
}

/// build_zonelists + build_zonelist_cache for every node. Returns whether
/// zone_reclaim_mode is switched on automatically (a node farther than
/// RECLAIM_DISTANCE).
#[allow(clippy::too_many_arguments)]
fn build_zonelists(
    era: Era,
    arch: crate::spec::Arch,
    nodes: &[Node],
    zones: &[Zone],
    distance: &[Vec<u32>],
    with_zlc: bool,
    cache_line: usize,
    out: &mut Vec<Zonelist>,
    zlcs: &mut Vec<ZlcState>,
    line_home: &mut Vec<u16>,
) -> bool {
    let n = nodes.len();
    let mut auto_reclaim = false;
    let mut node_load = vec![0i64; n];
    let numa = n > 1;
    let zone_order = era != Era::V2618 && default_zonelist_order_is_zone(nodes, zones);
    for local in 0..n {
        // Node order by find_next_best_node.
        let mut used = vec![false; n];
        let mut order_nodes = Vec::with_capacity(n);
        let mut load = n as i64;
        let mut prev = local;
        loop {
            let next = find_next_best_node(local, &mut used, nodes, distance, &node_load, arch.penalty_for_node_with_cpus());
            let Some(nd) = next else { break };
            let d = distance[local][nd];
            if d > arch.reclaim_distance(era) {
                auto_reclaim = true;
            }
            if d != distance[local][prev] {
                if era == Era::V2618 {
                    node_load[nd] += load;
                } else {
                    node_load[nd] = load;
                }
            }
            prev = nd;
            load -= 1;
            order_nodes.push(nd);
        }
        // The full fallback list (all zone types), in node or zone order.
        let mut full: Vec<u16> = Vec::new();
        if zone_order {
            for zt in (0..NR_ZONE_TYPES).rev() {
                for &nd in &order_nodes {
                    if let Some(zi) = nodes[nd].zones[zt] {
                        full.push(zi as u16);
                    }
                }
            }
        } else {
            for &nd in &order_nodes {
                for zt in (0..NR_ZONE_TYPES).rev() {
                    if let Some(zi) = nodes[nd].zones[zt] {
                        full.push(zi as u16);
                    }
                }
            }
        }
        // 3.x: one cache per node over the full list. 2.6.18: one per
        // per-type zonelist, indexed by position in that list.
        let shared_zlc = if with_zlc && numa && era != Era::V2618 {
            Some(new_zlc(&full, zones, local, cache_line, zlcs, line_home))
        } else {
            None
        };
        for hz in 0..NR_ZONE_TYPES {
            let mut zl_zones = Vec::new();
            let mut pos = Vec::new();
            for (i, &zi) in full.iter().enumerate() {
                if zones[zi as usize].zt <= hz {
                    zl_zones.push(zi);
                    pos.push(i as u16);
                }
            }
            let zlc = if !with_zlc || !numa {
                None
            } else if era == Era::V2618 {
                pos = (0..zl_zones.len() as u16).collect();
                Some(new_zlc(&zl_zones, zones, local, cache_line, zlcs, line_home))
            } else {
                shared_zlc
            };
            let ptrs_per_line = (cache_line / 8).max(1);
            let line_zones = line_home.len();
            for _ in 0..zl_zones.len().div_ceil(ptrs_per_line).max(1) {
                line_home.push(local as u16);
            }
            out.push(Zonelist { zones: zl_zones, zlc_pos: pos, zlc, line_zones, ptrs_per_line });
        }
    }
    auto_reclaim
}

fn new_zlc(list: &[u16], zones: &[Zone], local: usize, cache_line: usize, zlcs: &mut Vec<ZlcState>, line_home: &mut Vec<u16>) -> usize {
    let entries_per_line = (cache_line / 2).max(1);
    let line_bitmap = line_home.len();
    line_home.push(local as u16);
    let line_z_to_n = line_home.len();
    for _ in 0..list.len().div_ceil(entries_per_line).max(1) {
        line_home.push(local as u16);
    }
    let line_zap = line_home.len();
    line_home.push(local as u16);
    zlcs.push(ZlcState {
        fullzones: vec![0; list.len().div_ceil(64).max(1)],
        z_to_n: list.iter().map(|&zi| zones[zi as usize].node as u16).collect(),
        last_full_zap: 0,
        line_bitmap,
        line_z_to_n,
        line_zap,
        entries_per_line,
    });
    zlcs.len() - 1
}

/// find_next_best_node (identical in 2.6.18 and 3.x).
fn find_next_best_node(local: usize, used: &mut [bool], nodes: &[Node], distance: &[Vec<u32>], node_load: &[i64], penalty: i64) -> Option<usize> {
    if !used[local] {
        used[local] = true;
        return Some(local);
    }
    let n = nodes.len() as i64;
    let mut best: Option<usize> = None;
    let mut best_val = i64::MAX;
    for nd in 0..nodes.len() {
        if used[nd] {
            continue;
        }
        let mut val = distance[local][nd] as i64;
        if nd < local {
            val += 1;
        }
        if !nodes[nd].cpus.is_empty() {
            val += penalty; // PENALTY_FOR_NODE_WITH_CPUS
        }
        val = val * (n * n) + node_load[nd];
        if val < best_val {
            best_val = val;
            best = Some(nd);
        }
    }
    if let Some(b) = best {
        used[b] = true;
    }
    best
}

/// default_zonelist_order (3.x): zone order unless a node lacks NORMAL, or
/// DMA/DMA32 is absent or more than half of memory, or a larger-than-average
/// node keeps more than 70% of its memory in DMA/DMA32.
fn default_zonelist_order_is_zone(nodes: &[Node], zones: &[Zone]) -> bool {
    let mut low_total = 0u64;
    let mut total = 0u64;
    for nd in nodes {
        if nd.zones[ZONE_NORMAL].is_none() && nd.zones[ZONE_HIGHMEM].is_none() && nd.zones[ZONE_MOVABLE].is_none() {
            return false;
        }
        for zi in nd.zones.iter().flatten() {
            let z = &zones[*zi];
            total += z.present;
            if z.zt < ZONE_NORMAL {
                low_total += z.present;
            }
        }
    }
    if low_total == 0 || low_total > total / 2 {
        return false;
    }
    // average_size = total / (nodes with memory + 1), as 3.0 computes it.
    let avg = total / (nodes.len() as u64 + 1);
    for nd in nodes {
        let mut t = 0u64;
        let mut low = 0u64;
        for zi in nd.zones.iter().flatten() {
            let z = &zones[*zi];
            t += z.present;
            if z.zt < ZONE_NORMAL {
                low += z.present;
            }
        }
        if t > avg && low * 10 > t * 7 {
            return false;
        }
    }
    true
}


#[cfg(test)]
mod tests {
    use super::LockHolds;

    #[test]
    fn a_lock_is_waited_for_only_while_held() {
        let mut l = LockHolds::default();
        // CPU A, processed first, holds the lock at 1000..1500 (late in its step).
        assert_eq!(l.acquire(0, 1000, 500), 1000);
        // CPU B asks at 200, before A's hold: free then.
        assert_eq!(l.acquire(0, 200, 100), 200);
        // CPU C asks at 1200, inside A's hold: waits until 1500.
        assert_eq!(l.acquire(0, 1200, 100), 1500);
        // D asks at 1550, inside C's hold (1500..1600), which follows A's: waits until 1600.
        assert_eq!(l.acquire(0, 1550, 10), 1600);
        // A hold ending exactly when another asks does not delay it.
        assert_eq!(l.acquire(0, 1610, 0), 1610);
    }

    /// The first form of `acquire` (passes until nothing moves, then the
    /// slot searches with early exits), kept to hold the present one to it.
    fn acquire_reference(l: &mut LockHolds, now: u64, t: u64, hold: u64) -> u64 {
        use super::LOCK_HOLDS;
        let mut s = t;
        loop {
            let mut moved = false;
            for i in 0..LOCK_HOLDS {
                if l.start[i] <= s && s < l.end[i] {
                    s = l.end[i];
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        if hold == 0 {
            return s;
        }
        for i in 0..LOCK_HOLDS {
            if l.end[i] == s && l.start[i] < s {
                l.end[i] = s + hold;
                return s;
            }
        }
        let mut victim = None;
        let mut last = 0;
        for i in 0..LOCK_HOLDS {
            if l.end[i] <= now {
                victim = Some(i);
                break;
            }
            if l.start[i] >= l.start[last] {
                last = i;
            }
        }
        if victim.is_none() && l.start[last] > s {
            victim = Some(last);
        }
        if let Some(v) = victim {
            l.start[v] = s;
            l.end[v] = s + hold;
        }
        s
    }

    #[test]
    fn acquire_agrees_with_its_reference_form() {
        // Random asks from steps that begin in time order, each asking a
        // little ahead of its start, some holds 0 (a look): the same grant
        // and the same slots after every one.
        let mut rng = crate::sched::SplitMix64::new(7);
        for _ in 0..200 {
            let (mut a, mut b) = (LockHolds::default(), LockHolds::default());
            let mut now = 0u64;
            for _ in 0..400 {
                now += rng.below(50);
                // Often asked at the step's start, where a hold may end.
                let t = if rng.below(3) == 0 { now } else { now + rng.below(300) };
                let hold = if rng.below(5) == 0 { 0 } else { 1 + rng.below(80) };
                assert_eq!(a.acquire(now, t, hold), acquire_reference(&mut b, now, t, hold));
                assert_eq!((a.start, a.end), (b.start, b.end));
            }
        }
    }

    #[test]
    fn back_to_back_holds_chain() {
        let mut l = LockHolds::default();
        for i in 0..20u64 {
            // Everyone asks at 0 for 10 ns: FIFO, one after another.
            assert_eq!(l.acquire(0, 0, 10), i * 10);
        }
    }

    #[test]
    fn past_holds_are_forgotten_and_far_future_ones_dropped_first() {
        let mut l = LockHolds::default();
        // 8 holds far in the future (a long step's), non-adjacent.
        for i in 0..8u64 {
            assert_eq!(l.acquire(0, 1_000_000 + 100 * i, 10), 1_000_000 + 100 * i);
        }
        // A nearer hold displaces the one that starts last...
        assert_eq!(l.acquire(0, 500, 100), 500);
        // ...and is met by the next asker; the dropped one is not.
        assert_eq!(l.acquire(0, 550, 10), 600);
        assert_eq!(l.acquire(0, 1_000_700, 10), 1_000_700);
        // Holds that ended before the asker's step began free their slots.
        assert_eq!(l.acquire(2_000_000, 2_000_000, 10), 2_000_000);
        assert_eq!(l.acquire(2_000_000, 2_000_005, 10), 2_000_010);
    }
}
