//! Congestion waits (mm/backing-dev.c, 3.0): congestion_wait and
//! wait_iff_congested, with their writeback_* tracepoints emitted when the
//! sleeper resumes (usec_delayed is the time it really slept, in whole
//! jiffies as the kernel measures it).

use crate::block::Dir;
use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::sched::{Next, Wq};
use crate::trace::{TraceRec, Tp};

/// A congestion wait in progress, reported when the task runs again.
#[derive(Debug, Clone, Copy, Default)]
pub struct PendingWait {
    pub active: bool,
    pub iff: bool,
    pub start: u64,
    pub timeout: u64,
}

pub const BLK_RW_ASYNC: usize = 0;

impl Kernel {
    /// congestion_wait(BLK_RW_ASYNC, timeout): sleep until a queue stops
    /// being congested or the timeout passes.
    pub fn congestion_wait(&mut self, ctx: &mut Ctx, timeout: u64) -> Next {
        let now = ctx.clock();
        self.pending_wait(ctx.pid, false, now, timeout);
        Next::Sleep { until: Some(now + timeout), wq: Some(Wq::Congestion(BLK_RW_ASYNC)), io: true }
    }

    /// wait_iff_congested: sleep as congestion_wait only if some backing
    /// device is write-congested and the zone was marked ZONE_CONGESTED;
    /// otherwise cond_resched(): the task gives its CPU up when its time is
    /// up (it has run STEP_QUANTUM_NS in this step), or always when
    /// `yields` (the allocator's retry, which lets kswapd and the flusher
    /// run), and returns at once otherwise (None). As in 3.0, the
    /// tracepoint's usec_delayed counts the jiffies until the call returns,
    /// so a task that gave its CPU up reports how long it waited to run again.
    pub fn wait_iff_congested(&mut self, ctx: &mut Ctx, zi: usize, timeout: u64, yields: bool) -> Option<Next> {
        let now = ctx.clock();
        if !self.blk.any_congested(Dir::Write) || !self.mm.zones[zi].congested {
            if yields || ctx.sys + ctx.user >= crate::sched::STEP_QUANTUM_NS {
                self.pending_wait(ctx.pid, true, now, timeout);
                return Some(Next::Run);
            }
            if self.trace.on(Tp::WritebackWaitIffCongested) {
                let usec_timeout = self.jiffies_to_usecs(self.timeout_jiffies(timeout));
                self.emit(ctx, &TraceRec::WaitIffCongested { usec_timeout, usec_delayed: 0 });
            }
            return None;
        }
        self.pending_wait(ctx.pid, true, now, timeout);
        Some(Next::Sleep { until: Some(now + timeout), wq: Some(Wq::Congestion(BLK_RW_ASYNC)), io: true })
    }

    fn pending_wait(&mut self, pid: u32, iff: bool, start: u64, timeout: u64) {
        self.kt[pid as usize].wait = PendingWait { active: true, iff, start, timeout };
    }

    /// Called at the start of a task's step: report a finished congestion wait.
    pub fn finish_pending_wait(&mut self, ctx: &Ctx) {
        let w = self.kt[ctx.pid as usize].wait;
        if !w.active {
            return;
        }
        self.kt[ctx.pid as usize].wait.active = false;
        let tp = if w.iff { Tp::WritebackWaitIffCongested } else { Tp::WritebackCongestionWait };
        if self.trace.on(tp) {
            // The kernel reports jiffies_to_usecs(timeout) and
            // jiffies_to_usecs(jiffies - start): whole ticks.
            let usec_timeout = self.jiffies_to_usecs(self.timeout_jiffies(w.timeout));
            // A waker's clock can be behind the sleeper's (the wait began
            // at the end of the sleeper's step): no time passed, not a wrap.
            let usec_delayed = self.jiffies_to_usecs(self.jiffies(ctx.now).saturating_sub(self.jiffies(w.start)));
            let rec = if w.iff {
                TraceRec::WaitIffCongested { usec_timeout, usec_delayed }
            } else {
                TraceRec::CongestionWait { usec_timeout, usec_delayed }
            };
            self.emit(ctx, &rec);
        }
    }

    /// A timeout given in ns (a whole number of jiffies, `jiffies_ns(j)`) back in jiffies.
    fn timeout_jiffies(&self, ns: u64) -> u64 {
        (ns * self.hz).div_ceil(1_000_000_000)
    }

    /// jiffies_to_usecs().
    fn jiffies_to_usecs(&self, j: u64) -> u64 {
        j * 1_000_000 / self.hz
    }
}
