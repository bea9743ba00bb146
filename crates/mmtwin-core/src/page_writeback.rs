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
    /// Pages asked for by wakeup_flusher_threads, not yet written.
    pub work_pages: u64,
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
            work_pages: 0,
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
}

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
        let i = &mut self.fs.inodes[ino as usize];
        i.nrdirty += 1;
        if idx < i.dirty_lo {
            i.dirty_lo = idx;
        }
        if !i.on_dirty_list {
            i.on_dirty_list = true;
            i.dirtied_when = now;
            if let Some(b) = self.bdi.first_mut() {
                b.b_dirty.push_back(ino);
            }
        }
        self.kt[ctx.pid as usize].dirtied += 1;
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
        self.fs.inodes[ino as usize].nrwriteback += 1;
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
            self.fs.inodes[ino as usize].nrwriteback -= 1;
            if let Some(b) = self.bdi.first_mut() {
                b.nr_writeback -= 1;
                b.pages_written += 1;
            }
        }
        if self.sched.has_waiters(Wq::Page(zi)) {
            self.sched.wake_up_all(Wq::Page(zi), self.now);
        }
    }

    /// balance_dirty_pages_ratelimited (3.0): every ratelimit_pages pages
    /// dirtied (8 once the device's dirty limit is exceeded), check the
    /// limits. 3.0 kept the count per CPU; it is kept per task here.
    pub fn balance_dirty_pages_ratelimited(&mut self, ctx: &mut Ctx) -> Option<Next> {
        let pid = ctx.pid as usize;
        let total = self.mm.pages.len() as u64;
        let ncpus = self.mm.cpu_node.len() as u64;
        let mut ratelimit = (total / (ncpus * 32)).clamp(16, 4096 * 1024 / self.page_size);
        if self.bdi.first().map(|b| b.dirty_exceeded).unwrap_or(false) {
            ratelimit = 8;
        }
        if !self.kt[pid].bdp.active && (self.kt[pid].dirtied as u64) < ratelimit {
            return None;
        }
        self.balance_dirty_pages(ctx)
    }

    /// balance_dirty_pages (3.0, before IO-less throttling): while dirty +
    /// writeback pages exceed the task's share of the dirty limit, the
    /// dirtier writes back up to write_chunk pages itself, then sleeps in
    /// pauses growing from 1 jiffy to HZ/10.
    fn balance_dirty_pages(&mut self, ctx: &mut Ctx) -> Option<Next> {
        let pid = ctx.pid as usize;
        let mut st = self.kt[pid].bdp;
        if !st.active {
            let dirtied = self.kt[pid].dirtied as u64;
            st = BdpState { active: true, pause: self.jiffies_ns(1), start: ctx.clock(), pages_written: 0, write_chunk: dirtied + dirtied / 2 };
            self.kt[pid].dirtied = 0;
        }
        let (bg, thresh) = self.global_dirty_limits();
        let (nr_dirty, nr_wb) = self.global_dirty();
        let nr = (nr_dirty + nr_wb).max(0) as u64;
        let mut exceeded = false;
        let finished = 'check: {
            if nr <= (bg + thresh) / 2 {
                break 'check true;
            }
            // bdi_dirty_limit: one backing device takes the whole limit;
            // task_dirty_limit: less up to 1/8 by the task's share of recent dirtying.
            // User tasks not exited (Sched::users_alive counts them).
            let writers = self.sched.users_alive.max(1) as u64;
            let task_thresh = thresh - thresh / 8 / writers;
            let (bdi_d, bdi_w) = self.bdi.first().map(|b| (b.nr_dirty.max(0) as u64, b.nr_writeback.max(0) as u64)).unwrap_or((0, 0));
            exceeded = bdi_d + bdi_w > task_thresh || nr > thresh;
            if !exceeded {
                break 'check true;
            }
            if let Some(b) = self.bdi.first_mut() {
                b.dirty_exceeded = true;
            }
            if bdi_d > task_thresh && !self.bdi.is_empty() {
                let want = st.write_chunk.saturating_sub(st.pages_written).max(1);
                let (written, blocked) = self.writeback_inodes_wb(ctx, 0, want, None, true);
                st.pages_written += written;
                if blocked {
                    self.kt[pid].bdp = st;
                    return Some(self.request_wait_sleep(ctx));
                }
                if st.pages_written >= st.write_chunk {
                    break 'check true;
                }
            }
            false
        };
        if finished {
            if !exceeded {
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
