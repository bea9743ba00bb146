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
use std::collections::{BinaryHeap, VecDeque};


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
    /// kjournald2 of the filesystem's journal (ext4).
    Kjournald,
}

impl TaskKind {
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::User => "user",
            TaskKind::Kswapd(_) => "kswapd",
            TaskKind::Flusher(_) => "flusher",
            TaskKind::Kjournald => "kjournald2",
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
    /// A request list's free-request wait (get_request_wait): per request
    /// list (one per disk, each member of an md array its own; block.rs
    /// numbers them) and direction.
    Request(usize, usize),
    /// A flusher thread's wait (woken by wakeup_flusher_threads / bdi_start_background_writeback).
    Flusher(usize),
    /// Waiting for a page's lock or writeback (one queue per zone, like the
    /// kernel's hashed page wait tables).
    Page(usize),
    /// A workload's barrier (fs_mark's parent waiting for its children).
    Barrier(usize),
    /// kjournald2's own wait (its commit timer, the last handle of a locked
    /// transaction, the log writes of a commit): jbd2.rs.
    Journal,
    /// journal->j_wait_transaction_locked: tasks starting a handle while
    /// the running transaction is locked for its commit.
    JournalLocked,
    /// Tasks sleeping on a directory's i_mutex (every directory's waiters
    /// in one queue; vfs.rs keeps each mutex's own wait list and wakes its
    /// first waiter by pid).
    IMutex,
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

/// A heap entry whose pid has this bit stands for a [`CpuGroup`]'s
/// first waiting task (the group's index in the other bits).
const GROUP: Pid = 1 << 31;

/// An entry of a CPU group's bucket: (sequence, pid, generation).
type Waiter = Reverse<(u64, Pid, u32)>;

/// A CPU group's waiting tasks of one event time, first sequence first.
struct Bucket {
    t: u64,
    /// The largest sequence number in `tasks`.
    last: u64,
    tasks: BinaryHeap<Waiter>,
}

/// Runnable tasks with the same CPUs that found all of them busy, as the
/// event queue would hold them: each with its event moved to the time the
/// first of those CPUs was free when the event came up, kept in buckets of
/// equal time (ascending; every bucket's time is an earlier value of the
/// CPUs' first free time, which never decreases). The queue holds one
/// entry for the group: the first task of its first bucket.
///
/// When that bucket's time has fallen behind the CPUs' first free time,
/// each of its tasks would be moved on to it one by one; the bucket moves
/// as a whole instead, when nothing else in the queue comes before the
/// last of them. This keeps a step O(log n) when many tasks wait for few
/// CPUs, instead of moving every waiter at every step.
struct CpuGroup {
    cpus: Vec<u16>,
    buckets: VecDeque<Bucket>,
    /// Key (time, seq) of the group's entry in the queue; other entries
    /// of the group found there are stale.
    queued: Option<(u64, u64)>,
}

pub struct Sched {
    pub tasks: Vec<Task>,
    heap: BinaryHeap<Reverse<(u64, u64, Pid, u32)>>,
    groups: Vec<CpuGroup>,
    /// Per task: the group it last waited in (its CPUs may change since).
    group_hint: Vec<u32>,
    /// Emptied bucket heaps, kept for reuse (no allocation per event).
    spare: Vec<BinaryHeap<Waiter>>,
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
    lists: usize,
    zones: usize,
    barriers: usize,
}

impl WqIndex {
    fn len(&self) -> usize {
        self.nodes + 2 + self.lists * 2 + self.devs + self.zones + self.barriers + 3
    }
    fn of(&self, wq: Wq) -> usize {
        match wq {
            Wq::Kswapd(n) => n,
            Wq::Congestion(d) => self.nodes + d,
            Wq::Request(list, dir) => self.nodes + 2 + list * 2 + dir,
            Wq::Flusher(b) => self.nodes + 2 + self.lists * 2 + b,
            Wq::Page(z) => self.nodes + 2 + self.lists * 2 + self.devs + z,
            Wq::Barrier(b) => self.nodes + 2 + self.lists * 2 + self.devs + self.zones + b,
            Wq::Journal => self.nodes + 2 + self.lists * 2 + self.devs + self.zones + self.barriers,
            Wq::JournalLocked => self.nodes + 2 + self.lists * 2 + self.devs + self.zones + self.barriers + 1,
            Wq::IMutex => self.nodes + 2 + self.lists * 2 + self.devs + self.zones + self.barriers + 2,
        }
    }
}

impl Sched {
    pub fn new(nr_cpus: usize, nodes: usize, devs: usize, lists: usize, zones: usize, barriers: usize) -> Sched {
        let wq_index = WqIndex { nodes, devs, lists, zones, barriers };
        Sched {
            tasks: Vec::new(),
            heap: BinaryHeap::new(),
            groups: Vec::new(),
            group_hint: Vec::new(),
            spare: Vec::new(),
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

    /// Time of the next event, if any (stale events included, as they
    /// are until next_event drops them).
    pub fn peek_time(&mut self) -> Option<u64> {
        self.peek_key().map(|(t, _)| t)
    }

    /// The (time, seq) of the queue's first entry, after dropping the
    /// stale entries of CPU groups (stale task events stay).
    fn peek_key(&mut self) -> Option<(u64, u64)> {
        while let Some(&Reverse((t, seq, pid, _))) = self.heap.peek() {
            if pid & GROUP != 0 && self.groups[(pid & !GROUP) as usize].queued != Some((t, seq)) {
                self.heap.pop();
                continue;
            }
            return Some((t, seq));
        }
        None
    }

    /// The CPU group of a task's CPU set (found or made).
    fn group_of(&mut self, pid: Pid) -> usize {
        let cpus = &self.tasks[pid as usize].cpus;
        let hint = self.group_hint.get(pid as usize).copied().unwrap_or(u32::MAX) as usize;
        if hint < self.groups.len() && self.groups[hint].cpus == *cpus {
            return hint;
        }
        let g = match self.groups.iter().position(|g| g.cpus == *cpus) {
            Some(g) => g,
            None => {
                self.groups.push(CpuGroup { cpus: cpus.clone(), buckets: VecDeque::new(), queued: None });
                self.groups.len() - 1
            }
        };
        if self.group_hint.len() <= pid as usize {
            self.group_hint.resize(pid as usize + 1, u32::MAX);
        }
        self.group_hint[pid as usize] = g as u32;
        g
    }

    /// The CPU of `cpus` that frees first (the first such in their order), and when.
    #[inline]
    fn best_cpu(cpu_free_at: &[u64], cpus: &[u16]) -> (usize, u64) {
        let mut best = cpus[0] as usize;
        for &c in &cpus[1..] {
            if cpu_free_at[c as usize] < cpu_free_at[best] {
                best = c as usize;
            }
        }
        (best, cpu_free_at[best])
    }

    /// Put group `g`'s entry in the queue for its first waiting task, if
    /// that is not the one there already.
    fn queue_group(&mut self, g: usize) {
        let grp = &mut self.groups[g];
        let want = grp.buckets.front().map(|b| (b.t, b.tasks.peek().expect("buckets are not empty").0 .0));
        if want != grp.queued {
            grp.queued = want;
            if let Some((t, seq)) = want {
                self.heap.push(Reverse((t, seq, GROUP | g as Pid, 0)));
            }
        }
    }

    /// Group `g`'s tasks in `bucket` move to time `t`, at or after all its buckets' times.
    fn move_bucket(&mut self, g: usize, t: u64, mut bucket: Bucket) {
        let grp = &mut self.groups[g];
        match grp.buckets.back_mut() {
            Some(b) if b.t == t => {
                if b.tasks.len() < bucket.tasks.len() {
                    std::mem::swap(&mut b.tasks, &mut bucket.tasks);
                }
                b.tasks.append(&mut bucket.tasks);
                b.last = b.last.max(bucket.last);
                self.spare.push(bucket.tasks);
            }
            _ => {
                debug_assert!(grp.buckets.back().is_none_or(|b| b.t < t));
                bucket.t = t;
                grp.buckets.push_back(bucket);
            }
        }
    }

    /// One task of group `g` moves to time `t`.
    fn move_task(&mut self, g: usize, t: u64, w: Waiter) {
        let grp = &mut self.groups[g];
        let seq = w.0 .0;
        match grp.buckets.back_mut() {
            Some(b) if b.t == t => {
                b.tasks.push(w);
                b.last = b.last.max(seq);
            }
            _ => {
                debug_assert!(grp.buckets.back().is_none_or(|b| b.t < t));
                let mut tasks = self.spare.pop().unwrap_or_default();
                tasks.push(w);
                grp.buckets.push_back(Bucket { t, last: seq, tasks });
            }
        }
    }

    /// Take the first task of group `g`'s first bucket.
    fn take_first(&mut self, g: usize) -> Waiter {
        let grp = &mut self.groups[g];
        let b = grp.buckets.front_mut().expect("a waiting task");
        let w = b.tasks.pop().expect("buckets are not empty");
        if b.tasks.is_empty() {
            let b = grp.buckets.pop_front().expect("a bucket");
            self.spare.push(b.tasks);
        }
        w
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

    /// A timer for a sleeping task (mod_timer with a wake_up_process): it
    /// becomes runnable at `at` unless something wakes it first. Nothing
    /// for a task not asleep.
    pub fn add_timer(&mut self, pid: Pid, at: u64) {
        let t = &self.tasks[pid as usize];
        if t.state == TState::Sleeping {
            let g = t.gen;
            self.push(at.max(t.slept_at), pid, g);
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

    /// Wake `pid` if it sleeps on `wq` (wake_up_process of a mutex's
    /// first waiter); returns whether it woke.
    pub fn wake_up_pid(&mut self, wq: Wq, pid: Pid, now: u64) -> bool {
        let i = self.wq_index.of(wq);
        let Some(k) = self.waits[i].iter().position(|&(p, _)| p == pid) else { return false };
        let (p, g) = self.waits[i].remove(k);
        self.wake_one(p, g, now)
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
            if pid & GROUP != 0 {
                let g = (pid & !GROUP) as usize;
                if self.groups[g].queued != Some((t, seq)) {
                    self.heap.pop();
                    continue;
                }
                // The group's first waiting task.
                if t >= before {
                    return None;
                }
                self.heap.pop();
                self.groups[g].queued = None;
                let (best, free) = Self::best_cpu(&self.cpu_free_at, &self.groups[g].cpus);
                if free <= t {
                    // A waiting task stays runnable with its event's generation.
                    let Reverse((_, pid, _gen)) = self.take_first(g);
                    debug_assert!(self.tasks[pid as usize].gen == _gen && self.tasks[pid as usize].state == TState::Runnable);
                    self.queue_group(g);
                    self.tasks[pid as usize].cpu = best;
                    return Some((t, pid, best));
                }
                // Its CPUs are busy until `free`. If nothing else in the
                // queue comes before the first bucket's last task, the
                // whole bucket moves there; else this task alone.
                let last = self.groups[g].buckets[0].last;
                if self.peek_key().is_none_or(|next| next > (t, last)) {
                    let b = self.groups[g].buckets.pop_front().expect("a bucket");
                    self.move_bucket(g, free, b);
                } else {
                    let w = self.take_first(g);
                    self.move_task(g, free, w);
                }
                self.queue_group(g);
                continue;
            }
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
            let (best, free) = Self::best_cpu(&self.cpu_free_at, &self.tasks[pid as usize].cpus);
            if free > t {
                // Keep its place in line: a task bumped by a busy CPU runs
                // before tasks that became ready after it (round robin).
                let g = self.group_of(pid);
                self.move_task(g, free, Reverse((seq, pid, gen)));
                self.queue_group(g);
                continue;
            }
            self.tasks[pid as usize].cpu = best;
            return Some((t, pid, best));
        }
        None
    }

    /// The event queue as it was before CPU groups (every waiting task's
    /// event moved one by one): the reference next_event and peek_time
    /// must agree with, for tests.
    #[cfg(test)]
    fn next_event_reference(&mut self, before: u64) -> Option<(u64, Pid, usize)> {
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
                self.timeout_fires(pid, t);
                let tk = &mut self.tasks[pid as usize];
                tk.gen += 1;
                let g = tk.gen;
                self.push(t, pid, g);
                continue;
            }
            let (best, free) = Self::best_cpu(&self.cpu_free_at, &self.tasks[pid as usize].cpus);
            if free > t {
                self.heap.push(Reverse((free, seq, pid, gen)));
                continue;
            }
            self.tasks[pid as usize].cpu = best;
            return Some((t, pid, best));
        }
        None
    }

    pub fn state_bytes(&self) -> u64 {
        let waiting: usize = self.groups.iter().flat_map(|g| g.buckets.iter()).map(|b| b.tasks.len()).sum();
        (self.tasks.len() * std::mem::size_of::<Task>() + (self.heap.len() + waiting) * 32 + self.cpu_free_at.len() * 8) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random tasks on random CPU sets running, sleeping (with and without
    /// timeouts), woken and exiting: the queue with CPU groups picks the
    /// same steps at the same times and shows the same next event time as
    /// the reference queue that moves every waiting task one by one.
    #[test]
    fn cpu_groups_keep_the_reference_order() {
        for seed in 0..40u64 {
            let mut rng = SplitMix64::new(seed);
            let ncpu = 1 + rng.below(4) as usize;
            let sets: Vec<Vec<u16>> = vec![(0..ncpu as u16).collect(), vec![0], vec![(ncpu - 1) as u16], (0..ncpu as u16).rev().collect()];
            let mut a = Sched::new(ncpu, 1, 1, 1, 1, 0);
            let mut b = Sched::new(ncpu, 1, 1, 1, 1, 0);
            let ntasks = 1 + rng.below(40);
            for i in 0..ntasks {
                let cpus = sets[rng.below(sets.len() as u64) as usize].clone();
                let at = rng.below(50);
                assert_eq!(a.spawn(format!("t{i}"), TaskKind::User, cpus.clone(), at), b.spawn(format!("t{i}"), TaskKind::User, cpus, at));
            }
            let mut now = 0;
            for _ in 0..3000 {
                assert_eq!(a.peek_time(), b.heap.peek().map(|Reverse((t, ..))| *t), "seed {seed}");
                if rng.below(10) == 0 {
                    let n = a.wake_up_all(Wq::Congestion(0), now);
                    assert_eq!(n, b.wake_up_all(Wq::Congestion(0), now));
                }
                let before = if rng.below(8) == 0 { now + rng.below(30) } else { u64::MAX };
                let (x, y) = (a.next_event(before), b.next_event_reference(before));
                assert_eq!(x, y, "seed {seed}");
                let Some((t, pid, cpu)) = x else {
                    now = now.max(before.min(now + 30));
                    continue;
                };
                now = t;
                let (user, sys) = (rng.below(5), rng.below(20));
                let next = match rng.below(12) {
                    0 => Next::Sleep { until: Some(t + user + sys + rng.below(100)), wq: None, io: rng.below(2) == 0 },
                    1 | 2 => Next::Sleep { until: Some(t + user + sys + rng.below(200)), wq: Some(Wq::Congestion(0)), io: true },
                    3 => Next::Sleep { until: None, wq: Some(Wq::Congestion(0)), io: false },
                    4 if rng.below(20) == 0 => Next::Exit,
                    5 => {
                        // A task moves itself to other CPUs (memhog's pull).
                        let cpus = sets[rng.below(sets.len() as u64) as usize].clone();
                        a.tasks[pid as usize].cpus = cpus.clone();
                        b.tasks[pid as usize].cpus = cpus;
                        Next::Run
                    }
                    _ => Next::Run,
                };
                a.end_step(pid, cpu, t, user, sys, next);
                b.end_step(pid, cpu, t, user, sys, next);
                assert_eq!(a.cpu_free_at, b.cpu_free_at);
            }
            for (x, y) in a.tasks.iter().zip(&b.tasks) {
                assert_eq!((x.gen, x.state, x.iowait_ns, x.wakeups, x.exited_at), (y.gen, y.state, y.iowait_ns, y.wakeups, y.exited_at));
            }
        }
    }

    #[test]
    fn two_tasks_share_one_cpu_in_turn() {
        let mut s = Sched::new(1, 1, 0, 0, 1, 0);
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
        let mut s = Sched::new(2, 1, 1, 1, 1, 0);
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
        let mut s = Sched::new(1, 1, 1, 1, 1, 0);
        let a = s.spawn("a".into(), TaskKind::Flusher(0), vec![0], 0);
        let (t, pid, cpu) = s.next_event(u64::MAX).unwrap();
        s.end_step(pid, cpu, t, 0, 0, Next::Sleep { until: Some(100), wq: Some(Wq::Flusher(0)), io: false });
        assert_eq!(s.next_event(50), None);
        assert!(s.is_sleeping(a));
        assert_eq!(s.wake_up_all(Wq::Flusher(0), 50), 1);
        assert_eq!(s.next_event(u64::MAX).map(|(t, p, _)| (t, p)), Some((50, a)));
    }
}

// --------------------------------------------------------------------------
// Placement at exec and fork (kernel/sched.c of 2.6.18: sched_balance_self,
// find_idlest_group, find_idlest_cpu) over the sched domains ia64 built
// (include/asm-ia64/topology.h: SD_CPU_INIT has SD_BALANCE_EXEC, SD_NODE_INIT
// SD_BALANCE_EXEC | SD_BALANCE_FORK, SD_ALLNODES_INIT SD_BALANCE_EXEC only).

/// SD_BALANCE_EXEC and SD_BALANCE_FORK.
pub const SD_BALANCE_EXEC: u8 = 1;
pub const SD_BALANCE_FORK: u8 = 2;
/// SCHED_LOAD_SCALE of 2.6.18: one runnable nice-0 task.
const SCHED_LOAD_SCALE: u64 = 128;
/// SD_NODES_PER_DOMAIN (kernel/sched.c): a node domain spans this many nodes.
pub const SD_NODES_PER_DOMAIN: usize = 16;

/// One sched domain of a CPU: its groups (each a list of CPUs) in the ring
/// order of sd->groups (the CPU's own group first), and its flags.
pub struct Domain {
    pub groups: Vec<Vec<usize>>,
    pub flags: u8,
    pub imbalance_pct: u64,
    pub weight: usize,
}

/// What a CPU's runqueue looks like to the balancer: how many tasks run
/// there now, and rq->cpu_load[0] as its last timer tick left it (the
/// forkexec_idx 1 load of 2.6.18's SD_NODE_INIT and SD_CPU_INIT).
pub trait RqLoad {
    fn nr_running(&self, cpu: usize) -> u64;
    fn cpu_load(&self, cpu: usize) -> u64;
}

/// The sched domains of every CPU, lowest first, as build_sched_domains
/// makes them for an ia64 NUMA machine: the node's CPUs (one group per CPU),
/// the node domain (the node and its nearest nodes, SD_NODES_PER_DOMAIN in
/// all, one group per node), and above it, when the machine has more CPUs
/// than that, the all-nodes domain (one group per node).
pub fn ia64_sched_domains(cpu_node: &[usize], distance: &[Vec<u32>]) -> Vec<Vec<Domain>> {
    let nodes = distance.len();
    let node_cpus: Vec<Vec<usize>> = (0..nodes).map(|n| (0..cpu_node.len()).filter(|&c| cpu_node[c] == n).collect()).collect();
    let ring = |own: usize, span: &[bool]| -> Vec<Vec<usize>> {
        (0..nodes).map(|j| (own + j) % nodes).filter(|&n| span[n] && !node_cpus[n].is_empty()).map(|n| node_cpus[n].clone()).collect()
    };
    let mut out = Vec::with_capacity(cpu_node.len());
    for (cpu, &node) in cpu_node.iter().enumerate() {
        let mut doms = Vec::new();
        let mine = &node_cpus[node];
        let pos = mine.iter().position(|&c| c == cpu).unwrap_or(0);
        let cpu_groups: Vec<Vec<usize>> = (0..mine.len()).map(|j| vec![mine[(pos + j) % mine.len()]]).collect();
        doms.push(Domain { groups: cpu_groups, flags: SD_BALANCE_EXEC, imbalance_pct: 125, weight: mine.len() });
        let span = sched_domain_node_span(node, &node_cpus, distance);
        let weight: usize = (0..nodes).filter(|&n| span[n]).map(|n| node_cpus[n].len()).sum();
        doms.push(Domain { groups: ring(node, &span), flags: SD_BALANCE_EXEC | SD_BALANCE_FORK, imbalance_pct: 125, weight });
        if cpu_node.len() > SD_NODES_PER_DOMAIN * mine.len() {
            let all = vec![true; nodes];
            doms.push(Domain { groups: ring(node, &all), flags: SD_BALANCE_EXEC, imbalance_pct: 125, weight: cpu_node.len() });
        }
        out.push(doms);
    }
    out
}

/// sched_domain_node_span: the node and the SD_NODES_PER_DOMAIN - 1 nodes
/// with CPUs nearest to it (find_next_best_node of kernel/sched.c: the
/// smallest distance, ties to the first met counting up from the node).
pub fn sched_domain_node_span(node: usize, node_cpus: &[Vec<usize>], distance: &[Vec<u32>]) -> Vec<bool> {
    let nodes = distance.len();
    let mut used = vec![false; nodes];
    used[node] = true;
    for _ in 1..SD_NODES_PER_DOMAIN.min(nodes) {
        let mut best: Option<usize> = None;
        for i in 0..nodes {
            let n = (node + i) % nodes;
            if node_cpus[n].is_empty() || used[n] {
                continue;
            }
            if best.is_none_or(|b| distance[node][n] < distance[node][b]) {
                best = Some(n);
            }
        }
        match best {
            Some(b) => used[b] = true,
            None => break,
        }
    }
    used
}

fn find_idlest_group<'a>(sd: &'a Domain, this_cpu: usize, rq: &dyn RqLoad) -> Option<&'a Vec<usize>> {
    let imbalance = 100 + (sd.imbalance_pct - 100) / 2;
    let mut idlest: Option<&Vec<usize>> = None;
    let mut min_load = u64::MAX;
    let mut this_load = 0;
    for g in &sd.groups {
        let local = g.contains(&this_cpu);
        let mut sum = 0;
        for &c in g {
            let (now, tick) = (rq.nr_running(c) * SCHED_LOAD_SCALE, rq.cpu_load(c) * SCHED_LOAD_SCALE);
            // source_load for our own group (the smaller), target_load for the others.
            sum += if local { now.min(tick) } else { now.max(tick) };
        }
        let avg = sum * SCHED_LOAD_SCALE / (g.len() as u64 * SCHED_LOAD_SCALE);
        if local {
            this_load = avg;
        } else if avg < min_load {
            min_load = avg;
            idlest = Some(g);
        }
    }
    match idlest {
        Some(g) if 100 * this_load >= imbalance * min_load => Some(g),
        _ => None,
    }
}

fn find_idlest_cpu(group: &[usize], this_cpu: usize, rq: &dyn RqLoad) -> usize {
    let mut best = group[0];
    let mut min = u64::MAX;
    for &c in group {
        let load = rq.nr_running(c);
        if load < min || (load == min && c == this_cpu) {
            min = load;
            best = c;
        }
    }
    best
}

/// sched_balance_self: the CPU a task exec'ing (SD_BALANCE_EXEC) or forked
/// (SD_BALANCE_FORK) on `cpu` starts on.
pub fn sched_balance_self(domains: &[Vec<Domain>], cpu: usize, flag: u8, rq: &dyn RqLoad) -> usize {
    let mut cpu = cpu;
    // The highest domain of the CPU with the flag, then downwards.
    let mut level = domains[cpu].iter().rposition(|d| d.flags & flag != 0);
    while let Some(l) = level {
        let sd = &domains[cpu][l];
        if sd.flags & flag == 0 {
            level = l.checked_sub(1);
            continue;
        }
        let Some(group) = find_idlest_group(sd, cpu, rq) else {
            level = l.checked_sub(1);
            continue;
        };
        let new_cpu = find_idlest_cpu(group, cpu, rq);
        if new_cpu == cpu {
            level = l.checked_sub(1);
            continue;
        }
        let weight = sd.weight;
        cpu = new_cpu;
        // Balance again in the new CPU's domains smaller than this one.
        level = None;
        for (i, d) in domains[cpu].iter().enumerate() {
            if weight <= d.weight {
                break;
            }
            if d.flags & flag != 0 {
                level = Some(i);
            }
        }
    }
    cpu
}

/// SplitMix64 (Steele, Lea and Flood 2014): the engine's only source of
/// variation, started from the specification's seed.
#[derive(Debug, Clone, Copy)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0), by rejection so every value is equally likely.
    pub fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }
}

#[cfg(test)]
mod balance_tests {
    use super::*;

    struct Rq {
        nr: Vec<u64>,
        tick: Vec<u64>,
    }
    impl RqLoad for Rq {
        fn nr_running(&self, c: usize) -> u64 {
            self.nr[c]
        }
        fn cpu_load(&self, c: usize) -> u64 {
            self.tick[c]
        }
    }

    fn machine(nodes: usize) -> (Vec<usize>, Vec<Vec<u32>>) {
        let cpu_node: Vec<usize> = (0..2 * nodes).map(|c| c / 2).collect();
        let d = (0..nodes).map(|a| (0..nodes).map(|b| if a == b { 10 } else { 20 + a.abs_diff(b) as u32 }).collect()).collect();
        (cpu_node, d)
    }

    #[test]
    fn forks_spread_one_per_node_over_the_node_domain_then_stack_until_a_tick() {
        let (cpu_node, d) = machine(28);
        let doms = ia64_sched_domains(&cpu_node, &d);
        assert_eq!(doms[0].len(), 3, "cpu, node and all-nodes domains on 56 CPUs");
        assert_eq!(doms[0][1].groups.len(), 16);
        // The parent runs on CPU 0 (counted at its last tick too).
        let mut rq = Rq { nr: vec![0; 56], tick: vec![0; 56] };
        rq.nr[0] = 1;
        rq.tick[0] = 1;
        let mut placed = Vec::new();
        for _ in 0..17 {
            let c = sched_balance_self(&doms, 0, SD_BALANCE_FORK, &rq);
            rq.nr[c] += 1;
            placed.push(c);
        }
        // 15 other nodes of the span get one thread each, on their first CPU...
        let nodes: Vec<usize> = placed[..15].iter().map(|&c| cpu_node[c]).collect();
        assert_eq!(nodes, (1..16).collect::<Vec<_>>());
        assert!(placed[..15].iter().all(|&c| c % 2 == 0));
        // ...then, with the parent's tick load stale, the node looks no busier than the others: it stays.
        assert_eq!(placed[15], 0);
        assert_eq!(placed[16], 0);
        // After a tick on CPU 0 (load 3 there), the next one goes to a half-busy node.
        rq.tick[0] = rq.nr[0];
        let c = sched_balance_self(&doms, 0, SD_BALANCE_FORK, &rq);
        assert_ne!(cpu_node[c], 0);
    }

    #[test]
    fn splitmix_is_the_published_sequence() {
        // First outputs of SplitMix64 seeded with 0 (the reference implementation).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut r = SplitMix64::new(7);
        assert!((0..1000).all(|_| r.below(3) < 3));
    }
}
