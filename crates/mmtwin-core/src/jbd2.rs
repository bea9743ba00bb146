//! The ext4 journal (fs/jbd2): handles, the running transaction, and
//! kjournald2's commit, as 3.0 had them, reduced to what decides timing.
//!
//! Every filesystem operation that changes metadata runs inside a handle
//! (jbd2_journal_start .. jbd2_journal_stop), and the handle joins the
//! running transaction (t_updates counts the open ones). kjournald2 commits
//! the running transaction when its timer runs out (the commit interval,
//! 5 s, rounded up to a whole second by round_jiffies_up) or when asked:
//! it sets T_LOCKED and waits until the last open handle stops (commit.c,
//! the t_updates loop); meanwhile every task that starts a handle sleeps on
//! j_wait_transaction_locked (transaction.c, start_this_handle). Then the
//! transaction goes to T_FLUSH, the journal has no running transaction, the
//! waiters are woken and start a new one; kjournald2 writes the metadata
//! blocks the transaction logged to the log (one descriptor block per
//! fill of tags), waits for them, writes the commit block and waits for it.
//!
//! Where a handle is held across a sleep is what makes this matter: 3.0's
//! ext4_da_write_begin starts its handle BEFORE it allocates the page
//! cache page (grab_cache_page_write_begin, hence AOP_FLAG_NOFS), so a
//! writer in direct reclaim or zone_reclaim, or asleep in it, holds the
//! commit off, and with it every other task that starts a handle. The
//! writeback path (ext4_da_writepages) holds one across block allocation
//! and bio submission, so across get_request_wait. ext4_create holds one
//! across the new inode's allocation.
//!
//! A handle that needs write access to a buffer the committing transaction
//! is writing to the log waits until that write ends (BJ_Shadow in
//! do_get_write_access): a write() that extends its file (the inode's table
//! block), block allocation in writeback (the group's block bitmap and
//! descriptor, the inode), a create (inode bitmap, descriptor, table block,
//! directory block). The engine shadows the committing transaction's
//! blocks from T_FLUSH until its log blocks are written.
//!
//! Ordered data (data=ordered, ext4's default): every inode that
//! ext4_da_writepages gives blocks joins the running transaction's inode
//! list (mpage_da_map_and_submit's ext4_jbd2_file_inode), and the commit,
//! once it has submitted its log blocks, waits for those inodes' pages
//! under writeback (journal_finish_inode_data_buffers' filemap_fdatawait,
//! inode by inode) before it waits for the log writes; so the committing
//! transaction's buffers stay shadowed until the data its blocks describe
//! is on disk as well. The engine waits, inode by inode, until as many of
//! the inode's pages have left writeback as had entered it when the wait
//! for that inode began (the kernel waits page by page on the pages it
//! finds tagged; with requests served out of order the two can differ by
//! a few pages).
//!
//! Not modelled: journal_submit_data_buffers' writing of the listed
//! inodes' dirty pages that already have blocks (with delayed allocation
//! ext4_da_writepages submits what it allocates at once, so only a page
//! redirtied after its write could be found; "flushing data" in
//! /proc/fs/jbd2 is therefore 0); frozen copies (a buffer of the
//! committing transaction not yet being written is copied, without a
//! wait); checkpointing (the log never fills); the commit block's cache
//! flush.

use crate::block::Submit;
use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::page::NIL;
use crate::sched::{Next, Pid, Wq};
use crate::vmstat::Ev;
use serde_json::{json, Value};

/// The bio tag of the journal's writes (fs_writeback.rs io_complete).
pub const JBD2_TAG: u32 = 7;

/// The paths that hold a handle; a task's `KTask::handle` is the set of
/// them (its h_ref is how many), so a path resuming after a sleep knows
/// its handle is still open.
pub mod hold {
    /// ext4_da_write_begin .. ext4_da_write_end.
    pub const WRITE: u8 = 1;
    /// ext4_create (the new inode's allocation).
    pub const CREATE: u8 = 2;
    /// ext4_da_writepages (allocation and submission of a run of pages).
    pub const WRITEBACK: u8 = 4;
    /// ext4_evict_inode's truncate and free of an unlinked file.
    pub const UNLINK: u8 = 8;
}

/// Metadata block kinds a transaction logs (for counting distinct blocks).
#[derive(Clone, Copy)]
pub enum Meta {
    /// The inode table block holding inode `ino` (16 inodes of 256 bytes a 4 KiB block).
    Itable(u32),
    /// A directory's block (the entry added or removed).
    Dir(u32),
    /// A group's inode bitmap (the model's allocation group).
    InodeBitmap(u32),
    /// A block bitmap: one per 128 MiB ext4 block group (`Fs::bitmap_of_block`).
    BlockBitmap(u32),
    /// The group descriptor block of a model allocation group (a 4 KiB
    /// block holds 128 descriptors, about one of the model's 128 groups on
    /// the presets' filesystems of hundreds of GiB).
    Gdt(u32),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum TState {
    Running,
    Locked,
}

#[derive(Clone, Copy, Debug)]
struct Transaction {
    tid: u32,
    state: TState,
    /// t_updates: handles open now.
    updates: u32,
    start: u64,
    /// When kjournald2's timer commits it.
    expires: u64,
    /// Distinct metadata blocks it logged.
    blocks: u64,
    /// t_handle_count: handles started in it.
    handles: u64,
    /// t_max_wait: the longest a handle that joined it had waited for it (ns).
    max_wait: u64,
}

/// kjournald2's progress through a commit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// No commit under way.
    Idle,
    /// Log blocks still to submit, and blocks in flight (bios of the log
    /// may merge into one request: counted in blocks, not bios).
    Log { left: u64, in_flight: u64 },
    /// The commit block: submitted or not, and in flight.
    CommitBlock { submitted: bool, in_flight: u64 },
}

/// What /proc/fs/jbd2/<dev>/info sums up, and more.
#[derive(Clone, Copy, Default, Debug)]
pub struct Jbd2Stats {
    pub commits: u64,
    pub handles: u64,
    /// Handle starts that slept because the transaction was locked.
    pub locked_waits: u64,
    /// Time those tasks slept (ns).
    pub locked_wait_ns: u64,
    /// T_LOCKED time: from locking until the last handle stopped (ns).
    pub locked_ns: u64,
    pub max_locked_ns: u64,
    /// T_RUNNING time of committed transactions (ns).
    pub running_ns: u64,
    /// Commit time from T_FLUSH to the commit block's completion (ns).
    pub logging_ns: u64,
    /// Blocks written to the log (descriptors, metadata, commit blocks).
    pub blocks_logged: u64,
    /// Sums over committed transactions: t_max_wait, handles, metadata blocks.
    pub max_wait_ns: u64,
    pub tx_handles: u64,
    pub tx_blocks: u64,
    /// j_average_commit_time: T_FLUSH to the commit's end, each commit
    /// weighing a quarter (ns).
    pub avg_commit_ns: u64,
    /// Waits for a buffer the committing transaction was writing to the
    /// log (BJ_Shadow), and their time (ns).
    pub shadow_waits: u64,
    pub shadow_wait_ns: u64,
    /// Inodes on committed transactions' ordered lists, and the time
    /// kjournald2 spent waiting for their data (ns).
    pub ordered_inodes: u64,
    pub ordered_wait_ns: u64,
}

pub struct Journal {
    pub kthread: Pid,
    pub dev: usize,
    running: Option<Transaction>,
    next_tid: u32,
    commit_interval_ns: u64,
    phase: Phase,
    /// The committing transaction's tid, and when it went to T_FLUSH.
    committing: Option<(u32, u64)>,
    /// When the running transaction was locked.
    locked_at: u64,
    /// The log: its first block (filesystem block, in pages) and size, and
    /// where the next write goes.
    log_start: u64,
    log_pages: u64,
    head: u64,
    /// Per metadata block, the tid that last logged it (0: none).
    itable_tid: Vec<u32>,
    dir_tid: Vec<u32>,
    ibitmap_tid: Vec<u32>,
    bbitmap_tid: Vec<u32>,
    gdt_tid: Vec<u32>,
    /// Ordered data: per inode number, the tid of the last transaction
    /// whose list it joined (jinode->i_transaction; 0: none) in the high
    /// half and the inode's generation then in the low (a reused number is
    /// a new inode); the running and the
    /// committing transaction's lists (inode, generation); how far the
    /// commit's wait has got through its list, and the inode it waits on
    /// with the count of its pages that must have left writeback.
    inode_tid: Vec<u64>,
    t_inodes: Vec<(u32, u32)>,
    c_inodes: Vec<(u32, u32)>,
    data_pos: usize,
    data_wait: Option<(u32, u64)>,
    data_wait_since: u64,
    /// Journal block tags a descriptor block holds (4 KiB blocks, 3.0's
    /// 8-byte tags plus a 16-byte UUID once: about 500; 3.0 computes it
    /// from the block size).
    tags_per_descriptor: u64,
    pub stats: Jbd2Stats,
}

impl Journal {
    pub fn new(kthread: Pid, dev: usize, log_start: u64, log_pages: u64, commit_s: u64, groups: usize) -> Journal {
        Journal {
            kthread,
            dev,
            running: None,
            next_tid: 1,
            commit_interval_ns: commit_s * 1_000_000_000,
            phase: Phase::Idle,
            committing: None,
            locked_at: 0,
            log_start,
            log_pages: log_pages.max(1),
            head: 0,
            itable_tid: Vec::new(),
            dir_tid: Vec::new(),
            ibitmap_tid: vec![0; groups],
            bbitmap_tid: Vec::new(),
            gdt_tid: vec![0; groups],
            inode_tid: Vec::new(),
            t_inodes: Vec::new(),
            c_inodes: Vec::new(),
            data_pos: 0,
            data_wait: None,
            data_wait_since: 0,
            tags_per_descriptor: 500,
            stats: Jbd2Stats::default(),
        }
    }

    /// The running transaction is locked for its commit.
    pub fn locked(&self) -> bool {
        self.running.is_some_and(|t| t.state == TState::Locked)
    }

    /// Handles open in the running transaction.
    pub fn updates(&self) -> u32 {
        self.running.map(|t| t.updates).unwrap_or(0)
    }

    pub fn state_bytes(&self) -> u64 {
        ((self.itable_tid.capacity()
            + self.dir_tid.capacity()
            + self.ibitmap_tid.capacity()
            + self.bbitmap_tid.capacity()
            + self.gdt_tid.capacity())
            * 4
            + (self.inode_tid.capacity() + self.t_inodes.capacity() + self.c_inodes.capacity()) * 8
            + std::mem::size_of::<Journal>()) as u64
    }

    /// Does the end of writeback that brings inode `ino`'s count of pages
    /// out of writeback to `ended` end kjournald2's wait for its data?
    #[inline]
    pub fn data_wait_done_by(&self, ino: u32, ended: u64) -> bool {
        matches!(self.data_wait, Some((i, target)) if i == ino && ended >= target)
    }

    /// The tid that last logged `m` (0: none).
    fn logged_in(&self, m: Meta) -> u32 {
        let at = |v: &Vec<u32>, i: usize| v.get(i).copied().unwrap_or(0);
        match m {
            Meta::Itable(ino) => at(&self.itable_tid, ino as usize / 16),
            Meta::Dir(d) => at(&self.dir_tid, d as usize),
            Meta::InodeBitmap(g) => at(&self.ibitmap_tid, g as usize),
            Meta::BlockBitmap(g) => at(&self.bbitmap_tid, g as usize),
            Meta::Gdt(g) => at(&self.gdt_tid, g as usize),
        }
    }

    /// Is `m` being written to the log (BJ_Shadow): logged by the
    /// committing transaction, whose log writes have not all completed?
    pub fn shadowed(&self, m: Meta) -> bool {
        matches!(self.phase, Phase::Log { .. }) && self.committing.is_some_and(|(tid, _)| self.logged_in(m) == tid)
    }

    /// /proc/fs/jbd2/<dev>-8/info as 3.0's jbd2_seq_info_show prints it,
    /// averages over the committed transactions in ms of simulated time.
    /// "flushing data" is 0 (it times journal_submit_data_buffers, which
    /// is not modelled; the ordered data's wait falls in "logging") and
    /// "blocks per transaction" counts the distinct metadata blocks logged
    /// (the kernel counts the credits reserved, not modelled).
    pub fn proc_info(&self, page_size: u64) -> String {
        let s = &self.stats;
        let max_buffers = self.log_pages * page_size / 4096 / 4;
        let mut out = format!("{} transaction, each up to {} blocks\n", s.commits, max_buffers);
        if s.commits == 0 {
            return out;
        }
        let ms = |ns: u64| ns / s.commits / 1_000_000;
        out += &format!("average: \n  {}ms waiting for transaction\n", ms(s.max_wait_ns));
        out += &format!("  {}ms running transaction\n", ms(s.running_ns));
        out += &format!("  {}ms transaction was being locked\n", ms(s.locked_ns));
        out += "  0ms flushing data (in ordered mode)\n";
        out += &format!("  {}ms logging transaction\n", ms(s.logging_ns));
        out += &format!("  {}us average transaction commit time\n", s.avg_commit_ns / 1000);
        out += &format!("  {} handles per transaction\n", s.tx_handles / s.commits);
        out += &format!("  {} blocks per transaction\n", s.tx_blocks / s.commits);
        out += &format!("  {} logged blocks per transaction\n", s.blocks_logged / s.commits);
        out
    }

    pub fn to_json(&self) -> Value {
        let s = &self.stats;
        let ms = |ns: u64| (ns as f64 / 1e6 * 1000.0).round() / 1000.0;
        let per = |ns: u64| if s.commits == 0 { 0.0 } else { ms(ns / s.commits) };
        json!({
            "commits": s.commits,
            "handles": s.handles,
            "locked_waits": s.locked_waits,
            "locked_wait_s": ms(s.locked_wait_ns) / 1000.0,
            "avg_running_ms": per(s.running_ns),
            "avg_locked_ms": per(s.locked_ns),
            "max_locked_ms": ms(s.max_locked_ns),
            "avg_logging_ms": per(s.logging_ns),
            "blocks_logged": s.blocks_logged,
            "shadow_waits": s.shadow_waits,
            "shadow_wait_s": ms(s.shadow_wait_ns) / 1000.0,
            "ordered_inodes": s.ordered_inodes,
            "ordered_wait_s": ms(s.ordered_wait_ns) / 1000.0,
        })
    }
}

/// round_jiffies_up for a timer `at` ns: to the next whole second.
fn round_up_second(at: u64) -> u64 {
    at.div_ceil(1_000_000_000) * 1_000_000_000
}

impl Kernel {
    /// jbd2_journal_start for the path `who` of the task of `ctx`. Ok when
    /// the task holds a handle now (a path that already holds one goes on;
    /// a nested start takes a reference); Err(sleep) when the running
    /// transaction is locked: the task sleeps on j_wait_transaction_locked
    /// and calls again when woken. Without a journal, always Ok.
    pub fn journal_start(&mut self, ctx: &mut Ctx, who: u8) -> Result<(), Next> {
        let pid = ctx.pid as usize;
        let held = self.kt[pid].handle;
        let Some(j) = self.journal.as_mut() else { return Ok(()) };
        if held & who != 0 {
            return Ok(());
        }
        if held != 0 {
            // current->journal_info: a nested start only counts a reference.
            self.kt[pid].handle |= who;
            return Ok(());
        }
        let now = ctx.clock();
        if j.locked() {
            if self.kt[pid].handle_wait.is_none() {
                j.stats.locked_waits += 1;
                self.kt[pid].handle_wait = Some(now);
            }
            return Err(Next::Sleep { until: None, wq: Some(Wq::JournalLocked), io: false });
        }
        let waited = self.kt[pid].handle_wait.take().map_or(0, |since| now.saturating_sub(since));
        j.stats.locked_wait_ns += waited;
        if j.running.is_none() {
            // jbd2_get_transaction: a new transaction and kjournald2's timer.
            let tid = j.next_tid;
            j.next_tid += 1;
            let expires = round_up_second(now + j.commit_interval_ns);
            j.running = Some(Transaction { tid, state: TState::Running, updates: 0, start: now, expires, blocks: 0, handles: 0, max_wait: 0 });
            if j.phase == Phase::Idle && j.committing.is_none() {
                self.sched.wake_up_all(Wq::Journal, now);
            }
        }
        let t = j.running.as_mut().expect("a running transaction");
        t.updates += 1;
        t.handles += 1;
        t.max_wait = t.max_wait.max(waited);
        j.stats.handles += 1;
        self.kt[pid].handle = who;
        Ok(())
    }

    /// jbd2_journal_stop for the path `who`: the handle closes when the
    /// task's last path lets go; the last handle of a locked transaction
    /// wakes kjournald2.
    pub fn journal_stop(&mut self, ctx: &Ctx, who: u8) {
        let pid = ctx.pid as usize;
        if self.kt[pid].handle & who == 0 {
            return;
        }
        self.kt[pid].handle &= !who;
        if self.kt[pid].handle != 0 {
            return;
        }
        let Some(j) = self.journal.as_mut() else { return };
        let t = j.running.as_mut().expect("an open handle belongs to the running transaction");
        t.updates -= 1;
        if t.updates == 0 && t.state == TState::Locked {
            self.sched.wake_up_all(Wq::Journal, ctx.clock());
        }
    }

    /// Every handle the task holds, closed (a task leaving a path that may
    /// hold one without coming back to it).
    pub fn journal_stop_all(&mut self, ctx: &Ctx) {
        let held = self.kt[ctx.pid as usize].handle;
        if held != 0 {
            self.journal_stop(ctx, held);
        }
    }

    /// jbd2_journal_get_write_access for the buffers `ms` a handle is about
    /// to change: Err(sleep) while one of them is being written to the log
    /// by the committing transaction (do_get_write_access waits for
    /// BH_Unshadow); the caller calls again when woken. Without a journal,
    /// always Ok.
    pub fn journal_get_write_access(&mut self, ctx: &Ctx, ms: &[Meta]) -> Result<(), Next> {
        let pid = ctx.pid as usize;
        let Some(j) = self.journal.as_mut() else { return Ok(()) };
        let now = ctx.clock();
        if ms.iter().any(|&m| j.shadowed(m)) {
            if self.kt[pid].shadow_wait.is_none() {
                j.stats.shadow_waits += 1;
                self.kt[pid].shadow_wait = Some(now);
            }
            return Err(Next::Sleep { until: None, wq: Some(Wq::JournalLocked), io: false });
        }
        if let Some(since) = self.kt[pid].shadow_wait.take() {
            j.stats.shadow_wait_ns += now.saturating_sub(since);
        }
        Ok(())
    }

    /// ext4_jbd2_file_inode (jbd2_journal_file_inode): inode `ino`, given
    /// blocks under the running transaction, joins its ordered list (once;
    /// an inode on the committing transaction's list joins the running
    /// one's as well, as i_next_transaction has it).
    pub fn journal_file_inode(&mut self, ino: u32) {
        let Some(j) = self.journal.as_mut() else { return };
        let Some(t) = j.running.as_ref() else { return };
        let gen = self.fs.inodes[ino as usize].gen;
        let key = (u64::from(t.tid) << 32) | u64::from(gen);
        let slot = grow(&mut j.inode_tid, ino as usize);
        if *slot != key {
            *slot = key;
            j.t_inodes.push((ino, gen));
        }
    }

    /// jbd2_journal_dirty_metadata: the running transaction logs `m` (once).
    pub fn journal_dirty_metadata(&mut self, m: Meta) {
        let Some(j) = self.journal.as_mut() else { return };
        let Some(t) = j.running.as_mut() else { return };
        let slot = match m {
            Meta::Itable(ino) => grow(&mut j.itable_tid, ino as usize / 16),
            Meta::Dir(d) => grow(&mut j.dir_tid, d as usize),
            Meta::InodeBitmap(g) => grow(&mut j.ibitmap_tid, g as usize),
            Meta::BlockBitmap(g) => grow(&mut j.bbitmap_tid, g as usize),
            Meta::Gdt(g) => grow(&mut j.gdt_tid, g as usize),
        };
        if *slot != t.tid {
            *slot = t.tid;
            t.blocks += 1;
        }
    }

    /// One step of kjournald2: wait for the commit timer, lock the
    /// transaction, wait for its handles, then write the log and the
    /// commit block.
    pub fn kjournald2_step(&mut self, ctx: &mut Ctx) -> Next {
        let now = ctx.now;
        let max_bio = {
            let dev = self.journal.as_ref().expect("kjournald2 runs for a journal").dev;
            self.blk.max_bio_pages(dev) as u64
        };
        let j = self.journal.as_mut().expect("kjournald2 runs for a journal");
        match j.phase {
            Phase::Idle => {
                let Some(t) = j.running.as_mut() else {
                    return Next::Sleep { until: None, wq: Some(Wq::Journal), io: false };
                };
                if t.state == TState::Running {
                    if now < t.expires {
                        return Next::Sleep { until: Some(t.expires), wq: Some(Wq::Journal), io: false };
                    }
                    // jbd2_journal_commit_transaction: T_LOCKED.
                    t.state = TState::Locked;
                    j.locked_at = now;
                }
                if t.updates > 0 {
                    return Next::Sleep { until: None, wq: Some(Wq::Journal), io: false };
                }
                // T_FLUSH: the journal has no running transaction; the
                // handles waiting for the lock start the next one.
                let t = j.running.take().expect("the locked transaction");
                let locked = now - j.locked_at;
                j.stats.locked_ns += locked;
                j.stats.max_locked_ns = j.stats.max_locked_ns.max(locked);
                j.stats.running_ns += j.locked_at.saturating_sub(t.start);
                j.stats.max_wait_ns += t.max_wait;
                j.stats.tx_handles += t.handles;
                j.stats.tx_blocks += t.blocks;
                j.committing = Some((t.tid, now));
                // The transaction's ordered inodes go with it.
                std::mem::swap(&mut j.t_inodes, &mut j.c_inodes);
                j.t_inodes.clear();
                j.data_pos = 0;
                j.data_wait = None;
                j.stats.ordered_inodes += j.c_inodes.len() as u64;
                let descriptors = t.blocks.div_ceil(j.tags_per_descriptor).max(1);
                j.phase = Phase::Log { left: t.blocks + descriptors, in_flight: 0 };
                self.sched.wake_up_all(Wq::JournalLocked, now);
                Next::Run
            }
            Phase::Log { left, in_flight } => {
                if left == 0 {
                    // journal_finish_inode_data_buffers: the ordered
                    // inodes' data first, inode by inode.
                    while j.data_pos < j.c_inodes.len() {
                        let (ino, gen) = j.c_inodes[j.data_pos];
                        let i = &self.fs.inodes[ino as usize];
                        if i.in_use && i.gen == gen {
                            let target = match j.data_wait {
                                Some((w, t)) if w == ino => t,
                                _ => i.wb_started,
                            };
                            if i.wb_ended < target {
                                if j.data_wait.is_none() {
                                    j.data_wait_since = now;
                                }
                                j.data_wait = Some((ino, target));
                                return Next::Sleep { until: None, wq: Some(Wq::Journal), io: true };
                            }
                        }
                        j.data_pos += 1;
                        if j.data_wait.take().is_some() {
                            j.stats.ordered_wait_ns += now - j.data_wait_since;
                        }
                    }
                    if in_flight > 0 {
                        return Next::Sleep { until: None, wq: Some(Wq::Journal), io: true };
                    }
                    // The log blocks are on disk: their buffers leave
                    // BJ_Shadow and the handles waiting for them go on.
                    j.phase = Phase::CommitBlock { submitted: false, in_flight: 0 };
                    self.sched.wake_up_all(Wq::JournalLocked, now);
                    return Next::Run;
                }
                match self.journal_write(ctx, left.min(max_bio)) {
                    Some(n) => {
                        let j = self.journal.as_mut().expect("journal");
                        j.phase = Phase::Log { left: left - n, in_flight: in_flight + n };
                        Next::Run
                    }
                    None => self.request_wait_sleep(ctx),
                }
            }
            Phase::CommitBlock { submitted, in_flight } => {
                if !submitted {
                    return match self.journal_write(ctx, 1) {
                        Some(_) => {
                            let j = self.journal.as_mut().expect("journal");
                            j.phase = Phase::CommitBlock { submitted: true, in_flight: 1 };
                            Next::Sleep { until: None, wq: Some(Wq::Journal), io: true }
                        }
                        None => self.request_wait_sleep(ctx),
                    };
                }
                if in_flight > 0 {
                    return Next::Sleep { until: None, wq: Some(Wq::Journal), io: true };
                }
                // T_FINISHED.
                let (_, flushed) = j.committing.take().expect("a committing transaction");
                let commit_time = now - flushed;
                j.stats.logging_ns += commit_time;
                j.stats.avg_commit_ns =
                    if j.stats.commits == 0 { commit_time } else { (commit_time + j.stats.avg_commit_ns * 3) / 4 };
                j.stats.commits += 1;
                j.phase = Phase::Idle;
                Next::Run
            }
        }
    }

    /// Submit `n` log blocks at the log's head (wrapping at its end).
    /// None if the request list had no room.
    fn journal_write(&mut self, ctx: &mut Ctx, n: u64) -> Option<u64> {
        let j = self.journal.as_ref().expect("journal");
        let (dev, n) = (j.dev, n.min(j.log_pages));
        let head = if j.head + n > j.log_pages { 0 } else { j.head };
        let block = j.log_start + head;
        let pfns = [NIL; 512];
        let n = n.min(pfns.len() as u64) as usize;
        // Log and commit blocks go WRITE_SYNC (commit.c).
        if matches!(self.submit_bio_sync(ctx, dev, block, &pfns[..n], JBD2_TAG), Submit::Full) {
            return None;
        }
        self.mm.vm.add(Ev::Pgpgout, n as u64 * self.page_size / 1024);
        let j = self.journal.as_mut().expect("journal");
        j.head = head + n as u64;
        j.stats.blocks_logged += n as u64;
        Some(n as u64)
    }

    /// A request of `blocks` log blocks completed (io_complete).
    pub fn journal_io_done(&mut self, now: u64, blocks: u64) {
        let Some(j) = self.journal.as_mut() else { return };
        match &mut j.phase {
            Phase::Log { in_flight, .. } | Phase::CommitBlock { in_flight, .. } => *in_flight -= blocks,
            Phase::Idle => unreachable!("a log write completed with no commit under way"),
        }
        self.sched.wake_up_all(Wq::Journal, now);
    }
}

fn grow<T: Default + Clone>(v: &mut Vec<T>, i: usize) -> &mut T {
    if v.len() <= i {
        v.resize(i + 1, T::default());
    }
    &mut v[i]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_alloc::AllocRes;
    use crate::sched::TaskKind;
    use serde_json::json;

    /// One node of 4 CPUs and one disk with `fs`, two fs_mark threads.
    fn spec(fs: serde_json::Value) -> String {
        json!({
            "machine": {"name": "box", "page_size": 4096, "cache_line": 64, "hz": 250,
                "nodes": [{"cpus": 4, "zones": [{"name": "DMA32", "present_pages": 8192}], "reserved_pages": 64}],
                "distance": [[10]],
                "cost": {"fault_ns": 1500, "clear_ns_per_kib": 60, "clear_remote_ns_per_kib": 90, "line_miss_ns": 90,
                         "line_hit_ns": 1, "buddy_page_ns": 30, "user_store_ns": 80},
                "storage": {"devices": [{"name": "sda", "disks": 1, "bandwidth_mib_s": 100, "access_us": 8000,
                                         "nr_requests": 128, "max_sectors_kib": 512, "size_mib": 10000}],
                            "fs": fs}},
            "kernel": {"name": "k", "era": "3.0", "zlc": "after-first-zone"},
            "workload": {"kind": "fsmark", "threads": 2, "dirs": 1, "subdirs": 2, "files_per_subdir": 10,
                         "files": 1, "iterations": 1, "file_bytes": 4096}})
        .to_string()
    }

    fn boot(fs: serde_json::Value) -> Kernel {
        Kernel::boot(&crate::spec::parse(&spec(fs)).unwrap()).unwrap()
    }

    fn ext4() -> Kernel {
        boot(json!({"kind": "ext4", "device": 0, "size_mib": 9000}))
    }

    fn ctx_of(k: &Kernel, kind: TaskKind, nth: usize, now: u64) -> Ctx {
        let pid = k.sched.tasks.iter().filter(|t| t.kind == kind).nth(nth).unwrap().pid;
        Ctx { cpu: 0, node: 0, pid, now, ..Default::default() }
    }

    /// ext4 with user tasks A and B and kjournald2: A opens a handle (in
    /// write_begin, say) and keeps it; at the commit timer (5 s) the
    /// transaction is T_LOCKED, waiting for A's handle.
    fn locked_by_a_handle() -> (Kernel, Ctx, Ctx, Ctx) {
        let mut k = ext4();
        let mut a = ctx_of(&k, TaskKind::User, 0, 0);
        let b = ctx_of(&k, TaskKind::User, 1, 0);
        let mut kj = ctx_of(&k, TaskKind::Kjournald, 0, 0);
        assert!(k.journal_start(&mut a, hold::WRITE).is_ok());
        // kjournald2 before the timer: sleeps until it (5 s, a whole second).
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Sleep { until: Some(5_000_000_000), .. }));
        kj.now = 5_000_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Sleep { until: None, wq: Some(Wq::Journal), .. }));
        assert!(k.journal.as_ref().unwrap().locked());
        (k, a, b, kj)
    }

    #[test]
    fn a_handle_open_at_the_commit_holds_it_locked_and_new_handles_wait() {
        let (mut k, mut a, mut b, mut kj) = locked_by_a_handle();
        // B's handle waits for the lock to go, however many times it tries.
        b.now = 5_100_000_000;
        assert!(matches!(k.journal_start(&mut b, hold::CREATE), Err(Next::Sleep { wq: Some(Wq::JournalLocked), .. })));
        // A nested start of A's takes a reference, never waits.
        assert!(k.journal_start(&mut a, hold::WRITEBACK).is_ok());
        k.journal_stop(&a, hold::WRITEBACK);
        assert_eq!(k.journal.as_ref().unwrap().updates(), 1);
        // A stops at 5.3 s: kjournald2 flushes, B's start goes through.
        a.now = 5_300_000_000;
        k.journal_stop(&a, hold::WRITE);
        kj.now = 5_300_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run));
        assert!(!k.journal.as_ref().unwrap().locked());
        b.now = 5_300_000_000;
        assert!(k.journal_start(&mut b, hold::CREATE).is_ok());
        let s = k.journal.as_ref().unwrap().stats;
        assert_eq!((s.handles, s.locked_waits), (2, 1));
        assert_eq!(s.locked_ns, 300_000_000);
        assert_eq!(s.locked_wait_ns, 200_000_000);
    }

    #[test]
    fn a_commit_logs_each_block_once_with_a_descriptor_and_a_commit_block() {
        let mut k = ext4();
        let mut a = ctx_of(&k, TaskKind::User, 0, 0);
        let mut kj = ctx_of(&k, TaskKind::Kjournald, 0, 0);
        assert!(k.journal_start(&mut a, hold::WRITE).is_ok());
        for _ in 0..3 {
            k.journal_dirty_metadata(Meta::Itable(17));
            k.journal_dirty_metadata(Meta::Itable(31)); // the same 16-inode block
            k.journal_dirty_metadata(Meta::Gdt(0));
            k.journal_dirty_metadata(Meta::BlockBitmap(2));
        }
        k.journal_stop(&a, hold::WRITE);
        kj.now = 5_000_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run)); // locked, no handle: T_FLUSH
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run)); // 3 blocks + 1 descriptor submitted
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Sleep { io: true, .. }));
        k.journal_io_done(5_010_000_000, 4);
        kj.now = 5_010_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run)); // on to the commit block
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Sleep { io: true, .. }));
        k.journal_io_done(5_020_000_000, 1);
        kj.now = 5_020_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run));
        let s = k.journal.as_ref().unwrap().stats;
        assert_eq!((s.commits, s.blocks_logged, s.logging_ns), (1, 5, 20_000_000));
        // /proc/fs/jbd2/<dev>/info as 3.0 prints it (a 64 MiB log: 16384
        // blocks, a quarter of them a transaction at most).
        let info = k.journal.as_ref().unwrap().proc_info(4096);
        let (_, pages) = k.fs.journal_log.unwrap();
        assert_eq!(
            info,
            format!(
                "1 transaction, each up to {} blocks\naverage: \n  0ms waiting for transaction\n  5000ms running transaction\n  \
                 0ms transaction was being locked\n  0ms flushing data (in ordered mode)\n  20ms logging transaction\n  \
                 20000us average transaction commit time\n  1 handles per transaction\n  3 blocks per transaction\n  \
                 5 logged blocks per transaction\n",
                pages / 4
            )
        );
        // The same blocks in the next transaction are logged again.
        a.now = 6_000_000_000;
        assert!(k.journal_start(&mut a, hold::WRITE).is_ok());
        k.journal_dirty_metadata(Meta::Gdt(0));
        assert_eq!(k.journal.as_ref().unwrap().running.unwrap().blocks, 1);
    }

    #[test]
    fn a_buffer_being_written_to_the_log_holds_off_its_next_change_until_the_write_ends() {
        let mut k = ext4();
        let mut a = ctx_of(&k, TaskKind::User, 0, 0);
        let mut b = ctx_of(&k, TaskKind::User, 1, 0);
        let mut kj = ctx_of(&k, TaskKind::Kjournald, 0, 0);
        assert!(k.journal_start(&mut a, hold::WRITE).is_ok());
        k.journal_dirty_metadata(Meta::Itable(5));
        k.journal_stop(&a, hold::WRITE);
        kj.now = 5_000_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run)); // T_FLUSH
        // From T_FLUSH until its log write ends the committing transaction's
        // buffers are shadowed (the kernel shadows them just before it
        // submits the log write; what comes first only submits data).
        a.now = 5_000_000_000;
        assert!(k.journal_start(&mut a, hold::WRITE).is_ok());
        let r = k.journal_get_write_access(&a, &[Meta::Itable(2)]); // inode 2 shares inode 5's block
        assert!(matches!(r, Err(Next::Sleep { wq: Some(Wq::JournalLocked), .. })));
        // Another block, or one the committing transaction did not log, goes on.
        b.now = 5_000_000_000;
        assert!(k.journal_get_write_access(&b, &[Meta::Itable(16), Meta::Gdt(0)]).is_ok());
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run)); // the log write submitted
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Sleep { io: true, .. }));
        k.journal_io_done(5_200_000_000, 2);
        kj.now = 5_200_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run)); // unshadowed, on to the commit block
        a.now = 5_200_000_000;
        assert!(k.journal_get_write_access(&a, &[Meta::Itable(2)]).is_ok());
        let s = k.journal.as_ref().unwrap().stats;
        assert_eq!((s.shadow_waits, s.shadow_wait_ns), (1, 200_000_000));
    }

    #[test]
    fn the_commit_waits_for_its_ordered_inodes_data_and_keeps_its_buffers_shadowed_meanwhile() {
        let mut k = ext4();
        let mut a = ctx_of(&k, TaskKind::User, 0, 0);
        let mut kj = ctx_of(&k, TaskKind::Kjournald, 0, 0);
        let ino = k.sys_creat(&mut a, 0).ok().unwrap();
        let other = k.sys_creat(&mut a, 0).ok().unwrap();
        // Writeback gives both inodes blocks in the running transaction and
        // puts 3 and 2 of their pages under writeback; the first joins the
        // list once however often it is given blocks.
        assert!(k.journal_start(&mut a, hold::WRITEBACK).is_ok());
        k.journal_dirty_metadata(Meta::Itable(ino));
        for (i, n) in [(ino, 3), (ino, 3), (other, 2)] {
            k.journal_file_inode(i);
            k.fs.inodes[i as usize].wb_started = n;
        }
        k.journal_stop(&a, hold::WRITEBACK);
        kj.now = 5_000_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run)); // T_FLUSH
        assert_eq!(k.journal.as_ref().unwrap().stats.ordered_inodes, 2);
        // Given blocks again during the commit: on the next transaction's list too.
        a.now = 5_000_000_000;
        assert!(k.journal_start(&mut a, hold::WRITEBACK).is_ok());
        k.journal_file_inode(ino);
        k.journal_stop(&a, hold::WRITEBACK);
        assert_eq!(k.journal.as_ref().unwrap().t_inodes, vec![(ino, k.fs.inodes[ino as usize].gen)]);
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run)); // the log write submitted
        // The log write ends first; the commit still waits for the data.
        let logged = k.journal.as_ref().unwrap().stats.blocks_logged;
        k.journal_io_done(5_100_000_000, logged);
        kj.now = 5_100_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Sleep { wq: Some(Wq::Journal), io: true, .. }));
        let j = k.journal.as_ref().unwrap();
        assert!(j.shadowed(Meta::Itable(ino)), "shadowed until the data is written");
        assert!(!j.data_wait_done_by(ino, 2) && j.data_wait_done_by(ino, 3) && !j.data_wait_done_by(other, 3));
        // More pages of the inode go under writeback while it waits: the
        // wait is for the three it found.
        k.fs.inodes[ino as usize].wb_started = 5;
        k.fs.inodes[ino as usize].wb_ended = 3;
        kj.now = 5_300_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Sleep { io: true, .. })); // on to the other inode
        k.fs.inodes[other as usize].wb_ended = 2;
        kj.now = 5_400_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run)); // data and log done: unshadowed
        let j = k.journal.as_ref().unwrap();
        assert!(!j.shadowed(Meta::Itable(ino)));
        assert_eq!(j.stats.ordered_wait_ns, 300_000_000);
    }

    #[test]
    fn a_creat_that_sleeps_holds_its_directorys_i_mutex_and_another_creat_there_waits_or_spins() {
        let (mut k, mut a, mut b, mut kj) = locked_by_a_handle();
        // B's creat in directory 7 takes its i_mutex, then sleeps for the
        // locked transaction (ext4_create's handle) still holding it.
        b.now = 5_100_000_000;
        assert!(matches!(k.sys_creat(&mut b, 7), Err(AllocRes::Sleep(Next::Sleep { wq: Some(Wq::JournalLocked), .. }))));
        // A's creat in the same directory sleeps on the mutex, in another
        // directory it goes on (to the locked transaction).
        let mut a2 = Ctx { now: 5_200_000_000, ..a.clone() };
        assert!(matches!(k.sys_creat(&mut a2, 7), Err(AllocRes::Sleep(Next::Sleep { wq: Some(Wq::IMutex), .. }))));
        k.journal_stop(&a2, hold::WRITE);
        assert!(matches!(k.sys_creat(&mut a2, 8), Err(AllocRes::Sleep(Next::Sleep { wq: Some(Wq::JournalLocked), .. }))));
        // (Directory 8's mutex stays with A, asleep in its creat there: give it back.)
        a2.now = 5_300_000_000;
        kj.now = 5_300_000_000;
        assert!(matches!(k.kjournald2_step(&mut kj), Next::Run));
        assert!(k.sys_creat(&mut a2, 8).is_ok());
        // B resumes its creat, which still holds directory 7's mutex, and
        // lets it go at its clock; A then takes it: 0.2 s asleep on it.
        b.now = 5_300_000_000;
        assert!(k.sys_creat(&mut b, 7).is_ok());
        let released = b.clock();
        a.now = 5_400_000_000;
        assert!(k.sys_creat(&mut a, 7).is_ok());
        assert_eq!((k.dir_locks.sleeps, k.dir_locks.sleep_ns, k.dir_locks.spin_ns), (1, 200_000_000, 0));
        // A creat whose step began before another's release of the mutex
        // spins until then (mutex_spin_on_owner), on the CPU.
        let mut b = Ctx { now: 6_000_000_000, sys: 0, ..b };
        assert!(k.sys_creat(&mut b, 7).is_ok());
        let released = released.max(b.clock());
        let mut a = Ctx { now: 6_000_000_001, sys: 0, ..a };
        assert!(k.sys_creat(&mut a, 7).is_ok());
        assert_eq!(k.dir_locks.spin_ns, released - 6_000_000_001);
        assert!(a.sys >= released - 6_000_000_001);
        // A third, asking while A's hold (which followed B's) runs, waits
        // for both; one asking before B's hold began waits for neither.
        let spun = k.dir_locks.spin_ns;
        let a_released = a.clock();
        let mut c = Ctx { now: 6_000_000_002, sys: 0, ..b.clone() };
        assert!(k.sys_creat(&mut c, 7).is_ok());
        assert_eq!(k.dir_locks.spin_ns - spun, a_released - 6_000_000_002);
        let mut d = Ctx { now: 5_999_999_000, sys: 0, ..b };
        assert!(k.sys_creat(&mut d, 7).is_ok());
        assert_eq!(k.dir_locks.spin_ns - spun, a_released - 6_000_000_002);
    }

    #[test]
    fn an_inode_number_reused_within_a_transaction_joins_its_ordered_list_again() {
        let mut k = ext4();
        let mut a = ctx_of(&k, TaskKind::User, 0, 0);
        let ino = k.sys_creat(&mut a, 0).ok().unwrap();
        assert!(k.journal_start(&mut a, hold::WRITEBACK).is_ok());
        k.journal_file_inode(ino);
        k.journal_file_inode(ino);
        let gen = k.fs.inodes[ino as usize].gen;
        k.fs.inodes[ino as usize].gen = gen + 1; // unlinked, the number given to a new file
        k.journal_file_inode(ino);
        assert_eq!(k.journal.as_ref().unwrap().t_inodes, vec![(ino, gen), (ino, gen + 1)]);
    }

    #[test]
    fn only_ext4_has_a_journal_and_a_bad_journal_setting_is_refused() {
        assert!(ext4().journal.is_some());
        let k = boot(json!({"kind": "ext4", "device": 0, "size_mib": 9000, "journal": false}));
        assert!(k.journal.is_none() && k.fs.journal_log.is_none());
        let k = boot(json!({"kind": "xfs", "device": 0, "size_mib": 9000}));
        assert!(k.journal.is_none() && !k.sched.tasks.iter().any(|t| t.kind == TaskKind::Kjournald));
        for (fs, field) in [
            (json!({"kind": "xfs", "device": 0, "size_mib": 9000, "journal": true}), "machine.storage.fs.journal"),
            (json!({"kind": "ext4", "device": 0, "size_mib": 9000, "commit_s": 0}), "machine.storage.fs.commit_s"),
        ] {
            let e = crate::spec::parse(&spec(fs)).and_then(|s| s.validate().map(|_| s)).err().expect("refused");
            assert!(e.to_string().contains(field), "{e}");
        }
    }

    #[test]
    fn the_log_sits_in_the_middle_group_and_files_are_never_given_its_blocks() {
        let mut k = ext4();
        let (start, pages) = k.fs.journal_log.unwrap();
        let groups = k.fs.nr_groups() as u32;
        assert_eq!(k.fs.group_of_block(start), groups / 2);
        // mke2fs gives a 9000 MiB filesystem 128 MiB; the model's groups are
        // 70 MiB here (128 of them), and the log takes at most half a group.
        assert_eq!(pages, (9000 * 256 / 128 - 512) / 2);
        // Allocate (ext4: mballoc's stream, group after group) through the
        // whole filesystem and half again: the second pass wraps each group
        // to its start, and in the log's group to the log's end.
        let mut ctx = ctx_of(&k, TaskKind::User, 0, 0);
        let ino = k.sys_creat(&mut ctx, groups / 2).ok().unwrap();
        for i in 0..900 {
            let b = k.fs.alloc_blocks(ino, i * 4096, 4096);
            assert!(b + 4096 <= start || b >= start + pages, "block {b} inside the log [{start}, {})", start + pages);
        }
    }
}
