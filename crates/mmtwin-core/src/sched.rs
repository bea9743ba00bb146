//! The scheduler of the small kernel: tasks (user threads and kernel
//! threads), one event queue ordered by (simulated time, sequence), wait
//! queues, timed sleeps, and CPUs shared by the tasks allowed on them.
//!
//! A task runs one *step* at a time: a bounded piece of work (one system
//! call, one fault, one reclaim batch) that ends by continuing, sleeping or
//! exiting. A kernel path that sleeps (direct reclaim's congestion waits,
//! balance_dirty_pages, waiting for a read, kswapd's naps) keeps its own
//! resume state in the task and continues where it slept when the task next
//! runs, as a kernel thread does after `schedule()` returns.
//!
//! CPUs: each CPU runs one step at a time. A task ready at time t runs on
//! the allowed CPU that frees first; if that CPU is busy until t' > t, the
//! task's event is moved to t', so every step starts in global time order
//! and kernel state changes happen in simulated-time order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;


/// The longest stretch of CPU time a task's step may run through before it
/// yields (Next::Run) at the next point where the kernel would call
/// cond_resched(): between faults, between reclaim's priority iterations.
/// A step is atomic to everyone else, so a step of hundreds of
/// milliseconds hides the flusher's writes and I/O completions that happen
/// meanwhile on the other CPUs. 1 ms is of the order of CFS's minimum
/// granularity in 3.0 (0.75 ms scaled by 1 + log2(CPUs)); a task with the
/// CPU to itself just runs its next step at once.
pub const STEP_QUANTUM_NS: u64 = 1_000_000;

pub type Pid = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    User,
    Kswapd(usize),
    Flusher(usize),
}

impl TaskKind {
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::User => "user",
            TaskKind::Kswapd(_) => "kswapd",
            TaskKind::Flusher(_) => "flusher",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TState {
    Runnable,
    Sleeping,
    Dead,
}

/// Wait queue ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wq {
    /// pgdat->kswapd_wait of a node.
    Kswapd(usize),
    /// congestion_wqh[BLK_RW_ASYNC / SYNC]: woken when a queue stops being congested.
    Congestion(usize),
    /// A request queue's free-request wait (get_request_wait), per device and direction.
    Request(usize, usize),
    /// A flusher thread's wait (woken by wakeup_flusher_threads / bdi_start_background_writeback).
    Flusher(usize),
    /// Waiting for a page's lock or writeback (one queue per zone, like the
    /// kernel's hashed page wait tables).
    Page(usize),
    /// A workload's barrier (fs_mark's parent waiting for its children).
    Barrier(usize),
}

pub struct Task {
    pub pid: Pid,
    pub comm: String,
    pub kind: TaskKind,
    /// CPUs this task may run on (sched_setaffinity).
    pub cpus: Vec<u16>,
    pub cpu: usize,
    pub state: TState,
    /// Incremented at every sleep and wake; events carry it, stale ones are dropped.
    pub gen: u32,
    /// When the current sleep began, and whether it is an I/O wait.
    pub slept_at: u64,
    pub io_sleep: bool,
    /// The last sleep ended through a wait queue (not its timeout).
    pub woken: bool,
    pub user_ns: u64,
    pub sys_ns: u64,
    pub iowait_ns: u64,
    pub wakeups: u64,
    pub exited_at: Option<u64>,
}

/// What a step asks of the scheduler when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Runnable again at once.
    Run,
    /// Sleep until woken through `wq`, or until `until` (a timeout), or both.
    Sleep { until: Option<u64>, wq: Option<Wq>, io: bool },
    /// The task exits.
    Exit,
}

impl Next {
    pub fn sleep_for(now: u64, ns: u64) -> Next {
        Next::Sleep { until: Some(now + ns), wq: None, io: false }
    }
}

pub struct Sched {
    pub tasks: Vec<Task>,
    heap: BinaryHeap<Reverse<(u64, u64, Pid, u32)>>,
    seq: u64,
    pub cpu_free_at: Vec<u64>,
    /// Wait queue members: (pid, gen at the time it slept).
    waits: Vec<Vec<(Pid, u32)>>,
    wq_index: WqIndex,
    pub nr_cpus: usize,
    /// User tasks not yet exited (the run ends when this reaches 0).
    pub users_alive: usize,
}

/// Flat index of every wait queue.
struct WqIndex {
    nodes: usize,
    devs: usize,
    zones: usize,
    barriers: usize,
}

impl WqIndex {
    fn len(&self) -> usize {
        self.nodes + 2 + self.devs * 2 + self.devs + self.zones + self.barriers
    }
    fn of(&self, wq: Wq) -> usize {
        match wq {
            Wq::Kswapd(n) => n,
            Wq::Congestion(d) => self.nodes + d,
            Wq::Request(dev, dir) => self.nodes + 2 + dev * 2 + dir,
            Wq::Flusher(b) => self.nodes + 2 + self.devs * 2 + b,
            Wq::Page(z) => self.nodes + 2 + self.devs * 3 + z,
            Wq::Barrier(b) => self.nodes + 2 + self.devs * 3 + self.zones + b,
        }
    }
}

impl Sched {
    pub fn new(nr_cpus: usize, nodes: usize, devs: usize, zones: usize, barriers: usize) -> Sched {
        let wq_index = WqIndex { nodes, devs, zones, barriers };
        Sched {
            tasks: Vec::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            cpu_free_at: vec![0; nr_cpus],
            waits: vec![Vec::new(); wq_index.len()],
            wq_index,
            nr_cpus,
            users_alive: 0,
        }
    }

    /// Create a task, runnable at `at`.
    pub fn spawn(&mut self, comm: String, kind: TaskKind, cpus: Vec<u16>, at: u64) -> Pid {
        let pid = self.tasks.len() as Pid;
        let cpu = cpus.first().copied().unwrap_or(0) as usize;
        if kind == TaskKind::User {
            self.users_alive += 1;
        }
        self.tasks.push(Task {
            pid,
            comm,
            kind,
            cpus,
            cpu,
            state: TState::Runnable,
            gen: 0,
            slept_at: 0,
            io_sleep: false,
            woken: false,
            user_ns: 0,
            sys_ns: 0,
            iowait_ns: 0,
            wakeups: 0,
            exited_at: None,
        });
        self.push(at, pid, 0);
        pid
    }

    /// Create a task that starts asleep on `wq` (a kernel thread waiting for work).
    pub fn spawn_sleeping(&mut self, comm: String, kind: TaskKind, cpus: Vec<u16>, wq: Wq, now: u64) -> Pid {
        let pid = self.spawn(comm, kind, cpus, now);
        // Drop the runnable event: bump the generation, then sleep.
        self.tasks[pid as usize].gen += 1;
        self.sleep(pid, now, Next::Sleep { until: None, wq: Some(wq), io: false });
        pid
    }

    #[inline]
    fn push(&mut self, at: u64, pid: Pid, gen: u32) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, pid, gen)));
    }

    /// Time of the next event, if any.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, ..))| *t)
    }

    /// End a step of `pid` that started at `start` on `cpu` and used
    /// `user` + `sys` ns of CPU.
    pub fn end_step(&mut self, pid: Pid, cpu: usize, start: u64, user: u64, sys: u64, next: Next) {
        let end = start + user + sys;
        self.cpu_free_at[cpu] = end;
        let t = &mut self.tasks[pid as usize];
        t.user_ns += user;
        t.sys_ns += sys;
        match next {
            Next::Run => {
                let g = t.gen;
                self.push(end, pid, g);
            }
            Next::Sleep { .. } => self.sleep(pid, end, next),
            Next::Exit => {
                t.state = TState::Dead;
                t.exited_at = Some(end);
                if t.kind == TaskKind::User {
                    self.users_alive -= 1;
                }
            }
        }
    }

    fn sleep(&mut self, pid: Pid, now: u64, next: Next) {
        let Next::Sleep { until, wq, io } = next else { return };
        let t = &mut self.tasks[pid as usize];
        t.state = TState::Sleeping;
        t.gen += 1;
        t.slept_at = now;
        t.io_sleep = io;
        t.woken = false;
        let g = t.gen;
        if let Some(at) = until {
            self.push(at.max(now), pid, g);
        }
        if let Some(w) = wq {
            let i = self.wq_index.of(w);
            self.waits[i].push((pid, g));
        }
        if until.is_none() && wq.is_none() {
            // A sleep with neither is a bug in a caller; never hang: run again.
            self.push(now, pid, g);
        }
    }

    /// A timed-out sleeper's event came up: it is runnable.
    fn timeout_fires(&mut self, pid: Pid, now: u64) {
        let t = &mut self.tasks[pid as usize];
        if t.state == TState::Sleeping {
            t.state = TState::Runnable;
            if t.io_sleep {
                t.iowait_ns += now - t.slept_at;
            }
        }
    }

    /// Wake every task sleeping on `wq` at `now`; returns how many woke.
    pub fn wake_up_all(&mut self, wq: Wq, now: u64) -> usize {
        let i = self.wq_index.of(wq);
        if self.waits[i].is_empty() {
            return 0;
        }
        let list = std::mem::take(&mut self.waits[i]);
        let mut n = 0;
        for &(pid, g) in &list {
            if self.wake_one(pid, g, now) {
                n += 1;
            }
        }
        // Reuse the allocation.
        let mut list = list;
        list.clear();
        if self.waits[i].is_empty() {
            self.waits[i] = list;
        }
        n
    }

    /// Wake one sleeper of `wq` (the first still asleep); returns whether one woke.
    pub fn wake_up_one(&mut self, wq: Wq, now: u64) -> bool {
        let i = self.wq_index.of(wq);
        while !self.waits[i].is_empty() {
            let (pid, g) = self.waits[i].remove(0);
            if self.wake_one(pid, g, now) {
                return true;
            }
        }
        false
    }

    pub fn is_sleeping(&self, pid: Pid) -> bool {
        self.tasks[pid as usize].state == TState::Sleeping
    }

    pub fn has_waiters(&self, wq: Wq) -> bool {
        !self.waits[self.wq_index.of(wq)].is_empty()
    }

    fn wake_one(&mut self, pid: Pid, g: u32, now: u64) -> bool {
        let t = &mut self.tasks[pid as usize];
        if t.state != TState::Sleeping || t.gen != g {
            return false;
        }
        t.state = TState::Runnable;
        t.gen += 1;
        t.woken = true;
        t.wakeups += 1;
        if t.io_sleep {
            t.iowait_ns += now.saturating_sub(t.slept_at);
        }
        let g = t.gen;
        self.push(now, pid, g);
        true
    }

    /// The next step to run before time `before` (exclusive): (time, pid,
    /// cpu). Stale events are dropped; a sleeper whose timeout comes up
    /// becomes runnable; a task whose CPUs are all busy is moved to when the
    /// first of them frees. None when the next live event is at or after
    /// `before`: it is left queued, so a timed sleeper stays asleep (and
    /// wakeable) until simulated time really reaches its timeout.
    pub fn next_event(&mut self, before: u64) -> Option<(u64, Pid, usize)> {
        while let Some(&Reverse((t, seq, pid, gen))) = self.heap.peek() {
            let task = &self.tasks[pid as usize];
            if task.gen != gen || task.state == TState::Dead {
                self.heap.pop();
                continue;
            }
            if t >= before {
                return None;
            }
            self.heap.pop();
            if task.state == TState::Sleeping {
                // A timeout: same generation, so nobody woke it earlier.
                self.timeout_fires(pid, t);
                let tk = &mut self.tasks[pid as usize];
                tk.gen += 1;
                let g = tk.gen;
                self.push(t, pid, g);
                continue;
            }
            let mut best = task.cpus[0] as usize;
            for &c in &task.cpus[1..] {
                if self.cpu_free_at[c as usize] < self.cpu_free_at[best] {
                    best = c as usize;
                }
            }
            let free = self.cpu_free_at[best];
            if free > t {
                // Keep its place in line: a task bumped by a busy CPU runs
                // before tasks that became ready after it (round robin).
                self.heap.push(Reverse((free, seq, pid, gen)));
                continue;
            }
            self.tasks[pid as usize].cpu = best;
            return Some((t, pid, best));
        }
        None
    }

    pub fn state_bytes(&self) -> u64 {
        (self.tasks.len() * std::mem::size_of::<Task>() + self.heap.len() * 32 + self.cpu_free_at.len() * 8) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_tasks_share_one_cpu_in_turn() {
        let mut s = Sched::new(1, 1, 0, 1, 0);
        let a = s.spawn("a".into(), TaskKind::User, vec![0], 0);
        let b = s.spawn("b".into(), TaskKind::User, vec![0], 0);
        let mut order = Vec::new();
        for _ in 0..4 {
            let (t, pid, cpu) = s.next_event(u64::MAX).unwrap();
            order.push((t, pid));
            s.end_step(pid, cpu, t, 0, 10, Next::Run);
        }
        assert_eq!(order, vec![(0, a), (10, b), (20, a), (30, b)]);
    }

    #[test]
    fn a_sleeper_wakes_early_through_its_queue_or_at_its_timeout() {
        let mut s = Sched::new(2, 1, 1, 1, 0);
        let a = s.spawn("a".into(), TaskKind::User, vec![0], 0);
        let (t, pid, cpu) = s.next_event(u64::MAX).unwrap();
        s.end_step(pid, cpu, t, 0, 5, Next::Sleep { until: Some(100), wq: Some(Wq::Congestion(0)), io: true });
        assert_eq!(s.wake_up_all(Wq::Congestion(0), 40), 1);
        let (t, pid, _) = s.next_event(u64::MAX).unwrap();
        assert_eq!((t, pid), (40, a));
        assert!(s.tasks[a as usize].woken);
        assert_eq!(s.tasks[a as usize].iowait_ns, 35);
        s.end_step(a, 0, 40, 0, 0, Next::Sleep { until: Some(90), wq: Some(Wq::Congestion(0)), io: false });
        let (t, _, _) = s.next_event(u64::MAX).unwrap();
        assert_eq!(t, 90, "the stale timeout at 100 is dropped, the new one fires");
        assert!(!s.tasks[a as usize].woken);
    }

    #[test]
    fn a_timed_sleeper_stays_wakeable_until_time_reaches_its_timeout() {
        // The kernel asks only for events before the next I/O completion
        // (at 50); the sleeper's timeout at 100 must not fire then, so the
        // completion's wakeup at 50 still finds it asleep.
        let mut s = Sched::new(1, 1, 1, 1, 0);
        let a = s.spawn("a".into(), TaskKind::Flusher(0), vec![0], 0);
        let (t, pid, cpu) = s.next_event(u64::MAX).unwrap();
        s.end_step(pid, cpu, t, 0, 0, Next::Sleep { until: Some(100), wq: Some(Wq::Flusher(0)), io: false });
        assert_eq!(s.next_event(50), None);
        assert!(s.is_sleeping(a));
        assert_eq!(s.wake_up_all(Wq::Flusher(0), 50), 1);
        assert_eq!(s.next_event(u64::MAX).map(|(t, p, _)| (t, p)), Some((50, a)));
    }
}
