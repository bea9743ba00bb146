//! The streaming mapped writer (MMTests 2011 vmscan-file-mmap-write, run by
//! usemem -f): each process creates its own sparse file, maps it shared
//! and writable, writes one word to every page in order (a write fault per
//! page, dirtying it) and exits, which unmaps the file and leaves its pages
//! in the page cache. When every process has exited, the files are removed
//! (the script's `rm sparse-*`, done here by the last process to finish).

use crate::cost::Ctx;
use crate::filemap::PageOp;
use crate::kernel::Kernel;
use crate::page_alloc::AllocRes;
use crate::sched::{Next, Pid};
use crate::spec::MmapstreamSpec;
use crate::vmstat::Ev;
use serde_json::{json, Value};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Open,
    Touch { ino: u32, page: u64 },
    Exit { ino: u32 },
    /// The last process removes every file, from `next` on.
    Rm { next: usize },
}

struct Proc {
    pid: Pid,
    phase: Phase,
    pages: u64,
    ino: Option<u32>,
}

pub struct Mmapstream {
    procs: Vec<Proc>,
    exited: usize,
    pub oom: bool,
}

/// Faults handled per step.
const FAULTS_PER_STEP: u64 = 32;

impl Mmapstream {
    pub fn start(k: &mut Kernel, w: &MmapstreamSpec) -> Mmapstream {
        let (cpus, mems) = super::affinity(k, w.cpus.as_ref(), w.mems_allowed.as_ref());
        let total = w.bytes.div_ceil(k.page_size);
        let n = w.threads as u64;
        let procs = (0..n)
            .map(|i| Proc {
                pid: super::spawn_user(k, "mmap-strm", cpus.clone(), mems.clone()),
                phase: Phase::Open,
                pages: total / n + u64::from(i < total % n),
                ino: None,
            })
            .collect();
        Mmapstream { procs, exited: 0, oom: false }
    }

    pub fn step(&mut self, k: &mut Kernel, pid: Pid, ctx: &mut Ctx) -> Next {
        let pi = self.procs.iter().position(|p| p.pid == pid).unwrap_or(0);
        match self.procs[pi].phase {
            Phase::Open => match k.sys_creat(ctx, 1000 + pi as u32) {
                Ok(ino) => {
                    k.fs.inodes[ino as usize].mapped = true;
                    self.procs[pi].ino = Some(ino);
                    self.procs[pi].phase = Phase::Touch { ino, page: 0 };
                    Next::Run
                }
                Err(AllocRes::Sleep(n)) => n,
                Err(_) => {
                    self.oom = true;
                    Next::Exit
                }
            },
            Phase::Touch { ino, page } => {
                let total = self.procs[pi].pages;
                let mut pg = page;
                let end = (page + FAULTS_PER_STEP).min(total);
                while pg < end {
                    if k.kt[pid as usize].slow.stage == crate::page_alloc::Stage::Fresh && !k.kt[pid as usize].in_fault {
                        ctx.sys += k.cost.fault_ns;
                        k.mm.vm.inc(Ev::Pgfault);
                        k.faults += 1;
                    }
                    match k.shared_write_fault(ctx, ino, pg) {
                        PageOp::Done => k.kt[pid as usize].in_fault = false,
                        PageOp::Sleep(n) => {
                            // The fault resumes (and is counted once).
                            k.kt[pid as usize].in_fault = true;
                            self.procs[pi].phase = Phase::Touch { ino, page: pg };
                            return n;
                        }
                        PageOp::Oom => {
                            self.oom = true;
                            return Next::Exit;
                        }
                    }
                    ctx.user += k.cost.user_store_ns;
                    pg += 1;
                    if let Some(n) = k.balance_dirty_pages_ratelimited(ctx) {
                        self.procs[pi].phase = Phase::Touch { ino, page: pg };
                        return n;
                    }
                }
                self.procs[pi].phase = if pg >= total { Phase::Exit { ino } } else { Phase::Touch { ino, page: pg } };
                Next::Run
            }
            Phase::Exit { ino } => {
                // exit_mmap: the shared mapping goes; its pages stay cached.
                k.unmap_mapping(ctx, ino);
                k.fs.inodes[ino as usize].i_count -= 1; // the mapping's file reference
                self.exited += 1;
                if self.exited < self.procs.len() {
                    return Next::Exit;
                }
                self.procs[pi].phase = Phase::Rm { next: 0 };
                Next::Run
            }
            Phase::Rm { next } => {
                let Some(ino) = self.procs.get(next).and_then(|p| p.ino) else {
                    return if next >= self.procs.len() {
                        Next::Exit
                    } else {
                        self.procs[pi].phase = Phase::Rm { next: next + 1 };
                        Next::Run
                    };
                };
                match k.sys_unlink(ctx, ino) {
                    PageOp::Done => {
                        self.procs[pi].phase = Phase::Rm { next: next + 1 };
                        Next::Run
                    }
                    PageOp::Sleep(n) => n,
                    PageOp::Oom => Next::Exit,
                }
            }
        }
    }

    pub fn json(&self, k: &Kernel) -> Value {
        let end = self.procs.iter().filter_map(|p| k.sched.tasks[p.pid as usize].exited_at).max().unwrap_or(k.now);
        json!({ "mmapstream": { "elapsed_s": (end / 1000) as f64 / 1e6 } })
    }
}
