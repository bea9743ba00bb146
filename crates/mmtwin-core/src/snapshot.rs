//! /proc snapshots: the state mm/vmstat.c, drivers/base/node.c and
//! block/genhd.c read for /proc/vmstat, /proc/zoneinfo, /proc/buddyinfo,
//! /proc/pagetypeinfo, /sys/devices/system/node/nodeN/numastat and
//! /proc/diskstats, recorded at chosen simulated
//! times (`spec.snapshots`, docs/engine-api.md). The engine records numbers
//! only; Python prints them in each era's text (mmtwin.reports.procfs).
//!
//! A snapshot is taken by the event loop when a timer comes due, between
//! two steps (nothing isolated or held), never on the per-event path. Its
//! memory is bounded: `Spec::snapshot_bytes` per snapshot, at most
//! `at_ms.len() + max_periodic + 2` of them; periodic ones are thinned
//! (every other one dropped, the period doubled) when `max_periodic` are
//! held, as the timeline is.

use crate::kernel::Kernel;
use crate::mm::{NR_MT, NR_ZONE_TYPES};
use crate::spec::{SnapshotSpec, ZONE_NAMES};
use crate::vmstat::{self, Gauges, VmStat, NR_ZS, ZS_NAMES};
use serde_json::{json, Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Start,
    At,
    Periodic,
    End,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Start => "start",
            Kind::At => "at",
            Kind::Periodic => "periodic",
            Kind::End => "end",
        }
    }
}

/// One zone at one time: what changes while the machine runs.
pub struct ZoneSnap {
    pub free: i64,
    /// free_area[order].nr_free.
    pub nr_free: Vec<u64>,
    /// free_area[order].free_list[migratetype] lengths (engine numbering: unmovable, reclaimable, movable).
    pub by_type: Vec<[u32; NR_MT]>,
    /// Pageblocks of each migrate type, counted as pagetypeinfo does (every pageblock_nr_pages from start_pfn).
    pub blocks: [u64; NR_MT],
    /// zone->vm_stat, NR_FREE_PAGES and the NUMA counters filled from their sources.
    pub vm_stat: [i64; NR_ZS],
    pub pages_scanned: u64,
    pub all_unreclaimable: bool,
    /// Per-cpu pageset count of this zone, one per CPU.
    pub pcp_count: Vec<u32>,
}

/// One block device at one time: what /proc/diskstats prints.
pub struct DevSnap {
    /// Bios and sectors submitted to the device (an md device's own line).
    pub bios: [u64; 2],
    pub sectors: [u64; 2],
    /// Each member disk's request accounting, rounded to the snapshot's jiffy.
    pub disks: Vec<crate::block::DiskIo>,
}

pub struct Snapshot {
    pub t_ns: u64,
    pub kind: Kind,
    pub vm: VmStat,
    /// zone_stat_item summed over every zone.
    pub zs: [i64; NR_ZS],
    pub dirty_thresh: u64,
    pub bg_thresh: u64,
    pub zones: Vec<ZoneSnap>,
    pub devices: Vec<DevSnap>,
}

impl Snapshot {
    pub fn take(k: &Kernel, t_ns: u64, kind: Kind) -> Snapshot {
        let mm = &k.mm;
        let ncpus = mm.cpu_node.len();
        let nzones = mm.zones.len();
        let pb = 1u64 << mm.pageblock_order;
        let zones = mm
            .zones
            .iter()
            .enumerate()
            .map(|(zi, z)| {
                let mut vm_stat = z.vm_stat;
                vm_stat[vmstat::Zs::NrFreePages as usize] = z.free_pages;
                for (i, item) in [vmstat::Zs::NumaHit, vmstat::Zs::NumaMiss, vmstat::Zs::NumaForeign, vmstat::Zs::NumaLocal, vmstat::Zs::NumaOther]
                    .into_iter()
                    .enumerate()
                {
                    vm_stat[item as usize] = z.numa[i] as i64;
                }
                let mut blocks = [0u64; NR_MT];
                if mm.era.has_migratetypes() {
                    let start = z.start_pfn as u64;
                    let end = start + z.present;
                    let mut pfn = start;
                    while pfn < end {
                        let mt = (mm.pageblock_mt[(pfn >> mm.pageblock_order) as usize] as usize).min(NR_MT - 1);
                        blocks[mt] += 1;
                        pfn += pb;
                    }
                }
                ZoneSnap {
                    free: z.free_pages,
                    nr_free: z.nr_free.clone(),
                    by_type: z.free_area.iter().map(|lists| std::array::from_fn(|mt| lists[mt].len)).collect(),
                    blocks,
                    vm_stat,
                    pages_scanned: z.pages_scanned,
                    all_unreclaimable: z.all_unreclaimable,
                    pcp_count: (0..ncpus).map(|cpu| mm.pcp[cpu * nzones + zi].count).collect(),
                }
            })
            .collect();
        let (bg, dirty) = k.global_dirty_limits();
        let devices = (0..k.blk.nr_devices())
            .map(|d| {
                let st = k.blk.stats(d);
                DevSnap { bios: st.bios, sectors: st.sectors, disks: (0..k.blk.nr_disks(d)).map(|i| k.blk.disk_io(d, i, t_ns)).collect() }
            })
            .collect();
        Snapshot { t_ns, kind, vm: mm.vm.clone(), zs: k.zone_stat_sum(), dirty_thresh: dirty, bg_thresh: bg, zones, devices }
    }

    pub fn to_json(&self, k: &Kernel) -> Value {
        let mm = &k.mm;
        let mut present = [false; NR_ZONE_TYPES];
        for z in &mm.zones {
            present[z.zt] = true;
        }
        let gauges = Gauges { zs: &self.zs, dirty_thresh: self.dirty_thresh, bg_thresh: self.bg_thresh, vmscan_invalidate: k.k.reclaim_invalidate };
        let mut rows = Map::new();
        for (name, v) in vmstat::rows(k.era, &self.vm, &gauges, &present) {
            rows.insert(name, json!(v));
        }
        let nmt = mm.nr_mt();
        let zones: Vec<Value> = self
            .zones
            .iter()
            .zip(&mm.zones)
            .map(|(s, z)| {
                let mut stat = Map::new();
                for (name, v) in ZS_NAMES.iter().zip(s.vm_stat.iter()) {
                    stat.insert((*name).to_string(), json!(v));
                }
                let by_type: Vec<Vec<u32>> = (0..nmt).map(|mt| s.by_type.iter().map(|o| o[mt]).collect()).collect();
                json!({
                    "node": z.node,
                    "zone": ZONE_NAMES[z.zt],
                    "start_pfn": z.start_pfn,
                    "spanned": z.present,
                    "present": z.present,
                    "managed": z.present - z.reserved,
                    "free": s.free,
                    "min": z.wmark_min,
                    "low": z.wmark_low,
                    "high": z.wmark_high,
                    "boost": z.watermark_boost,
                    "lowmem_reserve": z.lowmem_reserve.to_vec(),
                    "pages_scanned": s.pages_scanned,
                    "all_unreclaimable": s.all_unreclaimable,
                    "inactive_ratio": z.inactive_ratio,
                    "pcp_high": z.pcp_high,
                    "pcp_batch": z.pcp_batch,
                    "pcp_count": s.pcp_count,
                    "nr_free": s.nr_free,
                    "free_by_type": by_type,
                    "pageblocks": s.blocks[..nmt].to_vec(),
                    "vm_stat": Value::Object(stat),
                })
            })
            .collect();
        let devices: Vec<Value> = self
            .devices
            .iter()
            .map(|d| {
                let disks: Vec<Value> = d
                    .disks
                    .iter()
                    .map(|io| {
                        json!({
                            "ios": io.ios, "merges": io.merges, "sectors": io.sectors, "ticks": io.ticks,
                            "in_flight": io.in_flight, "io_ticks": io.io_ticks, "time_in_queue": io.time_in_queue,
                        })
                    })
                    .collect();
                json!({ "bios": d.bios, "sectors": d.sectors, "disks": disks })
            })
            .collect();
        json!({
            "t_ns": self.t_ns,
            "kind": self.kind.name(),
            "vmstat": Value::Object(rows),
            "zones": zones,
            "devices": devices,
        })
    }
}

/// The snapshot timers of one run and what they recorded.
pub struct Snapshots {
    at: Vec<u64>,
    next_at: usize,
    every: Option<u64>,
    next_periodic: u64,
    cap: usize,
    pub taken: Vec<Snapshot>,
    pub periodic: Vec<Snapshot>,
}

impl Snapshots {
    pub fn new(spec: Option<&SnapshotSpec>) -> Option<Snapshots> {
        let sn = spec?;
        let every = sn.every_ms.map(|e| e * 1_000_000);
        Some(Snapshots {
            at: sn.at_ms.iter().map(|&t| t * 1_000_000).collect(),
            next_at: 0,
            every,
            next_periodic: every.unwrap_or(u64::MAX),
            cap: sn.max_periodic as usize,
            taken: Vec::new(),
            periodic: Vec::new(),
        })
    }

    /// The simulated time of the next snapshot due (u64::MAX: none).
    pub fn next_due(&self) -> u64 {
        let at = self.at.get(self.next_at).copied().unwrap_or(u64::MAX);
        at.min(self.next_periodic)
    }

    /// Take every snapshot due at `due` (= next_due()).
    pub fn fire(&mut self, k: &Kernel, due: u64) {
        if self.at.get(self.next_at) == Some(&due) {
            self.taken.push(Snapshot::take(k, due, Kind::At));
            self.next_at += 1;
        }
        if self.next_periodic == due {
            let mut every = self.every.unwrap_or(u64::MAX);
            if self.periodic.len() >= self.cap {
                every *= 2;
                self.periodic.retain(|s| s.t_ns % every == 0);
                self.every = Some(every);
            }
            if due % every == 0 {
                self.periodic.push(Snapshot::take(k, due, Kind::Periodic));
                self.next_periodic = due + every;
            } else {
                self.next_periodic = due + every / 2;
            }
        }
    }

    /// All snapshots in time order (start, at and periodic, end).
    pub fn into_json(self, k: &Kernel) -> Value {
        let mut all: Vec<&Snapshot> = self.taken.iter().chain(self.periodic.iter()).collect();
        all.sort_by_key(|s| (s.t_ns, s.kind as u8));
        Value::Array(all.into_iter().map(|s| s.to_json(k)).collect())
    }
}
