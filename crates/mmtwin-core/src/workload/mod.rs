//! Workloads: user tasks driven as state machines, one step at a time,
//! behind one interface. Each is what an MMTests benchmark does, with its
//! parameters (docs/engine-api.md).

pub mod fsmark;
pub mod largedd;
pub mod memhog;
pub mod mmapstream;

use crate::cost::Ctx;
use crate::kernel::Kernel;
use crate::sched::{Next, Pid, TaskKind};
use crate::spec::{Spec, SpecError, WorkloadSpec};
use serde_json::Value;

/// Each workload is boxed: a step moves the enum out of the kernel and back
/// (`workload_step`), which should cost two pointers, not the state.
pub enum Workload {
    None,
    Memhog(Box<memhog::Memhog>),
    Fsmark(Box<fsmark::Fsmark>),
    Largedd(Box<largedd::Largedd>),
    Mmapstream(Box<mmapstream::Mmapstream>),
}

impl Workload {
    pub fn start(k: &mut Kernel, spec: &Spec) -> Result<Workload, SpecError> {
        Ok(match &spec.workload {
            WorkloadSpec::Memhog(w) => Workload::Memhog(Box::new(memhog::Memhog::start(k, w))),
            WorkloadSpec::Fsmark(w) => Workload::Fsmark(Box::new(fsmark::Fsmark::start(k, w))),
            WorkloadSpec::Largedd(w) => Workload::Largedd(Box::new(largedd::Largedd::start(k, w))),
            WorkloadSpec::Mmapstream(w) => Workload::Mmapstream(Box::new(mmapstream::Mmapstream::start(k, w))),
        })
    }

    /// Every user task has exited.
    pub fn finished(&self, k: &Kernel) -> bool {
        k.sched.users_alive == 0
    }

    /// When the benchmark ended (the last user task's exit).
    pub fn end_ns(&self, k: &Kernel) -> u64 {
        k.sched.tasks.iter().filter(|t| t.kind == TaskKind::User).filter_map(|t| t.exited_at).max().unwrap_or(k.now)
    }

    pub fn oom(&self) -> bool {
        match self {
            Workload::Memhog(m) => m.oom(),
            Workload::Fsmark(w) => w.oom,
            Workload::Largedd(w) => w.oom,
            Workload::Mmapstream(w) => w.oom,
            Workload::None => false,
        }
    }

    pub fn benchmark_json(&self, k: &Kernel) -> Value {
        match self {
            Workload::Memhog(m) => m.json(),
            Workload::None => serde_json::json!({ "memhog": {} }),
            Workload::Fsmark(w) => w.json(),
            Workload::Largedd(w) => w.json(),
            Workload::Mmapstream(w) => w.json(k),
        }
    }

    pub fn threads_json(&self, k: &Kernel) -> Option<Value> {
        match self {
            Workload::Memhog(m) => Some(m.threads_json(k)),
            _ => None,
        }
    }
}

/// The CPUs a workload's tasks may use and the nodes they may allocate from.
pub fn affinity(k: &Kernel, cpus: Option<&Vec<u32>>, mems: Option<&Vec<u32>>) -> (Vec<u16>, Vec<bool>) {
    let ncpus = k.mm.cpu_node.len();
    let cpus: Vec<u16> = match cpus {
        Some(l) => l.iter().map(|&c| c as u16).collect(),
        None => (0..ncpus as u16).collect(),
    };
    let mut m = vec![mems.is_none(); k.nr_nodes];
    if let Some(l) = mems {
        for &n in l {
            m[n as usize] = true;
        }
    }
    (cpus, m)
}

pub fn spawn_user(k: &mut Kernel, comm: &str, cpus: Vec<u16>, mems: Vec<bool>) -> Pid {
    spawn_user_at(k, comm, cpus, mems, 0)
}

/// A workload's index of its tasks by pid: pid -> the task's position in
/// its own list (the lookup a step starts with, without a scan).
#[derive(Default)]
pub struct PidIndex(Vec<u32>);

impl PidIndex {
    pub fn new(pids: impl IntoIterator<Item = Pid>) -> PidIndex {
        let mut v = Vec::new();
        for (i, pid) in pids.into_iter().enumerate() {
            if v.len() <= pid as usize {
                v.resize(pid as usize + 1, u32::MAX);
            }
            // The first position of a pid, as a search from the front finds it.
            if v[pid as usize] == u32::MAX {
                v[pid as usize] = i as u32;
            }
        }
        PidIndex(v)
    }

    /// The position of `pid`, or 0 when the workload has no such task.
    #[inline]
    pub fn of(&self, pid: Pid) -> usize {
        match self.0.get(pid as usize) {
            Some(&i) if i != u32::MAX => i as usize,
            _ => 0,
        }
    }
}

/// A user task that becomes runnable at `at` (a thread created then).
pub fn spawn_user_at(k: &mut Kernel, comm: &str, cpus: Vec<u16>, mems: Vec<bool>, at: u64) -> Pid {
    let node = k.mm.cpu_node[cpus[0] as usize];
    let pid = k.sched.spawn(comm.to_string(), TaskKind::User, cpus, at);
    k.add_ktask(pid, node, mems);
    pid
}

impl Kernel {
    /// One step of a user task.
    pub fn workload_step(&mut self, pid: Pid, ctx: &mut Ctx) -> Next {
        self.finish_pending_wait(ctx);
        // A balance_dirty_pages that slept continues before anything else.
        if self.kt[pid as usize].bdp.active {
            if let Some(n) = self.balance_dirty_pages_ratelimited(ctx, 0) {
                return n;
            }
        }
        let mut wl = std::mem::replace(&mut self.wl, Workload::None);
        let next = match &mut wl {
            Workload::Memhog(w) => w.step(self, pid, ctx),
            Workload::Fsmark(w) => w.step(self, pid, ctx),
            Workload::Largedd(w) => w.step(self, pid, ctx),
            Workload::Mmapstream(w) => w.step(self, pid, ctx),
            Workload::None => Next::Exit,
        };
        self.wl = wl;
        next
    }
}
