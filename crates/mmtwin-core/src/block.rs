//! The block layer: request queues (one per disk; md RAID-0 remaps bios to
//! its members' queues), back merging, an
//! elevator per disk (noop; deadline with its sector sort and expiry; or
//! cfq with its per-reader queues, service trees, slices and idling),
//! md RAID-0 striping, request-count congestion (3.0 semantics), and disks
//! with a flat access time or a seek curve and rotation.
//!
//! Behaviour follows Linux 3.0 (`block/blk-core.c`, `block/blk.h`,
//! `drivers/md/raid0.c`), simplified:
//! * A bio is merged onto the tail of a queued (not yet started) request of
//!   the same direction that ends exactly where the bio begins, if the result
//!   fits in `max_sectors_kib` (the elevator's back merge, `ll_back_merge_fn`).
//!   Otherwise it needs a new request (`get_request`): per direction
//!   (`rl->count[sync]`; reads and WRITE_SYNC writes such as jbd2's log
//!   are SYNC, writeback is ASYNC) a queue hands
//!   out `nr_requests`, and marks itself full when it does; a task that is
//!   not a "batcher" then finds the bio refused ([`Submit::Full`]) and
//!   sleeps in `get_request_wait` on that list's wait queue (the caller, with
//!   [`BlockLayer::last_full_queue`]). Each request freed while fewer than
//!   `nr_requests` are allocated clears the full mark and wakes one waiter
//!   ([`BlockLayer::take_request_wakes`], exclusive wakeups). A task woken
//!   there, or the one whose allocation filled the queue, is a batcher
//!   ([`Ioc`], `ioc_set_batching`): it may allocate `BLK_BATCH_REQ` (32)
//!   requests, or any for `BLK_BATCH_TIME` (HZ/50), past the full mark, up
//!   to 3/2 x `nr_requests`.
//! * Congestion per direction is set when the allocated count reaches
//!   `nr_congestion_on` (in `get_request`) and cleared when it falls below
//!   `nr_congestion_off` (in `__freed_request`); see [`congestion_thresholds`].
//! * With `disks: N > 1` the device is an md RAID-0 of N identical disks.
//!   md is bio-based in 3.0 (`md_make_request`): a bio is at most a chunk
//!   ([`BlockLayer::max_bio_pages`], `max_hw_sectors` = chunk), one crossing
//!   a chunk boundary goes as two (`raid0_mergeable_bvec`), and each goes to
//!   its member disk's own request list (`raid0_make_request`), mapped as
//!   `raid0.c:map_sector` does for a single strip zone: `nr_requests` per
//!   direction and member, congestion per member, and the device congested
//!   when any member is (`raid0_congested`). Requests never span chunks.
//! * Each disk serves one piece at a time. Its [`Elevator`] picks what
//!   goes to the drive (noop: arrival order; deadline: sector order in
//!   batches, reads first, with expiry; cfq: queue by queue in time slices,
//!   see [`Elevator::Cfq`]); a drive of `queue_depth` 1 serves that order,
//!   a deeper one (native command queueing) holds up to `queue_depth`
//!   pieces and serves the nearest first, with aging (`Queue::start`). A
//!   piece handed to the drive takes no more merges. A cfq disk may also
//!   sit idle on purpose, waiting for the active reader's next read; its
//!   idle timer is a block event.
//! * A piece costs its bytes at `bandwidth_mib_s`, plus, unless it starts
//!   exactly where the previous piece served by that disk ended, either the
//!   flat `access_us` or, with `rpm` set, a seek over the distance plus half a
//!   rotation (a start a little ahead: the gap passing under the head).
//! * The next block event is the end of a piece.
//!
//! Callers should run `complete(now)` before `submit(now, ..)`: a piece never
//! starts before the submit time of its request's latest bio, so a late
//! `complete` cannot start work in the past, but it can delay it.
//!
//! Storage is preallocated per queue (`3 * nr_requests` request slots per
//! member disk, 3/2 x `nr_requests` per direction, with room for
//! `max_sectors_kib` of pfns each): no allocation per bio. All
//! orders are fixed (slot index, disk index, request sequence number).

use std::collections::VecDeque;

use crate::cost::Ctx;
use crate::kernel::{Kernel, PendingWrite, NO_OWNER};
use crate::sched::{Next, Wq};

/// One block device (a request queue), as given in the run specification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSpec {
    pub name: String,
    /// 1 = plain disk; N > 1 = md RAID-0 over N identical disks.
    pub disks: u32,
    /// RAID-0 chunk size (ignored for one disk).
    pub chunk_kib: u32,
    /// Per disk media rate.
    pub bandwidth_mib_s: u32,
    /// Per disk cost of a piece not contiguous with the previous one, when
    /// `rpm` is 0.
    pub access_us: u32,
    /// Spindle speed; 0 = the flat `access_us`. Otherwise a piece not
    /// contiguous with the previous one costs a seek over the distance plus
    /// half a rotation, or, starting less than a track ahead, the time for
    /// the gap to pass under the head (see `Timing::service`).
    pub rpm: u32,
    /// Seek to the next track (with settling), and across the whole disk.
    pub track_seek_us: u32,
    pub full_seek_us: u32,
    /// Queue depth per direction.
    pub nr_requests: u32,
    /// Largest request after merging.
    pub max_sectors_kib: u32,
    /// Capacity of the whole device (for RAID-0, all its disks together).
    pub size_mib: u64,
    /// The I/O scheduler of each (member) disk.
    pub elevator: Elevator,
    /// Commands each (member) disk holds at once (native command queueing:
    /// 31 for a SATA drive under libata, `ATA_MAX_QUEUE - 1`); 1 = a drive
    /// that takes one command at a time. See [`Queue::start`].
    pub queue_depth: u32,
}

/// The I/O scheduler that picks each disk's next piece.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Elevator {
    /// `noop`: one FIFO, reads and writes in arrival order.
    #[default]
    Noop,
    /// `deadline` (block/deadline-iosched.c, 3.0): per direction a list
    /// sorted by sector and a FIFO with an expiry time (reads 500 ms, writes
    /// 5 s). A batch of up to `fifo_batch` (16) pieces of one direction goes
    /// in ascending sector order from where the last one ended (`next_rq`);
    /// a new batch serves reads unless writes have waited through
    /// `writes_starved` (2) read batches, and starts at the oldest piece of
    /// its direction when that one has expired or the sweep reached the end.
    Deadline,
    /// `cfq` (block/cfq-iosched.c, 3.0's default), with one cgroup and
    /// every task at the default best-effort priority: a queue per process
    /// for its synchronous requests (its io_context's cfqq: its reads, and
    /// writes submitted WRITE_SYNC, which are REQ_NOIDLE, so the disk never
    /// idles for such a queue and they count as reads below) and one
    /// shared queue for asynchronous writes; sync bios merge only within
    /// their own queue. A queue that becomes busy, or whose slice ends with requests
    /// left, joins its workload's service tree with the key now + (queues
    /// - 1) x (180 ms - its priority slice: 100 ms sync, 40 ms async), so
    /// writes wait longer (cfq_slice_offset). The disk serves one workload,
    /// sync or async, until its workload slice ends (300 ms x its queues /
    /// busy queues; async: also at most 300 ms x async queues / busy
    /// queues, then x 40/100; sync at least 16 ms), then the workload whose
    /// first queue has the lowest key (cfq_choose_wl). In a workload, the
    /// queue with the lowest key is served alone for its slice
    /// (cfq_scaled_cfqq_slice: 100 or 40 ms, scaled down by low_latency
    /// when the busy queues' sync slices add up to more than 300 ms) or
    /// until it has nothing left, in ascending sector order from the head;
    /// a reader whose last 32 reads were not seeky (at most 4 farther than
    /// 800 sectors from the one before) and whose mean think time (from a
    /// read's completion to its next read, decaying as
    /// cfq_update_io_thinktime's) is at most `slice_idle` (8 ms) keeps the
    /// disk idle up to `slice_idle` for its next read (cfq_arm_slice_timer),
    /// its idle timer being a block event. A read that arrives while the
    /// writes have the disk preempts them (cfq_should_preempt: sync over
    /// async): its queue goes to the front and becomes the active queue;
    /// the writes keep the rest of their slice. A queue's slice starts at
    /// its first completion (cfq_set_prio_slice), and a reader keeps the
    /// disk without idling while a read of its own is in the drive. What
    /// goes into the drive follows cfq_may_dispatch: no write while a read
    /// is in the drive; no read of an idling reader while writes are (they
    /// drain first; 3.0 also drains them for a reader alone in its service
    /// tree, which needs the SYNC_NOIDLE tree the model lacks); a queue
    /// puts up to cfq_quantum / 2 (4) pieces into the drive, and, when
    /// other queues are busy, up to cfq_quantum (8) once its slice has
    /// started and is far enough from its end (slice_idle for each piece
    /// in the drive: cfq_slice_used_soon), any number when it is the only
    /// busy queue (or the only reader); and the writes at most one per
    /// 100 ms since a read last waited 125 ms (at least one when none of
    /// theirs is in the drive).
    /// Simplified: a queue's "existing queues" count is the busy ones; no
    /// separate SYNC_NOIDLE tree (seeky readers), no FIFO expiry inside a
    /// queue, no other preemption rule.
    Cfq,
}

/// cfq's slices (3.0 defaults, ns): `slice_sync` HZ/10, `slice_async`
/// HZ/25, `slice_idle` HZ/125, and low_latency's `target_latency` HZ*3/10.
const CFQ_SLICE_SYNC: u64 = 100_000_000;
const CFQ_SLICE_ASYNC: u64 = 40_000_000;
const CFQ_SLICE_IDLE: u64 = 8_000_000;
const CFQ_TARGET_LATENCY: u64 = 300_000_000;
/// `cfq_quantum` (3.0: 8): half of it is what a queue normally has in the
/// drive at once, all of it once its slice has started and is far from its
/// end while other queues are busy (cfq_may_dispatch); and
/// `fifo_expire_sync` (HZ/8), past which a read counts as delayed
/// (last_delayed_sync).
const CFQ_QUANTUM: u32 = 8;
const CFQ_FIFO_EXPIRE_SYNC: u64 = 125_000_000;
/// The cfq queue of every asynchronous request.
const ASYNC_Q: u32 = u32::MAX - 1; // below NONE (u32::MAX), above every io_context id

/// cfq_scaled_cfqq_slice (3.0, low_latency): the slice of a queue of the
/// given kind when `busy` queues share the disk.
pub fn cfq_slice(sync: bool, busy: u64) -> u64 {
    let base = if sync { CFQ_SLICE_SYNC } else { CFQ_SLICE_ASYNC };
    let expect = CFQ_SLICE_SYNC * busy.max(1);
    if expect <= CFQ_TARGET_LATENCY {
        return base;
    }
    let low = base.min(2 * CFQ_SLICE_IDLE * base / CFQ_SLICE_SYNC);
    (base * CFQ_TARGET_LATENCY / expect).max(low)
}

/// deadline's `fifo_batch` and `writes_starved` defaults (3.0).
const FIFO_BATCH: u32 = 16;
const WRITES_STARVED: u32 = 2;
/// deadline's `read_expire` (HZ/2) and `write_expire` (5*HZ), in ns.
const FIFO_EXPIRE: [u64; 2] = [500_000_000, 5_000_000_000];

/// Direction of a bio (rq_data_dir). Reads are BLK_RW_SYNC, writes
/// BLK_RW_ASYNC unless submitted WRITE_SYNC ([`BlockLayer::submit_sync_write`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Dir {
    #[default]
    Read,
    Write,
}

impl Dir {
    /// Index for per-direction arrays and edge bits: Read = 0, Write = 1.
    #[inline]
    pub fn idx(self) -> usize {
        self as usize
    }
}

/// Outcome of [`BlockLayer::submit`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Submit {
    /// Back-merged into a queued request.
    Merged,
    /// A new request was allocated.
    Queued,
    /// Nothing was queued: the direction's request list is full. Retry after
    /// a request of that direction completes.
    Full,
}

/// One completed bio. Its pfns are `BlockLayer::pages(&c)`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Completion {
    pub dev: u16,
    pub dir: Dir,
    /// The request was REQ_SYNC (it freed a request of the sync list).
    pub sync: bool,
    pub tag: u32,
    /// Offset of the bio's pfns in the completion buffer.
    pub first_page: u32,
    pub nr_pages: u32,
}

/// Per-device counters, indexed by [`Dir::idx`].
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct DevStats {
    /// Sectors submitted (counted at submit, as `submit_bio`).
    pub sectors: [u64; 2],
    /// Requests allocated.
    pub requests: [u64; 2],
    /// Bios back-merged into an existing request.
    pub merges: [u64; 2],
    /// Requests completed.
    pub completed: [u64; 2],
    /// The most requests one request list of the device had allocated,
    /// per list: sync (reads and WRITE_SYNC writes), async.
    pub peak: [u32; 2],
    /// Bios submitted to the device (md_make_request's ios[rw]): a bio
    /// that would cross a chunk boundary is two, as raid0_mergeable_bvec
    /// ends a bio there.
    pub bios: [u64; 2],
}

/// What /proc/diskstats prints for one request queue (3.0: blk-core.c's
/// accounting, genhd.c's diskstats_show), per member disk: a request is
/// in flight from its allocation to its completion; at completion it adds
/// one I/O, its sectors and the jiffies it lived (`ticks`); a bio merged
/// into it is a merge; `io_ticks` and `time_in_queue` integrate the
/// in-flight count over jiffies (part_round_stats).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct DiskIo {
    pub ios: [u64; 2],
    pub merges: [u64; 2],
    pub sectors: [u64; 2],
    pub ticks: [u64; 2],
    pub in_flight: u32,
    pub io_ticks: u64,
    pub time_in_queue: u64,
    /// Jiffies of the last part_round_stats.
    pub stamp: u64,
}

impl DiskIo {
    /// part_round_stats_single at jiffy `now`.
    fn round(&mut self, now: u64) {
        if now <= self.stamp {
            return;
        }
        if self.in_flight > 0 {
            self.time_in_queue += u64::from(self.in_flight) * (now - self.stamp);
            self.io_ticks += now - self.stamp;
        }
        self.stamp = now;
    }

    /// The counters as diskstats_show reads them at jiffy `now` (it rounds first).
    pub fn at(&self, now: u64) -> DiskIo {
        let mut c = *self;
        c.round(now);
        c
    }
}

/// `q->nr_batching` (BLK_BATCH_REQ): requests a batcher may take past the full mark.
pub const BLK_BATCH_REQ: u32 = 32;

/// A task's `io_context` batching state (block/blk-core.c, 3.0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ioc {
    /// The task the io_context belongs to (pid + 1; 0: none): cfq keeps a
    /// queue of synchronous requests per io_context.
    pub id: u32,
    /// `nr_batch_requests`: requests left in the batch.
    pub nr_batch: u32,
    /// `last_waited`: when the batch began (ns).
    pub last_waited: u64,
}

/// ioc_batching: a fresh batch, or one with requests left begun less than
/// BLK_BATCH_TIME (`batch_time` ns) ago.
fn ioc_batching_at(ioc: &Ioc, now: u64, batch_time: u64) -> bool {
    ioc.nr_batch == BLK_BATCH_REQ || (ioc.nr_batch > 0 && now < ioc.last_waited + batch_time)
}

/// 3.0 `blk_queue_congestion_threshold`: (on, off) from `nr_requests`.
/// on = nr - nr/8 + 1 (at most nr); off = nr - nr/8 - nr/16 - 1 (at least 1).
pub fn congestion_thresholds(nr_requests: u32) -> (u32, u32) {
    let nr = i64::from(nr_requests);
    let on = (nr - nr / 8 + 1).min(nr);
    let off = (nr - nr / 8 - nr / 16 - 1).max(1);
    (on as u32, off as u32)
}

/// Bit of `(dev, dir)` in the mask returned by [`BlockLayer::take_uncongested_edges`].
#[inline]
pub fn edge_bit(dev: usize, dir: Dir) -> u32 {
    1 << (2 * dev + dir.idx())
}

const NO_POS: u64 = u64::MAX;
/// A slot not in the merge hash.
const MERGE_NONE: u64 = u64::MAX;

/// The back-merge key of a request of `dir` ending at block `end`.
#[inline]
fn merge_key(end: u64, dir: Dir) -> u64 {
    (end << 1) | dir.idx() as u64
}

/// The elevator's back-merge hash (3.0's elv_rqhash, keyed by where a
/// request ends): the queued requests not yet started, by (end block,
/// direction), chained per bucket through per-slot links. Preallocated:
/// no allocation per bio.
#[derive(Clone, Debug)]
struct MergeHash {
    /// Per slot: its key, MERGE_NONE when not hashed.
    key: Vec<u64>,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Per bucket: the first slot of its chain.
    head: Vec<u32>,
    bits: u32,
}

impl MergeHash {
    fn new(slots: usize) -> MergeHash {
        let nb = (2 * slots).next_power_of_two().max(2);
        MergeHash {
            key: vec![MERGE_NONE; slots],
            next: vec![NONE; slots],
            prev: vec![NONE; slots],
            head: vec![NONE; nb],
            bits: nb.trailing_zeros(),
        }
    }

    #[inline]
    fn bucket(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.bits)) as usize
    }

    /// Take slot `s` out of the hash (elv_rqhash_del); nothing if not in it.
    fn del(&mut self, s: usize) {
        if self.key[s] == MERGE_NONE {
            return;
        }
        let (n, p) = (self.next[s], self.prev[s]);
        if p != NONE {
            self.next[p as usize] = n;
        } else {
            let b = self.bucket(self.key[s]);
            self.head[b] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
        self.key[s] = MERGE_NONE;
    }

    /// Hash slot `s` under `key` (elv_rqhash_reposition).
    fn set(&mut self, s: usize, key: u64) {
        self.del(s);
        let b = self.bucket(key);
        let h = self.head[b];
        self.key[s] = key;
        self.prev[s] = NONE;
        self.next[s] = h;
        if h != NONE {
            self.prev[h as usize] = s as u32;
        }
        self.head[b] = s as u32;
    }

    /// The lowest slot hashed under `key` that `fits` accepts.
    fn find(&self, key: u64, fits: impl Fn(usize) -> bool) -> Option<usize> {
        let mut best: Option<usize> = None;
        let mut c = self.head[self.bucket(key)];
        while c != NONE {
            let s = c as usize;
            if self.key[s] == key && best.is_none_or(|b| s < b) && fits(s) {
                best = Some(s);
            }
            c = self.next[s];
        }
        best
    }

    fn bytes(&self) -> usize {
        8 * self.key.capacity() + 4 * (self.next.capacity() + self.prev.capacity() + self.head.capacity())
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Req {
    in_use: bool,
    started: bool,
    dir: Dir,
    /// REQ_SYNC: a read, or a write submitted WRITE_SYNC (jbd2's log). It
    /// takes a request of the sync list (`rl->count[BLK_RW_SYNC]`) and, in
    /// cfq, goes on its task's sync queue; deadline files it by direction.
    sync: bool,
    /// cfq: the queue the request is on (the submitting task's io_context
    /// id for a sync request, ASYNC_Q for any other write).
    owner: u32,
    seq: u64,
    /// First block (page) on the device and length in pages.
    block: u64,
    npages: u32,
    nbios: u32,
    /// Submit time of the latest bio: no piece starts before it.
    arrive: u64,
    /// Jiffies at allocation (rq->start_time), for diskstats' ticks.
    born: u64,
    /// Pieces not yet completed.
    pending: u32,
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Disk {
    /// Slots with a piece waiting on this disk, per direction (cfq: sync,
    /// then async), in arrival order. Invariant: `!busy` implies both empty.
    fifo: [VecDeque<u32>; 2],
    /// deadline only: the same slots per direction sorted by (disk-local
    /// start sector, arrival stamp), deadline's `sort_list`.
    sorted: [Vec<u32>; 2],
    /// deadline's `next_rq`: the piece after the last one dispatched in
    /// sector order, in that one's direction (at most one is not NONE).
    next: [u32; 2],
    /// Pieces dispatched in the current batch, and read batches begun
    /// while writes waited (`batching`, `starved`).
    batching: u32,
    starved: u32,
    /// The slot whose piece is in service while `busy`.
    cur: u32,
    /// Slots dispatched to the drive and waiting there (native command
    /// queueing), in dispatch order: out of the elevator, no longer
    /// mergeable; at most `depth` - 1 besides the one in service.
    drive: Vec<u32>,
    /// How many times in a row the oldest piece in the drive was passed
    /// over for a nearer one (the drive's aging: see [`Queue::pick`]).
    bypass: u32,
    busy: bool,
    end: u64,
    svc: u64,
    /// Disk-local sector after the last piece started (NO_POS: none yet).
    pos: u64,
    busy_ns: u64,
    /// Of `busy_ns`, the time spent reaching the pieces' first sectors
    /// (seek and rotation), and the pieces served.
    access_ns: u64,
    pieces: u64,
    /// The member's /proc/diskstats counters.
    io: DiskIo,
    /// cfq: the active queue (NONE: none), and when its slice began and ends.
    cq: u32,
    q_start: u64,
    q_end: u64,
    /// cfq: the busy queues waiting for a turn, as (rb_key, insertion
    /// order, queue): the service trees of the sync and async workloads
    /// in one list.
    tree: Vec<(u64, u64, u32)>,
    /// cfq: the workload being served (0 sync, 1 async) and when its
    /// workload slice ends.
    wl: usize,
    wl_end: u64,
    /// cfq: insertions into `tree` so far (ties of keys go in that order).
    tseq: u64,
    /// cfq: no request of the active queue has completed in its slice yet
    /// (cfq_cfqq_slice_new): the slice has not started, `q_end` is not
    /// yet its end. And the slice's length, fixed when it was chosen.
    q_new: bool,
    q_slice: u64,
    /// cfq: the reader whose read preempts the writes once those pieces
    /// are done (NONE: none).
    preempt: u32,
    /// cfq: when a read last completed 125 ms or more after it was queued
    /// (last_delayed_sync; NO_POS: never).
    last_delayed_sync: u64,
    /// cfq: the idle timer (0: not armed): the disk waits until then for
    /// the active sync queue's next request (cfq_arm_slice_timer).
    idle_until: u64,
    /// cfq, per io_context id: what the disk's cfq_io_context knows of
    /// the task's reads (seekiness, think time).
    cic: Vec<Cic>,
}

/// cfq's per-task, per-disk state of a reader (struct cfq_io_context and
/// its cfqq's seek fields), 3.0.
#[derive(Clone, Copy, Debug)]
struct Cic {
    /// Where its last read dispatched here ended (NO_POS: none), and the
    /// last 32 reads' seek history: a bit per read farther than
    /// CFQQ_SEEK_THR (800 sectors) from the one before (CFQQ_SEEKY: more
    /// than 4 set).
    last_pos: u64,
    hist: u32,
    /// When its last read here completed (NO_POS: none), and the think
    /// time's decaying sums (cfq_update_io_thinktime: samples and total
    /// in 1/256 units, each sample at most 2 x slice_idle).
    last_end: u64,
    samples: u64,
    total: u64,
    /// The idle window (cfq_update_idle_window): on, and once the sample
    /// count passes 80/256 (the third read) on while the mean think time
    /// is at most slice_idle.
    idle: bool,
}

impl Cic {
    const NEW: Cic = Cic { last_pos: NO_POS, hist: 0, last_end: NO_POS, samples: 0, total: 0, idle: true };
}

impl Disk {
    fn cic(&mut self, q: u32) -> &mut Cic {
        if self.cic.len() <= q as usize {
            self.cic.resize(q as usize + 1, Cic::NEW);
        }
        &mut self.cic[q as usize]
    }

    /// When something next happens on the disk: its piece in service
    /// ends, or (cfq) its idle timer runs out.
    fn event(&self) -> Option<u64> {
        if self.busy {
            Some(self.end)
        } else if self.idle_until != 0 {
            Some(self.idle_until)
        } else {
            None
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Timing {
    access_ns: u64,
    bytes_per_s: u64,
    /// 0: flat `access_ns`. Else ns per revolution, and the seek curve.
    rev_ns: u64,
    track_ns: u64,
    full_ns: u64,
    /// Sectors of one member disk.
    disk_sectors: u64,
}

impl Timing {
    fn xfer(self, sectors: u64) -> u64 {
        (u128::from(sectors) * 512 * 1_000_000_000).div_ceil(u128::from(self.bytes_per_s)) as u64
    }

    /// Time to reach `start` with the head after sector `pos` (NO_POS: unknown).
    /// With a seek curve: a start less than one revolution's worth of sectors
    /// ahead is waited for (the gap passes under the head); anything else
    /// costs track + (full - track) x sqrt(distance / disk), the usual
    /// square-root shape of a short seek dominated by acceleration, plus half
    /// a revolution of rotational latency on average.
    fn access(self, pos: u64, start: u64) -> u64 {
        if pos == start {
            return 0;
        }
        if self.rev_ns == 0 || pos == NO_POS {
            return if self.rev_ns == 0 { self.access_ns } else { self.full_ns / 2 + self.rev_ns / 2 };
        }
        if start > pos {
            let gap = self.xfer(start - pos);
            if gap < self.rev_ns {
                return gap;
            }
        }
        let dist = start.abs_diff(pos).min(self.disk_sectors);
        let frac = (dist as f64 / self.disk_sectors as f64).sqrt();
        let seek = self.track_ns + ((self.full_ns - self.track_ns) as f64 * frac) as u64;
        seek + self.rev_ns / 2
    }
}

struct Queue {
    n: usize,
    chunk: u64,
    maxp: usize,
    nr: u32,
    on: u32,
    off: u32,
    size_pages: u64,
    tm: Timing,
    elevator: Elevator,
    /// Pieces a disk's drive holds at once (`queue_depth`).
    depth: u32,
    /// Per slot and disk: when its piece joined the disk's FIFO (a counter),
    /// and the simulated time it did (deadline's expiry).
    stamp: Vec<u64>,
    stamps: u64,
    queued: Vec<u64>,
    reqs: Vec<Req>,
    /// The queued requests not yet started, by where they end (back merges).
    hash: MergeHash,
    free: Vec<u32>,
    /// Per slot, `maxp` entries each: pfns, and per merged bio its tag and length.
    pfn: Vec<u32>,
    bio_tag: Vec<u32>,
    bio_len: Vec<u32>,
    /// Per slot, `n` entries: (disk-local start sector, sectors); 0 sectors = none.
    piece: Vec<(u64, u64)>,
    disks: Vec<Disk>,
    /// Allocated requests per direction, all members together.
    count: [u32; 2],
    /// bdi_congested of the device: for md RAID-0, any member's
    /// (raid0_congested).
    congested: [bool; 2],
    /// Per member disk: its own request list's count and congestion (md is
    /// bio-based in 3.0; each member's queue allocates its own requests).
    mcount: Vec<[u32; 2]>,
    mcongested: Vec<[bool; 2]>,
    /// Per member and direction: `blk_queue_full` (set by the allocation
    /// that fills the list, cleared when a freed request leaves room).
    mfull: Vec<[bool; 2]>,
    /// cfq: scratch list of the busy queues (no allocation per dispatch).
    owners: Vec<u32>,
    /// cfq: idle timers that ran out.
    idle_fired: u64,
    /// Request-list id of member 0 (the others follow).
    base: u32,
    hint: usize,
    seq: u64,
    /// The earliest end of a piece in service (cached): the next event.
    next: Option<u64>,
    stats: DevStats,
    /// HZ: diskstats counts in jiffies (ns x HZ / 1e9, as `Kernel::jiffies`).
    hz: u64,
}

impl Queue {
    fn new(s: &DeviceSpec, page_size: u32) -> Queue {
        assert!(s.disks >= 1 && s.bandwidth_mib_s > 0 && s.nr_requests > 0, "device {}: bad spec", s.name);
        assert!(s.disks == 1 || s.chunk_kib > 0, "device {}: chunk_kib must be > 0", s.name);
        let n = s.disks as usize;
        let maxp = ((u64::from(s.max_sectors_kib) * 1024 / u64::from(page_size)) as usize).max(1);
        // Each member disk has its own request list, up to 3/2 x
        // nr_requests per direction with batchers.
        let slots = 2 * (3 * s.nr_requests as usize / 2).max(1) * n;
        let (on, off) = congestion_thresholds(s.nr_requests);
        let fifo = [VecDeque::with_capacity(slots), VecDeque::with_capacity(slots)];
        let sorted = if s.elevator != Elevator::Noop {
            [Vec::with_capacity(slots), Vec::with_capacity(slots)]
        } else {
            [Vec::new(), Vec::new()]
        };
        let disk = Disk {
            fifo,
            sorted,
            next: [NONE; 2],
            batching: 0,
            starved: 0,
            cur: 0,
            drive: Vec::with_capacity(s.queue_depth as usize),
            bypass: 0,
            busy: false,
            end: 0,
            svc: 0,
            pos: NO_POS,
            busy_ns: 0,
            access_ns: 0,
            pieces: 0,
            io: DiskIo::default(),
            cq: NONE,
            q_start: 0,
            q_end: 0,
            tree: Vec::new(),
            wl: 0,
            wl_end: 0,
            tseq: 0,
            idle_until: 0,
            cic: Vec::new(),
            q_new: false,
            q_slice: 0,
            preempt: NONE,
            last_delayed_sync: NO_POS,
        };
        let disk_sectors = ((s.size_mib << 11) / n as u64).max(1);
        Queue {
            n,
            chunk: if n == 1 { u64::MAX } else { u64::from(s.chunk_kib) * 2 },
            maxp,
            nr: s.nr_requests,
            on,
            off,
            size_pages: s.size_mib * (1 << 20) / u64::from(page_size),
            tm: Timing {
                access_ns: u64::from(s.access_us) * 1000,
                bytes_per_s: u64::from(s.bandwidth_mib_s) << 20,
                rev_ns: if s.rpm == 0 { 0 } else { 60_000_000_000 / u64::from(s.rpm) },
                track_ns: u64::from(s.track_seek_us) * 1000,
                full_ns: u64::from(s.full_seek_us.max(s.track_seek_us)) * 1000,
                disk_sectors,
            },
            elevator: s.elevator,
            depth: s.queue_depth.max(1),
            stamp: vec![0; slots * n],
            stamps: 0,
            queued: vec![0; slots * n],
            reqs: vec![Req::default(); slots],
            hash: MergeHash::new(slots),
            free: (0..slots as u32).rev().collect(),
            pfn: vec![0; slots * maxp],
            bio_tag: vec![0; slots * maxp],
            bio_len: vec![0; slots * maxp],
            piece: vec![(0, 0); slots * n],
            disks: vec![disk; n],
            count: [0; 2],
            congested: [false; 2],
            mcount: vec![[0; 2]; n],
            mcongested: vec![[false; 2]; n],
            mfull: vec![[false; 2]; n],
            owners: if s.elevator == Elevator::Cfq { Vec::with_capacity(slots) } else { Vec::new() },
            idle_fired: 0,
            base: 0,
            hint: 0,
            seq: 0,
            next: None,
            stats: DevStats::default(),
            hz: 250,
        }
    }

    /// raid0 `map_sector` for one strip zone: (member disk, disk-local sector).
    fn map(&self, sector: u64) -> (usize, u64) {
        if self.n == 1 {
            return (0, sector);
        }
        let (chunk, off) = (sector / self.chunk, sector % self.chunk);
        let n = self.n as u64;
        ((chunk % n) as usize, (chunk / n) * self.chunk + off)
    }

    fn mergeable(&self, s: usize, dir: Dir, block: u64, np: usize, spp: u64, owner: u32) -> bool {
        let r = &self.reqs[s];
        r.in_use
            && !r.started
            && r.dir == dir
            // cfq_allow_merge: a read joins only a request of its own queue.
            && (self.elevator != Elevator::Cfq || r.owner == owner)
            && r.block + u64::from(r.npages) == block
            && r.npages as usize + np <= self.maxp
            // A request is one member's: it stays within one chunk.
            && (self.n == 1 || (r.block * spp) / self.chunk == (block * spp) / self.chunk)
    }

    /// The jiffy of simulated time `ns`. (A submit is stamped with its
    /// task's clock, which may run a few microseconds past a completion the
    /// event loop has yet to process; `DiskIo::round` ignores time going
    /// back, so such a completion's jiffy is taken as the later one.)
    fn jiffies(&self, ns: u64) -> u64 {
        (u128::from(ns) * u128::from(self.hz) / 1_000_000_000) as u64
    }

    /// The member disk whose request list a request starting at page `block` is on.
    fn member(&self, block: u64, spp: u64) -> usize {
        self.map(block * spp).0
    }

    /// Append a bio's pfns to slot `s` and add its sectors to the pieces.
    fn append(&mut self, s: usize, now: u64, pfns: &[u32], tag: u32, spp: u64) {
        let r = &mut self.reqs[s];
        let (base, at, b) = (s * self.maxp, r.npages as usize, r.nbios as usize);
        let sector = (r.block + u64::from(r.npages)) * spp;
        r.npages += pfns.len() as u32;
        r.nbios += 1;
        r.arrive = now;
        let key = merge_key(r.block + u64::from(r.npages), r.dir);
        self.hash.set(s, key);
        self.pfn[base + at..base + at + pfns.len()].copy_from_slice(pfns);
        self.bio_tag[base + b] = tag;
        self.bio_len[base + b] = pfns.len() as u32;
        let (mut pos, end) = (sector, sector + pfns.len() as u64 * spp);
        while pos < end {
            let (d, local) = self.map(pos);
            let len = (end - pos).min(self.chunk - pos % self.chunk);
            let p = &mut self.piece[s * self.n + d];
            if p.1 == 0 {
                *p = (local, len);
                self.reqs[s].pending += 1;
                self.stamp[s * self.n + d] = self.stamps;
                self.queued[s * self.n + d] = now;
                self.stamps += 1;
                // The disk's lists: deadline files a piece by direction
                // (rq_data_dir), cfq by sync-ness (its sync queues and the
                // async one), so a WRITE_SYNC is with the reads there.
                let dir = if self.elevator == Elevator::Cfq { usize::from(!self.reqs[s].sync) } else { self.reqs[s].dir.idx() };
                if self.reqs[s].sync && self.elevator == Elevator::Cfq {
                    // cfq_update_io_thinktime and cfq_update_idle_window; a
                    // WRITE_SYNC is REQ_NOIDLE: no idling for its queue.
                    let noidle = self.reqs[s].dir == Dir::Write;
                    let c = self.disks[d].cic(self.reqs[s].owner);
                    if noidle {
                        c.idle = false;
                    } else if c.last_end != NO_POS {
                        let ttime = now.saturating_sub(c.last_end).min(2 * CFQ_SLICE_IDLE);
                        c.samples = (7 * c.samples + 256) / 8;
                        c.total = (7 * c.total + 256 * ttime) / 8;
                        if c.samples > 80 {
                            c.idle = (c.total + 128) / c.samples <= CFQ_SLICE_IDLE;
                        }
                    }
                }
                self.disks[d].fifo[dir].push_back(s as u32);
                if self.elevator != Elevator::Noop {
                    let at = self.sort_pos(d, dir, s as u32);
                    self.disks[d].sorted[dir].insert(at, s as u32);
                }
            } else {
                debug_assert_eq!(p.0 + p.1, local, "raid0 piece not contiguous");
                p.1 += len;
            }
            pos += len;
        }
        for d in 0..self.n {
            if !self.disks[d].busy || self.disks[d].drive.len() + 1 < self.depth as usize {
                self.start(d, now);
            }
        }
    }

    /// Sort key of slot `s`'s piece on disk `d`.
    #[inline]
    fn key(&self, s: u32, d: usize) -> (u64, u64) {
        let i = s as usize * self.n + d;
        (self.piece[i].0, self.stamp[i])
    }

    /// Where slot `s` goes (or is) in disk `d`'s sorted list of `dir`.
    fn sort_pos(&self, d: usize, dir: usize, s: u32) -> usize {
        let k = self.key(s, d);
        self.disks[d].sorted[dir].partition_point(|&x| self.key(x, d) < k)
    }

    /// The elevator's next piece on disk `d` at time `t`, taken off its
    /// lists: (direction, slot). None when nothing waits.
    fn dispatch(&mut self, d: usize, t: u64) -> Option<(usize, u32)> {
        if self.elevator == Elevator::Noop {
            let f = &self.disks[d].fifo;
            let dir = match (f[0].front(), f[1].front()) {
                (None, None) => return None,
                (Some(_), None) => 0,
                (None, Some(_)) => 1,
                (Some(&r), Some(&w)) => usize::from(self.key(w, d).1 < self.key(r, d).1),
            };
            let s = self.disks[d].fifo[dir].pop_front().expect("a waiting piece");
            return Some((dir, s));
        }
        if self.elevator == Elevator::Cfq {
            return self.cfq_dispatch(d, t);
        }
        // deadline_dispatch_requests: go on with the batch in sector order...
        let k = &self.disks[d];
        let cont = (0..2).find(|&x| k.next[x] != NONE).filter(|_| k.batching < FIFO_BATCH);
        let (dir, s) = if let Some(dir) = cont {
            (dir, k.next[dir])
        } else {
            // ...or begin one: reads unless writes starved, at the oldest
            // piece if it expired or the sweep ended, else where it was.
            let (reads, writes) = (!k.sorted[0].is_empty(), !k.sorted[1].is_empty());
            let k = &mut self.disks[d];
            let dir = if reads {
                let starved = writes && {
                    k.starved += 1;
                    k.starved > WRITES_STARVED
                };
                usize::from(starved)
            } else if writes {
                1
            } else {
                return None;
            };
            if dir == 1 {
                k.starved = 0;
            }
            k.batching = 0;
            let front = *k.fifo[dir].front().expect("sorted and fifo hold the same pieces");
            let expired = t > self.queued[front as usize * self.n + d] + FIFO_EXPIRE[dir];
            (dir, if expired || k.next[dir] == NONE { front } else { k.next[dir] })
        };
        // deadline_move_request: next_rq is the piece after it in sector order.
        let at = self.sort_pos(d, dir, s);
        let k = &mut self.disks[d];
        debug_assert_eq!(k.sorted[dir][at], s);
        k.batching += 1;
        k.sorted[dir].remove(at);
        k.next = [NONE; 2];
        if let Some(&n) = k.sorted[dir].get(at) {
            k.next[dir] = n;
        }
        let f = k.fifo[dir].iter().position(|&x| x == s).expect("sorted and fifo hold the same pieces");
        k.fifo[dir].remove(f);
        Some((dir, s))
    }

    /// Does cfq queue `q` have a piece waiting on disk `d`?
    fn cfq_has(&self, d: usize, q: u32) -> bool {
        if q == ASYNC_Q {
            return !self.disks[d].sorted[1].is_empty();
        }
        self.disks[d].sorted[0].iter().any(|&s| self.reqs[s as usize].owner == q)
    }

    /// cfq_service_tree_add: queue `q` joins its service tree at time `t`.
    fn cfq_tree_add(&mut self, d: usize, q: u32, t: u64, nr: u64) {
        let prio_slice = if q == ASYNC_Q { CFQ_SLICE_ASYNC } else { CFQ_SLICE_SYNC };
        // cfq_prio_slice(sync, prio 0) = 100 + 100/5 x 4 ms.
        let key = t + nr.saturating_sub(1) * (CFQ_SLICE_SYNC * 9 / 5 - prio_slice);
        let k = &mut self.disks[d];
        k.tseq += 1;
        k.tree.push((key, k.tseq, q));
    }

    /// cfq_dispatch_requests, as [`Elevator::Cfq`] describes it.
    fn cfq_dispatch(&mut self, d: usize, t: u64) -> Option<(usize, u32)> {
        if self.disks[d].sorted[0].is_empty() && self.disks[d].sorted[1].is_empty() {
            return None;
        }
        // Queues that became busy since the last dispatch join their tree,
        // at the time their first waiting piece came (cfq_add_cfqq_rr).
        let mut owners = std::mem::take(&mut self.owners);
        owners.clear();
        for &x in &self.disks[d].sorted[0] {
            owners.push(self.reqs[x as usize].owner);
        }
        if !self.disks[d].sorted[1].is_empty() {
            owners.push(ASYNC_Q);
        }
        owners.sort_unstable();
        owners.dedup();
        let nr = owners.len() as u64;
        for &q in &owners {
            if q != self.disks[d].cq && !self.disks[d].tree.iter().any(|e| e.2 == q) {
                let dir = usize::from(q == ASYNC_Q);
                let since = self.disks[d].fifo[dir]
                    .iter()
                    .filter(|&&x| dir == 1 || self.reqs[x as usize].owner == q)
                    .map(|&x| self.queued[x as usize * self.n + d])
                    .min()
                    .unwrap_or(t);
                self.cfq_tree_add(d, q, since, nr);
            }
        }
        self.owners = owners;
        if self.disks[d].cq == ASYNC_Q && self.disks[d].preempt == NONE {
            // cfq_should_preempt, at the read's arrival: a read that came
            // while the writes had the disk preempts them (sync over async).
            let q_start = self.disks[d].q_start;
            if let Some(x) = self.disks[d].fifo[0].iter().copied().find(|&x| self.queued[x as usize * self.n + d] >= q_start) {
                self.disks[d].preempt = self.reqs[x as usize].owner;
            }
        }
        let k = &self.disks[d];
        if k.cq == ASYNC_Q && k.preempt != NONE {
            // cfq_preempt_queue: the writes keep what was left of their
            // slice (slice_resid); the reader goes to the front of its
            // tree, a second ahead of the first queue, and is served next
            // (its reads go to the drive once the writes there are done:
            // cfq_may_dispatch below).
            let reader = k.preempt;
            let resid = if k.q_new { k.q_slice } else { k.q_end.saturating_sub(t) };
            if !self.disks[d].sorted[1].is_empty() {
                self.cfq_tree_add(d, ASYNC_Q, t.saturating_sub(resid), nr);
            }
            let k = &mut self.disks[d];
            k.preempt = NONE;
            k.tree.retain(|e| e.2 != reader);
            let front = k.tree.iter().map(|e| e.0).min().unwrap_or(t).saturating_sub(1_000_000_000);
            k.tseq += 1;
            k.tree.push((front, k.tseq, reader));
            k.cq = NONE;
            k.wl_end = 0;
        }
        let cq = self.disks[d].cq;
        let has = cq != NONE && self.cfq_has(d, cq);
        // cfq_slice_used: never while the slice is new (it starts at the
        // queue's first completion).
        let live = cq != NONE && (self.disks[d].q_new || t < self.disks[d].q_end);
        if live && !has && cq != ASYNC_Q {
            // The active reader has nothing here: idle for its next read
            // (cfq_should_idle: a sync queue that is not seeky), up to
            // slice_idle, unless the timer already ran out; while a read of
            // its own is still in the drive, keep the disk for it without
            // arming the timer (cfq_select_queue; the timer is armed when
            // that read completes, cfq_arm_slice_timer).
            let c = self.disks[d].cic.get(cq as usize).copied().unwrap_or(Cic::NEW);
            if c.idle && c.hist.count_ones() <= 32 / 8 {
                if self.in_drive(d, cq).2 > 0 {
                    return None;
                }
                let k = &mut self.disks[d];
                if k.idle_until == 0 || t < k.idle_until {
                    if k.idle_until == 0 {
                        k.idle_until = t + CFQ_SLICE_IDLE;
                    }
                    return None;
                }
            }
        }
        self.disks[d].idle_until = 0;
        let keep = live && has;
        if !keep {
            // cfq_slice_expired: a queue with requests left goes back to its tree.
            if cq != NONE && self.cfq_has(d, cq) {
                self.cfq_tree_add(d, cq, t, nr);
            }
            let k = &mut self.disks[d];
            k.cq = NONE;
            let kind = |q: u32| usize::from(q == ASYNC_Q);
            // choose_service_tree: keep the workload while it lasts and has
            // queues, else the one whose first queue has the lowest key.
            let has_wl = k.tree.iter().any(|e| kind(e.2) == k.wl);
            if !(has_wl && t < k.wl_end) {
                let first = k.tree.iter().min_by_key(|e| (e.0, e.1)).expect("a busy queue");
                k.wl = kind(first.2);
                let count = k.tree.iter().filter(|e| kind(e.2) == k.wl).count() as u64;
                let busy = k.tree.len() as u64;
                let mut slice = CFQ_TARGET_LATENCY * count / busy;
                if k.wl == 1 {
                    slice = slice.min(CFQ_TARGET_LATENCY / busy) * CFQ_SLICE_ASYNC / CFQ_SLICE_SYNC;
                } else {
                    slice = slice.max(2 * CFQ_SLICE_IDLE);
                }
                k.wl_end = t + slice;
            }
            // cfq_set_active_queue: the workload's first queue.
            let wl = k.wl;
            let i = (0..k.tree.len()).filter(|&i| kind(k.tree[i].2) == wl).min_by_key(|&i| (k.tree[i].0, k.tree[i].1)).expect("a queue of the workload");
            let (_, _, q) = k.tree.swap_remove(i);
            k.cq = q;
            k.q_start = t;
            k.preempt = NONE;
            k.q_slice = cfq_slice(q != ASYNC_Q, nr);
            k.q_end = t + k.q_slice;
            k.q_new = true;
        }
        if !self.cfq_may_dispatch(d, t, nr) {
            return None;
        }
        let q = self.disks[d].cq;
        let dir = usize::from(q == ASYNC_Q);
        // The queue's next piece in sector order from the head, else its first.
        let pos = self.disks[d].pos;
        let list = &self.disks[d].sorted[dir];
        let from = if pos == NO_POS { 0 } else { list.partition_point(|&x| self.key(x, d).0 < pos) };
        let mine = |&x: &u32| dir == 1 || self.reqs[x as usize].owner == q;
        let at = list[from..].iter().position(mine).map(|i| from + i).or_else(|| list[..from].iter().position(mine)).expect("the queue has a piece here");
        let (start, len) = self.piece[list[at] as usize * self.n + d];
        let k = &mut self.disks[d];
        if dir == 0 {
            // cfq_update_io_seektime: CFQQ_SEEK_THR is 800 sectors.
            let c = k.cic(q);
            let seeky = c.last_pos != NO_POS && start.abs_diff(c.last_pos) > 800;
            c.hist = (c.hist << 1) | u32::from(seeky);
            c.last_pos = start + len;
        }
        let s = k.sorted[dir].remove(at);
        let f = k.fifo[dir].iter().position(|&x| x == s).expect("sorted and fifo hold the same pieces");
        k.fifo[dir].remove(f);
        Some((dir, s))
    }

    /// Pieces on disk `d`'s drive (waiting there or in service) that are
    /// reads, writes, and of cfq queue `q`.
    fn in_drive(&self, d: usize, q: u32) -> (u32, u32, u32) {
        let k = &self.disks[d];
        let (mut sync, mut asy, mut mine) = (0, 0, 0);
        for &s in k.drive.iter().chain(k.busy.then_some(&k.cur)) {
            let r = &self.reqs[s as usize];
            if r.sync {
                sync += 1;
            } else {
                asy += 1;
            }
            mine += u32::from(r.owner == q);
        }
        (sync, asy, mine)
    }

    /// cfq_may_dispatch (3.0) for the active queue of disk `d`, `nr` queues
    /// busy: may it put one more piece into the drive?
    fn cfq_may_dispatch(&self, d: usize, t: u64, nr: u64) -> bool {
        let k = &self.disks[d];
        let q = k.cq;
        let (sync, asy, dispatched) = self.in_drive(d, q);
        let is_sync = q != ASYNC_Q;
        if is_sync {
            // Drain async requests before an idling reader's sync IO.
            let c = k.cic.get(q as usize).copied().unwrap_or(Cic::NEW);
            if c.idle && c.hist.count_ones() <= 32 / 8 && asy > 0 {
                return false;
            }
        } else if sync > 0 {
            // An async queue waits while sync IO is in flight.
            return false;
        }
        let mut max = CFQ_QUANTUM / 2;
        if dispatched >= max {
            // The only busy reader may go as deep as it likes (promote_sync).
            let busy_sync = nr - u64::from(!k.sorted[1].is_empty());
            let promote_sync = is_sync && busy_sync == 1;
            // cfq_slice_used_soon: no request completed yet in this slice
            // (it has not started), or what is in the drive would take it
            // past its end at slice_idle each.
            let used_soon = k.q_new || t + CFQ_SLICE_IDLE * u64::from(dispatched) > k.q_end;
            if nr > 1 && used_soon && !promote_sync {
                return false;
            }
            max = if nr == 1 || promote_sync { u32::MAX } else { CFQ_QUANTUM };
        }
        if !is_sync {
            // Writes ramp up: one request per slice_sync since a read last
            // waited fifo_expire_sync, at least one when none is in the drive.
            let mut depth = if k.last_delayed_sync == NO_POS { u32::MAX } else { (t.saturating_sub(k.last_delayed_sync) / CFQ_SLICE_SYNC).min(u64::from(u32::MAX)) as u32 };
            if depth == 0 && dispatched == 0 {
                depth = 1;
            }
            max = max.min(depth);
        }
        dispatched < max
    }

    /// Fill disk `d`'s drive from the elevator (each piece leaves the
    /// elevator and its request can no longer be merged into), and if the
    /// disk is idle, serve the piece the drive picks, then fill again.
    ///
    /// A drive of `queue_depth` 1 takes one piece at a time in the
    /// elevator's order. A deeper one (native command queueing) holds up
    /// to `queue_depth` pieces and serves first the one it reaches soonest
    /// from where its head is (shortest positioning time), in dispatch
    /// order among equals, except that the oldest piece it holds is served
    /// once it has been passed over `queue_depth` times in a row (aging, so
    /// a far piece is not starved by a stream near the head).
    fn start(&mut self, d: usize, t: u64) {
        self.fill(d, t);
        if !self.disks[d].busy && !self.disks[d].drive.is_empty() {
            let s = self.pick(d);
            self.serve(d, s, t);
            self.fill(d, t);
        }
    }

    fn fill(&mut self, d: usize, t: u64) {
        while self.disks[d].drive.len() + usize::from(self.disks[d].busy) < self.depth as usize {
            let Some((_, s)) = self.dispatch(d, t) else {
                break;
            };
            self.reqs[s as usize].started = true;
            self.hash.del(s as usize);
            self.disks[d].drive.push(s);
        }
    }

    /// The piece the drive serves next, taken off it (see [`Self::start`]).
    fn pick(&mut self, d: usize) -> u32 {
        let k = &self.disks[d];
        let mut best = 0;
        if k.drive.len() > 1 && k.bypass < self.depth {
            let cost = |s: u32| self.tm.access(k.pos, self.piece[s as usize * self.n + d].0);
            let mut c0 = cost(k.drive[0]);
            for (i, &s) in k.drive.iter().enumerate().skip(1) {
                let c = cost(s);
                if c < c0 {
                    (best, c0) = (i, c);
                }
            }
        }
        let k = &mut self.disks[d];
        k.bypass = if best == 0 { 0 } else { k.bypass + 1 };
        k.drive.remove(best)
    }

    /// Serve slot `s`'s piece on disk `d`, no earlier than `t`.
    fn serve(&mut self, d: usize, s: u32, t: u64) {
        self.disks[d].cur = s;
        let (st, len) = self.piece[s as usize * self.n + d];
        let r = &self.reqs[s as usize];
        let disk = &mut self.disks[d];
        let access = self.tm.access(disk.pos, st);
        disk.svc = access + self.tm.xfer(len);
        disk.access_ns += access;
        disk.pieces += 1;
        disk.end = t.max(r.arrive) + disk.svc;
        disk.pos = st + len;
        disk.busy = true;
    }

    /// Recompute `next`: the earliest end of a piece in service.
    fn refresh_next(&mut self) {
        self.next = self.disks.iter().filter_map(Disk::event).min();
    }

    /// Emit one completion per bio of finished request `s` and free it
    /// (`freed_request`). True when the direction became uncongested.
    /// Returns (the member's list stopped being congested, an async request
    /// was freed with its member's list below the congestion-off threshold).
    fn release(&mut self, dev: usize, s: usize, t: u64, spp: u64, pfns: &mut Vec<u32>, out: &mut Vec<Completion>, wakes: &mut Vec<(u32, u8)>) -> (bool, bool) {
        let r = &mut self.reqs[s];
        let (base, mut off) = (s * self.maxp, 0);
        for b in base..base + r.nbios as usize {
            let len = self.bio_len[b] as usize;
            let first_page = pfns.len() as u32;
            pfns.extend_from_slice(&self.pfn[base + off..base + off + len]);
            out.push(Completion {
                dev: dev as u16,
                dir: r.dir,
                sync: r.sync,
                tag: self.bio_tag[b],
                first_page,
                nr_pages: len as u32,
            });
            off += len;
        }
        r.in_use = false;
        self.hash.del(s);
        self.piece[s * self.n..(s + 1) * self.n].fill((0, 0));
        self.free.push(s as u32);
        let (d, first, npages, born) = (r.dir.idx(), r.block, u64::from(r.npages), r.born);
        // The request list it came from: sync (0) or async (1).
        let l = usize::from(!r.sync);
        let m = self.map(first * spp).0;
        self.count[l] -= 1;
        self.mcount[m][l] -= 1;
        self.stats.completed[d] += 1;
        // blk_account_io_completion and blk_account_io_done.
        let j = self.jiffies(t);
        let io = &mut self.disks[m].io;
        io.round(j);
        io.in_flight -= 1;
        io.ios[d] += 1;
        io.sectors[d] += npages * spp;
        io.ticks[d] += j.saturating_sub(born);
        // __freed_request on the member's queue: clear below the off threshold.
        let below_off = self.mcount[m][l] < self.off;
        let edge = self.mcongested[m][l] && below_off;
        self.mcongested[m][l] &= !edge;
        self.congested[l] = self.mcongested.iter().any(|c| c[l]);
        // __freed_request: room below nr_requests clears the full mark and
        // wakes one waiter of the list (wake_up on an exclusive wait).
        if self.mcount[m][l] < self.nr {
            self.mfull[m][l] = false;
            wakes.push((self.base + m as u32, l as u8));
        }
        (edge, below_off && l == 1)
    }
}

impl Kernel {
    /// submit_bio by the task of `ctx`: get_request with the task's
    /// io_context, a batcher if it slept in get_request_wait since its last
    /// request. On [`Submit::Full`] the task's `blocked_list` names the
    /// request list to wait on ([`Self::request_wait_sleep`]).
    pub fn submit_bio(&mut self, ctx: &Ctx, dev: usize, dir: Dir, block: u64, pfns: &[u32], tag: u32) -> Submit {
        self.submit_bio_rw(ctx, dev, dir, dir == Dir::Read, block, pfns, tag)
    }

    /// submit_bio(WRITE_SYNC, ..) by the task of `ctx` (jbd2's log writes):
    /// as [`Self::submit_bio`], from the sync request list.
    pub fn submit_bio_sync(&mut self, ctx: &Ctx, dev: usize, block: u64, pfns: &[u32], tag: u32) -> Submit {
        self.submit_bio_rw(ctx, dev, Dir::Write, true, block, pfns, tag)
    }

    #[allow(clippy::too_many_arguments)]
    fn submit_bio_rw(&mut self, ctx: &Ctx, dev: usize, dir: Dir, sync: bool, block: u64, pfns: &[u32], tag: u32) -> Submit {
        let now = ctx.clock();
        let pid = ctx.pid as usize;
        let mut ioc = self.kt[pid].ioc;
        ioc.id = ctx.pid + 1;
        if std::mem::take(&mut self.kt[pid].ioc_slept) {
            self.blk.ioc_set_batching(&mut ioc, now);
        }
        let r = self.blk.submit_rw(now, dev, dir, sync, block, pfns, tag, &mut ioc);
        self.kt[pid].ioc = ioc;
        if r == Submit::Full {
            self.kt[pid].blocked_list = self.blk.last_full_queue() as u32;
            self.kt[pid].blocked_sync = sync;
        }
        r
    }

    /// get_request_wait's sleep (io_schedule, exclusive) on the request
    /// list that refused the task's last write; woken by a freed request
    /// ([`BlockLayer::take_request_wakes`]), the task is a batcher.
    pub fn request_wait_sleep(&mut self, ctx: &Ctx) -> Next {
        let pid = ctx.pid as usize;
        if let Some(sleep) = self.kt[pid].journal_sleep.take() {
            // Writeback met a locked transaction, not a full queue (jbd2.rs).
            return sleep;
        }
        self.kt[pid].ioc_slept = true;
        let reclaim = self.pending_writes.iter().any(|w| w.pid == ctx.pid);
        self.mm.sim.request_waits[if reclaim { 0 } else { 1 }] += 1;
        let list = usize::from(!self.kt[pid].blocked_sync);
        Next::Sleep { until: None, wq: Some(Wq::Request(self.kt[pid].blocked_list as usize, list)), io: true }
    }

    /// submit_bio from reclaim's pageout, whose pages are under writeback
    /// already (swap_writepage and ->writepage set them before
    /// submitting). A bio the request list refuses waits, and so does its
    /// reclaimer: 3.0 sleeps in get_request_wait right there; the engine
    /// finishes the batch of pages in hand (their bios wait behind the
    /// first), sleeps at its next point that can (`request_wait`), and
    /// submits them when woken ([`Self::submit_pending_writes`]).
    pub fn submit_reclaim_write(&mut self, ctx: &mut Ctx, dev: usize, block: u64, pfns: &[u32], tag: u32) {
        let pid = ctx.pid as usize;
        if self.kt[pid].request_wait || self.submit_bio(ctx, dev, Dir::Write, block, pfns, tag) == Submit::Full {
            let mut buf = self.pending_pool.pop().unwrap_or_default();
            buf.clear();
            buf.extend_from_slice(pfns);
            self.pending_writes.push(PendingWrite { dev, block, pfns: buf, pid: ctx.pid, tag });
            self.kt[pid].pending += 1;
            self.kt[pid].request_wait = true;
        }
    }

    /// The reclaimer of `ctx`, back from get_request_wait, submits its
    /// waiting bios in order, as a batcher. Returns the sleep if a request
    /// list refuses one again. The engine calls it at the start of every
    /// step of a task with bios waiting (kernel.rs), so no path that
    /// resumes the task can leave them behind.
    pub fn submit_pending_writes(&mut self, ctx: &mut Ctx) -> Option<Next> {
        let mut i = 0;
        while i < self.pending_writes.len() && self.kt[ctx.pid as usize].pending > 0 {
            if self.pending_writes[i].pid != ctx.pid {
                i += 1;
                continue;
            }
            let (dev, block, tag) = (self.pending_writes[i].dev, self.pending_writes[i].block, self.pending_writes[i].tag);
            let pfns = std::mem::take(&mut self.pending_writes[i].pfns);
            let r = self.submit_bio(ctx, dev, Dir::Write, block, &pfns, tag);
            if r == Submit::Full {
                self.pending_writes[i].pfns = pfns;
                return Some(self.request_wait_sleep(ctx));
            }
            self.pending_pool.push(pfns);
            self.pending_writes.remove(i);
            self.kt[ctx.pid as usize].pending -= 1;
        }
        None
    }

    /// A reclaimer that cannot sleep here (zone_reclaim runs inside the
    /// allocation's step) leaves its waiting bios to the completion path.
    pub fn orphan_pending_writes(&mut self, pid: u32) {
        for w in self.pending_writes.iter_mut().filter(|w| w.pid == pid) {
            w.pid = NO_OWNER;
        }
        self.kt[pid as usize].pending = 0;
        self.kt[pid as usize].request_wait = false;
    }

    /// Requests were freed: wake one get_request_wait sleeper of the list
    /// per request freed with room left (3.0's exclusive wake_up in
    /// __freed_request), and submit orphaned reclaim writes in order.
    pub fn wake_request_waiters(&mut self, now: u64) {
        let mut wakes = std::mem::take(&mut self.request_wakes);
        self.blk.take_request_wakes(&mut wakes);
        for &(list, d) in &wakes {
            self.sched.wake_up_one(Wq::Request(list as usize, d as usize), now);
        }
        self.request_wakes = wakes;
        let mut i = 0;
        while i < self.pending_writes.len() {
            let w = &self.pending_writes[i];
            if w.pid != NO_OWNER {
                i += 1;
                continue;
            }
            if self.blk.submit(now, w.dev, Dir::Write, w.block, &w.pfns, w.tag) == Submit::Full {
                break;
            }
            let w = self.pending_writes.remove(i);
            self.pending_pool.push(w.pfns);
        }
    }
}

/// All block devices of the machine.
pub struct BlockLayer {
    qs: Vec<Queue>,
    spp: u64,
    nr_congested: [u32; 2],
    edges: u32,
    /// See [`Self::take_async_clear`].
    async_clear: bool,
    done_pfns: Vec<u32>,
    fin: Vec<(u64, u32)>,
    /// First request-list id of each device (its member disks follow).
    qbase: Vec<u32>,
    /// Request lists that freed a request with room left, in order:
    /// (list id, direction), one waiter to wake each.
    wakes: Vec<(u32, u8)>,
    /// The list whose refusal was the last [`Submit::Full`].
    last_full: u32,
    /// The request list (0 sync, 1 async) that refused it.
    last_full_list: u8,
    /// BLK_BATCH_TIME in ns (HZ/50).
    batch_time_ns: u64,
}

impl BlockLayer {
    /// Build the queues. At most 16 devices (edge bitmask); `page_size` a multiple of 512.
    pub fn new(devs: &[DeviceSpec], page_size: u32) -> BlockLayer {
        assert!(devs.len() <= 16 && page_size >= 512 && page_size.is_multiple_of(512));
        let mut qs: Vec<Queue> = devs.iter().map(|d| Queue::new(d, page_size)).collect();
        let slots = qs.iter().map(|q| q.reqs.len()).max().unwrap_or(0);
        let mut qbase = Vec::with_capacity(qs.len());
        let mut lists = 0u32;
        for q in &mut qs {
            q.base = lists;
            qbase.push(lists);
            lists += q.n as u32;
        }
        BlockLayer {
            qs,
            spp: u64::from(page_size / 512),
            nr_congested: [0; 2],
            edges: 0,
            async_clear: false,
            done_pfns: Vec::new(),
            fin: Vec::with_capacity(slots),
            qbase,
            wakes: Vec::with_capacity(slots),
            last_full: 0,
            last_full_list: 1,
            batch_time_ns: 20_000_000,
        }
    }

    /// BLK_BATCH_TIME: HZ/50 jiffies, given in ns by the kernel.
    pub fn set_batch_time_ns(&mut self, ns: u64) {
        self.batch_time_ns = ns;
    }

    /// Request lists of all devices (one per disk; an md RAID-0 has one
    /// per member): the ids of [`Self::last_full_queue`] and
    /// [`Self::take_request_wakes`] are below this.
    pub fn nr_request_lists(&self) -> usize {
        self.qs.iter().map(|q| q.n).sum()
    }

    /// The request list whose refusal was the last [`Submit::Full`]: the
    /// submitter waits on it (get_request_wait).
    pub fn last_full_queue(&self) -> usize {
        self.last_full as usize
    }

    /// Which of its request lists (0 sync, 1 async) refused the last bio.
    pub fn last_full_list(&self) -> u8 {
        self.last_full_list
    }

    /// Take the wakeups freed requests owe, oldest first: (request list,
    /// direction index) once per request freed with room below nr_requests.
    pub fn take_request_wakes(&mut self, out: &mut Vec<(u32, u8)>) {
        out.clear();
        out.append(&mut self.wakes);
    }

    /// ioc_batching: may this io_context allocate past the full mark?
    pub fn ioc_batching(&self, ioc: &Ioc, now: u64) -> bool {
        ioc_batching_at(ioc, now, self.batch_time_ns)
    }

    /// ioc_set_batching: a new batch, unless one is running.
    pub fn ioc_set_batching(&self, ioc: &mut Ioc, now: u64) {
        if !self.ioc_batching(ioc, now) {
            ioc.nr_batch = BLK_BATCH_REQ;
            ioc.last_waited = now;
        }
    }

    pub fn nr_devices(&self) -> usize {
        self.qs.len()
    }

    /// Largest bio (and request) in pages on `dev`: `max_sectors_kib` in pages.
    /// The backing device's readahead window (bdi->ra_pages), in pages:
    /// VM_MAX_READAHEAD (128 KiB); an md RAID-0 raises it to two whole
    /// stripes, disks x chunk x 2 (raid0_run, 3.0): 4 MiB on seed 004's array.
    pub fn ra_pages(&self, dev: usize, page_size: u64) -> u64 {
        let q = &self.qs[dev];
        let default = (128 * 1024 / page_size).max(1);
        if q.n == 1 {
            return default;
        }
        // chunk is in 512-byte sectors.
        let stripe = q.n as u64 * q.chunk * 512 / page_size;
        default.max(2 * stripe)
    }

    pub fn max_bio_pages(&self, dev: usize) -> u32 {
        let q = &self.qs[dev];
        if q.n == 1 {
            return q.maxp as u32;
        }
        // md RAID-0: blk_queue_max_hw_sectors(mddev->queue, chunk_sectors).
        q.maxp.min((q.chunk / self.spp).max(1) as usize) as u32
    }

    /// Submit a bio from a task that is not batching (a fresh io_context
    /// each time): see [`Self::submit_ioc`].
    pub fn submit(&mut self, now: u64, dev: usize, dir: Dir, block: u64, pfns: &[u32], tag: u32) -> Submit {
        self.submit_ioc(now, dev, dir, block, pfns, tag, &mut Ioc::default())
    }

    /// Submit a read for the task whose io_context id is `owner` (pid + 1),
    /// not batching: cfq queues it with that task's other reads.
    pub fn submit_read(&mut self, now: u64, dev: usize, block: u64, pfns: &[u32], tag: u32, owner: u32) -> Submit {
        self.submit_ioc(now, dev, Dir::Read, block, pfns, tag, &mut Ioc { id: owner, ..Ioc::default() })
    }

    /// Submit a bio of `pfns.len()` contiguous pages starting at page
    /// `block`, for a task whose io_context is `ioc` (get_request).
    /// Panics if the bio is empty, exceeds [`Self::max_bio_pages`] or the device.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_ioc(&mut self, now: u64, dev: usize, dir: Dir, block: u64, pfns: &[u32], tag: u32, ioc: &mut Ioc) -> Submit {
        self.submit_rw(now, dev, dir, dir == Dir::Read, block, pfns, tag, ioc)
    }

    /// Submit a write WRITE_SYNC (REQ_SYNC | REQ_NOIDLE, as jbd2 writes its
    /// log) for a task whose io_context is `ioc`: see [`Self::submit_rw`].
    pub fn submit_sync_write(&mut self, now: u64, dev: usize, block: u64, pfns: &[u32], tag: u32, ioc: &mut Ioc) -> Submit {
        self.submit_rw(now, dev, Dir::Write, true, block, pfns, tag, ioc)
    }

    /// Submit a bio in direction `dir`, REQ_SYNC or not (reads always are):
    /// a new request comes from the sync or the async request list
    /// (`rw_is_sync`), and in cfq a sync one goes on the task's own queue.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_rw(&mut self, now: u64, dev: usize, dir: Dir, sync: bool, block: u64, pfns: &[u32], tag: u32, ioc: &mut Ioc) -> Submit {
        debug_assert!(sync || dir == Dir::Write, "reads are sync");
        let spp = self.spp;
        let batch_time = self.batch_time_ns;
        let batching = |ioc: &Ioc| ioc_batching_at(ioc, now, batch_time);
        let q = &mut self.qs[dev];
        let np = pfns.len();
        assert!(np >= 1 && np <= q.maxp, "bio of {np} pages (max {})", q.maxp);
        assert!(q.n == 1 || np as u64 <= (q.chunk / spp).max(1), "md bio of {np} pages, larger than a chunk");
        assert!(block + np as u64 <= q.size_pages, "bio beyond the end of the device");
        let d = dir.idx();
        // The request list: sync (0) or async (1).
        let l = usize::from(!sync);
        let owner = if sync { ioc.id } else { ASYNC_Q };
        // md RAID-0 (3.0): raid0_mergeable_bvec keeps a bio within a chunk
        // and raid0_make_request sends it to its member's queue, so a bio
        // crossing a chunk boundary goes as two, one per member (a bio is
        // at most a chunk: max_bio_pages).
        let mut parts: [(u64, usize, usize); 2] = [(block, 0, np); 2];
        let mut nparts = 1;
        if q.n > 1 {
            let chunk_pages = (q.chunk / spp).max(1);
            let first = ((chunk_pages - block % chunk_pages) as usize).min(np);
            if first < np {
                parts = [(block, 0, first), (block + first as u64, first, np - first)];
                nparts = 2;
            }
        }
        // Each part merges or needs a request of its member's list; if any
        // member has none free, nothing is queued (get_request_wait).
        let mut merge: [Option<usize>; 2] = [None; 2];
        for (i, &(b, _, len)) in parts[..nparts].iter().enumerate() {
            merge[i] = if q.mergeable(q.hint, dir, b, len, spp, owner) {
                Some(q.hint)
            } else {
                // The first slot whose request `mergeable` accepts, through the hash.
                let found = q.hash.find(merge_key(b, dir), |s| {
                    let r = &q.reqs[s];
                    r.npages as usize + len <= q.maxp
                        && (q.n == 1 || (r.block * spp) / q.chunk == (b * spp) / q.chunk)
                        && (q.elevator != Elevator::Cfq || r.owner == owner)
                });
                debug_assert_eq!(found, (0..q.reqs.len()).find(|&s| q.mergeable(s, dir, b, len, spp, owner)));
                found
            };
            if merge[i].is_none() {
                // get_request: a list about to fill refuses a task that is
                // not batching once it is marked full (the allocation that
                // fills it marks it and makes its task a batcher); nobody
                // gets more than 3/2 x nr_requests.
                let m = q.member(b, spp);
                let c = q.mcount[m][l];
                if (c + 1 >= q.nr && q.mfull[m][l] && !batching(ioc)) || c >= 3 * q.nr / 2 {
                    self.last_full = self.qbase[dev] + m as u32;
                    self.last_full_list = l as u8;
                    return Submit::Full;
                }
            }
        }
        let mut res = Submit::Merged;
        for (i, &(b, off, len)) in parts[..nparts].iter().enumerate() {
            let part = &pfns[off..off + len];
            if let Some(s) = merge[i] {
                q.stats.merges[d] += 1;
                let m = q.member(q.reqs[s].block, spp);
                q.disks[m].io.merges[d] += 1;
                q.hint = s;
                q.append(s, now, part, tag, spp);
            } else {
                let m = q.member(b, spp);
                // Only an allocation at the full mark looks at the task's
                // io_context: it counts against the batch there, not below.
                if q.mcount[m][l] + 1 >= q.nr {
                    if !q.mfull[m][l] {
                        q.mfull[m][l] = true;
                        if !batching(ioc) {
                            ioc.nr_batch = BLK_BATCH_REQ;
                            ioc.last_waited = now;
                        }
                    }
                    if batching(ioc) {
                        ioc.nr_batch -= 1;
                    }
                }
                let s = q.free.pop().expect("a free slot per allocatable request") as usize;
                let j = q.jiffies(now);
                q.disks[m].io.round(j);
                q.disks[m].io.in_flight += 1;
                q.reqs[s] = Req { in_use: true, dir, sync, owner, seq: q.seq, block: b, arrive: now, born: j, ..Req::default() };
                q.seq += 1;
                q.count[l] += 1;
                q.mcount[m][l] += 1;
                q.stats.requests[d] += 1;
                q.stats.peak[l] = q.stats.peak[l].max(q.mcount[m][l]);
                if q.mcount[m][l] >= q.on && !q.mcongested[m][l] {
                    q.mcongested[m][l] = true;
                    q.congested[l] = true;
                    self.nr_congested[l] += 1;
                }
                q.hint = s;
                q.append(s, now, part, tag, spp);
                res = Submit::Queued;
            }
        }
        q.stats.sectors[d] += np as u64 * spp;
        q.stats.bios[d] += nparts as u64;
        q.refresh_next();
        res
    }

    /// Time of the next block event, the earliest end of a piece in service
    /// (None when idle). A piece of a RAID-0 request may end without the
    /// request completing: `complete` then returns nothing.
    pub fn next_completion(&self) -> Option<u64> {
        self.qs.iter().filter_map(|q| q.next).min()
    }

    /// Complete every request finishing at or before `now`, in time order
    /// (ties: device, then request submission order), pushing one
    /// [`Completion`] per merged bio. Starts queued pieces as disks free up.
    /// Pfns of earlier completions ([`Self::pages`]) are discarded first.
    pub fn complete(&mut self, now: u64, out: &mut Vec<Completion>) {
        self.done_pfns.clear();
        loop {
            let t = self.qs.iter().flat_map(|q| q.disks.iter()).filter_map(Disk::event).min();
            let Some(t) = t.filter(|&t| t <= now) else {
                break;
            };
            for (qi, q) in self.qs.iter_mut().enumerate() {
                self.fin.clear();
                let mut touched = false;
                for d in 0..q.n {
                    if !q.disks[d].busy && q.disks[d].idle_until == t && t != 0 {
                        // cfq_idle_slice_timer: the reader sent nothing in
                        // time; its slice ends and another queue's begins.
                        touched = true;
                        q.idle_fired += 1;
                        q.disks[d].idle_until = 0;
                        q.disks[d].q_new = false;
                        q.disks[d].q_end = t;
                        q.start(d, t);
                        continue;
                    }
                    if !(q.disks[d].busy && q.disks[d].end == t) {
                        continue;
                    }
                    touched = true;
                    let disk = &mut q.disks[d];
                    disk.busy = false;
                    disk.busy_ns += disk.svc;
                    let s = disk.cur as usize;
                    if q.reqs[s].sync && q.elevator == Elevator::Cfq {
                        if t >= q.queued[s * q.n + d] + CFQ_FIFO_EXPIRE_SYNC {
                            q.disks[d].last_delayed_sync = t;
                        }
                        let owner = q.reqs[s].owner;
                        q.disks[d].cic(owner).last_end = t;
                    }
                    if q.reqs[s].owner == q.disks[d].cq && q.disks[d].q_new {
                        // cfq_completed_request: the active queue's first
                        // completion starts its slice (cfq_set_prio_slice).
                        q.disks[d].q_new = false;
                        q.disks[d].q_end = t + q.disks[d].q_slice;
                    }
                    q.reqs[s].pending -= 1;
                    if q.reqs[s].pending == 0 {
                        self.fin.push((q.reqs[s].seq, s as u32));
                    }
                    q.start(d, t);
                }
                self.fin.sort_unstable();
                for &(_, s) in &self.fin {
                    let (edge, async_clear) = q.release(qi, s as usize, t, self.spp, &mut self.done_pfns, out, &mut self.wakes);
                    if edge {
                        let list = if q.reqs[s as usize].sync { Dir::Read } else { Dir::Write };
                        self.nr_congested[list.idx()] -= 1;
                        self.edges |= edge_bit(qi, list);
                    }
                    self.async_clear |= async_clear;
                }
                if touched {
                    q.refresh_next();
                }
            }
        }
    }

    /// The pfns of a completion; valid until the next `complete()` call.
    pub fn pages(&self, c: &Completion) -> &[u32] {
        &self.done_pfns[c.first_page as usize..(c.first_page + c.nr_pages) as usize]
    }

    /// `bdi_congested` for the direction (Read = sync, Write = async).
    pub fn congested(&self, dev: usize, dir: Dir) -> bool {
        self.qs[dev].congested[dir.idx()]
    }

    /// `nr_bdi_congested[dir] > 0`.
    pub fn any_congested(&self, dir: Dir) -> bool {
        self.nr_congested[dir.idx()] > 0
    }

    /// Mask of [`edge_bit`]`(dev, dir)` for every queue that became
    /// uncongested since the last call (wake `congestion_wait` sleepers).
    pub fn take_uncongested_edges(&mut self) -> u32 {
        std::mem::take(&mut self.edges)
    }

    /// Whether an async (write) request was freed, since the last call, with
    /// its member's list below the congestion-off threshold: 3.0's
    /// __freed_request then calls clear_bdi_congested, which wakes the
    /// congestion_wait sleepers (congestion_wqh[BLK_RW_ASYNC]) whether or
    /// not that list, or another member's, was congested.
    pub fn take_async_clear(&mut self) -> bool {
        std::mem::take(&mut self.async_clear)
    }

    /// Allocated requests of the direction (`rl->count`).
    pub fn in_flight(&self, dev: usize, dir: Dir) -> u32 {
        self.qs[dev].count[dir.idx()]
    }

    pub fn stats(&self, dev: usize) -> DevStats {
        self.qs[dev].stats
    }

    /// Time member `disk` of `dev` spent serving completed pieces (ns).
    pub fn disk_busy_ns(&self, dev: usize, disk: usize) -> u64 {
        self.qs[dev].disks[disk].busy_ns
    }

    /// Member `disk` of `dev`: (pieces started, ns spent reaching their
    /// first sectors).
    pub fn disk_access(&self, dev: usize, disk: usize) -> (u64, u64) {
        let d = &self.qs[dev].disks[disk];
        (d.pieces, d.access_ns)
    }

    /// Member disks of `dev`.
    pub fn nr_disks(&self, dev: usize) -> usize {
        self.qs[dev].n
    }

    /// The machine's HZ, for diskstats' jiffies (the default is 250).
    pub fn set_hz(&mut self, hz: u64) {
        for q in &mut self.qs {
            q.hz = hz.max(1);
        }
    }

    /// Member `disk` of `dev`'s /proc/diskstats counters as read at `now` (ns).
    pub fn disk_io(&self, dev: usize, disk: usize, now: u64) -> DiskIo {
        let q = &self.qs[dev];
        q.disks[disk].io.at(q.jiffies(now))
    }

    /// pgpgin as /proc/vmstat shows it: sectors read / 2.
    pub fn kib_read(&self) -> u64 {
        self.qs.iter().map(|q| q.stats.sectors[0]).sum::<u64>() / 2
    }

    /// pgpgout: sectors written / 2.
    pub fn kib_written(&self) -> u64 {
        self.qs.iter().map(|q| q.stats.sectors[1]).sum::<u64>() / 2
    }

    /// Memory held by the block layer's preallocated state.
    pub fn state_bytes(&self) -> u64 {
        let q_bytes = |q: &Queue| {
            4 * (q.pfn.capacity() + q.bio_tag.capacity() + q.bio_len.capacity() + q.free.capacity())
                + 16 * q.piece.capacity()
                + 8 * q.queued.capacity()
                + q.hash.bytes()
                + std::mem::size_of::<Req>() * q.reqs.capacity()
                + 8 * q.stamp.capacity()
                + 4 * q.owners.capacity()
                + q.disks.iter().map(|k| 4 * k.drive.capacity()).sum::<usize>()
                + q.disks
                    .iter()
                    .map(|k| {
                        std::mem::size_of::<Disk>()
                            + 4 * (k.fifo[0].capacity()
                                + k.fifo[1].capacity()
                                + k.sorted[0].capacity()
                                + k.sorted[1].capacity())
                            + std::mem::size_of::<(u64, u64, u32)>() * k.tree.capacity()
                            + std::mem::size_of::<Cic>() * k.cic.capacity()
                    })
                    .sum::<usize>()
                + std::mem::size_of::<Queue>()
        };
        let b = self.qs.iter().map(q_bytes).sum::<usize>() + 4 * self.done_pfns.capacity() + 16 * self.fin.capacity();
        b as u64
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn raid0_reads_ahead_two_stripes() {
        let mut d = DeviceSpec {
            name: "md0".into(),
            disks: 4,
            chunk_kib: 512,
            bandwidth_mib_s: 75,
            access_us: 8000,
            rpm: 0,
            track_seek_us: 0,
            full_seek_us: 0,
            nr_requests: 128,
            max_sectors_kib: 512,
            size_mib: 1000,
            elevator: Elevator::Noop,
            queue_depth: 1,
        };
        let two = BlockLayer::new(&[d.clone()], 4096);
        assert_eq!(two.ra_pages(0, 4096), 1024, "2 x 4 disks x 512 KiB = 4 MiB");
        d.disks = 1;
        let one = BlockLayer::new(&[d], 4096);
        assert_eq!(one.ra_pages(0, 4096), 32, "VM_MAX_READAHEAD, 128 KiB");
    }

    use super::*;

    /// 125 MiB/s with 4 KiB pages: one page = 31_250 ns; access 5 ms.
    const PG: u64 = 31_250;
    const ACC: u64 = 5_000_000;

    fn spec(disks: u32, nr: u32, max_kib: u32) -> DeviceSpec {
        DeviceSpec {
            name: "sda".into(),
            disks,
            chunk_kib: 64,
            bandwidth_mib_s: 125,
            access_us: 5000,
            rpm: 0,
            track_seek_us: 0,
            full_seek_us: 0,
            nr_requests: nr,
            max_sectors_kib: max_kib,
            size_mib: 1024,
            elevator: Elevator::Noop,
            queue_depth: 1,
        }
    }

    #[test]
    fn deadline_serves_reads_first_and_writes_after_two_read_batches() {
        let mut s = spec(1, 128, 4);
        s.elevator = Elevator::Deadline;
        let mut b = BlockLayer::new(&[s], 4096);
        // A write in service, then 40 non-contiguous writes and 40 reads queued.
        b.submit(0, 0, Dir::Write, 0, &[0], 1000);
        for i in 0..40u64 {
            b.submit(0, 0, Dir::Write, 10 + 2 * i, &[0], 2000 + i as u32);
        }
        for i in 0..40u64 {
            b.submit(0, 0, Dir::Read, 1000 + 2 * i, &[0], i as u32);
        }
        let order: Vec<u32> = drain(&mut b).iter().map(|c| c.2).collect();
        // The first write was alone when dispatched (no next_rq), so its
        // batch ends; then two read batches of 16 (starved 1, 2), a write
        // batch of 16, the last 8 reads, and the remaining writes.
        let mut want = vec![1000];
        want.extend(0..32);
        want.extend(2000..2016);
        want.extend(32..40);
        want.extend(2016..2040);
        assert_eq!(order, want);
    }

    #[test]
    fn deadline_sweeps_in_sector_order() {
        let mut s = spec(1, 128, 4);
        s.elevator = Elevator::Deadline;
        let mut b = BlockLayer::new(&[s], 4096);
        b.submit(0, 0, Dir::Write, 0, &[0], 0); // in service at once
        for (tag, block) in [(1, 50), (2, 10), (3, 30), (4, 20), (5, 40)] {
            b.submit(0, 0, Dir::Write, block, &[0], tag);
        }
        // A batch begins at the oldest (50); nothing lies beyond it, so the
        // next batch begins at the oldest again (10) and sweeps upward.
        let order: Vec<u32> = drain(&mut b).iter().map(|c| c.2).collect();
        assert_eq!(order, [0, 1, 2, 4, 3, 5]);
        // Noop keeps arrival order.
        let mut b = BlockLayer::new(&[spec(1, 128, 4)], 4096);
        b.submit(0, 0, Dir::Write, 0, &[0], 0);
        for (tag, block) in [(1, 50), (2, 10), (3, 30), (4, 20), (5, 40)] {
            b.submit(0, 0, Dir::Write, block, &[0], tag);
        }
        let order: Vec<u32> = drain(&mut b).iter().map(|c| c.2).collect();
        assert_eq!(order, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn deadline_serves_an_expired_read_at_the_next_batch() {
        let mut s = spec(1, 1024, 4);
        s.elevator = Elevator::Deadline;
        let mut b = BlockLayer::new(&[s], 4096);
        b.submit(0, 0, Dir::Write, 0, &[0], 0);
        b.submit(0, 0, Dir::Read, 50, &[0], 1); // X
        b.submit(0, 0, Dir::Read, 500, &[0], 2); // A: beyond the sweep
        for i in 0..150u64 {
            b.submit(0, 0, Dir::Read, 100 + 2 * i, &[0], 100 + i as u32);
        }
        // Every piece costs ACC + PG. Batches of 16 begin at pieces 0
        // (X, then the sweep from 100), 16, 32, ...; the one at 16 m is
        // dispatched at (16 m + 1)(ACC + PG), and A, queued at 0, has
        // expired (500 ms) there first for m = 7.
        let order: Vec<u32> = drain(&mut b).iter().map(|c| c.2).collect();
        assert_eq!(order[1], 1);
        assert_eq!(order[1 + 112], 2, "A right after its expiry");
        assert_eq!(order[1 + 111], 100 + 110);
        assert_eq!(order[1 + 113], 100 + 111, "then the sweep goes on from where it was");
    }

    #[test]
    fn seek_curve() {
        let mut s = spec(1, 128, 4);
        (s.rpm, s.track_seek_us, s.full_seek_us) = (7200, 1000, 17000);
        let q = Queue::new(&s, 4096);
        let tm = q.tm;
        let half_rev = 60_000_000_000 / 7200 / 2;
        assert_eq!(tm.disk_sectors, 1024 * 2048);
        assert_eq!(tm.access(80, 80), 0);
        assert_eq!(tm.access(80, 88), 8 * 512 * 1_000_000_000 / (125 << 20), "a little ahead: the gap passes by");
        let back = 1_000_000 + (16_000_000.0 * (8.0f64 / 2_097_152.0).sqrt()) as u64 + half_rev;
        assert_eq!(tm.access(88, 80), back, "a little behind: a track seek and half a rotation");
        assert_eq!(tm.access(0, 2_097_152), 17_000_000 + half_rev, "full stroke");
        assert_eq!(tm.access(NO_POS, 5), 8_500_000 + half_rev, "head position unknown: half a stroke");
        // More than a revolution's worth ahead is a seek.
        let rev_sectors = (125u64 << 20) / 512 / 120 + 1;
        assert!(tm.access(0, rev_sectors) > half_rev);
    }

    #[test]
    fn cfq_gives_each_reader_and_the_writes_turns_of_time_slices() {
        // low_latency's scaling: 3 busy queues fit the 300 ms target, 5 do not.
        assert_eq!((cfq_slice(true, 3), cfq_slice(false, 3)), (100_000_000, 40_000_000));
        assert_eq!((cfq_slice(true, 5), cfq_slice(false, 5)), (60_000_000, 24_000_000));
        assert_eq!((cfq_slice(true, 30), cfq_slice(false, 100)), (16_000_000, 6_400_000), "no less than 2 x slice_idle, scaled");
        let mut s = spec(1, 128, 4);
        s.elevator = Elevator::Cfq;
        let mut b = BlockLayer::new(&[s], 4096);
        // Readers A (io_context 1) and B (2), 30 scattered one-page reads
        // each, and 30 writes, all at time 0; every piece costs ACC + PG.
        for i in 0..30u64 {
            b.submit_read(0, 0, 2 * i, &[0], 1000 + i as u32, 1);
            b.submit_read(0, 0, 1000 + 2 * i, &[0], 2000 + i as u32, 2);
            b.submit(0, 0, Dir::Write, 5000 + 2 * i, &[0], 3000 + i as u32);
        }
        let who: Vec<u32> = drain(&mut b).iter().map(|c| c.2 / 1000).collect();
        let mut turns: Vec<(u32, usize)> = Vec::new();
        for w in who {
            match turns.last_mut() {
                Some((x, n)) if *x == w => *n += 1,
                _ => turns.push((w, 1)),
            }
        }
        // A's first read starts alone; its 100 ms slice begins when that
        // read completes (cfq_set_prio_slice at the first completion), so
        // 21 pieces of 5.03 ms start in it. Then B and the writes are busy
        // too: B joined its tree with the key 0 + 2 x 80 ms, the writes
        // 0 + 2 x 140 ms, so B goes next (21 pieces likewise), in a sync
        // workload of 300 x 2/3 = 200 ms, which A (back at 105.6 + 160 ms)
        // and B finish; the writes wait till then.
        assert_eq!(turns, vec![(1, 21), (2, 21), (1, 9), (2, 9), (3, 30)]);
        // A read merges only into a request of its own reader.
        let mut s = spec(1, 128, 16);
        s.elevator = Elevator::Cfq;
        let mut b = BlockLayer::new(&[s], 4096);
        assert_eq!(b.submit_read(0, 0, 100, &[1], 0, 1), Submit::Queued); // in service at once
        assert_eq!(b.submit_read(0, 0, 200, &[2], 0, 1), Submit::Queued);
        assert_eq!(b.submit_read(0, 0, 201, &[3], 0, 2), Submit::Queued, "another reader's request");
        assert_eq!(b.submit_read(0, 0, 201, &[4], 0, 1), Submit::Merged, "its own");
        // Both requests now end at 202: the read joins its reader's.
        assert_eq!(b.submit_read(0, 0, 202, &[5], 0, 2), Submit::Merged);
        let pages: Vec<Vec<u32>> = drain(&mut b).into_iter().map(|c| c.3).collect();
        assert_eq!(pages, vec![vec![1], vec![2], vec![4], vec![3], vec![5]]);
    }

    #[test]
    fn cfq_idles_for_a_readers_next_read_and_gives_up_after_slice_idle() {
        // One reader that sends its next read `think` after each completes,
        // and 20 writes queued at 0. With a 1 ms think time the reader keeps
        // the disk through its slice, idling between its reads (the writes
        // wait, 140 ms away in their tree). With 10 ms the idle timer (8 ms)
        // runs out after each of the first reads, the writes take the disk,
        // and the next read preempts them once the writes in the drive are
        // done; after three reads the think time's mean (10 ms > slice_idle)
        // turns the reader's idle window off.
        let run_at = |think: u64, delayed_at: Option<u64>, depth: u32, access_us: u32| {
            let mut s = spec(1, 128, 4);
            s.elevator = Elevator::Cfq;
            s.queue_depth = depth;
            s.access_us = access_us;
            let mut b = BlockLayer::new(&[s], 4096);
            if let Some(t) = delayed_at {
                b.qs[0].disks[0].last_delayed_sync = t;
            }
            b.submit_read(0, 0, 0, &[0], 1000, 1);
            for i in 0..20u64 {
                b.submit(0, 0, Dir::Write, 5000 + 2 * i, &[0], 3000 + i as u32);
            }
            let (mut out, mut seq, mut reads, mut next_read) = (Vec::new(), Vec::new(), 1u64, None);
            loop {
                let t = match (b.next_completion(), next_read) {
                    (None, None) => break,
                    (Some(c), Some(r)) if r < c => r,
                    (None, Some(r)) => r,
                    (Some(c), _) => c,
                };
                if next_read == Some(t) {
                    b.submit_read(t, 0, 2 * reads, &[0], 1000 + reads as u32, 1);
                    reads += 1;
                    next_read = None;
                    continue;
                }
                out.clear();
                b.complete(t, &mut out);
                for c in &out {
                    seq.push(c.tag / 1000);
                    if c.tag / 1000 == 1 && reads < 10 {
                        next_read = Some(t + think);
                    }
                }
            }
            let idle_window = b.qs[0].disks[0].cic[1].idle;
            (seq, idle_window, b.qs[0].idle_fired)
        };
        let run = |think: u64, delayed_at: Option<u64>, depth: u32| run_at(think, delayed_at, depth, 5000);
        // A drive that takes one command at a time.
        let (quick, idle_window, fired) = run(1_000_000, None, 1);
        assert_eq!(&quick[..10], &[1; 10], "{quick:?}");
        assert!(idle_window, "a reader that comes back within 1 ms keeps its idle window");
        assert_eq!(fired, 1, "the idle timer runs out only after the last read");
        let (slow, idle_window, fired) = run(10_000_000, None, 1);
        // Each read preempts the writes and waits only for the one in
        // service; once the idle window is off (third read on), the writes
        // get the disk at once when a read ends and keep it for two pieces.
        assert_eq!(slow, [1, 3, 1, 3, 1, 3, 1, 3, 3, 1, 3, 3, 1, 3, 3, 1, 3, 3, 1, 3, 3, 1, 3, 3, 1, 3, 3, 3, 3, 3]);
        assert!(!idle_window, "a 10 ms think time still left the idle window on");
        assert!(fired >= 2, "the idle timer ran out {fired} times");
        // An NCQ drive (31 commands): the reader's slice is the same; but
        // once its idle timer runs out the writes are the only busy queue
        // and put all 20 into the drive (no dispatch limit for a lone
        // queue), and the next read waits for them to drain.
        let (quick, ..) = run(1_000_000, None, 31);
        assert_eq!(&quick[..10], &[1; 10], "{quick:?}");
        let (slow, _, fired) = run(10_000_000, None, 31);
        assert_eq!(slow, [1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(fired, 1);
        // A read delayed 125 ms at time 0: for the next 100 ms the writes
        // put one request at a time into the drive, so each read waits for
        // at most one write. (The idle timer is armed only once the
        // reader's read has completed, not while it is in the drive.)
        let (after, ..) = run(10_000_000, Some(0), 31);
        assert_eq!(&after[..9], &[1, 3, 1, 3, 1, 3, 1, 3, 3], "{after:?}");
        // Reads of 10 ms, longer than slice_idle, and a 1 ms think time: the
        // reader keeps the disk for its ten reads on either drive.
        for depth in [1, 31] {
            let (slow_reads, ..) = run_at(1_000_000, None, depth, 10_000);
            assert_eq!(&slow_reads[..10], &[1; 10], "depth {depth}: {slow_reads:?}");
        }
    }

    /// A cfq disk holding 31 commands with `reads` (io_context, block)
    /// and 20 one-page writes queued at time 0; pieces cost 5 ms, or
    /// nothing when they start where the last one ended.
    fn cfq_ncq(reads: &[(u32, u64)]) -> BlockLayer {
        cfq_ncq_at(reads, 5000)
    }

    fn cfq_ncq_at(reads: &[(u32, u64)], access_us: u32) -> BlockLayer {
        let mut s = spec(1, 128, 4);
        s.elevator = Elevator::Cfq;
        s.queue_depth = 31;
        s.access_us = access_us;
        let mut b = BlockLayer::new(&[s], 4096);
        for (i, &(q, blk)) in reads.iter().enumerate() {
            b.submit_read(0, 0, blk, &[0], 1000 * q + i as u32, q);
        }
        for i in 0..20u64 {
            b.submit(0, 0, Dir::Write, 5000 + 2 * i, &[0], 9000 + i as u32);
        }
        b
    }

    #[test]
    fn cfq_may_dispatch_limits_what_enters_an_ncq_drive() {
        // The only busy reader (promote_sync) puts all its reads into the
        // drive, though the writes are busy too (they came after its first
        // read, before the other nine).
        let mut b = cfq_ncq(&[(1, 0)]);
        for i in 1..10u64 {
            b.submit_read(0, 0, 100 * i, &[0], 1000 + i as u32, 1);
        }
        assert_eq!(b.qs[0].in_drive(0, 1), (10, 0, 10));
        // Two readers: the first puts cfq_quantum / 2 (4) into the drive
        // while its slice is new; once a read has completed, and its slice
        // is far from its end, up to cfq_quantum (8).
        let two: Vec<(u32, u64)> = (0..10).flat_map(|i| [(1, 100 * i), (2, 50_000 + 100 * i)]).collect();
        let mut b = cfq_ncq(&two);
        assert_eq!(b.qs[0].in_drive(0, 1), (4, 0, 4));
        let mut out = Vec::new();
        let t = b.next_completion().unwrap();
        b.complete(t, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(b.qs[0].in_drive(0, 1), (8, 0, 8));
        // No write goes into the drive while a read is there: a reader
        // whose idle window is off sends one read, and when it has nothing
        // more the writes become the active queue but wait for it.
        let mut s = spec(1, 128, 4);
        s.elevator = Elevator::Cfq;
        s.queue_depth = 31;
        let mut b = BlockLayer::new(&[s], 4096);
        b.qs[0].disks[0].cic(1).idle = false;
        b.submit_read(0, 0, 0, &[0], 1000, 1);
        for i in 0..20u64 {
            b.submit(0, 0, Dir::Write, 5000 + 2 * i, &[0], 9000 + i as u32);
        }
        assert_eq!(b.qs[0].disks[0].cq, ASYNC_Q, "the writes have the disk");
        assert_eq!(b.qs[0].in_drive(0, ASYNC_Q), (1, 0, 0), "no write joins the read in the drive");
        let t = b.next_completion().unwrap();
        b.complete(t, &mut out);
        assert_eq!(b.qs[0].in_drive(0, ASYNC_Q), (0, 20, 20), "then the lone write queue sends all it has");
    }

    #[test]
    fn cfq_an_idling_readers_read_waits_for_the_writes_in_the_drive() {
        // Writes alone fill the drive; a read arrives at 1 ms for the block
        // right after the write in service, which the drive would reach
        // at no cost. It preempts the writes but goes to the drive only
        // once they have drained, so it is served last.
        let mut b = cfq_ncq(&[]);
        let mut out = Vec::new();
        b.complete(1_000_000, &mut out);
        b.submit_read(1_000_000, 0, 5001, &[0], 1000, 1);
        let order: Vec<u32> = drain(&mut b).iter().map(|c| c.2 / 1000).collect();
        assert_eq!(order.iter().position(|&x| x == 1), Some(20), "{order:?}");
        // 40 writes of 8 ms, 31 of them in the drive: draining those takes
        // longer than the reader's 100 ms slice, but its slice starts only
        // at its first completion, so the other 9 writes wait behind the read.
        let mut b = cfq_ncq_at(&[], 8000);
        for i in 20..40u64 {
            b.submit(0, 0, Dir::Write, 5000 + 2 * i, &[0], 9000 + i as u32);
        }
        b.complete(1_000_000, &mut out);
        b.submit_read(1_000_000, 0, 0, &[0], 1000, 1);
        let order: Vec<u32> = drain(&mut b).iter().map(|c| c.2 / 1000).collect();
        assert_eq!(order.iter().position(|&x| x == 1), Some(31), "{order:?}");
    }

    #[test]
    fn cfq_a_write_sync_preempts_the_writes_as_a_read_does_and_deadline_sorts_it_with_them() {
        // As the read below: under cfq a WRITE_SYNC (jbd2's log) at 1 ms is
        // a sync queue's and goes right after the write in service; under
        // deadline it is a write among the writes, served in sector order
        // (block 0, before the sweep's 20 at 5000 and on, comes after them).
        for (elevator, want) in [(Elevator::Cfq, 1), (Elevator::Deadline, 20)] {
            let mut s = spec(1, 128, 4);
            s.elevator = elevator;
            s.access_us = 15_000;
            let mut b = BlockLayer::new(&[s], 4096);
            for i in 0..20u64 {
                b.submit(0, 0, Dir::Write, 5000 + 2 * i, &[0], 3000 + i as u32);
            }
            let mut out = Vec::new();
            b.complete(1_000_000, &mut out);
            b.submit_sync_write(1_000_000, 0, 0, &[0], 1000, &mut Ioc { id: 9, ..Ioc::default() });
            let order: Vec<u32> = drain(&mut b).iter().map(|c| c.2 / 1000).collect();
            assert_eq!(order.iter().position(|&x| x == 1), Some(want), "{elevator:?}: {order:?}");
        }
    }

    #[test]
    fn cfq_a_read_that_came_during_the_writes_turn_goes_once_the_writes_in_the_drive_are_done() {
        // Writes alone, pieces of about 15 ms; a read at 1 ms preempts them
        // and goes once the writes in the drive are done: on a one-command
        // drive the one in service; on an NCQ drive all 20, which the lone
        // write queue put there at once.
        for (depth, want) in [(1, 1), (31, 20)] {
            let mut s = spec(1, 128, 4);
            s.elevator = Elevator::Cfq;
            s.access_us = 15_000;
            s.queue_depth = depth;
            let mut b = BlockLayer::new(&[s], 4096);
            for i in 0..20u64 {
                b.submit(0, 0, Dir::Write, 5000 + 2 * i, &[0], 3000 + i as u32);
            }
            let mut out = Vec::new();
            b.complete(1_000_000, &mut out);
            b.submit_read(1_000_000, 0, 0, &[0], 1000, 1);
            let order: Vec<u32> = drain(&mut b).iter().map(|c| c.2 / 1000).collect();
            assert_eq!(order.iter().position(|&x| x == 1), Some(want), "depth {depth}: {order:?}");
        }
    }

    #[test]
    fn an_ncq_drive_serves_the_nearest_piece_and_ages_the_oldest() {
        // Flat 5 ms access, none for a piece that starts where the head is.
        let order = |depth: u32| {
            let mut s = spec(1, 128, 4);
            s.queue_depth = depth;
            let mut b = BlockLayer::new(&[s], 4096);
            for (i, blk) in [0u64, 100, 50, 1].into_iter().enumerate() {
                b.submit(0, 0, Dir::Write, blk, &[0], i as u32);
            }
            drain(&mut b).iter().map(|c| c.2).collect::<Vec<u32>>()
        };
        assert_eq!(order(1), [0, 1, 2, 3], "one command at a time: noop's arrival order");
        assert_eq!(order(4), [0, 3, 1, 2], "block 1 follows block 0 on the platter: it goes first");
        // A far piece and a stream of contiguous ones, each sent when the
        // one before it is served: the far one is passed over depth (3)
        // times in a row, then served.
        let mut s = spec(1, 128, 4);
        s.queue_depth = 3;
        let mut b = BlockLayer::new(&[s], 4096);
        b.submit(0, 0, Dir::Write, 0, &[0], 0);
        b.submit(0, 0, Dir::Write, 1000, &[0], 1000);
        b.submit(0, 0, Dir::Write, 1, &[0], 1);
        let (mut out, mut seen, mut next) = (Vec::new(), Vec::new(), 2u64);
        while let Some(t) = b.next_completion() {
            out.clear();
            b.complete(t, &mut out);
            seen.extend(out.iter().map(|c| c.tag));
            if next < 8 {
                b.submit(t, 0, Dir::Write, next, &[0], next as u32);
                next += 1;
            }
        }
        assert_eq!(seen, [0, 1, 2, 3, 1000, 4, 5, 6, 7]);
    }

    #[test]
    fn noop_keeps_arrival_order_across_directions() {
        let mut b = BlockLayer::new(&[spec(1, 128, 4)], 4096);
        b.submit(0, 0, Dir::Write, 0, &[0], 1000);
        for i in 0..10u64 {
            let dir = if i % 3 == 0 { Dir::Read } else { Dir::Write };
            b.submit(0, 0, dir, 10 + 2 * i, &[0], i as u32);
        }
        let order: Vec<u32> = drain(&mut b).iter().map(|c| c.2).collect();
        assert_eq!(order, [1000, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    /// (time, dev, tag, pfns) per completion.
    type Log = Vec<(u64, u16, u32, Vec<u32>)>;

    /// Drain everything. Every event ends a piece: a disk's busy time grows.
    fn drain(b: &mut BlockLayer) -> Log {
        let (mut v, mut out) = (Vec::new(), Vec::new());
        while let Some(t) = b.next_completion() {
            out.clear();
            let busy = |b: &BlockLayer| {
                (0..b.qs.len())
                    .flat_map(|q| (0..b.qs[q].n).map(move |d| (q, d)))
                    .map(|(q, d)| b.disk_busy_ns(q, d))
                    .sum::<u64>()
            };
            let before = (busy(b), b.qs.iter().map(|q| q.idle_fired).sum::<u64>());
            b.complete(t, &mut out);
            let fired = b.qs.iter().map(|q| q.idle_fired).sum::<u64>();
            assert!(busy(b) > before.0 || fired > before.1, "an event at {t} ended no piece and no idle timer");
            v.extend(out.iter().map(|c| (t, c.dev, c.tag, b.pages(c).to_vec())));
        }
        v
    }

    #[test]
    fn plain_disk_sequential_and_random() {
        let mut b = BlockLayer::new(&[spec(1, 128, 512)], 4096);
        assert_eq!(b.submit(0, 0, Dir::Write, 0, &[10], 1), Submit::Queued); // starts at once
        assert_eq!(b.submit(0, 0, Dir::Write, 1, &[11], 2), Submit::Queued); // A started: no merge
        assert_eq!(b.submit(0, 0, Dir::Write, 2, &[12], 3), Submit::Merged);
        assert_eq!(b.submit(0, 0, Dir::Write, 100, &[13], 4), Submit::Queued); // random
        assert_eq!(b.next_completion(), Some(ACC + PG));
        let v = drain(&mut b);
        let t1 = ACC + PG;
        let t2 = t1 + 2 * PG; // contiguous with A: no access
        let t3 = t2 + ACC + PG;
        assert_eq!(v, vec![(t1, 0, 1, vec![10]), (t2, 0, 2, vec![11]), (t2, 0, 3, vec![12]), (t3, 0, 4, vec![13])]);
        assert_eq!(b.disk_busy_ns(0, 0), t3);
        assert_eq!(b.stats(0).requests[1], 3);
        assert_eq!(b.stats(0).merges[1], 1);
        assert_eq!(b.kib_written(), 16);
        // Idle disk later: a late submit starts at its own time.
        b.submit(t3 + 7, 0, Dir::Read, 101, &[1], 5);
        assert_eq!(b.next_completion(), Some(t3 + 7 + PG)); // head sits at 101
    }

    #[test]
    fn back_merge_limits() {
        let mut b = BlockLayer::new(&[spec(1, 128, 16)], 4096); // 4 pages max
        assert_eq!(b.max_bio_pages(0), 4);
        b.submit(0, 0, Dir::Write, 50, &[0], 0);
        let r: Vec<Submit> = (0..6).map(|i| b.submit(0, 0, Dir::Write, i, &[i as u32], 1)).collect();
        use Submit::*;
        assert_eq!(r, vec![Queued, Merged, Merged, Merged, Queued, Merged]);
        assert_eq!(b.submit(0, 0, Dir::Read, 6, &[6], 2), Queued); // other direction
        assert_eq!(b.submit(0, 0, Dir::Write, 8, &[8], 3), Queued); // gap
        assert_eq!(b.submit(0, 0, Dir::Write, 9, &[9, 10, 11], 4), Merged);
        assert_eq!(b.submit(0, 0, Dir::Write, 12, &[12], 5), Queued); // would be 5 pages
        assert_eq!(b.in_flight(0, Dir::Write), 5);
        let v = drain(&mut b);
        let tags: Vec<u32> = v.iter().map(|x| x.2).collect();
        assert_eq!(tags, vec![0, 1, 1, 1, 1, 1, 1, 2, 3, 4, 5]);
        assert_eq!(v[8].3, vec![8]);
        assert_eq!(v[9].3, vec![9, 10, 11]);
        assert_eq!(v[1].0, v[4].0); // one request of four bios
    }

    #[test]
    fn diskstats_counts_requests_merges_jiffies_and_time_in_queue() {
        let mut b = BlockLayer::new(&[spec(1, 128, 512)], 4096);
        b.set_hz(1000);
        use Submit::*;
        assert_eq!(b.submit(0, 0, Dir::Write, 0, &[0], 0), Queued); // starts at once: 5 ms + 31.25 us
        assert_eq!(b.submit(0, 0, Dir::Write, 1, &[1], 1), Queued); // the first is on the disk: no merge
        assert_eq!(b.submit(0, 0, Dir::Write, 2, &[2], 2), Merged);
        assert_eq!(b.submit(0, 0, Dir::Read, 100, &[3], 3), Queued);
        let io = b.disk_io(0, 0, 0);
        assert_eq!((io.in_flight, io.merges, io.ios), (3, [0, 1], [0, 0]));
        let v = drain(&mut b);
        // Writes end at 5.03 and 5.09 ms (jiffy 5), the read at 10.13 ms (jiffy 10).
        assert_eq!(v.iter().map(|x| x.0).collect::<Vec<_>>(), vec![5_031_250, 5_093_750, 5_093_750, 10_125_000]);
        let at = |ms: u64| b.disk_io(0, 0, ms * 1_000_000);
        let end = at(10);
        assert_eq!((end.ios, end.merges, end.sectors, end.ticks), ([1, 2], [0, 1], [8, 24], [10, 10]));
        // Three in flight for 5 jiffies, one for 5 more.
        assert_eq!((end.in_flight, end.io_ticks, end.time_in_queue), (0, 10, 20));
        assert_eq!(at(30), DiskIo { stamp: 30, ..end }, "nothing in flight: the counters stand still");
        assert_eq!(b.stats(0).bios, [1, 3]);
    }

    #[test]
    fn an_md_device_counts_a_bio_cut_at_a_chunk_boundary_as_two() {
        let mut b = BlockLayer::new(&[spec(2, 128, 512)], 4096); // 64 KiB chunks: 16 pages
        assert_eq!(b.submit(0, 0, Dir::Write, 14, &[0, 1, 2, 3], 0), Submit::Queued); // pages 14-15 and 16-17
        assert_eq!(b.submit(0, 0, Dir::Write, 40, &[4], 1), Submit::Queued);
        assert_eq!(b.stats(0).bios, [0, 3]);
        let (d0, d1) = (b.disk_io(0, 0, 0), b.disk_io(0, 1, 0));
        // Chunk 0 (pages 0-15) and chunk 2 (32-47) are disk 0's, chunk 1 disk 1's: a request a part.
        assert_eq!((d0.in_flight, d1.in_flight), (2, 1));
    }

    #[test]
    fn full_and_recovery() {
        let mut b = BlockLayer::new(&[spec(1, 4, 512)], 4096);
        for i in 0..4 {
            assert_eq!(b.submit(0, 0, Dir::Write, 10 * i, &[0], 0), Submit::Queued);
        }
        assert_eq!(b.submit(0, 0, Dir::Write, 100, &[0], 0), Submit::Full);
        assert_eq!(b.submit(0, 0, Dir::Write, 31, &[0], 0), Submit::Merged); // merge needs no request
        assert_eq!(b.submit(0, 0, Dir::Read, 200, &[0], 0), Submit::Queued); // reads counted apart
        assert_eq!(b.in_flight(0, Dir::Write), 4);
        assert_eq!(b.kib_written(), 20);
        let mut out = Vec::new();
        b.complete(b.next_completion().unwrap(), &mut out);
        assert_eq!((out.len(), b.in_flight(0, Dir::Write)), (1, 3));
        assert_eq!(b.submit(ACC + PG, 0, Dir::Write, 100, &[0], 0), Submit::Queued);
    }

    #[test]
    fn a_write_sync_takes_a_request_of_the_sync_list_and_counts_as_a_write() {
        let mut b = BlockLayer::new(&[spec(1, 4, 512)], 4096);
        // Writeback fills the async list to 3/2 x nr_requests.
        let mut filler = Ioc::default();
        for i in 0..6 {
            assert_eq!(b.submit_ioc(0, 0, Dir::Write, 10 * i, &[0], 0, &mut filler), Submit::Queued);
        }
        assert_eq!(b.submit_ioc(0, 0, Dir::Write, 100, &[0], 0, &mut filler), Submit::Full);
        assert_eq!(b.last_full_list(), 1);
        // jbd2's log write is not held up by it: a request of the sync list.
        let mut kjournald = Ioc { id: 9, ..Ioc::default() };
        assert_eq!(b.submit_sync_write(0, 0, 500, &[0], 7, &mut kjournald), Submit::Queued);
        assert_eq!((b.in_flight(0, Dir::Read), b.in_flight(0, Dir::Write)), (1, 6));
        let mut wakes = Vec::new();
        let mut sync_done = None;
        while let Some(t) = b.next_completion() {
            let mut out = Vec::new();
            b.complete(t, &mut out);
            for c in &out {
                if c.tag == 7 {
                    sync_done = Some((c.dir, c.sync));
                }
            }
            let mut w = Vec::new();
            b.take_request_wakes(&mut w);
            wakes.extend(w);
        }
        assert_eq!(sync_done, Some((Dir::Write, true)));
        // Its end frees a request of the sync list; diskstats counts a write.
        assert!(wakes.contains(&(0, 0)) && wakes.contains(&(0, 1)));
        assert_eq!(b.stats(0).requests, [0, 7]);
        assert_eq!(b.disk_io(0, 0, 0).ios, [0, 7]);
    }

    #[test]
    fn a_batcher_goes_past_the_full_mark_and_others_wait() {
        let mut b = BlockLayer::new(&[spec(1, 4, 512)], 4096);
        let ms = 1_000_000;
        // The allocation that fills the list (the 4th) marks it full and
        // makes its task a batcher.
        let mut filler = Ioc::default();
        for i in 0..4 {
            assert_eq!(b.submit_ioc(0, 0, Dir::Write, 10 * i, &[0], 0, &mut filler), Submit::Queued);
        }
        assert_eq!(filler.nr_batch, BLK_BATCH_REQ - 1, "the filling allocation counts against its batch");
        // Another task is refused; the batcher goes on, to 3/2 x nr_requests.
        let mut other = Ioc::default();
        assert_eq!(b.submit_ioc(0, 0, Dir::Write, 100, &[0], 0, &mut other), Submit::Full);
        assert_eq!(b.last_full_queue(), 0);
        for i in 0..2 {
            assert_eq!(b.submit_ioc(ms, 0, Dir::Write, 200 + 10 * i, &[0], 0, &mut filler), Submit::Queued);
        }
        assert_eq!(b.in_flight(0, Dir::Write), 6);
        assert_eq!(b.submit_ioc(ms, 0, Dir::Write, 300, &[0], 0, &mut filler), Submit::Full, "3/2 x nr_requests");
        // Frees above nr_requests - 1 wake nobody; the first below does and
        // clears the full mark.
        let (mut out, mut wakes) = (Vec::new(), Vec::new());
        let mut woke_at = Vec::new();
        while b.in_flight(0, Dir::Write) > 0 {
            b.complete(b.next_completion().unwrap(), &mut out);
            b.take_request_wakes(&mut wakes);
            if !wakes.is_empty() {
                woke_at.push(b.in_flight(0, Dir::Write));
                assert_eq!(wakes, vec![(0, 1)]);
            }
        }
        assert_eq!(woke_at, vec![3, 2, 1, 0]);
        // A batch with requests left lapses after BLK_BATCH_TIME (20 ms),
        // unless it is whole.
        let mut late = Ioc { nr_batch: 5, last_waited: 0, ..Ioc::default() };
        assert!(b.ioc_batching(&late, 19 * ms) && !b.ioc_batching(&late, 20 * ms));
        late.nr_batch = BLK_BATCH_REQ;
        assert!(b.ioc_batching(&late, 1000 * ms));
        b.ioc_set_batching(&mut late, 1000 * ms);
        assert_eq!(late.last_waited, 0, "a running batch is not restarted");
        let mut fresh = Ioc { nr_batch: 0, last_waited: 0, ..Ioc::default() };
        b.ioc_set_batching(&mut fresh, 7 * ms);
        assert_eq!(fresh, Ioc { nr_batch: BLK_BATCH_REQ, last_waited: 7 * ms, ..Ioc::default() });
    }

    #[test]
    fn an_md_member_list_refuses_alone_and_names_itself() {
        // RAID-0 of 2 disks, 64 KiB chunks (16 pages): even chunks on disk 0.
        let mut b = BlockLayer::new(&[spec(1, 4, 512), spec(2, 4, 512)], 4096);
        assert_eq!(b.nr_request_lists(), 3);
        let mut filler = Ioc::default();
        for i in 0..4 {
            // Chunks 0, 2, 4, 6: disk 0 of md (list 1); not contiguous.
            assert_eq!(b.submit_ioc(0, 1, Dir::Write, 32 * i, &[0], 0, &mut filler), Submit::Queued);
        }
        let mut other = Ioc::default();
        assert_eq!(b.submit_ioc(0, 1, Dir::Write, 32 * 5, &[0], 0, &mut other), Submit::Full);
        assert_eq!(b.last_full_queue(), 1, "md member 0 is list 1 (the plain disk is list 0)");
        assert_eq!(b.submit_ioc(0, 1, Dir::Write, 16, &[0], 0, &mut other), Submit::Queued, "member 1 has room");
    }

    #[test]
    fn congestion_thresholds_3_0() {
        assert_eq!(congestion_thresholds(128), (113, 103));
        assert_eq!(congestion_thresholds(4), (4, 3));
        assert_eq!(congestion_thresholds(1), (1, 1));
        let mut b = BlockLayer::new(&[spec(1, 128, 512), spec(1, 128, 512)], 4096);
        for i in 0..112 {
            b.submit(0, 1, Dir::Write, 2 * i, &[0], 0);
        }
        assert!(!b.congested(1, Dir::Write) && !b.any_congested(Dir::Write));
        b.submit(0, 1, Dir::Write, 500, &[0], 0);
        assert!(b.congested(1, Dir::Write) && b.any_congested(Dir::Write));
        assert!(!b.congested(0, Dir::Write) && !b.any_congested(Dir::Read));
        let mut out = Vec::new();
        while b.in_flight(1, Dir::Write) > 103 {
            b.complete(b.next_completion().unwrap(), &mut out);
        }
        assert!(b.congested(1, Dir::Write)); // 103 is not below off
        assert_eq!(b.take_uncongested_edges(), 0);
        assert!(!b.take_async_clear(), "no write freed below 103: nothing wakes congestion_wait");
        b.complete(b.next_completion().unwrap(), &mut out);
        assert_eq!(b.in_flight(1, Dir::Write), 102);
        assert!(!b.congested(1, Dir::Write) && !b.any_congested(Dir::Write));
        assert_eq!(b.take_uncongested_edges(), edge_bit(1, Dir::Write));
        assert_eq!(b.take_uncongested_edges(), 0);
        assert!(b.take_async_clear() && !b.take_async_clear());
        // Hysteresis: back to 112 stays uncongested, 113 congests again.
        for i in 0..10 {
            b.submit(b.next_completion().unwrap() - 1, 1, Dir::Write, 1000 + 2 * i, &[0], 0);
        }
        assert!(!b.congested(1, Dir::Write));
        b.submit(b.next_completion().unwrap() - 1, 1, Dir::Write, 2000, &[0], 0);
        assert!(b.congested(1, Dir::Write));
    }

    #[test]
    fn raid0_split_and_parallel() {
        let mut b = BlockLayer::new(&[spec(4, 128, 1024)], 4096); // chunk 64 KiB = 16 pages = 128 sectors
        let q = &b.qs[0];
        assert_eq!(q.map(5 * 128 + 24), (1, 128 + 24)); // chunk 5 -> disk 1, second local chunk
        assert_eq!(q.map(3 * 128), (3, 0));
        assert_eq!(b.max_bio_pages(0), 16, "an md bio is at most a chunk");
        let pfns: Vec<u32> = (0..16).collect();
        for c in 0..4u64 {
            assert_eq!(b.submit(0, 0, Dir::Write, 16 * c, &pfns, c as u32), Submit::Queued);
        }
        let t1 = ACC + 16 * PG; // four chunks, one per member, in parallel
        assert_eq!(b.next_completion(), Some(t1));
        // 16 pages at block 72 cross from chunk 4 (disk 0, local pages 24..32,
        // not where disk 0 stopped: an access) into chunk 5 (disk 1, local
        // 16..24, contiguous): two requests, one on each member's list.
        assert_eq!(b.submit(0, 0, Dir::Write, 72, &pfns, 8), Submit::Queued);
        assert_eq!(b.stats(0).requests[1], 6);
        // 4 more pages at block 88 back-merge into the disk-1 part.
        assert_eq!(b.submit(0, 0, Dir::Write, 88, &pfns[..4], 9), Submit::Merged);
        let v = drain(&mut b);
        let (t2, t3) = (t1 + 12 * PG, t1 + ACC + 8 * PG);
        let want = vec![(t1, 0), (t1, 1), (t1, 2), (t1, 3), (t2, 8), (t2, 9), (t3, 8)];
        assert_eq!(v.iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(), want);
        assert_eq!((&v[4].3[..], &v[5].3[..], &v[6].3[..]), (&pfns[8..], &pfns[..4], &pfns[..8]));
        assert_eq!(b.disk_busy_ns(0, 1), t2);
        assert_eq!(b.disk_busy_ns(0, 2), t1);
    }

    #[test]
    fn raid0_a_request_list_per_member() {
        // md is bio-based in 3.0: each member disk has its own nr_requests
        // per direction, and the device is congested when any member is.
        let mut b = BlockLayer::new(&[spec(4, 4, 1024)], 4096); // chunk 16 pages
        for i in 0..4u64 {
            assert_eq!(b.submit(0, 0, Dir::Write, 2 * i, &[0], i as u32), Submit::Queued); // chunk 0: disk 0
        }
        assert!(b.congested(0, Dir::Write) && b.any_congested(Dir::Write), "disk 0 reached its on threshold (4)");
        assert_eq!(b.submit(0, 0, Dir::Write, 6400, &[0], 9), Submit::Full, "chunk 400: disk 0, whose list is full");
        assert_eq!(b.submit(0, 0, Dir::Write, 16, &[0], 10), Submit::Queued, "chunk 1: disk 1 has room");
        assert_eq!(b.in_flight(0, Dir::Write), 5);
        let mut out = Vec::new();
        b.complete(b.next_completion().unwrap(), &mut out); // disk 0's first and disk 1's
        assert_eq!(out.len(), 2);
        assert!(b.congested(0, Dir::Write), "disk 0 has 3 left: not below off (3)");
        // __freed_request on disk 1 (0 left, below off) calls clear_bdi_congested,
        // which wakes the congestion_wait sleepers though md is still congested.
        assert!(b.take_async_clear());
        out.clear();
        b.complete(b.next_completion().unwrap(), &mut out);
        assert!(!b.congested(0, Dir::Write) && !b.any_congested(Dir::Write));
        assert_eq!(b.take_uncongested_edges(), edge_bit(0, Dir::Write));
        // Ties across disks come out in request order, not disk order.
        let mut b = BlockLayer::new(&[spec(2, 16, 512)], 4096);
        b.submit(0, 0, Dir::Write, 16, &[0; 4], 1); // disk 1
        b.submit(0, 0, Dir::Write, 0, &[0; 4], 2); // disk 0
        let v = drain(&mut b);
        assert_eq!(v.iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(), vec![(ACC + 4 * PG, 1), (ACC + 4 * PG, 2)]);
    }

    fn workload(raid: u32, elevator: Elevator) -> (Log, u64, DevStats) {
        let (mut s0, mut s1) = (spec(raid, 8, 64), spec(1, 8, 64));
        if raid == 4 {
            (s0.rpm, s0.track_seek_us, s0.full_seek_us) = (7200, 800, 16000);
        }
        (s0.elevator, s1.elevator) = (elevator, elevator);
        let mut b = BlockLayer::new(&[s0, s1], 4096);
        let (mut x, mut t, mut log, mut out) = (12345u64, 0u64, Vec::new(), Vec::new());
        for i in 0..2000u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            t += (x >> 40) % 3_000_000;
            while b.next_completion().is_some_and(|c| c <= t) {
                out.clear();
                let c = b.next_completion().unwrap();
                b.complete(c, &mut out);
                log.extend(out.iter().map(|o| (c, o.dev, o.tag, b.pages(o).to_vec())));
            }
            let dir = if x >> 63 == 0 { Dir::Write } else { Dir::Read };
            let block = if (x >> 20) % 4 == 0 { (x >> 24) % 100_000 } else { u64::from(i) * 2 };
            let n = 1 + (x >> 8) % 4;
            let pf: Vec<u32> = (0..n as u32).map(|k| i * 8 + k).collect();
            let _ = b.submit(t, ((x >> 12) % 2) as usize, dir, block, &pf, i);
        }
        log.extend(drain(&mut b));
        (log, b.state_bytes(), b.stats(0))
    }

    #[test]
    fn deterministic() {
        // Also checks the projected next completion against the disks'
        // (something completes at every projected time), with either elevator.
        for elevator in [Elevator::Noop, Elevator::Deadline] {
            for raid in [1, 3, 4] {
                let a = workload(raid, elevator);
                assert_eq!(a, workload(raid, elevator));
                assert!(a.0.len() > 1000 && a.2.merges[1] > 0);
            }
        }
        // The elevator changes the order of completions.
        assert_ne!(workload(3, Elevator::Noop).0, workload(3, Elevator::Deadline).0);
    }
}
