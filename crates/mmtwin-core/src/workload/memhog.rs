//! The memory hog of seed 003: N threads touching their shares of
//! anonymous memory one store every `stride` bytes; then the process exits
//! and exit_mmap frees every page on one CPU.
//!
//! Where the threads run is the machine's `fork_balance`: pinned (thread i
//! on CPU i, thread 0 doubling as the process that exits), or as 2.6.18 on
//! ia64 placed them: the main thread exec'd from a shell on some CPU
//! (sched_balance_self, SD_BALANCE_EXEC), creating the threads one clone at
//! a time (SD_BALANCE_FORK, which reads each CPU's load as its last timer
//! tick saw it), the idle CPUs' load balancing then pulling the threads that
//! share a CPU; the main thread waits for them and exits. The seed picks
//! what the run cannot know: the shell's CPU, the timer ticks' phase, which
//! idle CPU balances first and when, and where jiffies stand at the start.

use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::page_alloc::AllocRes;
use crate::sched::{Next, Pid, Wq};
use crate::sched::{sched_balance_self, RqLoad, SD_BALANCE_EXEC, SD_BALANCE_FORK};
use crate::spec::{ForkBalance, MemhogSpec};
use crate::vmstat::Ev;
use serde_json::{json, Value};

pub struct HogThread {
    pub pid: Pid,
    pub cpu: usize,
    /// Page touches in all: the thread's share of pages times the passes.
    pub pages_total: u64,
    /// The thread's pages: virtual pages `base .. base + share`.
    pub base: u64,
    pub share: u64,
    pub pages_done: u64,
    pub remote_pages: u64,
    pub end_ns: Option<u64>,
    pub oom: bool,
    /// When the thread was created (its clone returned).
    pub start_ns: u64,
    /// An idle CPU's load balancing moves it: (when, to which CPU).
    pub pull: Option<(u64, usize)>,
    pub pulled: bool,
}

pub struct Memhog {
    pub threads: Vec<HogThread>,
    by_pid: super::PidIndex,
    stores_per_page: u64,
    running: usize,
    exit_pfn: Option<usize>,
    exiting: bool,
    /// The main thread when it is a task of its own (fork_balance), and the
    /// clones it has still to make.
    parent: Option<Pid>,
    clones_left: usize,
    parent_cpu: usize,
}

/// Pages exit_mmap frees per step.
const EXIT_BATCH: u64 = 4096;

impl Memhog {
    pub fn start(k: &mut Kernel, w: &MemhogSpec) -> Memhog {
        let n = w.threads as usize;
        let total = w.bytes.div_ceil(k.page_size);
        let mut rng = crate::sched::SplitMix64::new(k.seed);
        // Where jiffies stand when the hog starts: the run begins some
        // unknown time after boot (the zonelist cache's one-second zap).
        k.mm.jiffies_phase_ns = rng.below(1_000_000_000);
        let plan = match (&w.cpus, k.fork_balance) {
            (Some(l), _) => Placement::pinned(l.iter().map(|&c| c as usize).collect()),
            (None, ForkBalance::None) => Placement::pinned((0..n).collect()),
            (None, ForkBalance::Ia64_2618) => Placement::ia64_2618(k, n, &mut rng),
        };
        let (_, mems) = super::affinity(k, None, w.mems_allowed.as_ref());
        let mut threads = Vec::new();
        let passes = w.passes.max(1) as u64;
        let mut base = 0;
        let parent = plan.parent_cpu.map(|cpu| super::spawn_user(k, "memhog", vec![cpu as u16], mems.clone()));
        for (i, t) in plan.threads.iter().enumerate().take(n) {
            let share = total / n as u64 + u64::from((i as u64) < total % n as u64);
            let pid = super::spawn_user_at(k, "memhog", vec![t.cpu as u16], mems.clone(), t.start_ns);
            threads.push(HogThread {
                pid,
                cpu: t.cpu,
                pages_total: share * passes,
                base,
                share,
                pages_done: 0,
                remote_pages: 0,
                end_ns: None,
                oom: false,
                start_ns: t.start_ns,
                pull: t.pull,
                pulled: false,
            });
            base += share;
        }
        // mm 0's page table: a pte per virtual page.
        k.anon_mm = vec![vec![crate::page::NIL; total as usize]];
        // One mm_struct for the process, allocated where it was exec'd.
        let mut pids: Vec<u32> = threads.iter().map(|t: &HogThread| t.pid).collect();
        pids.extend(parent);
        let mm_node = k.mm.cpu_node[plan.parent_cpu.unwrap_or_else(|| threads.first().map_or(0, |t| t.cpu))];
        k.share_mm_lines(&pids, mm_node);
        Memhog {
            by_pid: super::PidIndex::new(threads.iter().map(|t| t.pid)),
            threads,
            stores_per_page: k.page_size / w.stride,
            running: n,
            exit_pfn: Some(0),
            exiting: false,
            parent,
            clones_left: if parent.is_some() { n } else { 0 },
            parent_cpu: plan.parent_cpu.unwrap_or(0),
        }
    }

    /// The main thread: one clone a step, then wait for the threads, then exit.
    fn parent_step(&mut self, k: &mut Kernel, ctx: &mut Ctx) -> Next {
        if self.exiting {
            return self.exit_step(k, ctx);
        }
        if self.clones_left > 0 {
            ctx.sys += k.cost.clone_ns;
            self.clones_left -= 1;
            return Next::Run;
        }
        if self.running > 0 {
            return Next::Sleep { until: None, wq: Some(Wq::Barrier(0)), io: false };
        }
        k.lru_add_drain_all(ctx);
        self.exiting = true;
        Next::Run
    }

    /// exit_mmap, a batch of pages a step, on the exiting task's CPU.
    fn exit_step(&mut self, k: &mut Kernel, ctx: &mut Ctx) -> Next {
        let from = self.exit_pfn.unwrap_or(0);
        self.exit_pfn = k.exit_mmap_anon(ctx, 0, from, EXIT_BATCH);
        if self.exit_pfn.is_none() {
            k.anon_mm[0] = Vec::new(); // the page table goes with the mm
            return Next::Exit;
        }
        Next::Run
    }

    pub fn json(&self) -> serde_json::Value {
        json!({ "memhog": { "main_thread_cpu": self.parent.map(|_| self.parent_cpu) } })
    }

    pub fn oom(&self) -> bool {
        self.threads.iter().any(|t| t.oom)
    }

    fn thread_of(&self, pid: Pid) -> usize {
        self.by_pid.of(pid)
    }

    pub fn step(&mut self, k: &mut Kernel, pid: Pid, ctx: &mut Ctx) -> Next {
        if self.parent == Some(pid) {
            return self.parent_step(k, ctx);
        }
        let ti = self.thread_of(pid);
        if self.exiting {
            // exit_mmap on thread 0's CPU (pinned threads: thread 0 is the process).
            return self.exit_step(k, ctx);
        }
        if let Some((at, cpu)) = self.threads[ti].pull {
            if ctx.clock() >= at {
                // load_balance moved the thread to the idle CPU; it stays there.
                let th = &mut self.threads[ti];
                th.pull = None;
                th.pulled = true;
                th.cpu = cpu;
                k.sched.tasks[pid as usize].cpus = vec![cpu as u16];
                k.kt[pid as usize].node = k.mm.cpu_node[cpu];
                return Next::Run;
            }
        }
        let th = &mut self.threads[ti];
        if th.pages_done == th.pages_total || th.oom {
            return self.thread_done(k, ti, ctx);
        }
        let done = self.threads[ti].pages_done;
        let (share, base) = (self.threads[ti].share, self.threads[ti].base);
        let vpage = base + done % share;
        if done >= share && k.anon_mm[0][vpage as usize] != crate::page::NIL {
            // A later pass: the page is mapped (a store), or its pte holds a
            // swap slot (a fault that swaps it in).
            let pte = k.anon_mm[0][vpage as usize];
            if pte & crate::swapfile::SWAP_PTE == 0 {
                k.mm.pages.set(pte, crate::page::PG_YOUNG);
                ctx.user += self.stores_per_page * k.cost.user_store_ns;
                self.threads[ti].pages_done += 1;
                if self.threads[ti].pages_done == self.threads[ti].pages_total {
                    return self.thread_done(k, ti, ctx);
                }
                return Next::Run;
            }
            if !k.kt[pid as usize].in_fault {
                ctx.sys += k.cost.fault_ns;
                k.fault_mm_lines(ctx);
                k.mm.vm.inc(Ev::Pgfault);
                k.faults += 1;
            }
            return match k.do_swap_page(ctx, 0, vpage, pte & !crate::swapfile::SWAP_PTE) {
                crate::filemap::PageOp::Done => {
                    k.kt[pid as usize].in_fault = false;
                    ctx.user += self.stores_per_page * k.cost.user_store_ns;
                    self.threads[ti].pages_done += 1;
                    if self.threads[ti].pages_done == self.threads[ti].pages_total {
                        return self.thread_done(k, ti, ctx);
                    }
                    Next::Run
                }
                crate::filemap::PageOp::Sleep(n) => {
                    k.kt[pid as usize].in_fault = true;
                    n
                }
                crate::filemap::PageOp::Oom => {
                    k.kt[pid as usize].in_fault = false;
                    self.threads[ti].oom = true;
                    self.thread_done(k, ti, ctx)
                }
            };
        }
        if k.kt[pid as usize].slow.stage == crate::page_alloc::Stage::Fresh {
            ctx.sys += k.cost.fault_ns;
            k.fault_mm_lines(ctx);
            k.mm.vm.inc(Ev::Pgfault);
            k.faults += 1;
        }
        match k.do_anonymous_page(ctx, 0, done, vpage) {
            Ok(zi) => {
                let th = &mut self.threads[ti];
                if k.mm.zones[zi].node != k.mm.cpu_node[th.cpu] {
                    th.remote_pages += 1;
                }
                ctx.user += self.stores_per_page * k.cost.user_store_ns;
                th.pages_done += 1;
                if th.pages_done == th.pages_total {
                    return self.thread_done(k, ti, ctx);
                }
                Next::Run
            }
            Err(AllocRes::Sleep(n)) => n,
            Err(_) => {
                self.threads[ti].oom = true;
                self.thread_done(k, ti, ctx)
            }
        }
    }

    fn thread_done(&mut self, k: &mut Kernel, ti: usize, ctx: &mut Ctx) -> Next {
        if self.threads[ti].end_ns.is_none() {
            self.threads[ti].end_ns = Some(ctx.clock());
            self.running -= 1;
        }
        if self.parent.is_some() {
            if self.running == 0 {
                k.sched.wake_up_all(Wq::Barrier(0), ctx.clock());
            }
            return Next::Exit;
        }
        if ti == 0 {
            if self.running == 0 {
                k.lru_add_drain_all(ctx);
                self.exiting = true;
                return Next::Run;
            }
            return Next::Sleep { until: None, wq: Some(Wq::Barrier(0)), io: false };
        }
        if self.running == 0 {
            k.sched.wake_up_all(Wq::Barrier(0), ctx.clock());
        }
        Next::Exit
    }

    pub fn threads_json(&self, k: &Kernel) -> Value {
        let secs = |ns: u64| (ns / 1000) as f64 / 1e6;
        Value::Array(
            self.threads
                .iter()
                .map(|t| {
                    let task = &k.sched.tasks[t.pid as usize];
                    json!({
                        "cpu": t.cpu,
                        "node": k.mm.cpu_node[t.cpu],
                        "pages": t.pages_done,
                        "remote_pages": t.remote_pages,
                        "user_s": secs(task.user_ns),
                        "sys_s": secs(task.sys_ns),
                        "spin_s": 0.0,
                        "end_s": secs(t.end_ns.unwrap_or(0)),
                        "start_s": secs(t.start_ns),
                        "pulled": t.pulled,
                        "oom": t.oom,
                    })
                })
                .collect(),
        )
    }
}

/// Where one thread starts, when, and where load balancing moves it.
struct Planned {
    cpu: usize,
    start_ns: u64,
    pull: Option<(u64, usize)>,
}

struct Placement {
    /// The main thread's CPU when it is a task of its own.
    parent_cpu: Option<usize>,
    threads: Vec<Planned>,
}

/// The runqueues as the balancer sees them at `now`: each CPU's tasks, and
/// the load its last timer tick recorded (rq->cpu_load). Ticks come every
/// 1/HZ, staggered over the CPUs (ia64_cpu_local_tick), at a phase the seed picks.
struct Rqs {
    now: u64,
    tick_ns: u64,
    phase: Vec<u64>,
    /// (time, +1 / -1) per CPU; time 0 = before the run.
    hist: Vec<Vec<(u64, i64)>>,
}

impl Rqs {
    fn change(&mut self, cpu: usize, at: u64, d: i64) {
        self.hist[cpu].push((at, d));
    }
    fn load_at(&self, cpu: usize, t: u64) -> u64 {
        self.hist[cpu].iter().filter(|&&(at, _)| at <= t).map(|&(_, d)| d).sum::<i64>().max(0) as u64
    }
    fn last_tick(&self, cpu: usize, t: u64) -> u64 {
        let p = self.phase[cpu];
        if t < p {
            0
        } else {
            p + (t - p) / self.tick_ns * self.tick_ns
        }
    }
    fn next_tick(&self, cpu: usize, t: u64) -> u64 {
        self.last_tick(cpu, t).max(self.phase[cpu]) + if t < self.phase[cpu] { 0 } else { self.tick_ns }
    }
}

impl RqLoad for Rqs {
    fn nr_running(&self, cpu: usize) -> u64 {
        self.load_at(cpu, self.now)
    }
    fn cpu_load(&self, cpu: usize) -> u64 {
        self.load_at(cpu, self.last_tick(cpu, self.now))
    }
}

/// The idle CPUs' periodic load balancing in a node or all-nodes domain
/// runs every balance_interval, 64 ms at boot in SD_NODE_INIT (an idle CPU
/// has no busy_factor); when within that it first runs is the seed's.
const NODE_BALANCE_INTERVAL_NS: u64 = 64_000_000;

impl Placement {
    fn pinned(cpus: Vec<usize>) -> Placement {
        Placement { parent_cpu: None, threads: cpus.into_iter().map(|cpu| Planned { cpu, start_ns: 0, pull: None }).collect() }
    }

    fn ia64_2618(k: &Kernel, n: usize, rng: &mut crate::sched::SplitMix64) -> Placement {
        let cpu_node = &k.mm.cpu_node;
        let ncpus = cpu_node.len();
        let domains = crate::sched::ia64_sched_domains(cpu_node, &k.mm.distance);
        let tick_ns = 1_000_000_000 / k.hz;
        let global = rng.below(tick_ns);
        let phase = (0..ncpus as u64).map(|c| (global + c * tick_ns / ncpus as u64) % tick_ns + 1).collect();
        let mut rq = Rqs { now: 0, tick_ns, phase, hist: vec![Vec::new(); ncpus] };
        // The shell runs on a CPU nobody knows; the hog exec's from there.
        let shell = rng.below(ncpus as u64) as usize;
        rq.change(shell, 0, 1);
        let parent = sched_balance_self(&domains, shell, SD_BALANCE_EXEC, &rq);
        rq.change(shell, 1, -1);
        rq.change(parent, 1, 1);
        let clone_ns = k.cost.clone_ns.max(1);
        let mut threads = Vec::with_capacity(n);
        for i in 0..n as u64 {
            rq.now = (i + 1) * clone_ns;
            let cpu = sched_balance_self(&domains, parent, SD_BALANCE_FORK, &rq);
            rq.change(cpu, rq.now, 1);
            threads.push(Planned { cpu, start_ns: rq.now, pull: None });
        }
        // The main thread waits (pthread_join); the threads that share a CPU
        // are pulled, the last placed first, by idle CPUs: the CPU's sibling
        // on its node at its next tick (the CPU domain balances every tick),
        // else an idle CPU whose node domain holds the busy CPU, else any.
        let burst_end = (n as u64 + 1) * clone_ns;
        let mut busy = vec![false; ncpus];
        for t in &threads {
            busy[t.cpu] = true;
        }
        let mut seen = vec![false; ncpus];
        let mut extra = Vec::new();
        for (i, t) in threads.iter().enumerate() {
            if seen[t.cpu] {
                extra.push(i);
            }
            seen[t.cpu] = true;
        }
        for &i in extra.iter().rev() {
            let from = threads[i].cpu;
            let node = cpu_node[from];
            let idle: Vec<usize> = (0..ncpus).filter(|&c| !busy[c]).collect();
            if idle.is_empty() {
                break;
            }
            let (to, at) = if let Some(&sib) = idle.iter().find(|&&c| cpu_node[c] == node) {
                (sib, rq.next_tick(sib, burst_end))
            } else {
                let near: Vec<usize> = idle.iter().copied().filter(|&c| domains[c].get(1).is_some_and(|d| d.groups.iter().any(|g| g.contains(&from)))).collect();
                let pool = if near.is_empty() { idle } else { near };
                let to = pool[rng.below(pool.len() as u64) as usize];
                (to, burst_end + rng.below(NODE_BALANCE_INTERVAL_NS))
            };
            busy[to] = true;
            threads[i].pull = Some((at, to));
        }
        Placement { parent_cpu: Some(parent), threads }
    }
}
