//! MMTests' "micro" benchmark of 2011 as seeds 000 and 004 ran it, built
//! from usemem processes (one mapping each, `-j 4096`: one word written per
//! page, in order, `-r N`: N passes over the mapping).
//!
//! Stage 1, vmscan-file-mmap-write (the streaming mapped writer): each of
//! `threads` processes creates its own sparse file, maps it shared and
//! writable and writes every page once (a write fault per page, dirtying
//! it), then exits, which unmaps the file and leaves its pages in the page
//! cache. When every process has exited, the files are removed (the
//! script's `rm sparse-*`, done here by the last process to finish).
//!
//! Stage 2, vmscan-mixed-mmap-write (only when `mixed_bytes` > 0): starts
//! when stage 1 is over. `mixed_threads` processes on sparse files of
//! (100 - anon%) of `mixed_bytes` in all, each making 2 x `mixed_iter`
//! passes, and `mixed_threads` processes on anonymous mappings of anon% of
//! it, each making `mixed_iter` passes, all at once; then the files go.
//! A pass after the first reads each word before writing it (usemem
//! checks the last pass's value), so a page that reclaim took is read back
//! from the file (a major fault) or from swap; a page written back since
//! the last pass write-faults again (its pte was cleaned with it); a page
//! still dirty and mapped is only a store.

use crate::cost::Ctx;
use crate::filemap::PageOp;
use crate::kernel::Kernel;
use crate::page::{NIL, PG_DIRTY, PG_MAPPED, PG_YOUNG};
use crate::page_alloc::AllocRes;
use crate::sched::{Next, Pid, Wq};
use crate::spec::MmapstreamSpec;
use crate::swapfile::SWAP_PTE;
use crate::vmstat::Ev;
use serde_json::{json, Value};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// A stage-2 process waiting for stage 1 to end.
    Wait,
    Open,
    Touch { page: u64 },
    Exit,
    /// exit_mmap of an anonymous process, from pfn `from`.
    ExitAnon { from: usize },
    /// The last process of a stage removes its files, from `next` on.
    Rm { next: usize },
}

struct Proc {
    pid: Pid,
    stage: usize,
    phase: Phase,
    pages: u64,
    passes: u32,
    pass: u32,
    /// The file of a file-mapping process (set when it is created).
    ino: Option<u32>,
    /// The mm of an anonymous process.
    anon_mm: Option<u32>,
    /// The fault in progress was a read; its write faults again when it is done.
    second_fault: bool,
}

pub struct Mmapstream {
    procs: Vec<Proc>,
    by_pid: super::PidIndex,
    /// Processes of each stage not yet exited.
    left: [usize; 2],
    stage_end_ns: [Option<u64>; 2],
    pub oom: bool,
}

/// Faults (or stores) handled per step, at most (a step also ends after
/// STEP_QUANTUM_NS of CPU).
const FAULTS_PER_STEP: u64 = 32;
/// Pages exit_mmap frees per step.
const EXIT_BATCH: u64 = 4096;

/// A page fault taken: its entry and exit cost, and pgfault.
fn count_fault(k: &mut Kernel, ctx: &mut Ctx) {
    ctx.sys += k.cost.fault_ns;
    k.fault_mm_lines(ctx);
    k.mm.vm.inc(Ev::Pgfault);
    k.faults += 1;
}

fn split(total: u64, n: u64, i: u64) -> u64 {
    total / n + u64::from(i < total % n)
}

impl Mmapstream {
    pub fn start(k: &mut Kernel, w: &MmapstreamSpec) -> Mmapstream {
        let (cpus, mems) = super::affinity(k, w.cpus.as_ref(), w.mems_allowed.as_ref());
        let ps = k.page_size;
        let mut procs = Vec::new();
        // Stage 1: the file-mapping writers share `bytes` (seed 000 splits
        // in pages; the shell's integer split in bytes differs by < 1 page).
        let total = w.bytes.div_ceil(ps);
        let n = w.threads as u64;
        for i in 0..n {
            procs.push(Proc {
                pid: super::spawn_user(k, "mmap-strm", cpus.clone(), mems.clone()),
                stage: 0,
                phase: Phase::Open,
                pages: split(total, n, i),
                passes: 1,
                pass: 0,
                ino: None,
                anon_mm: None,
                second_fault: false,
            });
        }
        let mut left = [procs.len(), 0];
        if w.mixed_bytes > 0 {
            let anon_bytes = w.mixed_bytes * w.mixed_anon_percent as u64 / 100;
            let file_bytes = w.mixed_bytes * (100 - w.mixed_anon_percent as u64) / 100;
            let n = w.mixed_threads as u64;
            let mut mm = 0;
            for (bytes, passes, file) in [(file_bytes, 2 * w.mixed_iter, true), (anon_bytes, w.mixed_iter, false)] {
                let per = (bytes / n).div_ceil(ps);
                if per == 0 {
                    continue;
                }
                for _ in 0..n {
                    let anon_mm = (!file).then(|| {
                        mm += 1;
                        mm - 1
                    });
                    procs.push(Proc {
                        pid: super::spawn_user(k, if file { "usemem-file" } else { "usemem-anon" }, cpus.clone(), mems.clone()),
                        stage: 1,
                        phase: Phase::Wait,
                        pages: per,
                        passes,
                        pass: 0,
                        ino: None,
                        anon_mm,
                        second_fault: false,
                    });
                    left[1] += 1;
                }
            }
            k.anon_mm = vec![Vec::new(); mm as usize];
        }
        let by_pid = super::PidIndex::new(procs.iter().map(|p| p.pid));
        Mmapstream { procs, by_pid, left, stage_end_ns: [None, None], oom: false }
    }

    pub fn step(&mut self, k: &mut Kernel, pid: Pid, ctx: &mut Ctx) -> Next {
        let pi = self.by_pid.of(pid);
        match self.procs[pi].phase {
            Phase::Wait => {
                if self.oom {
                    return Next::Exit; // stage 1 died: the script stops
                }
                if self.stage_end_ns[0].is_none() {
                    return Next::Sleep { until: None, wq: Some(Wq::Barrier(0)), io: false };
                }
                self.procs[pi].phase = Phase::Open;
                Next::Run
            }
            Phase::Open => {
                if let Some(mm) = self.procs[pi].anon_mm {
                    // malloc/mmap of the anonymous buffer: its page table.
                    k.anon_mm[mm as usize] = vec![NIL; self.procs[pi].pages as usize];
                    self.procs[pi].phase = Phase::Touch { page: 0 };
                    return Next::Run;
                }
                let dir = 1000 + 1000 * self.procs[pi].stage as u32 + pi as u32;
                match k.sys_creat(ctx, dir) {
                    Ok(ino) => {
                        // create_sparse_file: dd bs=4096 count=0 seek=SIZE/4096+1
                        // sets i_size before usemem maps the file.
                        k.fs.inodes[ino as usize].size = self.procs[pi].pages + 1;
                        k.fs.inodes[ino as usize].mapped = true;
                        self.procs[pi].ino = Some(ino);
                        self.procs[pi].phase = Phase::Touch { page: 0 };
                        Next::Run
                    }
                    Err(AllocRes::Sleep(n)) => n,
                    Err(_) => self.oom_exit(k, ctx),
                }
            }
            Phase::Touch { page } => match self.procs[pi].anon_mm {
                Some(mm) => self.touch_anon(k, pi, mm, page, ctx),
                None => self.touch_file(k, pi, page, ctx),
            },
            Phase::Exit => {
                if self.procs[pi].anon_mm.is_some() {
                    k.lru_add_drain_all(ctx);
                    self.procs[pi].phase = Phase::ExitAnon { from: 0 };
                    return Next::Run;
                }
                let ino = self.procs[pi].ino.expect("a file process has its file");
                // exit_mmap: the shared mapping goes; its pages stay cached.
                k.unmap_mapping(ctx, ino);
                let i = &mut k.fs.inodes[ino as usize];
                i.i_count -= 1; // the mapping's file reference
                i.i_writecount = i.i_writecount.saturating_sub(1); // the open file's write access, which the mapping kept
                self.exited(k, pi, ctx)
            }
            Phase::ExitAnon { from } => {
                let mm = self.procs[pi].anon_mm.expect("an anonymous process");
                match k.exit_mmap_anon(ctx, mm, from, EXIT_BATCH) {
                    Some(next) => {
                        self.procs[pi].phase = Phase::ExitAnon { from: next };
                        Next::Run
                    }
                    None => {
                        k.anon_mm[mm as usize] = Vec::new(); // the page table goes with the mm
                        self.exited(k, pi, ctx)
                    }
                }
            }
            Phase::Rm { next } => {
                let stage = self.procs[pi].stage;
                let Some(q) = (next..self.procs.len()).find(|&q| self.procs[q].stage == stage && self.procs[q].ino.is_some()) else {
                    self.stage_end_ns[stage] = Some(ctx.clock());
                    if stage == 0 {
                        k.sched.wake_up_all(Wq::Barrier(0), ctx.clock());
                    }
                    return Next::Exit;
                };
                match k.sys_unlink(ctx, self.procs[q].ino.expect("checked")) {
                    PageOp::Done => {
                        self.procs[pi].phase = Phase::Rm { next: q + 1 };
                        Next::Run
                    }
                    PageOp::Sleep(n) => {
                        self.procs[pi].phase = Phase::Rm { next: q };
                        n
                    }
                    PageOp::Oom => self.oom_exit(k, ctx),
                }
            }
        }
    }

    /// A process met OOM: the benchmark fails; processes waiting for
    /// stage 1 to end are let go.
    fn oom_exit(&mut self, k: &mut Kernel, ctx: &Ctx) -> Next {
        self.oom = true;
        k.sched.wake_up_all(Wq::Barrier(0), ctx.clock());
        Next::Exit
    }

    /// A process is done; the last of its stage removes the stage's files.
    fn exited(&mut self, _k: &mut Kernel, pi: usize, _ctx: &mut Ctx) -> Next {
        let stage = self.procs[pi].stage;
        self.left[stage] -= 1;
        if self.left[stage] > 0 {
            return Next::Exit;
        }
        self.procs[pi].phase = Phase::Rm { next: 0 };
        Next::Run
    }

    /// A fault's outcome: done (the write's own fault counted if the
    /// fault was a read), or the task sleeps and the fault resumes at page
    /// `pg` (counted once), or OOM.
    fn fault_done(&mut self, k: &mut Kernel, pi: usize, pg: u64, op: PageOp, ctx: &mut Ctx) -> Option<Next> {
        let pid = self.procs[pi].pid as usize;
        match op {
            PageOp::Done => {
                k.kt[pid].in_fault = false;
                if std::mem::take(&mut self.procs[pi].second_fault) {
                    count_fault(k, ctx);
                }
                None
            }
            PageOp::Sleep(n) => {
                k.kt[pid].in_fault = true;
                self.procs[pi].phase = Phase::Touch { page: pg };
                Some(n)
            }
            PageOp::Oom => {
                k.kt[pid].in_fault = false;
                Some(self.oom_exit(k, ctx))
            }
        }
    }

    /// After a pass, the next one or the exit.
    fn next_pass(&mut self, pi: usize) {
        let p = &mut self.procs[pi];
        p.pass += 1;
        p.phase = if p.pass >= p.passes { Phase::Exit } else { Phase::Touch { page: 0 } };
    }

    fn touch_file(&mut self, k: &mut Kernel, pi: usize, page: u64, ctx: &mut Ctx) -> Next {
        let pid = self.procs[pi].pid;
        let ino = self.procs[pi].ino.expect("a file process has its file");
        let total = self.procs[pi].pages;
        let mut pg = page;
        let end = (page + FAULTS_PER_STEP).min(total);
        while pg < end && ctx.sys + ctx.user < crate::sched::STEP_QUANTUM_NS {
            // Mapped with a dirty (writable) pte: only a store.
            if let Some(p) = k.find_get_page(ino, pg) {
                let f = k.mm.pages.flags[p as usize];
                if f & PG_MAPPED != 0 && f & PG_DIRTY != 0 && !k.kt[pid as usize].in_fault {
                    k.mm.pages.set(p, PG_YOUNG);
                    ctx.user += k.cost.user_store_ns;
                    pg += 1;
                    continue;
                }
            }
            // A later pass reads the word first: a page that is not mapped
            // takes a read fault (mapped read-only: the mapping wants write
            // notification), then the write faults again (do_wp_page and
            // page_mkwrite).
            let read_first = self.procs[pi].pass > 0
                && k.find_get_page(ino, pg).is_none_or(|p| !k.mm.pages.test(p, PG_MAPPED));
            let fresh = k.kt[pid as usize].slow.stage == crate::page_alloc::Stage::Fresh && !k.kt[pid as usize].in_fault;
            if fresh {
                count_fault(k, ctx);
                self.procs[pi].second_fault = read_first;
            }
            // Decided before the fault: a fault that sleeps comes back with its page dirtied.
            let counts = k.write_fault_counts_dirtied(ino, pg);
            let op = k.shared_write_fault(ctx, ino, pg);
            if let Some(n) = self.fault_done(k, pi, pg, op, ctx) {
                return n;
            }
            ctx.user += k.cost.user_store_ns;
            pg += 1;
            if let Some(n) = k.balance_dirty_pages_ratelimited(ctx, counts as u64) {
                self.procs[pi].phase = Phase::Touch { page: pg };
                return n;
            }
        }
        if pg >= total {
            self.next_pass(pi);
        } else {
            self.procs[pi].phase = Phase::Touch { page: pg };
        }
        Next::Run
    }

    fn touch_anon(&mut self, k: &mut Kernel, pi: usize, mm: u32, page: u64, ctx: &mut Ctx) -> Next {
        let pid = self.procs[pi].pid;
        let total = self.procs[pi].pages;
        let mut pg = page;
        let end = (page + FAULTS_PER_STEP).min(total);
        while pg < end && ctx.sys + ctx.user < crate::sched::STEP_QUANTUM_NS {
            let pte = k.anon_mm[mm as usize][pg as usize];
            if pte != NIL && pte & SWAP_PTE == 0 {
                k.mm.pages.set(pte, PG_YOUNG);
                ctx.user += k.cost.user_store_ns;
                pg += 1;
                continue;
            }
            let fresh = k.kt[pid as usize].slow.stage == crate::page_alloc::Stage::Fresh && !k.kt[pid as usize].in_fault;
            if fresh {
                count_fault(k, ctx);
                // A swapped-out word is read first: do_swap_page maps the
                // page read-only (no reuse_swap_page on a read), and the
                // write faults again.
                self.procs[pi].second_fault = pte != NIL;
            }
            let op = if pte == NIL {
                match k.do_anonymous_page(ctx, mm, pg, pg) {
                    Ok(_) => PageOp::Done,
                    Err(r) => crate::filemap::alloc_op(r),
                }
            } else {
                k.do_swap_page(ctx, mm, pg, pte & !SWAP_PTE)
            };
            if let Some(n) = self.fault_done(k, pi, pg, op, ctx) {
                return n;
            }
            ctx.user += k.cost.user_store_ns;
            pg += 1;
        }
        if pg >= total {
            self.next_pass(pi);
        } else {
            self.procs[pi].phase = Phase::Touch { page: pg };
        }
        Next::Run
    }

    pub fn json(&self, k: &Kernel) -> Value {
        let secs = |ns: u64| (ns / 1000) as f64 / 1e6;
        let end = self.procs.iter().filter_map(|p| k.sched.tasks[p.pid as usize].exited_at).max().unwrap_or(k.now);
        let mut v = json!({ "elapsed_s": secs(end) });
        if self.left[1] > 0 || self.procs.iter().any(|p| p.stage == 1) {
            v["file_mmap_s"] = json!(secs(self.stage_end_ns[0].unwrap_or(end)));
            v["mixed_mmap_s"] = json!(secs(end.saturating_sub(self.stage_end_ns[0].unwrap_or(end))));
        }
        json!({ "mmapstream": v })
    }
}
