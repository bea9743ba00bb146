//! The small kernel: one struct that owns every subsystem, boots them from a
//! specification, and runs the event loop (tasks' steps and block-device
//! completions in simulated-time order) until the workload's tasks exit.
//!
//! Each subsystem's state lives in its own struct (Mm for the page
//! allocator, Sched, PageCache, Fs, Slab, the block layer, the backing
//! devices' writeback state, kswapd's state); the kernel paths that cross
//! subsystems are `impl Kernel` blocks in the module named after the kernel
//! file that holds them (page_alloc, vmscan, swap, filemap, memory,
//! page_writeback, fs_writeback, slab).

use std::sync::atomic::{AtomicBool, Ordering};
use crate::block::{BlockLayer, Completion, DeviceSpec};
use crate::cost::Ctx;
use crate::fs::Fs;
use crate::filemap::PageCache;
use crate::mm::{Mm, NR_ZONE_TYPES};
use crate::page_alloc::SlowPath;
use crate::page_writeback::{BdpState, Bdi};
use crate::sched::{Pid, Sched, TaskKind, Wq};
use crate::slab::Slab;
use crate::spec::{CostSpec, Era, KernelSpec, Spec, SpecError, WorkloadSpec, ZONE_NAMES};
use crate::swap::Pagevecs;
use crate::trace::Tracer;
use crate::vmscan::Kswapd;
use crate::vmstat::{self, Ev, Gauges, Zs, NR_ZS};
use crate::workload::Workload;
use serde_json::{json, Value};

/// Per-task kernel state (what task_struct holds for mm).
pub struct KTask {
    /// cpuset mems_allowed.
    pub mems: Vec<bool>,
    pub node: usize,
    /// PF_MEMALLOC: the task is reclaiming (no recursion into reclaim).
    pub pf_memalloc: bool,
    /// PF_KSWAPD.
    pub kswapd: bool,
    /// The allocation slow path in progress (resumable across sleeps).
    pub slow: SlowPath,
    /// balance_dirty_pages in progress.
    pub bdp: BdpState,
    /// PF_SWAPWRITE (kswapd, zone_reclaim): may write to a congested queue.
    pub swapwrite: bool,
    /// current->backing_dev_info is the filesystem's device: the task is
    /// in a buffered write() (filemap.rs write_page).
    pub write_bdi: bool,
    /// A page-table page was allocated for the next anonymous fault.
    pub pte_ready: bool,
    /// A congestion wait to report when the task runs again.
    pub wait: crate::backing_dev::PendingWait,
    /// A page fault that slept (waiting on I/O or a page lock) is resuming.
    pub in_fault: bool,
    /// Asleep in wait_on_page_writeback for a page it is writing to
    /// (grab_cache_page_write_begin, __block_page_mkwrite in 3.0 and 3.1).
    pub stable_wait: bool,
    /// Reclaim met enough dirty pages in this zone to throttle (patch 6):
    /// the reclaimer calls wait_iff_congested at its next point that can sleep.
    pub throttle: Option<usize>,
    /// throttle_vm_writeout (3.0, the end of shrink_zone): pages under
    /// writeback are over 110% of the dirty threshold. 1: the reclaimer
    /// sleeps in congestion_wait(HZ/10) at its next point that can sleep;
    /// 2: it slept and, its allocation allowing __GFP_FS and __GFP_IO,
    /// looks again when it runs.
    pub vm_throttle: u8,
    /// Reclaim submitted a write that a request list refused: the
    /// reclaimer sleeps in get_request_wait at its next point that can
    /// sleep, then submits its waiting bios ([`Kernel::submit_pending_writes`]).
    pub request_wait: bool,
    /// The io_context's request batching (block.rs).
    pub ioc: crate::block::Ioc,
    /// Slept in get_request_wait: a batcher from its next request on.
    pub ioc_slept: bool,
    /// The request list that refused the task's last bio.
    pub blocked_list: u32,
    /// ... and whether it was the sync list (a WRITE_SYNC refused).
    pub blocked_sync: bool,
    /// Its bios in `Kernel::pending_writes`.
    pub pending: u32,
    /// shrink_zone cut short by that wait: (zone, priority, what is left
    /// to scan per LRU list, pages reclaimed so far), so the iteration goes
    /// on where it stopped.
    pub zone_resume: Option<(usize, i32, [u64; 4], u64)>,
    /// A buffer head allocated ahead of the page it is for (buffer.rs).
    pub bh_reserve: u32,
    /// An inode object sys_creat holds while its dentry allocation sleeps (vfs.rs).
    pub inode_reserve: u32,
    /// The task's mm_struct cache lines (memory.rs `fault_mm_lines`), once it has faulted.
    pub mm_line: Option<usize>,
    /// Page faults since the task last synced its RSS counters into the mm
    /// (SPLIT_RSS_COUNTING, 2.6.34 on).
    pub rss_events: u32,
    /// The paths holding the task's jbd2 handle (jbd2.rs `hold`; 0: none).
    pub handle: u8,
    /// Since when the task has slept waiting to start a handle.
    pub handle_wait: Option<u64>,
    /// Since when it has slept waiting for a buffer being logged (BJ_Shadow).
    pub shadow_wait: Option<u64>,
    /// Writeback found the transaction locked: the sleep its caller takes
    /// instead of get_request_wait's ([`Kernel::request_wait_sleep`]).
    pub journal_sleep: Option<crate::sched::Next>,
}

pub struct Kernel {
    pub era: Era,
    pub hz: u64,
    pub page_size: u64,
    pub cost: CostSpec,
    pub k: KernelSpec,
    pub mm: Mm,
    pub sched: Sched,
    pub kt: Vec<KTask>,
    pub pvec: Pagevecs,
    pub pc: PageCache,
    pub fs: Fs,
    pub slab: Slab,
    pub blk: BlockLayer,
    /// The swap area, if the machine has one.
    pub swap: Option<crate::swapfile::SwapInfo>,
    /// Each anonymous mm's page table (index = mm id): per virtual page NIL
    /// (never touched), the page's pfn, or SWAP_PTE | the swap slot.
    pub anon_mm: Vec<Vec<u32>>,
    pub bdi: Vec<Bdi>,
    /// bdp_ratelimits: per CPU, balance_dirty_pages_ratelimited's calls
    /// since the CPU's last balance_dirty_pages.
    pub bdp_ratelimits: Vec<u64>,
    /// Inodes writeback_inodes_wb's last call left clean (wbc.inodes_cleaned).
    pub wb_inodes_cleaned: u64,
    /// The filesystem's jbd2 journal (ext4), with kjournald2.
    pub journal: Option<crate::jbd2::Journal>,
    /// The directories' i_mutex (vfs.rs).
    pub dir_locks: crate::vfs::DirLocks,
    pub kswapd: Vec<Kswapd>,
    pub trace: Tracer,
    pub wl: Workload,
    pub now: u64,
    pub faults: u64,
    pub completions: Vec<Completion>,
    /// Read bios refused by a full queue, resubmitted as requests free.
    /// Reads whose queue had no free request: (device, block, pages).
    /// Reads a full request list refused: (device, block, pages, the reader's io_context id).
    pub pending_reads: Vec<(usize, u64, Vec<u32>, u32)>,
    /// Reclaim's write bios refused by a request list, each waiting with
    /// its reclaimer (get_request_wait), in submission order.
    pub pending_writes: Vec<PendingWrite>,
    /// Emptied pfn buffers of pending writes, for reuse.
    pub pending_pool: Vec<Vec<u32>>,
    /// The block layer's wakeups of one completion round (reused buffer).
    pub request_wakes: Vec<(u32, u8)>,
    pub nr_nodes: usize,
    /// The specification's seed: the engine's one source of variation.
    pub seed: u64,
    pub fork_balance: crate::spec::ForkBalance,
}

/// [`PendingWrite::pid`] of a bio whose submitter could not sleep.
pub const NO_OWNER: u32 = u32::MAX;

/// A write bio from reclaim waiting for a free request of its queue.
#[derive(Debug, Clone)]
pub struct PendingWrite {
    pub dev: usize,
    pub block: u64,
    pub pfns: Vec<u32>,
    /// The reclaimer that submitted it ([`NO_OWNER`]: one that could not
    /// sleep; the completion path submits it).
    pub pid: u32,
    /// The block layer's tag for the bio (0 swap, 1 file).
    pub tag: u32,
}

/// Simulated time past which a run is stopped as stalled (one simulated day).
pub const MAX_SIM_NS: u64 = 86_400 * 1_000_000_000;

impl Kernel {
    pub fn boot(spec: &Spec) -> Result<Kernel, SpecError> {
        let mut mm = Mm::boot(spec);
        let ncpus_bdp = mm.cpu_node.len();
        for z in &mm.zones {
            if z.present > 0 && z.wmark_high >= z.present as i64 {
                return Err(SpecError::new(
                    "kernel.min_free_kbytes",
                    format!(
                        "{} KiB puts node {} {}'s high watermark ({} pages) at or above its {} pages; nothing could ever be allocated there",
                        mm.min_free_kbytes, z.node, ZONE_NAMES[z.zt], z.wmark_high, z.present
                    ),
                ));
            }
        }
        let k = spec.kernel.clone();
        mm.setup_min_ratios(k.min_unmapped_ratio, k.min_slab_ratio);
        let nr_nodes = mm.nodes.len();
        let ncpus = mm.cpu_node.len();
        let page_size = spec.machine.page_size;
        let devs: Vec<DeviceSpec> = spec
            .machine
            .storage
            .as_ref()
            .map(|st| {
                st.devices
                    .iter()
                    .map(|d| DeviceSpec {
                        name: d.name.clone(),
                        disks: d.disks,
                        chunk_kib: d.chunk_kib,
                        bandwidth_mib_s: d.bandwidth_mib_s,
                        access_us: d.access_us,
                        rpm: d.rpm,
                        track_seek_us: d.track_seek_us,
                        full_seek_us: d.full_seek_us,
                        nr_requests: d.nr_requests,
                        max_sectors_kib: d.max_sectors_kib,
                        // The spec gives each disk's size; the md device holds them all.
                        size_mib: d.size_mib * d.disks as u64,
                        queue_depth: d.queue_depth,
                        elevator: match d.elevator {
                            crate::spec::ElevatorJson::Noop => crate::block::Elevator::Noop,
                            crate::spec::ElevatorJson::Deadline => crate::block::Elevator::Deadline,
                            crate::spec::ElevatorJson::Cfq => crate::block::Elevator::Cfq,
                        },
                    })
                    .collect()
            })
            .unwrap_or_default();
        let ndev = devs.len();
        let blk = BlockLayer::new(&devs, page_size as u32);
        let trace = match &spec.trace {
            None => Tracer::disabled(),
            Some(t) => {
                let format = crate::trace::TraceFormat::parse(t.format.as_deref())?;
                Tracer::to_file(&t.path, t.events.as_deref(), format, k.era)?
            }
        }
        .with_stats(k.era);
        let nzones = mm.zones.len();
        let sched = Sched::new(ncpus, nr_nodes, ndev.max(1), blk.nr_request_lists().max(1), nzones, 1);
        let fs = Fs::new(spec);
        let slab = Slab::new(spec, nr_nodes);
        // The swap area: its own device, or the blocks after the filesystem's.
        let swap = spec.machine.storage.as_ref().and_then(|st| {
            st.swap.as_ref().map(|sw| {
                let pages_per_mib = (1u64 << 20) / page_size;
                let first = if sw.device == st.fs.device { st.fs.size_mib * pages_per_mib } else { 0 };
                crate::swapfile::SwapInfo::new(sw.device as usize, first, (sw.size_mib * pages_per_mib) as u32)
            })
        });
        let mut kern = Kernel {
            era: k.era,
            hz: spec.machine.hz,
            page_size,
            cost: spec.machine.cost,
            k,
            mm,
            sched,
            kt: Vec::new(),
            pvec: Pagevecs::new(ncpus),
            pc: PageCache::new(),
            fs,
            slab,
            blk,
            swap,
            anon_mm: Vec::new(),
            bdi: Vec::new(),
            bdp_ratelimits: vec![0; ncpus_bdp],
            wb_inodes_cleaned: 0,
            kswapd: Vec::new(),
            journal: None,
            dir_locks: Default::default(),
            trace,
            wl: Workload::None,
            now: 0,
            faults: 0,
            completions: Vec::new(),
            pending_reads: Vec::new(),
            pending_writes: Vec::new(),
            pending_pool: Vec::new(),
            request_wakes: Vec::new(),
            nr_nodes,
            seed: spec.seed,
            fork_balance: spec.machine.fork_balance,
        };
        // Kernel threads: kswapd per node, bound to the node's CPUs (all
        // CPUs for a memory-only node); a flusher per backing device.
        for n in 0..nr_nodes {
            let cpus: Vec<u16> = if kern.mm.nodes[n].cpus.is_empty() {
                (0..ncpus as u16).collect()
            } else {
                kern.mm.nodes[n].cpus.iter().map(|&c| c as u16).collect()
            };
            let pid = kern.sched.spawn_sleeping(format!("kswapd{n}"), TaskKind::Kswapd(n), cpus, Wq::Kswapd(n), 0);
            kern.add_ktask(pid, n, vec![true; nr_nodes]);
            kern.kt[pid as usize].kswapd = true;
            kern.kt[pid as usize].pf_memalloc = true;
            kern.kt[pid as usize].swapwrite = true;
            kern.kswapd.push(Kswapd::new(pid, kern.mm.nodes[n].zones.iter().flatten().count()));
        }
        if let Some(st) = &spec.machine.storage {
            let dev = st.fs.device as usize;
            let all: Vec<u16> = (0..ncpus as u16).collect();
            let pid = kern.sched.spawn_sleeping(format!("flush-8:{}", 16 * dev), TaskKind::Flusher(0), all, Wq::Flusher(0), 0);
            kern.add_ktask(pid, 0, vec![true; nr_nodes]);
            kern.kt[pid as usize].pf_memalloc = false;
            kern.bdi.push(Bdi::new(dev, pid));
            // jbd2: kjournald2 of the filesystem's journal, on any CPU.
            if let Some((log_start, log_pages)) = kern.fs.journal_log {
                let all: Vec<u16> = (0..ncpus as u16).collect();
                let pid = kern.sched.spawn_sleeping(format!("jbd2/{}-8", st.devices[dev].name), TaskKind::Kjournald, all, Wq::Journal, 0);
                kern.add_ktask(pid, 0, vec![true; nr_nodes]);
                let groups = kern.fs.nr_groups();
                kern.journal = Some(crate::jbd2::Journal::new(pid, dev, log_start, log_pages, st.fs.commit_s, groups));
            }
        }
        // BLK_BATCH_TIME: HZ/50 jiffies.
        let batch = kern.jiffies_ns(kern.hz / 50);
        kern.blk.set_batch_time_ns(batch);
        kern.blk.set_hz(spec.machine.hz);
        kern.wl = Workload::start(&mut kern, spec)?;
        Ok(kern)
    }

    pub fn add_ktask(&mut self, pid: Pid, node: usize, mems: Vec<bool>) {
        while self.kt.len() <= pid as usize {
            self.kt.push(KTask {
                mems: Vec::new(),
                node: 0,
                pf_memalloc: false,
                kswapd: false,
                slow: SlowPath::default(),
                bdp: BdpState::default(),
                swapwrite: false,
                write_bdi: false,
                pte_ready: false,
                wait: Default::default(),
                in_fault: false,
                stable_wait: false,
                throttle: None,
                vm_throttle: 0,
                request_wait: false,
                ioc: Default::default(),
                ioc_slept: false,
                blocked_list: 0,
                blocked_sync: false,
                pending: 0,
                zone_resume: None,
                bh_reserve: crate::page::NIL,
                inode_reserve: crate::page::NIL,
                mm_line: None,
                rss_events: 0,
                handle: 0,
                handle_wait: None,
                shadow_wait: None,
                journal_sleep: None,
            });
        }
        self.kt[pid as usize].mems = mems;
        self.kt[pid as usize].node = node;
    }

    /// Simulated jiffies at `ns`.
    #[inline]
    pub fn jiffies(&self, ns: u64) -> u64 {
        ns * self.hz / 1_000_000_000
    }
    /// `j` jiffies in ns.
    #[inline]
    pub fn jiffies_ns(&self, j: u64) -> u64 {
        j * 1_000_000_000 / self.hz
    }

    /// A context for kernel work done on behalf of `pid` on `cpu` at `now`.
    pub fn ctx(&self, pid: Pid, cpu: usize, now: u64) -> Ctx {
        Ctx { cpu, node: self.mm.cpu_node[cpu], now, sys: 0, spin: 0, user: 0, pid }
    }

    /// Run the event loop to the end of the workload.
    pub fn run(&mut self, spec: &Spec, cancel: Option<&AtomicBool>) -> Result<RunOut, SpecError> {
        let mut sample_ns = spec.sample_ms * 1_000_000;
        let mut next_sample = 0u64;
        let mut tl = Timeline::new(self.mm.zones.len(), self.timeline_counters());
        let mut samples = 0u64;
        let mut full_checks = 0u64;
        let vm_start = self.vmstat_rows();
        let mut snaps = crate::snapshot::Snapshots::new(spec.snapshots.as_ref());
        let mut start_snap = None;
        if snaps.is_some() {
            start_snap = Some(crate::snapshot::Snapshot::take(self, 0, crate::snapshot::Kind::Start));
        }
        let mut next_snap = snaps.as_ref().map_or(u64::MAX, |s| s.next_due());
        let mut next_timer = next_sample.min(next_snap);
        let mut polls = 0u32;
        loop {
            // The caller may stop the run (Ctrl-C in Python): looked at
            // every 64Ki events, an atomic load.
            if polls & 0xffff == 0 && cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(SpecError::new("engine", "interrupted"));
            }
            polls = polls.wrapping_add(1);
            let t_io = self.blk.next_completion();
            let t_task = self.sched.peek_time();
            let (t, io) = match (t_io, t_task) {
                (None, None) => break,
                (Some(a), None) => (a, true),
                (None, Some(b)) => (b, false),
                (Some(a), Some(b)) => {
                    if a <= b {
                        (a, true)
                    } else {
                        (b, false)
                    }
                }
            };
            // Timers: timeline samples and /proc snapshots, in time order.
            while t >= next_timer {
                if next_snap <= next_sample {
                    if let Some(sn) = snaps.as_mut() {
                        sn.fire(self, next_snap);
                        next_snap = sn.next_due();
                    }
                    next_timer = next_sample.min(next_snap);
                    continue;
                }
                tl.sample(self, next_sample);
                self.check_cheap().map_err(|e| SpecError::new("engine", format!("invariant broken at t={}ns: {e}", next_sample)))?;
                if spec.check && samples.is_power_of_two() {
                    self.check_full().map_err(|e| SpecError::new("engine", format!("invariant broken at t={}ns: {e}", next_sample)))?;
                    full_checks += 1;
                }
                samples += 1;
                next_sample += sample_ns;
                if tl.len() > tl.cap {
                    // Every other sample dropped: the kept ones are 2 x the
                    // period apart, and so are the samples from now on.
                    tl.thin();
                    next_sample += sample_ns;
                    sample_ns *= 2;
                }
                next_timer = next_sample.min(next_snap);
            }
            if t > MAX_SIM_NS {
                return Err(SpecError::new("engine", "the run did not finish within one simulated day; stopped"));
            }
            // vmstat_update: once a second every CPU folds its vm_stat
            // deltas into the zones' counters (refresh_cpu_vm_stats).
            if t >= self.mm.next_vmstat_refresh {
                if self.mm.vmstat_drift {
                    self.mm.refresh_cpu_vm_stats();
                }
                self.mm.next_vmstat_refresh = (t / 1_000_000_000 + 1) * 1_000_000_000;
            }
            // cache_reap (CONFIG_SLAB): every REAPTIMEOUT_LIST3 each
            // node's free slabs, in time order with the events.
            while t >= self.slab.next_reap {
                let at = self.slab.next_reap;
                for n in 0..self.mm.nodes.len() {
                    self.cache_reap(n, at);
                }
                self.slab.next_reap = at + crate::slab::REAP_INTERVAL_NS;
            }
            if io {
                self.now = t;
                self.io_complete(t);
                continue;
            }
            // Only events before the next I/O completion: that completion
            // may wake a task whose timed sleep has not run out yet.
            let Some((t, pid, cpu)) = self.sched.next_event(t_io.unwrap_or(u64::MAX)) else { continue };
            self.now = t;
            let mut ctx = self.ctx(pid, cpu, t);
            // A reclaimer's bios waiting for a request go first, whatever
            // path the task comes back on (get_request_wait cannot be left
            // without its request): refused again, it sleeps again.
            if self.kt[pid as usize].pending > 0 {
                if let Some(next) = self.submit_pending_writes(&mut ctx) {
                    self.sched.end_step(pid, cpu, t, ctx.user, ctx.sys, next);
                    continue;
                }
            }
            let next = match self.sched.tasks[pid as usize].kind {
                TaskKind::User => self.workload_step(pid, &mut ctx),
                TaskKind::Kswapd(n) => self.kswapd_step(n, &mut ctx),
                TaskKind::Flusher(b) => self.flusher_step(b, &mut ctx),
                TaskKind::Kjournald => self.kjournald2_step(&mut ctx),
            };
            if matches!(next, crate::sched::Next::Exit) {
                // A buffer head the task took for a page it never got goes
                // back with the task (buffer.rs), and so does a handle.
                self.release_buffers(&mut ctx);
                self.journal_stop_all(&ctx);
            } else if self.kt[pid as usize].handle & crate::jbd2::hold::WRITEBACK != 0
                && !matches!(next, crate::sched::Next::Sleep { wq: Some(Wq::Request(..)), .. })
            {
                // ext4_da_writepages keeps its handle across get_request_wait
                // only: a writeback that went on to something else stopped it.
                self.journal_stop(&ctx, crate::jbd2::hold::WRITEBACK);
            }
            self.kt[pid as usize].journal_sleep = None;
            self.sched.end_step(pid, cpu, t, ctx.user, ctx.sys, next);
            if self.wl.finished(self) {
                break;
            }
        }
        let end = self.wl.end_ns(self);
        tl.sample(self, end.max(self.now));
        let snapshots = snaps.map(|mut sn| {
            if let Some(s0) = start_snap.take() {
                sn.taken.insert(0, s0);
            }
            // Timers due between the last event and the end: nothing changed since that event.
            let end_t = end.max(self.now);
            while sn.next_due() <= end_t {
                let due = sn.next_due();
                sn.fire(self, due);
            }
            sn.taken.push(crate::snapshot::Snapshot::take(self, end_t, crate::snapshot::Kind::End));
            sn.into_json(self)
        });
        self.check_cheap().map_err(|e| SpecError::new("engine", format!("invariant broken at the end: {e}")))?;
        if spec.check {
            self.check_full().map_err(|e| SpecError::new("engine", format!("invariant broken at the end: {e}")))?;
            full_checks += 1;
        }
        let lines = self.trace.finish()?;
        Ok(RunOut { vm_start, end, tl, full_checks, trace_lines: lines, snapshots })
    }

    /// Sum of every zone's zone_stat_item, NR_FREE_PAGES and the NUMA
    /// counters filled from their sources.
    pub fn zone_stat_sum(&self) -> [i64; NR_ZS] {
        let mut s = [0i64; NR_ZS];
        for z in &self.mm.zones {
            for (acc, v) in s.iter_mut().zip(z.vm_stat.iter()) {
                *acc += v;
            }
            s[Zs::NrFreePages as usize] += z.free_pages;
            s[Zs::NumaHit as usize] += z.numa[0] as i64;
            s[Zs::NumaMiss as usize] += z.numa[1] as i64;
            s[Zs::NumaForeign as usize] += z.numa[2] as i64;
            s[Zs::NumaLocal as usize] += z.numa[3] as i64;
            s[Zs::NumaOther as usize] += z.numa[4] as i64;
        }
        s
    }

    pub fn vmstat_rows(&self) -> Vec<(String, u64)> {
        let mut present = [false; NR_ZONE_TYPES];
        for z in &self.mm.zones {
            present[z.zt] = true;
        }
        let zs = self.zone_stat_sum();
        let (bg, dirty) = self.global_dirty_limits();
        vmstat::rows(self.era, &self.mm.vm, &Gauges { zs: &zs, dirty_thresh: dirty, bg_thresh: bg, vmscan_invalidate: self.k.reclaim_invalidate }, &present)
    }

    /// The event counters the timeline samples, in [`TIMELINE_COUNTERS`] order.
    pub fn timeline_counters(&self) -> [u64; NR_TL_COUNTERS] {
        let v = &self.mm.vm;
        let vmscan_write: i64 = self.mm.zones.iter().map(|z| z.vm_stat[Zs::NrVmscanWrite as usize]).sum();
        [
            v.get(Ev::Pgpgin),
            v.get(Ev::Pgpgout),
            v.get(Ev::Pswpin),
            v.get(Ev::Pswpout),
            v.ztotal(vmstat::Zev::PgscanKswapd),
            v.ztotal(vmstat::Zev::PgscanDirect),
            v.ztotal(vmstat::Zev::PgstealKswapd),
            v.ztotal(vmstat::Zev::PgstealDirect),
            v.get(Ev::Allocstall),
            v.get(Ev::Pgmajfault),
            vmscan_write.max(0) as u64,
            v.get(Ev::KswapdWake),
        ]
    }

    pub fn page_ops(&self) -> u64 {
        self.mm.sim.page_events
    }

    pub fn state_bytes(&self) -> u64 {
        self.mm.state_bytes() + self.sched.state_bytes() + self.pc.state_bytes() + self.fs.state_bytes() + self.slab.state_bytes() + self.blk.state_bytes() + self.swap.as_ref().map_or(0, |s| s.state_bytes()) + self.anon_mm.iter().map(|pt| pt.capacity() as u64 * 4).sum::<u64>()
            + self.bdi.iter().map(|b| b.works.capacity() as u64 * 8).sum::<u64>()
            + self.bdp_ratelimits.len() as u64 * 8
            + self.journal.as_ref().map_or(0, |j| j.state_bytes())
            + self.dir_locks.state_bytes()
    }
}

/// What the loop hands to result assembly.
pub struct RunOut {
    pub vm_start: Vec<(String, u64)>,
    pub end: u64,
    pub tl: Timeline,
    pub full_checks: u64,
    pub trace_lines: u64,
    /// The /proc snapshots (snapshot.rs), when the spec asked for them.
    pub snapshots: Option<Value>,
}

/// The event counters the timeline samples, in column order: vm_event_item
/// counters summed over zone types (pgscan and pgsteal split into kswapd
/// and direct as 4.11's /proc/vmstat splits them; 3.0's `pgsteal_<zone>` is
/// their sum), nr_vmscan_write summed over zones, and kswapd wakeups
/// (wakeup_kswapd calls that woke a sleeping kswapd; `sim.kswapd_wakeups`).
pub const TIMELINE_COUNTERS: [&str; NR_TL_COUNTERS] = [
    "pgpgin",
    "pgpgout",
    "pswpin",
    "pswpout",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "allocstall",
    "pgmajfault",
    "nr_vmscan_write",
    "kswapd_wakeups",
];
pub const NR_TL_COUNTERS: usize = 12;

/// Default for [`Timeline::cap`].
pub const TIMELINE_CAP: usize = 4096;

/// Sampled state over time, as columns (struct of arrays), thinned to at
/// most `cap` samples before the final one: when full, every other sample
/// is dropped (in place) and the sampling period doubles. Columns grow to
/// at most `cap + 1` elements and never past that capacity, so a timeline
/// holds at most `(cap + 1) × (8 × zones + 8 × (3 + NR_TL_COUNTERS))` bytes
/// (docs/architecture.md, "Memory bound").
pub struct Timeline {
    pub t_s: Vec<f64>,
    /// Free pages of every zone, `zones` values per sample (zone order as
    /// `Mm::zones`).
    pub free: Vec<i64>,
    pub zones: usize,
    pub dirty: Vec<i64>,
    pub writeback: Vec<i64>,
    /// One column per [`TIMELINE_COUNTERS`] entry: the counter's increase
    /// since the start of the run (0 in the first sample).
    pub counters: [Vec<u64>; NR_TL_COUNTERS],
    /// The counters when the run started.
    base: [u64; NR_TL_COUNTERS],
    pub cap: usize,
}

/// Push onto a column, growing its capacity (by doubling) to no more than
/// `limit` elements in all.
#[inline]
fn push_capped<T>(v: &mut Vec<T>, x: T, limit: usize) {
    if v.len() == v.capacity() {
        let want = v.len().max(16).min(limit.saturating_sub(v.len())).max(1);
        v.reserve_exact(want);
    }
    v.push(x);
}

/// Keep the samples of even index, in place: sample `i` of `v` is the
/// `width` elements at `i × width`.
fn keep_even<T: Copy>(v: &mut Vec<T>, width: usize) {
    let n = v.len() / width.max(1);
    let mut w = 0;
    for i in (0..n).step_by(2) {
        for j in 0..width {
            v[w * width + j] = v[i * width + j];
        }
        w += 1;
    }
    v.truncate(w * width);
}

impl Timeline {
    pub fn new(zones: usize, base: [u64; NR_TL_COUNTERS]) -> Timeline {
        Timeline {
            t_s: Vec::new(),
            free: Vec::new(),
            zones,
            dirty: Vec::new(),
            writeback: Vec::new(),
            counters: Default::default(),
            base,
            cap: TIMELINE_CAP,
        }
    }

    /// Samples held.
    pub fn len(&self) -> usize {
        self.t_s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }

    fn sample(&mut self, k: &Kernel, at: u64) {
        let limit = self.cap + 1;
        push_capped(&mut self.t_s, at as f64 / 1e9, limit);
        for z in &k.mm.zones {
            push_capped(&mut self.free, z.free_pages, limit * self.zones);
        }
        push_capped(&mut self.dirty, k.mm.zones.iter().map(|z| z.vm_stat[Zs::NrFileDirty as usize]).sum(), limit);
        push_capped(&mut self.writeback, k.mm.zones.iter().map(|z| z.vm_stat[Zs::NrWriteback as usize]).sum(), limit);
        let now = k.timeline_counters();
        for ((col, v), b) in self.counters.iter_mut().zip(now).zip(self.base) {
            push_capped(col, v.saturating_sub(b), limit);
        }
    }

    fn thin(&mut self) {
        keep_even(&mut self.t_s, 1);
        keep_even(&mut self.free, self.zones);
        keep_even(&mut self.dirty, 1);
        keep_even(&mut self.writeback, 1);
        for col in &mut self.counters {
            keep_even(col, 1);
        }
    }

    /// Bytes the columns hold (their capacity).
    pub fn bytes(&self) -> u64 {
        (self.t_s.capacity() * 8
            + self.free.capacity() * 8
            + self.dirty.capacity() * 8
            + self.writeback.capacity() * 8
            + self.counters.iter().map(|c| c.capacity() * 8).sum::<usize>()) as u64
    }

    /// The timeline as the result's JSON object (docs/engine-api.md).
    pub fn to_json(&self) -> Value {
        let free: Vec<&[i64]> = if self.zones == 0 {
            self.t_s.iter().map(|_| &[][..]).collect()
        } else {
            self.free.chunks(self.zones).collect()
        };
        let mut m = serde_json::Map::new();
        m.insert("t_s".into(), json!(self.t_s));
        m.insert("free_pages".into(), json!(free));
        m.insert("nr_dirty".into(), json!(self.dirty));
        m.insert("nr_writeback".into(), json!(self.writeback));
        for (name, col) in TIMELINE_COUNTERS.iter().zip(&self.counters) {
            m.insert((*name).into(), json!(col));
        }
        Value::Object(m)
    }
}

fn secs(ns: u64) -> f64 {
    (ns / 1000) as f64 / 1e6
}

/// Boot, run and assemble the result of one specification.
pub fn run(spec: &Spec) -> Result<(Value, u64), SpecError> {
    run_cancellable(spec, None)
}

/// As [`run`]; the run stops with an "interrupted" error soon after
/// `cancel` becomes true.
pub fn run_cancellable(spec: &Spec, cancel: Option<&AtomicBool>) -> Result<(Value, u64), SpecError> {
    let mut k = Kernel::boot(spec)?;
    k.check_cheap().map_err(|e| SpecError::new("engine", format!("invariant broken at boot: {e}")))?;
    if spec.check {
        k.check_full().map_err(|e| SpecError::new("engine", format!("invariant broken at boot: {e}")))?;
    }
    let out = k.run(spec, cancel)?;
    let ops = k.page_ops();
    Ok((k.result(spec, out), ops))
}

impl Kernel {
    fn result(&self, spec: &Spec, out: RunOut) -> Value {
        let mut vm = serde_json::Map::new();
        for (name, v) in self.vmstat_rows() {
            vm.insert(name, json!(v));
        }
        let mut vm0 = serde_json::Map::new();
        for (name, v) in out.vm_start {
            vm0.insert(name, json!(v));
        }
        let zones: Vec<Value> = self
            .mm
            .zones
            .iter()
            .map(|z| {
                json!({
                    "node": z.node,
                    "zone": ZONE_NAMES[z.zt],
                    "present": z.present,
                    "min": z.wmark_base[0],
                    "low": z.wmark_base[1],
                    "high": z.wmark_base[2],
                    "boost_end": z.watermark_boost,
                    "lowmem_reserve": z.lowmem_reserve.to_vec(),
                    "pcp_batch": z.pcp_batch,
                    "pcp_high": z.pcp_high,
                    "free_end": z.free_pages,
                    "pgalloc": z.pgalloc,
                    "numa_hit": z.numa[0],
                    "numa_miss": z.numa[1],
                    "numa_foreign": z.numa[2],
                    "numa_local": z.numa[3],
                    "numa_other": z.numa[4],
                    "file_end": z.vm_stat[Zs::NrFilePages as usize],
                    "anon_end": z.vm_stat[Zs::NrAnonPages as usize],
                    "slab_end": z.vm_stat[Zs::NrSlabReclaimable as usize],
                })
            })
            .collect();
        let tasks: Vec<Value> = self
            .sched
            .tasks
            .iter()
            .map(|t| {
                json!({
                    "pid": t.pid, "comm": t.comm, "kind": t.kind.name(),
                    "user_s": secs(t.user_ns), "sys_s": secs(t.sys_ns), "iowait_s": secs(t.iowait_ns),
                    "wakeups": t.wakeups,
                })
            })
            .collect();
        let (user, sys) = self
            .sched
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::User)
            .fold((0u64, 0u64), |(u, s), t| (u + t.user_ns, s + t.sys_ns));
        let s = &self.mm.sim;
        let request_waits = json!({ "reclaim": s.request_waits[0], "other": s.request_waits[1] });
        let request_list_peak = (0..self.blk.nr_devices()).map(|d| self.blk.stats(d).peak[1]).max().unwrap_or(0);
        let mut result = json!({
            "kernel": spec.kernel.name,
            "machine": spec.machine.name,
            "era": spec.kernel.era.name(),
            "workload": spec.workload.kind(),
            "zone_reclaim_mode": self.mm.zone_reclaim_mode,
            "min_free_kbytes": self.mm.min_free_kbytes,
            "times": { "user_s": secs(user), "sys_s": secs(sys), "elapsed_s": secs(out.end) },
            "vmstat_start": Value::Object(vm0),
            "vmstat": Value::Object(vm),
            "zones": zones,
            "tasks": tasks,
            "benchmark": self.wl.benchmark_json(self),
            "timeline": out.tl.to_json(),
            "sim": {
                "zone_checks": s.zone_checks,
                "zlc_skips": s.zlc_skips,
                "zlc_setups": s.zlc_setups,
                "zlc_zaps": s.zlc_zaps,
                "zlc_marked_full": s.zlc_marked_full,
                "zlc_clears": s.zlc_clears,
                "swap_slots_used": self.swap.as_ref().map_or(0, |sw| sw.inuse),
                "buffer_heads": self.slab.caches[crate::slab::BUFFER_HEAD].objects,
                "slab_objects": { "dentry": self.slab.caches[crate::slab::DENTRY].objects,
                                  "inode": self.slab.caches[crate::slab::INODE].objects,
                                  "buffer_head": self.slab.caches[crate::slab::BUFFER_HEAD].objects },
                "second_passes": s.second_passes,
                "ra_unused_reclaimed": s.ra_unused_reclaimed,
                "zone_reclaim_calls": s.zone_reclaim_calls,
                "zone_reclaim_ret": { "full_gate": s.zone_reclaim_ret[0], "full_unreclaimable": s.zone_reclaim_ret[1],
                                      "noscan": s.zone_reclaim_ret[2], "some": s.zone_reclaim_ret[3], "success": s.zone_reclaim_ret[4] },
                "rmqueue_bulk": s.rmqueue_bulk,
                "lines_touched": self.mm.cache.lines_touched,
                "remote_lines": self.mm.cache.remote_lines,
                "lock_spin_s": secs(s.lock_spin_ns),
                "kswapd_wakeups": self.mm.vm.get(Ev::KswapdWake),
                "oom": self.wl.oom(),
                "full_checks": out.full_checks,
                "trace_lines": out.trace_lines,
                "state_bytes": self.state_bytes(),
                "timeline_bytes": out.tl.bytes(),
                "state_bytes_per_page": (self.state_bytes() as f64 / self.mm.pages.len() as f64 * 100.0).round() / 100.0,
                "page_ops": s.page_events,
                "faults": self.faults,
            },
            "events": s.page_events,
            "ftrace": self.trace.stats().map(|st| {
                st.summary(&|pid| self.sched.tasks.get(pid as usize).map_or_else(String::new, |t| t.comm.clone()), out.end)
            }),
        });
        result["sim"]["request_waits"] = request_waits;
        result["sim"]["line_dirty_fetches"] = json!(self.mm.cache.dirty_fetches);
        result["sim"]["line_invalidations"] = json!(self.mm.cache.invalidations);
        result["sim"]["line_wait_s"] = json!((self.mm.cache.queue_ns / 1000) as f64 / 1e6);
        result["sim"]["port_wait_s"] = json!((self.mm.ic.wait_ns / 1000) as f64 / 1e6);
        result["sim"]["request_list_peak"] = json!(request_list_peak);
        result["sim"]["devices"] = self.devices_json(spec);
        result["sim"]["ra_holes"] = json!(self.mm.sim.ra_holes);
        result["sim"]["ra_holes_reclaimed"] = json!(self.mm.sim.ra_holes_reclaimed);
        result["sim"]["writeback_waits"] = json!(self.mm.sim.writeback_waits);
        result["sim"]["i_mutex"] = self.dir_locks.to_json();
        if let Some(j) = &self.journal {
            result["sim"]["jbd2"] = j.to_json();
            let dev = spec.machine.storage.as_ref().map_or(String::new(), |st| st.devices[j.dev].name.clone());
            result["jbd2_info"] = json!({ "path": format!("/proc/fs/jbd2/{dev}-8/info"), "text": j.proc_info(self.page_size) });
        }
        let mut spl = serde_json::Map::new();
        for (i, who) in ["direct_file", "direct_anon", "kswapd_file", "kswapd_anon"].iter().enumerate() {
            let counts: serde_json::Map<String, Value> =
                crate::vmscan::SPL_OUTCOMES.iter().zip(self.mm.sim.spl[i]).map(|(k, v)| (k.to_string(), json!(v))).collect();
            spl.insert(who.to_string(), Value::Object(counts));
        }
        result["sim"]["shrink_page_list"] = Value::Object(spl);
        if let (Value::Object(map), Some(th)) = (&mut result, self.wl.threads_json(self)) {
            map.insert("threads".into(), th);
        }
        if let (Value::Object(map), Some(sn)) = (&mut result, out.snapshots) {
            map.insert("snapshots".into(), sn);
        }
        let _ = WorkloadSpec::kind;
        result
    }

    /// Per block device: its requests (allocated, back-merged bios,
    /// sectors submitted, the most one member's list held, per direction), and per
    /// member disk the time it served pieces and, of that, the time spent
    /// reaching their first sectors (seek and rotation).
    fn devices_json(&self, spec: &Spec) -> Value {
        let names: Vec<String> = spec.machine.storage.as_ref().map_or_else(Vec::new, |st| st.devices.iter().map(|d| d.name.clone()).collect());
        (0..self.blk.nr_devices())
            .map(|d| {
                let st = self.blk.stats(d);
                let disks: Vec<Value> = (0..self.blk.nr_disks(d))
                    .map(|k| {
                        let (pieces, access) = self.blk.disk_access(d, k);
                        json!({ "pieces": pieces, "busy_s": secs(self.blk.disk_busy_ns(d, k)), "access_s": secs(access) })
                    })
                    .collect();
                json!({
                    "name": names.get(d).cloned().unwrap_or_default(),
                    "requests": { "read": st.requests[0], "write": st.requests[1] },
                    "merges": { "read": st.merges[0], "write": st.merges[1] },
                    "sectors": { "read": st.sectors[0], "write": st.sectors[1] },
                    "peak": { "read": st.peak[0], "write": st.peak[1] },
                    "disks": disks,
                })
            })
            .collect()
    }
}
