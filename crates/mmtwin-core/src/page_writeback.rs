//! Dirty memory (mm/page-writeback.c, 3.0): dirty accounting
//! (account_page_dirtied, clear_page_dirty_for_io, test_set_page_writeback,
//! end_page_writeback), global_dirty_limits, and balance_dirty_pages with
//! its per-cpu ratelimit, resumable across its pauses.

use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::page::*;
use crate::sched::{Next, Wq};
use crate::vmstat::*;
use std::collections::VecDeque;

/// A backing device's writeback state (struct backing_dev_info + bdi_writeback).
pub struct Bdi {
    pub dev: usize,
    pub flusher: u32,
    /// b_dirty (oldest dirtied first), b_io, b_more_io: inode numbers.
    pub b_dirty: VecDeque<u32>,
    pub b_io: VecDeque<u32>,
    pub b_more_io: VecDeque<u32>,
    /// The work items wakeup_flusher_threads queued (bdi->work_list), each
    /// the pages it asks for (what the front one has left), processed one
    /// after another. At most MAX_WORKS: a call that finds the list full
    /// adds its pages to the last item (3.0 kzallocs one per call; the
    /// bound keeps the engine's memory bounded, docs/architecture.md).
    pub works: VecDeque<u64>,
    /// Background writeback asked for.
    pub background: bool,
    pub last_old_flush: u64,
    /// BDI_RECLAIMABLE and BDI_WRITEBACK.
    pub nr_dirty: i64,
    pub nr_writeback: i64,
    pub dirty_exceeded: bool,
    pub pages_written: u64,
}

impl Bdi {
    pub fn new(dev: usize, flusher: u32) -> Bdi {
        Bdi {
            dev,
            flusher,
            b_dirty: VecDeque::new(),
            b_io: VecDeque::new(),
            b_more_io: VecDeque::new(),
            works: VecDeque::new(),
            background: false,
            last_old_flush: 0,
            nr_dirty: 0,
            nr_writeback: 0,
            dirty_exceeded: false,
            pages_written: 0,
        }
    }
}

/// Resume state of balance_dirty_pages.
#[derive(Debug, Clone, Copy, Default)]
pub struct BdpState {
    pub active: bool,
    pub pause: u64,
    pub start: u64,
    pub pages_written: u64,
    pub write_chunk: u64,
    /// The loop's dirty_exceeded as its last pass left it: a loop that ends
    /// at the (background + dirty) / 2 test keeps the previous pass's value,
    /// and only a false one clears the device's flag.
    pub exceeded: bool,
    /// What is left of a pass's write_chunk after its writeback slept on a
    /// full request queue (writeback_inodes_wb goes on when woken).
    pub pass_left: u64,
}

/// The most work items a device's flusher keeps queued (Bdi::works).
pub const MAX_WORKS: usize = 4096;

impl Kernel {
    /// global_dirty_limits (3.0): (background, dirty) thresholds in pages.
    pub fn global_dirty_limits(&self) -> (u64, u64) {
        let mut free = 0i64;
        let mut reclaimable = 0i64;
        for z in &self.mm.zones {
            free += z.free_pages;
            reclaimable += z.vm_stat[Zs::NrActiveFile as usize] + z.vm_stat[Zs::NrInactiveFile as usize];
            if self.nr_swap_pages() > 0 {
                reclaimable += z.vm_stat[Zs::NrActiveAnon as usize] + z.vm_stat[Zs::NrInactiveAnon as usize];
            }
        }
        let dirtyable = (free + reclaimable).max(0) as u64 + 1;
        let ps = self.page_size;
        let dirty = if self.k.dirty_bytes > 0 { self.k.dirty_bytes.div_ceil(ps) } else { self.k.dirty_ratio * dirtyable / 100 };
        let mut bg = if self.k.dirty_background_bytes > 0 {
            self.k.dirty_background_bytes.div_ceil(ps)
        } else {
            self.k.dirty_background_ratio * dirtyable / 100
        };
        if bg >= dirty {
            bg = dirty / 2;
        }
        (bg, dirty)
    }

    pub fn global_dirty(&self) -> (i64, i64) {
        let mut d = 0;
        let mut w = 0;
        for z in &self.mm.zones {
            d += z.vm_stat[Zs::NrFileDirty as usize];
            w += z.vm_stat[Zs::NrWriteback as usize];
        }
        (d, w)
    }

    /// set_page_dirty for a page-cache page (account_page_dirtied and
    /// __mark_inode_dirty).
    pub fn set_page_dirty(&mut self, ctx: &mut Ctx, p: u32) {
        if self.mm.pages.test(p, PG_DIRTY) {
            return;
        }
        self.mm.pages.set(p, PG_DIRTY);
        self.mm.sim.page_events += 1;
        let zi = self.mm.zone_of(p);
        self.zs_add(zi, Zs::NrFileDirty, 1);
        self.zs_add(zi, Zs::NrDirtied, 1);
        let ino = self.mm.pages.owner[p as usize];
        let idx = self.mm.pages.index[p as usize] as u64;
        self.radix_tag_dirty(ino, idx, true);
        let now = ctx.clock();
        if let Some(b) = self.bdi.first_mut() {
            b.nr_dirty += 1;
        }
        self.fs.da_reserve(ino, idx, true);
        let i = &mut self.fs.inodes[ino as usize];
        i.nrdirty += 1;
        if idx < i.dirty_lo {
            i.dirty_lo = idx;
        }
        self.mark_inode_dirty_pages(ino, now);
    }

    /// __mark_inode_dirty(I_DIRTY_PAGES) for an inode not yet dirty: onto
    /// b_dirty, dirtied now; the first dirty inode of a device with none
    /// arms bdi_wakeup_thread_delayed's timer, which wakes the flusher
    /// dirty_writeback_interval later.
    pub fn mark_inode_dirty_pages(&mut self, ino: u32, now: u64) {
        let i = &mut self.fs.inodes[ino as usize];
        if i.on_dirty_list {
            return;
        }
        i.on_dirty_list = true;
        i.dirtied_when = now;
        if self.bdi.is_empty() {
            return;
        }
        if !self.bdi_has_dirty_io(0) {
            let interval = self.k.dirty_writeback_centisecs * 10_000_000;
            // A timer event of its own each time (3.0's mod_timer moves one
            // timer later): the earliest wakes the flusher; a sleeping
            // flusher that finds nothing to do sleeps again.
            let flusher = self.bdi[0].flusher;
            self.sched.add_timer(flusher, now + interval);
        }
        self.bdi[0].b_dirty.push_back(ino);
    }

    /// wb_has_dirty_io: inodes on b_dirty, b_io or b_more_io.
    pub fn bdi_has_dirty_io(&self, b: usize) -> bool {
        let d = &self.bdi[b];
        !d.b_dirty.is_empty() || !d.b_io.is_empty() || !d.b_more_io.is_empty()
    }

    /// clear_page_dirty_for_io / cancel_dirty_page: the page is clean in the
    /// page cache's accounting.
    pub fn clear_page_dirty_for_io(&mut self, p: u32) {
        if !self.mm.pages.test_clear(p, PG_DIRTY) {
            return;
        }
        self.mm.sim.page_events += 1;
        let zi = self.mm.zone_of(p);
        self.zs_add(zi, Zs::NrFileDirty, -1);
        let ino = self.mm.pages.owner[p as usize];
        if ino != NIL {
            self.fs.inodes[ino as usize].nrdirty -= 1;
            let idx = self.mm.pages.index[p as usize] as u64;
            self.radix_tag_dirty(ino, idx, false);
            self.fs.da_reserve(ino, idx, false);
        }
        if let Some(b) = self.bdi.first_mut() {
            b.nr_dirty -= 1;
        }
    }

    /// test_set_page_writeback.
    pub fn set_page_writeback(&mut self, p: u32) {
        self.mm.pages.set(p, PG_WRITEBACK);
        self.mm.sim.page_events += 1;
        let zi = self.mm.zone_of(p);
        self.zs_add(zi, Zs::NrWriteback, 1);
        if !self.mm.pages.test(p, PG_FILE) {
            return; // swap's backing device keeps no dirty accounting
        }
        let ino = self.mm.pages.owner[p as usize];
        let i = &mut self.fs.inodes[ino as usize];
        i.nrwriteback += 1;
        i.wb_started += 1;
        if let Some(b) = self.bdi.first_mut() {
            b.nr_writeback += 1;
        }
    }

    /// end_page_writeback: PG_reclaim pages rotate to the inactive tail.
    pub fn end_page_writeback(&mut self, p: u32) {
        if self.mm.pages.test_clear(p, PG_RECLAIM) {
            self.rotate_reclaimable_page(p);
        }
        self.mm.pages.clear(p, PG_WRITEBACK);
        self.mm.sim.page_events += 1;
        let zi = self.mm.zone_of(p);
        self.zs_add(zi, Zs::NrWriteback, -1);
        self.zs_add(zi, Zs::NrWritten, 1);
        if self.mm.pages.test(p, PG_FILE) {
            let ino = self.mm.pages.owner[p as usize];
            let i = &mut self.fs.inodes[ino as usize];
            i.nrwriteback -= 1;
            i.wb_ended += 1;
            if self.journal.as_ref().is_some_and(|j| j.data_wait_done_by(ino, i.wb_ended)) {
                // The page kjournald2 waits on in filemap_fdatawait.
                self.sched.wake_up_all(Wq::Journal, self.now);
            }
            if let Some(b) = self.bdi.first_mut() {
                b.nr_writeback -= 1;
                b.pages_written += 1;
            }
        }
        if self.sched.has_waiters(Wq::Page(zi)) {
            self.sched.wake_up_all(Wq::Page(zi), self.now);
        }
    }

    /// ratelimit_pages (writeback_set_ratelimit): the machine's pages over
    /// 32 a CPU, at least 16 and at most 4 MiB.
    fn ratelimit_pages(&self) -> u64 {
        let total = self.mm.pages.len() as u64;
        let ncpus = self.mm.cpu_node.len() as u64;
        (total / (ncpus * 32)).clamp(16, 4096 * 1024 / self.page_size)
    }

    /// balance_dirty_pages_ratelimited_nr (3.0): the CPU's count of calls
    /// (bdp_ratelimits) grows by `nr`, one for each piece of a write() of
    /// at most a page (generic_perform_write), or each write fault on a
    /// shared mapping whose page it dirtied or whose filesystem has
    /// page_mkwrite (ext4, xfs; not 3.0's ext3: set_page_dirty_balance),
    /// and checked at each page's end; the task whose call brings it
    /// to ratelimit_pages (8 once the device's dirty limit is exceeded)
    /// checks the limits, with write_chunk = sync_writeback_pages(count).
    /// A task whose balance_dirty_pages slept goes on with it (nr 0).
    pub fn balance_dirty_pages_ratelimited(&mut self, ctx: &mut Ctx, nr: u64) -> Option<Next> {
        let pid = ctx.pid as usize;
        if self.kt[pid].bdp.active {
            return self.balance_dirty_pages(ctx, 0);
        }
        let rp = self.ratelimit_pages();
        let ratelimit = if self.bdi.first().map(|b| b.dirty_exceeded).unwrap_or(false) { 8 } else { rp };
        let c = &mut self.bdp_ratelimits[ctx.cpu];
        *c += nr;
        if *c < ratelimit {
            return None;
        }
        let dirtied = std::mem::take(c).max(rp);
        self.balance_dirty_pages(ctx, dirtied + dirtied / 2)
    }

    /// balance_dirty_pages (3.0, before IO-less throttling): while dirty +
    /// writeback pages exceed the task's share of the dirty limit, the
    /// dirtier writes back write_chunk pages itself on each pass (until it
    /// has written write_chunk in all), then sleeps in pauses growing from
    /// 1 jiffy to HZ/10.
    fn balance_dirty_pages(&mut self, ctx: &mut Ctx, write_chunk: u64) -> Option<Next> {
        let pid = ctx.pid as usize;
        let mut st = self.kt[pid].bdp;
        if !st.active {
            st = BdpState { active: true, pause: self.jiffies_ns(1), start: ctx.clock(), write_chunk, ..Default::default() };
        }
        let (bg, thresh) = self.global_dirty_limits();
        let (nr_dirty, nr_wb) = self.global_dirty();
        let finished = if st.pass_left > 0 {
            // A pass whose writeback slept for a free request goes on.
            let (written, blocked) = self.writeback_inodes_wb(ctx, 0, st.pass_left, None, true);
            st.pages_written += written;
            st.pass_left = st.pass_left.saturating_sub(written);
            if blocked && st.pass_left > 0 {
                self.kt[pid].bdp = st;
                return Some(self.request_wait_sleep(ctx));
            }
            st.pass_left = 0;
            st.pages_written >= st.write_chunk
        } else {
            let nr = (nr_dirty + nr_wb).max(0) as u64;
            'check: {
                if nr <= (bg + thresh) / 2 {
                    break 'check true;
                }
                // bdi_dirty_limit: one backing device takes the whole limit;
                // task_dirty_limit: less up to 1/8 by the task's share of recent dirtying.
                // User tasks not exited (Sched::users_alive counts them).
                let writers = self.sched.users_alive.max(1) as u64;
                let task_thresh = thresh - thresh / 8 / writers;
                let (bdi_d, bdi_w) = self.bdi.first().map(|b| (b.nr_dirty.max(0) as u64, b.nr_writeback.max(0) as u64)).unwrap_or((0, 0));
                st.exceeded = bdi_d + bdi_w > task_thresh || nr > thresh;
                if !st.exceeded {
                    break 'check true;
                }
                if let Some(b) = self.bdi.first_mut() {
                    b.dirty_exceeded = true;
                }
                if bdi_d > task_thresh && !self.bdi.is_empty() {
                    let (written, blocked) = self.writeback_inodes_wb(ctx, 0, st.write_chunk, None, true);
                    st.pages_written += written;
                    if blocked && written < st.write_chunk {
                        st.pass_left = st.write_chunk - written;
                        self.kt[pid].bdp = st;
                        return Some(self.request_wait_sleep(ctx));
                    }
                    if st.pages_written >= st.write_chunk {
                        break 'check true;
                    }
                }
                false
            }
        };
        if finished {
            if !st.exceeded {
                if let Some(b) = self.bdi.first_mut() {
                    b.dirty_exceeded = false;
                }
            }
            self.kt[pid].bdp = BdpState::default();
            if nr_dirty.max(0) as u64 > bg {
                self.bdi_start_background_writeback(ctx.clock());
            }
            return None;
        }
        let pause = st.pause;
        st.pause = (st.pause * 2).min(self.jiffies_ns(self.hz / 10));
        self.kt[pid].bdp = st;
        Some(Next::Sleep { until: Some(ctx.clock() + pause), wq: None, io: true })
    }

    /// bdi_start_background_writeback: wake the flusher unless writeback
    /// is already in progress.
    pub fn bdi_start_background_writeback(&mut self, now: u64) {
        if let Some(b) = self.bdi.first_mut() {
            if !b.background {
                b.background = true;
                self.sched.wake_up_all(Wq::Flusher(0), now);
            }
        }
    }
}
