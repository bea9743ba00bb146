//! The run specification (docs/engine-api.md) and its validation.
//!
//! Every table denies unknown fields; every semantic error names the dotted
//! path of the offending field, the bad value and what is allowed.

use serde::Deserialize;
use std::fmt;

/// The most pages a machine may have: the page state (about 28 bytes a
/// page with its side tables) stays under 4 GB (docs/architecture.md).
pub const MAX_PAGES: u64 = 1 << 27;

/// The most block devices a machine may have.
pub const MAX_DEVICES: usize = 16;

/// A user-facing error: `field: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    pub field: String,
    pub message: String,
}

impl SpecError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        SpecError { field: field.into(), message: message.into() }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for SpecError {}

pub const ZONE_NAMES: [&str; 5] = ["DMA", "DMA32", "NORMAL", "HIGHMEM", "MOVABLE"];
pub const MAX_NODES: usize = 256;
pub const MAX_CPUS: usize = 4096;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub machine: MachineSpec,
    pub kernel: KernelSpec,
    pub workload: WorkloadSpec,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default)]
    pub check: bool,
    #[serde(default = "default_sample_ms")]
    pub sample_ms: u64,
    #[serde(default)]
    pub trace: Option<TraceSpec>,
    /// /proc snapshots (snapshot.rs); absent = none, not even at the start and the end.
    #[serde(default)]
    pub snapshots: Option<SnapshotSpec>,
}

/// The most `snapshots.at_ms` entries.
pub const MAX_SNAPSHOTS_AT: usize = 1024;
/// The most periodic snapshots kept (`snapshots.max_periodic`).
pub const MAX_PERIODIC: u32 = 4096;
/// Memory all snapshots of a run may take: (at + max_periodic + 2) x snapshot_bytes.
pub const SNAPSHOT_BUDGET: u64 = 256 << 20;
/// The latest simulated time a snapshot may be asked for (one simulated day, kernel::MAX_SIM_NS).
pub const MAX_SNAPSHOT_MS: u64 = 86_400_000;
/// The most files fs_mark may keep (threads x files x iterations): about 200 bytes of state an inode.
pub const MAX_FILES_KEPT: u64 = 1 << 24;
/// Memory the cache model may take (cost.rs `CacheModel`: a 4-byte stamp per CPU per cache line).
pub const CACHE_MODEL_BUDGET: u64 = 1 << 30;
/// Memory the block layer's preallocated request slots may take, all devices together (block.rs `Queue::new`).
pub const REQUEST_SLOTS_BUDGET: u64 = 1 << 30;

/// Bytes of one device's preallocated request slots at most: `2 x floor(3 x nr_requests / 2)`
/// slots per member disk (each member of an md RAID-0 has its own request list, and a batcher
/// may take 3/2 x nr_requests of a direction), each with room
/// for `max_sectors_kib` of pages (a pfn, a bio tag and a length, 4 bytes each), per disk its piece,
/// stamp and queueing time and its FIFO and sorted-list entries (48 bytes a disk) and the request
/// itself (64); and each disk's drive queue (4 bytes a command of `queue_depth`).
pub fn request_slots_bytes(d: &DeviceSpecJson, page_size: u64) -> u64 {
    let maxp = (u64::from(d.max_sectors_kib) * 1024 / page_size).max(1);
    2 * (3 * u64::from(d.nr_requests) / 2).max(1) * u64::from(d.disks) * (12 * maxp + 48 * u64::from(d.disks) + 64)
        + 4 * u64::from(d.queue_depth) * u64::from(d.disks)
}

/// When to record the state /proc/vmstat, /proc/zoneinfo, /proc/buddyinfo,
/// /proc/pagetypeinfo and the nodes' numastat read. With this table present
/// the engine always records one at the start and one at the end of the run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotSpec {
    /// Simulated times (ms), strictly increasing; a time after the run ended gives no snapshot.
    #[serde(default)]
    pub at_ms: Vec<u64>,
    /// A snapshot every this many simulated ms (the monitors' MONITOR_UPDATE_FREQUENCY), or none.
    #[serde(default)]
    pub every_ms: Option<u64>,
    /// The most periodic snapshots kept: when full, every other one is dropped and the period doubles.
    #[serde(default = "default_max_periodic")]
    pub max_periodic: u32,
}

fn default_max_periodic() -> u32 {
    256
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    pub path: String,
    #[serde(default)]
    pub events: Option<Vec<String>>,
    /// The text layout: `kernel` (default) or `postprocess-6.1` (trace.rs, `TraceFormat`).
    #[serde(default)]
    pub format: Option<String>,
}

fn default_seed() -> u64 {
    1
}
fn default_sample_ms() -> u64 {
    100
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    pub name: String,
    #[serde(default)]
    pub arch: Arch,
    pub page_size: u64,
    pub cache_line: u64,
    /// Each CPU's cache in KiB, for the coherence model's evictions (the
    /// last level's share of one CPU); 0: lines are never evicted.
    #[serde(default)]
    pub cache_kib: u64,
    /// Each node's interconnect port, MB/s in each direction (cost.rs
    /// `Interconnect`); 0: unlimited.
    #[serde(default)]
    pub link_mb_s: u64,
    pub hz: u64,
    #[serde(default = "default_max_order")]
    pub max_order: u32,
    #[serde(default = "default_pageblock_order")]
    pub pageblock_order: u32,
    pub nodes: Vec<NodeSpec>,
    pub distance: Vec<Vec<u32>>,
    pub cost: CostSpec,
    #[serde(default)]
    pub storage: Option<StorageSpec>,
    /// Where a multi-threaded workload's threads run (docs/config-schema.md).
    #[serde(default)]
    pub fork_balance: ForkBalance,
}

/// Where the threads a workload creates run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum ForkBalance {
    /// Thread i on CPU i (or the workload's own CPU list): a benchmark that pins its threads.
    #[default]
    #[serde(rename = "none")]
    None,
    /// sched_balance_self at exec and at every clone over the sched domains
    /// 2.6.18 built on ia64 (SD_BALANCE_FORK in the node domain only), then
    /// the idle CPUs' load balancing pulling the threads that shared a CPU.
    #[serde(rename = "ia64-2.6.18")]
    Ia64_2618,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSpec {
    pub devices: Vec<DeviceSpecJson>,
    pub fs: FsSpec,
    #[serde(default)]
    pub swap: Option<SwapSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpecJson {
    pub name: String,
    pub disks: u32,
    #[serde(default = "default_chunk")]
    pub chunk_kib: u32,
    pub bandwidth_mib_s: u32,
    pub access_us: u32,
    /// Seek curve (block.rs `Timing`): spindle speed, 0 = flat `access_us`.
    #[serde(default)]
    pub rpm: u32,
    #[serde(default)]
    pub track_seek_us: u32,
    #[serde(default)]
    pub full_seek_us: u32,
    pub nr_requests: u32,
    pub max_sectors_kib: u32,
    pub size_mib: u64,
    /// The disks' I/O scheduler: "noop" (default), "deadline" or "cfq".
    #[serde(default)]
    pub elevator: ElevatorJson,
    /// Commands each disk holds at once (native command queueing); 1
    /// (default): one at a time.
    #[serde(default = "default_queue_depth")]
    pub queue_depth: u32,
}
fn default_queue_depth() -> u32 {
    1
}
fn default_chunk() -> u32 {
    64
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
pub enum ElevatorJson {
    #[default]
    #[serde(rename = "noop")]
    Noop,
    #[serde(rename = "deadline")]
    Deadline,
    #[serde(rename = "cfq")]
    Cfq,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum FsKind {
    /// ext3 (data=ordered): blocks at write time, page-cache pages of
    /// write() allocated with __GFP_FS, ->writepage writes for reclaim.
    #[serde(rename = "ext3")]
    Ext3,
    #[serde(rename = "ext4")]
    Ext4,
    #[serde(rename = "xfs")]
    Xfs,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsSpec {
    pub kind: FsKind,
    pub device: u32,
    pub size_mib: u64,
    /// A jbd2 journal (ext4 only; jbd2.rs). Absent: ext4 has one.
    #[serde(default)]
    pub journal: Option<bool>,
    /// The journal's commit interval in seconds (ext4's commit= mount
    /// option; JBD2_DEFAULT_MAX_COMMIT_AGE 5).
    #[serde(default = "default_commit_s")]
    pub commit_s: u64,
}

fn default_commit_s() -> u64 {
    5
}

impl FsSpec {
    /// Does the filesystem run a jbd2 journal?
    pub fn has_journal(&self) -> bool {
        self.kind == FsKind::Ext4 && self.journal.unwrap_or(true)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapSpec {
    pub device: u32,
    pub size_mib: u64,
}

fn default_max_order() -> u32 {
    11
}
fn default_pageblock_order() -> u32 {
    9
}

/// The architecture: it sets RECLAIM_DISTANCE and the zonelist builder's
/// penalty for nodes with CPUs (include/asm-*/topology.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum Arch {
    #[default]
    #[serde(rename = "x86_64")]
    X86_64,
    #[serde(rename = "ia64")]
    Ia64,
}

impl Arch {
    /// RECLAIM_DISTANCE: ia64 overrides it with 15; the generic value is 20
    /// up to 2.6.3x and 30 from 3.0 on.
    pub fn reclaim_distance(self, era: Era) -> u32 {
        match self {
            Arch::Ia64 => 15,
            Arch::X86_64 => era.reclaim_distance(),
        }
    }
    /// PENALTY_FOR_NODE_WITH_CPUS: 255 on ia64, 1 elsewhere.
    pub fn penalty_for_node_with_cpus(self) -> i64 {
        match self {
            Arch::Ia64 => 255,
            Arch::X86_64 => 1,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub cpus: u32,
    pub zones: Vec<ZoneSpec>,
    #[serde(default)]
    pub reserved_pages: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSpec {
    pub name: String,
    pub present_pages: u64,
}

/// Nanosecond costs of the kernel operations the engine charges.
///
/// Latency-bound work (a dependent load of a metadata cache line, a
/// struct page update) scales with the SLIT distance; clearing a page is a
/// bandwidth-bound stream of stores, so it has one local and one remote
/// rate (the interconnect's bandwidth, whatever the hop count).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostSpec {
    pub fault_ns: u64,
    pub clear_ns_per_kib: u64,
    pub clear_remote_ns_per_kib: u64,
    pub line_miss_ns: u64,
    pub line_hit_ns: u64,
    pub buddy_page_ns: u64,
    pub user_store_ns: u64,
    #[serde(default = "d_syscall")]
    pub syscall_ns: u64,
    #[serde(default = "d_copy")]
    pub copy_ns_per_kib: u64,
    #[serde(default = "d_page_cache")]
    pub page_cache_ns: u64,
    #[serde(default = "d_scan_page")]
    pub scan_page_ns: u64,
    #[serde(default = "d_inode")]
    pub inode_ns: u64,
    #[serde(default = "d_writepage")]
    pub writepage_ns: u64,
    /// clone(CLONE_VM | CLONE_THREAD): one pthread_create, parent side.
    #[serde(default = "d_clone")]
    pub clone_ns: u64,
}
fn d_clone() -> u64 {
    25000
}
fn d_syscall() -> u64 {
    300
}
fn d_copy() -> u64 {
    250
}
fn d_page_cache() -> u64 {
    400
}
fn d_scan_page() -> u64 {
    150
}
fn d_inode() -> u64 {
    20000
}
fn d_writepage() -> u64 {
    1500
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Era {
    #[serde(rename = "2.6.18")]
    V2618,
    #[serde(rename = "3.0")]
    V30,
    #[serde(rename = "3.1")]
    V31,
    #[serde(rename = "4.11")]
    V411,
}

impl Era {
    pub fn name(self) -> &'static str {
        match self {
            Era::V2618 => "2.6.18",
            Era::V30 => "3.0",
            Era::V31 => "3.1",
            Era::V411 => "4.11",
        }
    }
    /// Migrate types and pageblocks exist from 2.6.24 on.
    pub fn has_migratetypes(self) -> bool {
        !matches!(self, Era::V2618)
    }
    /// Generic RECLAIM_DISTANCE of the era (include/linux/topology.h).
    pub fn reclaim_distance(self) -> u32 {
        match self {
            Era::V2618 => 20,
            _ => 30,
        }
    }
}

/// Which form of the zonelist cache get_page_from_freelist uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Zlc {
    /// No zonelist cache (before 2.6.20, and after 4.4).
    #[serde(rename = "none")]
    None,
    /// Paul Jackson's 2006 form: set up after the first zone is tried; any
    /// watermark or zone_reclaim failure marks the zone full.
    #[serde(rename = "after-first-zone")]
    AfterFirstZone,
    /// zlcfirst (3.1): set up before the first zone that fails its
    /// watermark; checked before zone_reclaim; a zone is only marked full
    /// when zone_reclaim scanned and the watermark still fails.
    #[serde(rename = "first-eligible")]
    FirstEligible,
}

/// The slab allocator a kernel was configured with (CONFIG_SLAB or
/// CONFIG_SLUB), as far as the page allocator sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum SlabAllocator {
    /// mm/slub.c (the Kconfig default from 2.6.23): a new slab page is
    /// allocated on the task's node with the ordinary fallback
    /// (alloc_pages: zonelist cache, kswapd wakeup, direct reclaim).
    #[default]
    #[serde(rename = "slub")]
    Slub,
    /// mm/slab.c: cache_alloc_refill and ____cache_alloc_node grow the cache
    /// on the task's node only (GFP_THISNODE: the node's zones alone, no
    /// zonelist cache, zone_reclaim allowed, no kswapd and no direct
    /// reclaim); fallback_alloc then takes an object from another node's
    /// lists, or a page through the full allocator, kept on the list of the
    /// node it came from.
    #[serde(rename = "slab")]
    Slab,
}

/// Where a new anonymous page starts, and what a reference does to it on
/// the inactive list: 5.9's "mm/vmscan: protect the workingset on
/// anonymous LRU" changed both at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum NewAnonLru {
    /// To 5.8: do_anonymous_page adds it to the active list
    /// (lru_cache_add_active_or_unevictable from 3.16, inside
    /// page_add_new_anon_rmap before), and page_check_references
    /// activates a referenced anonymous page at once.
    #[default]
    #[serde(rename = "active")]
    Active,
    /// 5.9 on: the inactive list (lru_cache_add_inactive_or_unevictable),
    /// and a referenced anonymous page is treated as a file one: marked
    /// referenced and kept for another trip, activated when met referenced
    /// again.
    #[serde(rename = "inactive")]
    Inactive,
}

/// How the per-cpu page lists are sized (zone_batchsize, and pcp->high).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum PcpSizing {
    /// 2.6.16 to 5.13: batch = about a quarter of 0.1% of the zone, at most
    /// 512 KiB / 4, rounded to 2^n - 1; high = 6 x batch.
    #[default]
    #[serde(rename = "6x-batch")]
    SixBatch,
    /// 5.14 on ("mm/page_alloc: calculate pcp->high based on zone sizes and
    /// active CPUs"): batch capped at 1 MiB / 4 instead; high = the zone's
    /// low watermark split over the CPUs of its node (all CPUs for a node
    /// without any), at least 4 x batch.
    #[serde(rename = "zone-low")]
    ZoneLow,
}

/// How kswapd decides that a node is balanced, and how it raises its
/// scanning priority (balance_pgdat, prepare_kswapd_sleep, wakeup_kswapd).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum KswapdBalance {
    /// 3.0 and 3.1: every zone up to the one that failed must meet its high
    /// mark (a quarter of the node's pages for a high order); a pass that
    /// reclaims a batch restarts at DEF_PRIORITY; woken when the zone an
    /// allocation failed in is below its low mark.
    #[default]
    #[serde(rename = "per-zone")]
    PerZone,
    /// 4.12 on ("mm, vmscan: fix zone balance check in prepare_kswapd_sleep"
    /// and the node-based balance_pgdat of 4.8; 6.1's pgdat_balanced): the
    /// node is balanced when any zone up to the classzone meets its high
    /// mark, for reclaim, for sleeping and for waking alike; each pass
    /// reclaims the zones up to the classzone, aiming at their high marks,
    /// and the priority rises only when a pass scanned fewer pages than
    /// that or reclaimed none; no restarts; a node where a whole balance
    /// reclaims nothing sixteen times is left to direct reclaim.
    #[serde(rename = "node-any-zone")]
    NodeAnyZone,
}

/// When kswapd may write a dirty file page from the end of the LRU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum KswapdFsWriteback {
    /// 3.0: whenever pageout's other conditions allow.
    #[default]
    #[serde(rename = "always")]
    Always,
    /// Patch 5/8: only at priority DEF_PRIORITY - 3 or below ("kswapd in trouble").
    #[serde(rename = "high-priority")]
    HighPriority,
    /// Patch 8/8: never; the flusher threads clean every file page.
    #[serde(rename = "never")]
    Never,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    pub name: String,
    pub era: Era,
    pub zlc: Zlc,
    #[serde(default)]
    pub zlc_reconsider: bool,
    #[serde(default)]
    pub min_free_kbytes: Option<u64>,
    /// The ceiling of the boot-time min_free_kbytes (init_per_zone_wmark_min,
    /// calculate_min_free_kbytes): 65536 KiB to 5.6, 262144 from 5.7
    /// ("mm/page_alloc: increase default min_free_kbytes bound").
    #[serde(default = "d65536")]
    pub min_free_kbytes_max: u64,
    #[serde(default)]
    pub zone_reclaim_mode: Option<u32>,
    #[serde(default)]
    pub lowmem_reserve_ratio: Option<Vec<u64>>,
    #[serde(default = "default_true")]
    pub percpu_pagelists: bool,
    #[serde(default)]
    pub pcp_sizing: PcpSizing,
    /// The list a new anonymous page joins, and whether one reference
    /// activates it (5.9 changed both).
    #[serde(default)]
    pub new_anon_lru: NewAnonLru,
    /// Which slab allocator the kernel was built with (mm/slab.c or
    /// mm/slub.c): where a cache's new pages come from (slab.rs).
    #[serde(default)]
    pub slab_allocator: SlabAllocator,
    /// Writeback from reclaim (seed 004's series, "Reduce filesystem
    /// writeback from page reclaim v2"). Patch 1: false = direct reclaim
    /// never writes a file page (anonymous pages are still written).
    #[serde(default = "default_true")]
    pub direct_fs_writeback: bool,
    /// Patch 5 ("high-priority": kswapd writes file pages only below
    /// DEF_PRIORITY - 2) and patch 8 ("never").
    #[serde(default)]
    pub kswapd_fs_writeback: KswapdFsWriteback,
    /// kswapd's balance rules: 3.x's per zone, or 4.12+'s per node.
    #[serde(default)]
    pub kswapd_balance: KswapdBalance,
    /// Patch 6: after putback, wait_iff_congested when the pages met dirty
    /// reach nr_taken >> (DEF_PRIORITY - priority).
    #[serde(default)]
    pub reclaim_throttle_dirty: bool,
    /// Patch 7: a dirty file page reclaim skips is marked PG_reclaim
    /// (nr_vmscan_invalidate), so it is rotated to the inactive tail and
    /// reclaimed as soon as its writeback ends.
    #[serde(default)]
    pub reclaim_invalidate: bool,
    #[serde(default = "d20")]
    pub dirty_ratio: u64,
    #[serde(default = "d10")]
    pub dirty_background_ratio: u64,
    #[serde(default)]
    pub dirty_bytes: u64,
    #[serde(default)]
    pub dirty_background_bytes: u64,
    #[serde(default = "d3000")]
    pub dirty_expire_centisecs: u64,
    #[serde(default = "d500")]
    pub dirty_writeback_centisecs: u64,
    #[serde(default = "d60")]
    pub swappiness: u64,
    #[serde(default = "d1")]
    pub min_unmapped_ratio: u64,
    #[serde(default = "d5")]
    pub min_slab_ratio: u64,
    #[serde(default = "d100")]
    pub vfs_cache_pressure: u64,
    /// vm.watermark_boost_factor (5.0 on; 15000 in 6.1, units of 1/10000
    /// of the high watermark): how far a fragmenting fallback may raise a
    /// zone's watermarks (boost_watermark) and so wake kswapd early for a
    /// short, boosted reclaim. 0, the default, is a kernel without it
    /// (every era before 5.0) or the sysctl set to 0.
    #[serde(default)]
    pub watermark_boost_factor: u64,
}
fn d1() -> u64 {
    1
}
fn d65536() -> u64 {
    65536
}
fn d5() -> u64 {
    5
}
fn d10() -> u64 {
    10
}
fn d20() -> u64 {
    20
}
fn d60() -> u64 {
    60
}
fn d100() -> u64 {
    100
}
fn d500() -> u64 {
    500
}
fn d3000() -> u64 {
    3000
}

fn default_true() -> bool {
    true
}

/// The workload, by kind (docs/engine-api.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum WorkloadSpec {
    Memhog(MemhogSpec),
    Fsmark(FsmarkSpec),
    Largedd(LargeddSpec),
    Mmapstream(MmapstreamSpec),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemhogSpec {
    pub bytes: u64,
    pub threads: u32,
    #[serde(default = "default_stride")]
    pub stride: u64,
    /// Passes over the memory (usemem -r): the first faults pages in, the
    /// next ones touch them again (and fault them back in from swap).
    #[serde(default = "d1u32")]
    pub passes: u32,
    #[serde(default)]
    pub cpus: Option<Vec<u32>>,
    #[serde(default)]
    pub mems_allowed: Option<Vec<u32>>,
}

fn default_stride() -> u64 {
    4096
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsmarkSpec {
    pub threads: u32,
    #[serde(default)]
    pub cpus: Option<Vec<u32>>,
    #[serde(default)]
    pub mems_allowed: Option<Vec<u32>>,
    pub dirs: u32,
    pub subdirs: u32,
    pub files_per_subdir: u32,
    pub files: u32,
    pub iterations: u32,
    pub file_bytes: u64,
    #[serde(default = "d16k")]
    pub write_bytes: u64,
    #[serde(default)]
    pub sync_method: u32,
}
fn d16k() -> u64 {
    16384
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LargeddSpec {
    #[serde(default)]
    pub cpus: Option<Vec<u32>>,
    #[serde(default)]
    pub mems_allowed: Option<Vec<u32>>,
    pub tar_bytes: u64,
    pub copies: u32,
    #[serde(default = "d1m")]
    pub dd_bytes: u64,
    #[serde(default = "d1u32")]
    pub threads: u32,
    pub download_mib_s: u32,
}
fn d1m() -> u64 {
    1 << 20
}
fn d1u32() -> u32 {
    1
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MmapstreamSpec {
    #[serde(default)]
    pub cpus: Option<Vec<u32>>,
    #[serde(default)]
    pub mems_allowed: Option<Vec<u32>>,
    pub bytes: u64,
    #[serde(default = "d1u32")]
    pub threads: u32,
    /// Stage 2 (vmscan-mixed-mmap-write): bytes of file and anonymous
    /// mappings in all (MICRO_VMSCAN_MIXED_MMAPREAD_SIZE); 0: no stage 2.
    #[serde(default)]
    pub mixed_bytes: u64,
    /// Processes of each kind in stage 2 (MICRO_VMSCAN_MIXED_MMAP_NUM_THREADS).
    #[serde(default = "d1u32")]
    pub mixed_threads: u32,
    /// Percent of `mixed_bytes` that is anonymous (MICRO_VMSCAN_MIXED_ANON_PERCENTAGE).
    #[serde(default = "d30u32")]
    pub mixed_anon_percent: u32,
    /// Passes of the anonymous processes; the file ones make twice as many
    /// (MICRO_VMSCAN_MIXED_MMAPREAD_ITER).
    #[serde(default = "d5u32")]
    pub mixed_iter: u32,
}

fn d30u32() -> u32 {
    30
}

fn d5u32() -> u32 {
    5
}

impl WorkloadSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            WorkloadSpec::Memhog(_) => "memhog",
            WorkloadSpec::Fsmark(_) => "fsmark",
            WorkloadSpec::Largedd(_) => "largedd",
            WorkloadSpec::Mmapstream(_) => "mmapstream",
        }
    }
    pub fn cpus(&self) -> Option<&Vec<u32>> {
        match self {
            WorkloadSpec::Memhog(w) => w.cpus.as_ref(),
            WorkloadSpec::Fsmark(w) => w.cpus.as_ref(),
            WorkloadSpec::Largedd(w) => w.cpus.as_ref(),
            WorkloadSpec::Mmapstream(w) => w.cpus.as_ref(),
        }
    }
    pub fn mems_allowed(&self) -> Option<&Vec<u32>> {
        match self {
            WorkloadSpec::Memhog(w) => w.mems_allowed.as_ref(),
            WorkloadSpec::Fsmark(w) => w.mems_allowed.as_ref(),
            WorkloadSpec::Largedd(w) => w.mems_allowed.as_ref(),
            WorkloadSpec::Mmapstream(w) => w.mems_allowed.as_ref(),
        }
    }
    /// Processes that take page faults, at most (each has an mm_struct
    /// whose lines the cache model keeps).
    pub fn faulting_processes(&self) -> u64 {
        match self {
            WorkloadSpec::Memhog(_) => 1,
            WorkloadSpec::Mmapstream(w) => w.threads as u64 + 2 * w.mixed_threads as u64,
            WorkloadSpec::Fsmark(_) | WorkloadSpec::Largedd(_) => 0,
        }
    }

    pub fn needs_storage(&self) -> bool {
        !matches!(self, WorkloadSpec::Memhog(_))
    }
}

/// Parse and validate a JSON specification.
pub fn parse(json: &str) -> Result<Spec, SpecError> {
    let spec: Spec = serde_json::from_str(json).map_err(|e| SpecError::new("spec", e.to_string()))?;
    spec.validate()?;
    Ok(spec)
}

impl Spec {
    pub fn total_cpus(&self) -> u32 {
        self.machine.nodes.iter().map(|n| n.cpus).sum()
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        let m = &self.machine;
        if !m.page_size.is_power_of_two() || !(4096..=65536).contains(&m.page_size) {
            return Err(SpecError::new(
                "machine.page_size",
                format!("{} is not allowed; a power of two from 4096 to 65536", m.page_size),
            ));
        }
        if !m.cache_line.is_power_of_two() || !(16..=4096).contains(&m.cache_line) {
            return Err(SpecError::new(
                "machine.cache_line",
                format!("{} is not allowed; a power of two from 16 to 4096", m.cache_line),
            ));
        }
        if m.cache_kib > 1 << 30 {
            return Err(SpecError::new("machine.cache_kib", format!("{} is not allowed; 0 (unbounded) to 1073741824 KiB", m.cache_kib)));
        }
        if m.link_mb_s > 10_000_000 {
            return Err(SpecError::new("machine.link_mb_s", format!("{} is not allowed; 0 (unlimited) to 10000000 MB/s", m.link_mb_s)));
        }
        if !(1..=10000).contains(&m.hz) {
            return Err(SpecError::new("machine.hz", format!("{} is not allowed; 1 to 10000", m.hz)));
        }
        if !(2..=20).contains(&m.max_order) {
            return Err(SpecError::new(
                "machine.max_order",
                format!("{} is not allowed; 2 to 20", m.max_order),
            ));
        }
        if m.pageblock_order >= m.max_order {
            return Err(SpecError::new(
                "machine.pageblock_order",
                format!("{} is not allowed; 0 to max_order-1 = {}", m.pageblock_order, m.max_order - 1),
            ));
        }
        let n = m.nodes.len();
        if n == 0 || n > MAX_NODES {
            return Err(SpecError::new(
                "machine.nodes",
                format!("{} nodes is not allowed; 1 to {}", n, MAX_NODES),
            ));
        }
        let cpus = self.total_cpus();
        if cpus == 0 || cpus as usize > MAX_CPUS {
            return Err(SpecError::new(
                "machine.nodes[].cpus",
                format!("{} CPUs in total is not allowed; 1 to {}", cpus, MAX_CPUS),
            ));
        }
        let mut total_pages: u64 = 0;
        for (i, node) in m.nodes.iter().enumerate() {
            if node.zones.is_empty() {
                return Err(SpecError::new(
                    format!("machine.nodes[{i}].zones"),
                    "empty; a node needs at least one zone",
                ));
            }
            let mut last: Option<usize> = None;
            let mut node_pages = 0u64;
            for (j, z) in node.zones.iter().enumerate() {
                let idx = ZONE_NAMES.iter().position(|&s| s == z.name).ok_or_else(|| {
                    SpecError::new(
                        format!("machine.nodes[{i}].zones[{j}].name"),
                        format!("'{}' is not a zone; allowed: {}", z.name, ZONE_NAMES.join(", ")),
                    )
                })?;
                if let Some(l) = last {
                    if idx <= l {
                        return Err(SpecError::new(
                            format!("machine.nodes[{i}].zones[{j}].name"),
                            format!("'{}' out of order; zones go low to high: {}", z.name, ZONE_NAMES.join(", ")),
                        ));
                    }
                }
                last = Some(idx);
                node_pages += z.present_pages;
            }
            if node.reserved_pages > node_pages {
                return Err(SpecError::new(
                    format!("machine.nodes[{i}].reserved_pages"),
                    format!("{} exceeds the node's {} pages", node.reserved_pages, node_pages),
                ));
            }
            total_pages += node_pages;
        }
        if total_pages == 0 {
            return Err(SpecError::new("machine.nodes", "the machine has no memory"));
        }
        if total_pages > MAX_PAGES {
            return Err(SpecError::new(
                "machine.nodes",
                format!("{} pages in total; at most {} are supported (about 28 bytes of state a page)", total_pages, MAX_PAGES),
            ));
        }
        if m.distance.len() != n {
            return Err(SpecError::new(
                "machine.distance",
                format!("{} rows, expected {} (one per node)", m.distance.len(), n),
            ));
        }
        for (i, row) in m.distance.iter().enumerate() {
            if row.len() != n {
                return Err(SpecError::new(
                    format!("machine.distance[{i}]"),
                    format!("row has {} entries, expected {} (one per node)", row.len(), n),
                ));
            }
            for (j, &d) in row.iter().enumerate() {
                if i == j && d != 10 {
                    return Err(SpecError::new(
                        format!("machine.distance[{i}][{j}]"),
                        format!("{d} on the diagonal; the local distance is 10"),
                    ));
                }
                // numa=fake nodes of one physical node are all at 10.
                if i != j && !(10..=255).contains(&d) {
                    return Err(SpecError::new(
                        format!("machine.distance[{i}][{j}]"),
                        format!("{d} is not allowed; distances between nodes are 10 to 255"),
                    ));
                }
            }
        }
        let c = &m.cost;
        for (name, v) in [
            ("fault_ns", c.fault_ns),
            ("clear_ns_per_kib", c.clear_ns_per_kib),
            ("clear_remote_ns_per_kib", c.clear_remote_ns_per_kib),
            ("line_miss_ns", c.line_miss_ns),
            ("line_hit_ns", c.line_hit_ns),
            ("buddy_page_ns", c.buddy_page_ns),
            ("user_store_ns", c.user_store_ns),
            ("syscall_ns", c.syscall_ns),
            ("copy_ns_per_kib", c.copy_ns_per_kib),
            ("page_cache_ns", c.page_cache_ns),
            ("scan_page_ns", c.scan_page_ns),
            ("inode_ns", c.inode_ns),
            ("writepage_ns", c.writepage_ns),
        ] {
            if v > 1_000_000_000 {
                return Err(SpecError::new(
                    format!("machine.cost.{name}"),
                    format!("{v} is not allowed; 0 to 1000000000 ns"),
                ));
            }
        }
        let k = &self.kernel;
        if let Some(mfk) = k.min_free_kbytes {
            if !(1..=(1 << 32)).contains(&mfk) {
                return Err(SpecError::new(
                    "kernel.min_free_kbytes",
                    format!("{mfk} is not allowed; 1 to 4294967296 or null for the boot-time value"),
                ));
            }
        }
        if let Some(z) = k.zone_reclaim_mode {
            if z > 7 {
                return Err(SpecError::new(
                    "kernel.zone_reclaim_mode",
                    format!("{z} is not allowed; 0 to 7 (bits RECLAIM_ZONE|RECLAIM_WRITE|RECLAIM_SWAP)"),
                ));
            }
        }
        if let Some(r) = &k.lowmem_reserve_ratio {
            if r.len() != ZONE_NAMES.len() - 1 || r.contains(&0) {
                return Err(SpecError::new(
                    "kernel.lowmem_reserve_ratio",
                    format!(
                        "{:?} is not allowed; {} positive ratios, one per zone type below MOVABLE",
                        r,
                        ZONE_NAMES.len() - 1
                    ),
                ));
            }
        }
        if k.zlc != Zlc::None && k.era == Era::V411 {
            return Err(SpecError::new(
                "kernel.zlc",
                "the zonelist cache was removed in 4.4; era 4.11 allows only \"none\"",
            ));
        }
        if k.zlc_reconsider && k.zlc == Zlc::None {
            return Err(SpecError::new(
                "kernel.zlc_reconsider",
                "true needs a zonelist cache; kernel.zlc is \"none\"",
            ));
        }
        self.validate_storage_and_sysctls()?;
        let w = &self.workload;
        if let WorkloadSpec::Memhog(w) = w {
        if w.threads == 0 || w.threads > cpus {
            return Err(SpecError::new(
                "workload.threads",
                format!("{} is not allowed; 1 to {} (one thread per CPU)", w.threads, cpus),
            ));
        }
        if w.bytes == 0 {
            return Err(SpecError::new("workload.bytes", "0 is not allowed; a positive byte count"));
        }
        if w.bytes.div_ceil(m.page_size) > MAX_PAGES {
            return Err(SpecError::new(
                "workload.bytes",
                format!("{} is not allowed; at most {} pages of memory ({} bytes)", w.bytes, MAX_PAGES, MAX_PAGES * m.page_size),
            ));
        }
        if w.passes == 0 || w.passes > 1000 {
            return Err(SpecError::new("workload.passes", format!("{} is not allowed; 1 to 1000 passes over the memory", w.passes)));
        }
        if w.stride == 0 || w.stride > m.page_size || !m.page_size.is_multiple_of(w.stride) {
            return Err(SpecError::new(
                "workload.stride",
                format!("{} is not allowed; a divisor of the page size {}", w.stride, m.page_size),
            ));
        }
        if let Some(list) = &w.cpus {
            if list.len() != w.threads as usize {
                return Err(SpecError::new(
                    "workload.cpus",
                    format!("{} CPUs listed for {} threads; one per thread", list.len(), w.threads),
                ));
            }
            let mut seen = vec![false; cpus as usize];
            for (i, &c) in list.iter().enumerate() {
                if c >= cpus {
                    return Err(SpecError::new(
                        format!("workload.cpus[{i}]"),
                        format!("CPU {c} does not exist; 0 to {}", cpus - 1),
                    ));
                }
                if seen[c as usize] {
                    return Err(SpecError::new(
                        format!("workload.cpus[{i}]"),
                        format!("CPU {c} listed twice; threads are pinned one per CPU"),
                    ));
                }
                seen[c as usize] = true;
            }
        }
        } else {
            self.validate_file_workload()?;
        }
        if let Some(list) = w.cpus() {
            if list.is_empty() {
                return Err(SpecError::new("workload.cpus", "empty; list at least one CPU or give null"));
            }
            for (i, &c) in list.iter().enumerate() {
                if c >= cpus {
                    return Err(SpecError::new(format!("workload.cpus[{i}]"), format!("CPU {c} does not exist; 0 to {}", cpus - 1)));
                }
            }
        }
        if let Some(list) = w.mems_allowed() {
            if list.is_empty() {
                return Err(SpecError::new("workload.mems_allowed", "empty; list at least one node"));
            }
            for (i, &nd) in list.iter().enumerate() {
                if nd as usize >= n {
                    return Err(SpecError::new(
                        format!("workload.mems_allowed[{i}]"),
                        format!("node {nd} does not exist; 0 to {}", n - 1),
                    ));
                }
            }
        }
        if self.sample_ms == 0 || self.sample_ms > 3_600_000 {
            return Err(SpecError::new("sample_ms", format!("{} is not allowed; 1 to 3600000 simulated ms", self.sample_ms)));
        }
        self.validate_snapshots()?;
        let cache = self.cache_model_bytes();
        if cache > CACHE_MODEL_BUDGET {
            return Err(SpecError::new(
                "machine.nodes",
                format!(
                    "{} CPUs x {} cache lines take {} MiB of cache-model state; at most {} MiB (fewer CPUs, nodes or zones)",
                    cpus,
                    self.cache_lines_bound(),
                    cache >> 20,
                    CACHE_MODEL_BUDGET >> 20
                ),
            ));
        }
        Ok(())
    }

    /// Upper bound of one snapshot's memory (docs/engine-api.md, "Snapshots"):
    /// 8 x (NR_EV + 6 x NR_ZEV + 64 + zones x (4 x max_order + 64 + cpus)) bytes.
    /// An upper bound on the cache lines the cache model tracks (mm.rs `Mm::boot`): five per zone,
    /// one per node, the global vm_stat line, two per faulting process (its mm_struct), one per
    /// CPU per zone (the per-cpu pagesets), and per node five zonelists of
    /// `cache_line / 8` zone pointers a line with as many zonelist caches (a bitmap line, a last-zap
    /// line and `cache_line / 2` zone-to-node entries a line), `zones` the populated zones.
    pub fn cache_lines_bound(&self) -> u64 {
        let m = &self.machine;
        let zones = m.nodes.iter().map(|n| n.zones.iter().filter(|z| z.present_pages > 0).count() as u64).sum::<u64>();
        let nodes = m.nodes.len() as u64;
        let cpus = self.total_cpus() as u64;
        let zonelist = zones.div_ceil((m.cache_line / 8).max(1)).max(1);
        let zlc = 2 + zones.div_ceil((m.cache_line / 2).max(1)).max(1);
        5 * zones + nodes + 1 + cpus * zones + 5 * nodes * (zonelist + zlc) + 2 * self.workload.faulting_processes()
    }

    /// The cache model's bytes at most: per line its home, owner, sharer
    /// set, a stream position per CPU and its recent transactions
    /// (`CacheModel::bytes_per_line`).
    pub fn cache_model_bytes(&self) -> u64 {
        crate::cost::CacheModel::bytes_per_line(self.total_cpus() as u64) * self.cache_lines_bound()
    }

    pub fn snapshot_bytes(&self) -> u64 {
        let m = &self.machine;
        let zones = m.nodes.iter().map(|n| n.zones.iter().filter(|z| z.present_pages > 0).count() as u64).sum::<u64>();
        let cpus = self.total_cpus() as u64;
        let per_zone = 4 * m.max_order as u64 + 64 + cpus;
        // Per device 4 words and 16 per member disk (snapshot.rs DevSnap).
        let (devs, disks) = m.storage.as_ref().map_or((0, 0), |st| (st.devices.len() as u64, st.devices.iter().map(|d| u64::from(d.disks)).sum::<u64>()));
        8 * (crate::vmstat::NR_EV as u64 + 6 * crate::vmstat::NR_ZEV as u64 + 64 + zones * per_zone + 4 * devs + 16 * disks)
    }

    fn validate_snapshots(&self) -> Result<(), SpecError> {
        let Some(sn) = &self.snapshots else { return Ok(()) };
        if sn.at_ms.len() > MAX_SNAPSHOTS_AT {
            return Err(SpecError::new("snapshots.at_ms", format!("{} times is not allowed; at most {MAX_SNAPSHOTS_AT}", sn.at_ms.len())));
        }
        for (i, &t) in sn.at_ms.iter().enumerate() {
            if t > MAX_SNAPSHOT_MS {
                return Err(SpecError::new(format!("snapshots.at_ms[{i}]"), format!("{t} is not allowed; 0 to {MAX_SNAPSHOT_MS} simulated ms")));
            }
            if i > 0 && t <= sn.at_ms[i - 1] {
                return Err(SpecError::new(
                    format!("snapshots.at_ms[{i}]"),
                    format!("{t} is not after {}; the times must be strictly increasing", sn.at_ms[i - 1]),
                ));
            }
        }
        if let Some(e) = sn.every_ms {
            if e == 0 || e > MAX_SNAPSHOT_MS {
                return Err(SpecError::new("snapshots.every_ms", format!("{e} is not allowed; 1 to {MAX_SNAPSHOT_MS} simulated ms, or null")));
            }
        }
        if sn.max_periodic == 0 || sn.max_periodic > MAX_PERIODIC {
            return Err(SpecError::new("snapshots.max_periodic", format!("{} is not allowed; 1 to {MAX_PERIODIC}", sn.max_periodic)));
        }
        let each = self.snapshot_bytes();
        let periodic = if sn.every_ms.is_some() { sn.max_periodic as u64 } else { 0 };
        let count = sn.at_ms.len() as u64 + periodic + 2;
        if count * each > SNAPSHOT_BUDGET {
            let room = (SNAPSHOT_BUDGET / each).saturating_sub(2);
            let (field, value, allowed) = if periodic > 0 {
                ("snapshots.max_periodic", periodic, room.saturating_sub(sn.at_ms.len() as u64))
            } else {
                ("snapshots.at_ms", sn.at_ms.len() as u64, room)
            };
            return Err(SpecError::new(
                field,
                format!(
                    "{value} is too many on this machine; at most {allowed} (a snapshot takes up to {each} bytes, {} MiB for all of a run's)",
                    SNAPSHOT_BUDGET >> 20
                ),
            ));
        }
        Ok(())
    }
}

impl Spec {
    fn validate_storage_and_sysctls(&self) -> Result<(), SpecError> {
        let k = &self.kernel;
        for (name, v, max) in [
            ("dirty_ratio", k.dirty_ratio, 100),
            ("dirty_background_ratio", k.dirty_background_ratio, 100),
            ("swappiness", k.swappiness, 100),
            ("min_unmapped_ratio", k.min_unmapped_ratio, 100),
            ("min_slab_ratio", k.min_slab_ratio, 100),
            ("vfs_cache_pressure", k.vfs_cache_pressure, 100_000),
            ("watermark_boost_factor", k.watermark_boost_factor, 2_147_483_647),
            ("dirty_expire_centisecs", k.dirty_expire_centisecs, 360_000_000),
            ("dirty_writeback_centisecs", k.dirty_writeback_centisecs, 360_000_000),
        ] {
            if v > max {
                return Err(SpecError::new(format!("kernel.{name}"), format!("{v} is not allowed; 0 to {max}")));
            }
        }
        if k.min_free_kbytes_max != 65536 && k.min_free_kbytes_max != 262_144 {
            return Err(SpecError::new(
                "kernel.min_free_kbytes_max",
                format!("{} is not allowed; 65536 (to 5.6) or 262144 (5.7 on)", k.min_free_kbytes_max),
            ));
        }
        if k.watermark_boost_factor > 0 && (!k.era.has_migratetypes() || k.kswapd_balance != KswapdBalance::NodeAnyZone) {
            return Err(SpecError::new(
                "kernel.watermark_boost_factor",
                format!(
                    "{} is not allowed with era {} and kswapd_balance \"{}\"; the boost (5.0) needs migrate types and the node balance of 4.12 on (\"node-any-zone\"): 0 otherwise",
                    k.watermark_boost_factor,
                    k.era.name(),
                    if k.kswapd_balance == KswapdBalance::NodeAnyZone { "node-any-zone" } else { "per-zone" }
                ),
            ));
        }
        if k.dirty_writeback_centisecs == 0 {
            return Err(SpecError::new(
                "kernel.dirty_writeback_centisecs",
                "0 (periodic writeback off) is not simulated; 1 to 360000000",
            ));
        }
        if let Some(st) = &self.machine.storage {
            if st.devices.is_empty() || st.devices.len() > MAX_DEVICES {
                return Err(SpecError::new("machine.storage.devices", format!("{} devices is not allowed; 1 to {MAX_DEVICES}", st.devices.len())));
            }
            for (i, d) in st.devices.iter().enumerate() {
                let f = |x: &str| format!("machine.storage.devices[{i}].{x}");
                if !(1..=64).contains(&d.disks) {
                    return Err(SpecError::new(f("disks"), format!("{} is not allowed; a RAID-0 of 1 to 64 disks", d.disks)));
                }
                if d.bandwidth_mib_s == 0 || d.bandwidth_mib_s > 1_000_000 {
                    return Err(SpecError::new(f("bandwidth_mib_s"), format!("{} is not allowed; 1 to 1000000", d.bandwidth_mib_s)));
                }
                if d.rpm != 0 && !(1000..=30_000).contains(&d.rpm) {
                    return Err(SpecError::new(f("rpm"), format!("{} is not allowed; 0 (flat access_us) or 1000 to 30000", d.rpm)));
                }
                if d.rpm != 0 && !(1..=1_000_000).contains(&d.track_seek_us) {
                    return Err(SpecError::new(f("track_seek_us"), format!("{} is not allowed; 1 to 1000000 with rpm set", d.track_seek_us)));
                }
                if d.rpm != 0 && !(d.track_seek_us..=1_000_000).contains(&d.full_seek_us) {
                    return Err(SpecError::new(
                        f("full_seek_us"),
                        format!("{} is not allowed; track_seek_us ({}) to 1000000 with rpm set", d.full_seek_us, d.track_seek_us),
                    ));
                }
                if !(4..=100_000).contains(&d.nr_requests) {
                    return Err(SpecError::new(f("nr_requests"), format!("{} is not allowed; 4 to 100000", d.nr_requests)));
                }
                let page_kib = (self.machine.page_size / 1024) as u32;
                if d.max_sectors_kib < page_kib || d.max_sectors_kib > 65536 {
                    return Err(SpecError::new(f("max_sectors_kib"), format!("{} is not allowed; {} to 65536", d.max_sectors_kib, page_kib)));
                }
                if d.disks > 1 && (d.chunk_kib < page_kib || !d.chunk_kib.is_power_of_two()) {
                    return Err(SpecError::new(f("chunk_kib"), format!("{} is not allowed; a power of two >= {}", d.chunk_kib, page_kib)));
                }
                if !(1..=256).contains(&d.queue_depth) {
                    return Err(SpecError::new(f("queue_depth"), format!("{} is not allowed; 1 to 256", d.queue_depth)));
                }
                if d.size_mib == 0 || d.size_mib > (1 << 32) {
                    return Err(SpecError::new(f("size_mib"), format!("{} is not allowed; 1 to 4294967296", d.size_mib)));
                }
            }
            let slots: u64 = st.devices.iter().map(|d| request_slots_bytes(d, self.machine.page_size)).sum();
            if slots > REQUEST_SLOTS_BUDGET {
                return Err(SpecError::new(
                    "machine.storage.devices",
                    format!(
                        "their request queues take {} MiB (3 x nr_requests slots a disk of max_sectors_kib each); at most {} MiB (smaller nr_requests or max_sectors_kib)",
                        slots >> 20,
                        REQUEST_SLOTS_BUDGET >> 20
                    ),
                ));
            }
            let fs = &st.fs;
            let Some(dev) = st.devices.get(fs.device as usize) else {
                return Err(SpecError::new("machine.storage.fs.device", format!("{} does not exist; 0 to {}", fs.device, st.devices.len() - 1)));
            };
            if fs.size_mib == 0 || fs.size_mib > dev.size_mib * dev.disks as u64 {
                return Err(SpecError::new(
                    "machine.storage.fs.size_mib",
                    format!("{} is not allowed; 1 to the device's {} MiB", fs.size_mib, dev.size_mib * dev.disks as u64),
                ));
            }
            if fs.journal == Some(true) && fs.kind != FsKind::Ext4 {
                let kind = if fs.kind == FsKind::Xfs { "xfs" } else { "ext3" };
                return Err(SpecError::new(
                    "machine.storage.fs.journal",
                    format!("true is not allowed with kind {kind:?}; the engine models ext4's jbd2 journal only (false, or leave it out)"),
                ));
            }
            if !(1..=300).contains(&fs.commit_s) {
                return Err(SpecError::new("machine.storage.fs.commit_s", format!("{} is not allowed; 1 to 300 seconds", fs.commit_s)));
            }
            if let Some(sw) = &st.swap {
                let Some(dev) = st.devices.get(sw.device as usize) else {
                    return Err(SpecError::new("machine.storage.swap.device", format!("{} does not exist; 0 to {}", sw.device, st.devices.len() - 1)));
                };
                let room = dev.size_mib * dev.disks as u64 - if sw.device == fs.device { fs.size_mib } else { 0 };
                let slots = sw.size_mib * ((1u64 << 20) / self.machine.page_size);
                if slots > MAX_PAGES {
                    return Err(SpecError::new(
                        "machine.storage.swap.size_mib",
                        format!("{} is not allowed; at most {} slots of a page each ({} MiB)", sw.size_mib, MAX_PAGES, MAX_PAGES * self.machine.page_size >> 20),
                    ));
                }
                if sw.size_mib == 0 || sw.size_mib > room {
                    return Err(SpecError::new(
                        "machine.storage.swap.size_mib",
                        format!("{} is not allowed; 1 to the {} MiB its device has free", sw.size_mib, room),
                    ));
                }
            }
        }
        Ok(())
    }

    fn validate_file_workload(&self) -> Result<(), SpecError> {
        let m = &self.machine;
        let Some(st) = &m.storage else {
            return Err(SpecError::new(
                "machine.storage",
                format!("missing; workload '{}' needs a block device and a filesystem", self.workload.kind()),
            ));
        };
        let fs_bytes = st.fs.size_mib << 20;
        let mem_bytes: u64 = m.nodes.iter().flat_map(|n| n.zones.iter()).map(|z| z.present_pages).sum::<u64>() * m.page_size;
        match &self.workload {
            WorkloadSpec::Fsmark(w) => {
                if w.threads == 0 || w.threads > 64 {
                    return Err(SpecError::new("workload.threads", format!("{} is not allowed; 1 to 64 (fs_mark's limit)", w.threads)));
                }
                if w.dirs == 0 || w.threads % w.dirs != 0 {
                    return Err(SpecError::new("workload.dirs", format!("{} is not allowed; threads ({}) must be a multiple of it", w.dirs, w.threads)));
                }
                if w.subdirs < 2 {
                    return Err(SpecError::new("workload.subdirs", format!("{} is not allowed; fs_mark -D needs at least 2", w.subdirs)));
                }
                if w.files == 0 || w.files > 1_000_000 {
                    return Err(SpecError::new("workload.files", format!("{} is not allowed; 1 to 1000000 files per thread", w.files)));
                }
                if w.files_per_subdir == 0 {
                    return Err(SpecError::new("workload.files_per_subdir", "0 is not allowed; at least 1"));
                }
                if w.iterations == 0 || w.iterations > 100_000 {
                    return Err(SpecError::new("workload.iterations", format!("{} is not allowed; 1 to 100000", w.iterations)));
                }
                if w.write_bytes == 0 {
                    return Err(SpecError::new("workload.write_bytes", "0 is not allowed; at least 1 byte per write()"));
                }
                if w.sync_method != 0 {
                    return Err(SpecError::new("workload.sync_method", format!("{} is not simulated; only 0 (no sync)", w.sync_method)));
                }
                let kept = w.files as u64 * w.threads as u64 * w.iterations as u64;
                if kept > MAX_FILES_KEPT {
                    return Err(SpecError::new(
                        "workload.files",
                        format!("fs_mark keeps {kept} files; at most {MAX_FILES_KEPT} (about 200 bytes of state an inode)"),
                    ));
                }
                let total = w.file_bytes as u128 * w.files as u128 * w.threads as u128 * w.iterations as u128;
                if total > fs_bytes as u128 {
                    return Err(SpecError::new("workload.file_bytes", format!("the files ({total} bytes) do not fit the {fs_bytes}-byte filesystem")));
                }
            }
            WorkloadSpec::Largedd(w) => {
                if w.tar_bytes == 0 || w.copies == 0 || w.dd_bytes == 0 || w.download_mib_s == 0 {
                    return Err(SpecError::new("workload", "largedd: tar_bytes, copies, dd_bytes and download_mib_s must be positive"));
                }
                if w.threads != 1 {
                    return Err(SpecError::new(
                        "workload.threads",
                        format!("{} is not simulated; 1 (LARGECOPY_THREADS = 1: one dd at a time)", w.threads),
                    ));
                }
                if w.tar_bytes as u128 * (w.copies as u128 + 1) > fs_bytes as u128 {
                    return Err(SpecError::new("workload.copies", format!("{} copies of {} bytes do not fit the {fs_bytes}-byte filesystem", w.copies, w.tar_bytes)));
                }
            }
            WorkloadSpec::Mmapstream(w) => {
                if w.bytes == 0 {
                    return Err(SpecError::new("workload.bytes", "0 is not allowed; a positive size"));
                }
                if w.threads == 0 || w.threads > 1024 || w.threads as u64 > w.bytes / m.page_size {
                    return Err(SpecError::new(
                        "workload.threads",
                        format!("{} is not allowed; 1 to 1024 processes, each with at least one page", w.threads),
                    ));
                }
                if w.bytes > fs_bytes {
                    return Err(SpecError::new("workload.bytes", format!("{} bytes is a file larger than its {fs_bytes}-byte filesystem", w.bytes)));
                }
                if w.bytes / m.page_size > u32::MAX as u64 / 2 {
                    return Err(SpecError::new("workload.bytes", "the mapping is larger than the engine's 2^31 pages per file"));
                }
                if w.mixed_bytes > 0 {
                    if w.mixed_threads == 0 || w.mixed_threads > 1024 {
                        return Err(SpecError::new("workload.mixed_threads", format!("{} is not allowed; 1 to 1024 processes of each kind", w.mixed_threads)));
                    }
                    if w.mixed_anon_percent > 100 {
                        return Err(SpecError::new("workload.mixed_anon_percent", format!("{} is not allowed; 0 to 100", w.mixed_anon_percent)));
                    }
                    if w.mixed_iter == 0 || w.mixed_iter > 1000 {
                        return Err(SpecError::new("workload.mixed_iter", format!("{} is not allowed; 1 to 1000 passes", w.mixed_iter)));
                    }
                    // Stage 1's files are removed before stage 2 creates its own.
                    let file = w.mixed_bytes as u128 * (100 - w.mixed_anon_percent) as u128 / 100;
                    if file > fs_bytes as u128 {
                        return Err(SpecError::new("workload.mixed_bytes", format!("stage 2's files ({file} bytes) do not fit the {fs_bytes}-byte filesystem")));
                    }
                    if w.mixed_bytes.div_ceil(m.page_size) > MAX_PAGES {
                        return Err(SpecError::new("workload.mixed_bytes", format!("{} is not allowed; at most {} pages of mappings", w.mixed_bytes, MAX_PAGES)));
                    }
                }
            }
            WorkloadSpec::Memhog(_) => {}
        }
        let _ = mem_bytes;
        Ok(())
    }
}
