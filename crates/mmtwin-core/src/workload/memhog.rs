//! The memory hog of seed 003: N threads, each pinned to a CPU, touching
//! its share of anonymous memory one store every `stride` bytes; then the
//! process exits and exit_mmap frees every page on thread 0's CPU.

use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::page_alloc::AllocRes;
use crate::sched::{Next, Pid, Wq};
use crate::spec::MemhogSpec;
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
}

pub struct Memhog {
    pub threads: Vec<HogThread>,
    stores_per_page: u64,
    running: usize,
    exit_pfn: Option<usize>,
    exiting: bool,
}

/// Pages exit_mmap frees per step.
const EXIT_BATCH: u64 = 4096;

impl Memhog {
    pub fn start(k: &mut Kernel, w: &MemhogSpec) -> Memhog {
        let n = w.threads as usize;
        let total = w.bytes.div_ceil(k.page_size);
        let cpus: Vec<usize> = match &w.cpus {
            Some(l) => l.iter().map(|&c| c as usize).collect(),
            None => (0..n).collect(),
        };
        let (_, mems) = super::affinity(k, None, w.mems_allowed.as_ref());
        let mut threads = Vec::new();
        let passes = w.passes.max(1) as u64;
        let mut base = 0;
        for (i, &cpu) in cpus.iter().enumerate().take(n) {
            let share = total / n as u64 + u64::from((i as u64) < total % n as u64);
            let pid = super::spawn_user(k, "memhog", vec![cpu as u16], mems.clone());
            threads.push(HogThread { pid, cpu, pages_total: share * passes, base, share, pages_done: 0, remote_pages: 0, end_ns: None, oom: false });
            base += share;
        }
        // mm 0's page table: a pte per virtual page.
        k.anon_mm = vec![vec![crate::page::NIL; total as usize]];
        Memhog { threads, stores_per_page: k.page_size / w.stride, running: n, exit_pfn: Some(0), exiting: false }
    }

    pub fn oom(&self) -> bool {
        self.threads.iter().any(|t| t.oom)
    }

    fn thread_of(&self, pid: Pid) -> usize {
        self.threads.iter().position(|t| t.pid == pid).unwrap_or(0)
    }

    pub fn step(&mut self, k: &mut Kernel, pid: Pid, ctx: &mut Ctx) -> Next {
        let ti = self.thread_of(pid);
        if self.exiting {
            // exit_mmap on thread 0's CPU.
            let from = self.exit_pfn.unwrap_or(0);
            self.exit_pfn = k.exit_mmap_anon(ctx, 0, from, EXIT_BATCH);
            if self.exit_pfn.is_none() {
                k.anon_mm[0] = Vec::new(); // the page table goes with the mm
                return Next::Exit;
            }
            return Next::Run;
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
                        "oom": t.oom,
                    })
                })
                .collect(),
        )
    }
}
